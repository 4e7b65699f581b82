//! The CPU backends, chosen at run time.

use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

/// What runs the network: burn's CPU backends or konane's own kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
}

impl Backend {
    /// The inference device.
    pub fn device(self) -> Device {
        match self {
            Backend::Native | Backend::Flex => Device::flex(),
            #[allow(deprecated)] // chosen on purpose; see the variant's docs
            Backend::Ndarray => Device::ndarray(),
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

    fn from_str(text: &str) -> Result<Backend, String> {
        match text {
            "native" => Ok(Backend::Native),
            "flex" => Ok(Backend::Flex),
            "ndarray" => Ok(Backend::Ndarray),
            other => Err(format!("unknown backend '{other}': native, flex or ndarray")),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Native => "native",
            Backend::Flex => "flex",
            Backend::Ndarray => "ndarray",
        })
    }
}
