//! The network as a batched [`Evaluator`] for the search.

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use konane_mcts::evaluator::{EvalError, check_outputs};
use konane_mcts::{Batch, Evaluator};
use konane_rules::{MoveList, Position};

use crate::Backend;
use crate::encoding::{INPUT_PLANES, move_index, policy_len, write_planes};
use crate::model::Net;
use crate::native::NativeNet;

/// Runs a [`Net`] on batches of positions. Positions of different sizes in
/// one call are evaluated in runs of equal size (the tower is shared, the
/// tensors are not).
///
/// Every output is checked: a value or prior that is not a finite number
/// (damaged weights, a diverged training run) is an [`EvalError`] naming the
/// network, never a score.
pub struct NetEvaluator {
    engine: Engine,
    /// What errors call the network: its file, once known.
    name: String,
    planes: Vec<f32>,
    logits: Vec<f32>,
    values: Vec<f32>,
    moves: MoveList,
    batches: u64,
    positions: u64,
}

/// What runs the forward pass. One per evaluator, so the size of the
/// burn variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Engine {
    /// burn's own tensor operations on a backend's device, inside a pool
    /// of one thread: burn's CPU backends spread their operations over
    /// rayon's threads, and one single-threaded evaluator per core runs
    /// about twice as fast as one spread over the cores
    /// (`docs/burn-0.22.md`). The native kernels use no threads.
    Burn { net: Net, device: Device, pool: rayon::ThreadPool },
    /// konane's Winograd kernels on the same weights ([`NativeNet`]).
    Native(Box<NativeNet>),
}

impl NetEvaluator {
    /// Evaluates with `net` through burn on `device` (a plain, non-autodiff
    /// device): the reference the native kernels are tested against.
    ///
    /// # Panics
    /// If the evaluator's thread cannot be started.
    pub fn new(net: Net, device: Device) -> NetEvaluator {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("an evaluator thread starts");
        NetEvaluator::with_engine(Engine::Burn { net, device, pool })
    }

    /// Evaluates `net`'s weights with the native kernels: about twice as
    /// fast as burn-flex on one core (`docs/performance.md`).
    pub fn native(net: &Net) -> NetEvaluator {
        NetEvaluator::with_engine(Engine::Native(Box::new(NativeNet::new(net))))
    }

    /// The evaluator a run on `backend` searches with: the native kernels
    /// for native and flex, burn itself for ndarray and the GPU backends,
    /// so that such a run is that backend end to end.
    pub fn for_backend(net: &Net, backend: Backend) -> NetEvaluator {
        match backend {
            Backend::Native | Backend::Flex => NetEvaluator::native(net),
            Backend::Ndarray | Backend::Wgpu | Backend::Cuda => {
                let device = backend.device();
                NetEvaluator::new(net.clone().to_device(&device), device)
            }
        }
    }

    fn with_engine(engine: Engine) -> NetEvaluator {
        NetEvaluator {
            engine,
            name: "the network".into(),
            planes: Vec::new(),
            logits: Vec::new(),
            values: Vec::new(),
            moves: MoveList::new(),
            batches: 0,
            positions: 0,
        }
    }

    /// Names the network in errors (its file, say).
    pub fn with_name(mut self, name: impl Into<String>) -> NetEvaluator {
        self.name = name.into();
        self
    }

    /// Whether the forward pass runs on the native kernels.
    pub fn is_native(&self) -> bool {
        matches!(self.engine, Engine::Native(_))
    }

    /// Network calls made and positions evaluated so far (mean batch size
    /// = positions / batches).
    pub fn counts(&self) -> (u64, u64) {
        (self.batches, self.positions)
    }

    /// Raw network outputs for positions of one size: policy logits
    /// (`policy_len(size)` per position) and values.
    pub fn forward(&mut self, positions: &[Position]) -> (Vec<f32>, Vec<f32>) {
        self.forward_into_buffers(positions);
        (self.logits.clone(), self.values.clone())
    }

    /// As [`NetEvaluator::forward`], into `self.logits` and `self.values`
    /// (reused between calls on the native engine).
    fn forward_into_buffers(&mut self, positions: &[Position]) {
        let size = positions[0].size();
        let cells = size.cells();
        let stride = INPUT_PLANES * cells;
        self.planes.clear();
        self.planes.resize(positions.len() * stride, 0.0);
        for (position, out) in positions.iter().zip(self.planes.chunks_exact_mut(stride)) {
            debug_assert_eq!(position.size(), size, "one size per forward call");
            write_planes(position, out);
        }
        self.batches += 1;
        self.positions += positions.len() as u64;
        match &mut self.engine {
            Engine::Native(native) => {
                native.forward(
                    positions.len(),
                    size.rows(),
                    size.cols(),
                    &self.planes,
                    &mut self.logits,
                    &mut self.values,
                );
            }
            Engine::Burn { net, device, pool } => {
                let shape = [positions.len(), INPUT_PLANES, size.rows(), size.cols()];
                let data = TensorData::new(std::mem::take(&mut self.planes), shape);
                let (logits, values) = pool.install(|| {
                    let (policy, value) = net.forward(Tensor::<4>::from_data(data, &*device));
                    (
                        policy.into_data().try_to_vec::<f32>().expect("f32 policy"),
                        value.into_data().try_to_vec::<f32>().expect("f32 value"),
                    )
                });
                (self.logits, self.values) = (logits, values);
            }
        }
        debug_assert_eq!(self.logits.len(), positions.len() * policy_len(size));
    }
}

impl Evaluator for NetEvaluator {
    fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
        let mut start = 0;
        while start < batch.len() {
            let size = batch.positions()[start].size();
            let end = start + batch.positions()[start..].iter().take_while(|p| p.size() == size).count();
            self.forward_into_buffers(&batch.positions()[start..end]);
            let per = policy_len(size);
            for i in 0..end - start {
                let position = batch.positions()[start + i];
                let value = self.values[i];
                position.legal_moves(&mut self.moves);
                let row = &self.logits[i * per..(i + 1) * per];
                let priors = batch.priors_mut();
                let first = priors.len();
                push_softmax(row, &self.moves, size, priors);
                check_outputs(&self.name, &position, value, &priors[first..])?;
                batch.finish_output(value);
            }
            start = end;
        }
        Ok(())
    }
}

/// Softmax of the logits of the legal moves only (illegal moves are masked
/// out before normalising), appended to `priors`.
pub fn push_softmax(logits: &[f32], moves: &MoveList, size: konane_rules::Size, priors: &mut Vec<f32>) {
    let first = priors.len();
    let max = moves.iter().map(|&m| logits[move_index(size, m)]).fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for &mv in moves {
        let p = (logits[move_index(size, mv)] - max).exp();
        total += p;
        priors.push(p);
    }
    for p in &mut priors[first..] {
        *p /= total;
    }
}
