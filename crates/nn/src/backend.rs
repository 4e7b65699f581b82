//! The backends, chosen at run time: konane's CPU kernels, burn's CPU
//! backends, and burn's GPU backends in builds that include them.

use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

/// What runs the network: burn's backends or konane's own kernels.
///
/// Every variant exists in every build, so configs and run states read the
/// same everywhere; naming a GPU backend that this build lacks, or whose
/// device this machine lacks, is refused where the name is read
/// ([`Backend::from_str`]), with a message saying which.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Backend {
    /// konane's own kernels for training ([`crate::native::train`]) and
    /// search ([`crate::NativeNet`]); burn holds the network's definition
    /// and its checkpoints, and runs on flex wherever a tensor is needed.
    Native,
    /// burn-flex: pure Rust, the fastest CPU backend of burn 0.22 here;
    /// training runs on its autodiff, searches on the native kernels over
    /// the same weights ([`crate::NativeNet`], twice burn-flex's speed).
    #[default]
    Flex,
    /// burn-ndarray: the backend the project was first specified with;
    /// deprecated in burn 0.22 and several times slower. Searches run
    /// through burn too, so the whole loop runs on it.
    Ndarray,
    /// burn's wgpu backend (cubecl): Vulkan on Linux and Windows, Metal on
    /// macOS, on the best adapter wgpu finds (`CUBECL_WGPU_DEFAULT_DEVICE`
    /// overrides it). Training and the searches' network calls both run
    /// on it. Builds with `--features wgpu` only.
    Wgpu,
    /// burn's CUDA backend (cubecl), on the first NVIDIA GPU. Training and
    /// the searches' network calls both run on it. Builds with
    /// `--features cuda` only.
    Cuda,
}

/// Every backend's name, in the order a user would try them.
pub const BACKEND_NAMES: [&str; 5] = ["native", "flex", "ndarray", "wgpu", "cuda"];

impl Backend {
    /// Whether this build includes the backend.
    pub fn is_built(self) -> bool {
        match self {
            Backend::Native | Backend::Flex | Backend::Ndarray => true,
            Backend::Wgpu => cfg!(feature = "wgpu"),
            Backend::Cuda => cfg!(feature = "cuda"),
        }
    }

    /// Whether the backend runs on a GPU, where burn computes the searches'
    /// network calls too.
    pub fn is_gpu(self) -> bool {
        matches!(self, Backend::Wgpu | Backend::Cuda)
    }

    /// The inference device.
    ///
    /// # Panics
    /// For a GPU backend this build lacks; [`Backend::from_str`] refuses
    /// those, so only code that names one directly can get here.
    pub fn device(self) -> Device {
        match self {
            Backend::Native | Backend::Flex => Device::flex(),
            #[allow(deprecated)] // chosen on purpose; see the variant's docs
            Backend::Ndarray => Device::ndarray(),
            Backend::Wgpu | Backend::Cuda => match gpu::open(self) {
                Ok(device) => device,
                Err(reason) => panic!("backend {self}: {reason}"),
            },
        }
    }

    /// The training device: the same backend with autodiff.
    pub fn autodiff_device(self) -> Device {
        self.device().autodiff()
    }

    /// Measured multiply-adds per second of an `m x k` by `k x n` matrix
    /// product on this backend, repeated for about `seconds`. With the shape
    /// of a tower convolution unrolled (`m` = batch x cells, `k` = 9 x
    /// channels, `n` = channels) it is the ceiling a convolution of the
    /// backend can reach on this core, which tells how far the network's
    /// speed is from the hardware rather than from other code.
    pub fn matmul_multiply_adds_per_second(self, m: usize, k: usize, n: usize, seconds: f64) -> f64 {
        use burn::tensor::{Distribution, Tensor};
        let device = self.device();
        let a = Tensor::<2>::random([m, k], Distribution::Default, &device);
        let b = Tensor::<2>::random([k, n], Distribution::Default, &device);
        let run = || {
            // Reading the result back makes lazy backends compute it.
            let _ = a.clone().matmul(b.clone()).into_data();
        };
        run();
        let start = std::time::Instant::now();
        let mut products = 0u64;
        while start.elapsed().as_secs_f64() < seconds {
            run();
            products += 1;
        }
        products as f64 * (m * k * n) as f64 / start.elapsed().as_secs_f64()
    }
}

impl FromStr for Backend {
    type Err = String;

    /// A backend by name. A GPU backend is opened here, once per process,
    /// so that a missing feature, driver or device is one clear error where
    /// the user named it rather than a panic on the first tensor.
    fn from_str(text: &str) -> Result<Backend, String> {
        let backend = match text {
            "native" => Backend::Native,
            "flex" => Backend::Flex,
            "ndarray" => Backend::Ndarray,
            "wgpu" => Backend::Wgpu,
            "cuda" => Backend::Cuda,
            other => return Err(format!("unknown backend '{other}': {}", BACKEND_NAMES.join(", "))),
        };
        if !backend.is_built() {
            return Err(format!(
                "backend '{backend}' is not in this build: build konane with `--features {backend}` (docs/cluster.md, GPU training)"
            ));
        }
        if backend.is_gpu() {
            gpu::open(backend).map_err(|reason| format!("backend '{backend}': {reason}"))?;
        }
        Ok(backend)
    }
}

impl TryFrom<String> for Backend {
    type Error = String;

    fn try_from(text: String) -> Result<Backend, String> {
        text.parse()
    }
}

impl From<Backend> for String {
    fn from(backend: Backend) -> String {
        backend.to_string()
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Native => "native",
            Backend::Flex => "flex",
            Backend::Ndarray => "ndarray",
            Backend::Wgpu => "wgpu",
            Backend::Cuda => "cuda",
        })
    }
}

/// Opening the GPU devices: once per process, with the outcome kept, since
/// burn's runtimes register themselves on first use and cannot be opened
/// twice.
mod gpu {
    use std::sync::OnceLock;

    use burn::tensor::Device;

    use super::Backend;

    /// The device of `backend` (a GPU backend), or why it cannot be had.
    pub(super) fn open(backend: Backend) -> Result<Device, String> {
        static WGPU: OnceLock<Result<Device, String>> = OnceLock::new();
        static CUDA: OnceLock<Result<Device, String>> = OnceLock::new();
        match backend {
            Backend::Wgpu => WGPU.get_or_init(open_wgpu).clone(),
            Backend::Cuda => CUDA.get_or_init(open_cuda).clone(),
            _ => unreachable!("{backend} is not a GPU backend"),
        }
    }

    #[cfg(feature = "wgpu")]
    fn open_wgpu() -> Result<Device, String> {
        let device = Device::wgpu_options().init().map_err(|e| {
            format!("{e} (is a Vulkan driver installed? a machine without a GPU can use Mesa's lavapipe: apt-get install mesa-vulkan-drivers)")
        })?;
        probe(device)
    }

    #[cfg(not(feature = "wgpu"))]
    fn open_wgpu() -> Result<Device, String> {
        Err("not in this build".into())
    }

    #[cfg(feature = "cuda")]
    fn open_cuda() -> Result<Device, String> {
        // cudarc loads the driver library on first use and panics when it
        // is missing: the probe turns that into an error.
        probe(Device::cuda(0)).map_err(|e| format!("{e} (is the NVIDIA driver installed?)"))
    }

    #[cfg(not(feature = "cuda"))]
    fn open_cuda() -> Result<Device, String> {
        Err("not in this build".into())
    }

    /// `device` once a small sum computed on it reads back right; its
    /// runtime's panics (a missing driver library, a shader the driver
    /// refuses) become the error, without the panic's own report.
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    fn probe(device: Device) -> Result<Device, String> {
        use burn::tensor::{Tensor, TensorData};
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let sum = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let t = Tensor::<1>::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0], [3]), &device);
            t.sum().into_data().try_to_vec::<f32>().map(|v| v[0])
        }));
        std::panic::set_hook(quiet);
        match sum {
            Ok(Ok(6.0)) => Ok(device),
            Ok(Ok(sum)) => Err(format!("a test sum on the device gave {sum}, not 6")),
            Ok(Err(e)) => Err(format!("reading a test sum back failed: {e:?}")),
            Err(panic) => Err(panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "the device failed to start".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_known_ones() {
        for backend in [Backend::Native, Backend::Flex, Backend::Ndarray] {
            assert_eq!(backend.to_string().parse::<Backend>(), Ok(backend));
            assert_eq!(serde_json::from_str::<Backend>(&serde_json::to_string(&backend).unwrap()).unwrap(), backend);
        }
        let error = "gpu".parse::<Backend>().unwrap_err();
        assert!(
            error.contains("unknown backend 'gpu'") && error.contains("native, flex, ndarray, wgpu, cuda"),
            "{error}"
        );
        let error = serde_json::from_str::<Backend>("\"NATIVE\"").unwrap_err().to_string();
        assert!(error.contains("unknown backend 'NATIVE'"), "{error}");
    }

    #[test]
    fn a_gpu_backend_missing_from_the_build_is_refused_by_name() {
        for backend in [Backend::Wgpu, Backend::Cuda].into_iter().filter(|b| !b.is_built()) {
            let error = backend.to_string().parse::<Backend>().unwrap_err();
            assert!(error.contains("not in this build") && error.contains(&format!("--features {backend}")), "{error}");
            let error = serde_json::from_str::<Backend>(&format!("\"{backend}\"")).unwrap_err().to_string();
            assert!(error.contains("not in this build"), "{error}");
        }
    }
}
