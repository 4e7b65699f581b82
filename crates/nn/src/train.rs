//! One gradient step on a batch of self-play samples: policy cross-entropy
//! against the search's visit distribution, value mean squared error against
//! the game result, L2 through AdamW's decoupled weight decay.
//!
//! A hand-written loop (rather than burn's epoch-based learner) fits a
//! replay window that changes every iteration. The step runs on burn's
//! autodiff or on konane's own kernels ([`crate::native::train`]), as the
//! [`Backend`] says; both compute the same loss and optimizer update.

use std::path::Path;

use burn::module::Module;
use burn::optim::{AdamWConfig, GradientsParams, ModuleOptimizer, SgdConfig, momentum::MomentumConfig};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor, TensorData};
use konane_rules::sample::cycled_positions;
use konane_rules::{Move, MoveList, Position, Size};
use serde::{Deserialize, Serialize};

use crate::backend::Backend;
use crate::checkpoint::CheckpointError;
use crate::encoding::{INPUT_PLANES, index_move, move_index, policy_len, write_planes};
use crate::model::{Net, NetConfig};
use crate::native::train::NativeLearner;

/// A training example: a position, the target move distribution (legal
/// moves with probabilities summing to 1), the target value for the side
/// to move in [-1, 1], and the opponent's reply distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The position.
    pub position: Position,
    /// Target policy over legal moves.
    pub policy: Vec<(Move, f32)>,
    /// Target value for the side to move.
    pub value: f32,
    /// The search's distribution over the opponent's moves in the position
    /// the game went on to (probabilities summing to 1), the reply policy
    /// output's target; empty when there was none (the game's last move,
    /// or a sample from elsewhere than self-play).
    pub reply: Vec<(Move, f32)>,
}

/// `n` positions of `size` (from played games, [`cycled_positions`]) with a
/// legal move, each with a target spread unevenly over its moves and a value
/// of ±0.5: the fixed batch `konane bench-train` and the training bench
/// step on, shaped like a replay window's.
pub fn benchmark_batch(size: Size, n: usize) -> Vec<Sample> {
    cycled_positions(size, n)
        .into_iter()
        .enumerate()
        .filter_map(|(i, position)| {
            let moves = position.moves();
            let &first = moves.first()?;
            let weights: Vec<f32> = (0..moves.len()).map(|j| ((i + j) % 4) as f32 + 1.0).collect();
            let total: f32 = weights.iter().sum();
            let policy: Vec<_> = moves.iter().zip(&weights).map(|(&mv, w)| (mv, w / total)).collect();
            let value = if i % 2 == 0 { 0.5 } else { -0.5 };
            // A reply target like a real window's: over the next position's moves.
            let mut next = position;
            next.play_unchecked(first);
            let next = next.moves();
            let reply = next.iter().map(|&mv| (mv, 1.0 / next.len() as f32)).collect();
            Some(Sample { position, policy, value, reply })
        })
        .collect()
}

/// Which optimizer trains the network.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum OptimizerKind {
    /// AdamW (decoupled weight decay).
    Adamw,
    /// SGD with Nesterov momentum 0.9 and weight decay (AlphaZero's choice).
    Sgd,
}

/// What a [`Learner`] steps with: its optimizer and the loss's weighting.
/// The `[training.learner]` table of a training config.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LearnerConfig {
    /// Which optimizer.
    pub optimizer: OptimizerKind,
    /// L2 / decoupled weight decay.
    pub weight_decay: f32,
    /// Weight of the value loss against the policy loss.
    pub value_weight: f32,
    /// Weight of the soft policy loss against the policy loss, for a
    /// network with that output ([`crate::NetConfig::soft_policy`]). KataGo
    /// uses 8; on 6x6 at b4c48, 8 took the tower from the value head and
    /// cost strength, 1 did not
    /// (`docs/experiments/2026-12-05-soft-policy-6x6.md`).
    pub soft_policy_weight: f32,
    /// Weight of the reply policy loss against the policy loss, for a
    /// network with that output ([`crate::NetConfig::reply_policy`]);
    /// KataGo's 0.15.
    pub reply_policy_weight: f32,
}

impl Default for LearnerConfig {
    fn default() -> Self {
        LearnerConfig {
            optimizer: OptimizerKind::Adamw,
            weight_decay: 1e-4,
            value_weight: 1.0,
            soft_policy_weight: 1.0,
            reply_policy_weight: 0.15,
        }
    }
}

/// The power the soft policy target raises the visit distribution to
/// before normalising it again: KataGo's temperature of 4.
pub const SOFT_POLICY_POWER: f32 = 0.25;

/// Losses of one step (means over the batch).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Losses {
    /// Policy cross-entropy.
    pub policy: f32,
    /// Value mean squared error.
    pub value: f32,
    /// Mean entropy of the network's policy over legal moves.
    pub policy_entropy: f32,
    /// Mean entropy of the policy targets: the floor of the policy loss
    /// (loss minus this is the KL divergence the training can remove).
    pub target_entropy: f32,
    /// Soft policy cross-entropy (unweighted); 0 for a network without
    /// that output.
    #[serde(default)]
    pub soft_policy: f32,
    /// Reply policy cross-entropy (unweighted, a mean over every sample,
    /// those without a reply counting 0); 0 for a network without that
    /// output.
    #[serde(default)]
    pub reply_policy: f32,
}

/// A batch turned into what the step reads: input planes, each position's
/// legal moves (as [`move_index`] entries) with their targets, and values.
pub(crate) struct PreparedBatch {
    pub(crate) size: Size,
    /// `[n][INPUT_PLANES][cells]`.
    pub(crate) planes: Vec<f32>,
    /// Position `i`'s legal moves are `legal[starts[i]..starts[i + 1]]`.
    pub(crate) starts: Vec<usize>,
    pub(crate) legal: Vec<u32>,
    /// The target probability of each legal move.
    pub(crate) targets: Vec<f32>,
    /// The soft policy target of each legal move: the targets raised to
    /// [`SOFT_POLICY_POWER`], summing to 1 over each position's moves;
    /// empty unless asked for.
    pub(crate) soft_targets: Vec<f32>,
    /// Every policy index on the board, the moves the reply policy's
    /// softmax runs over (which of them is legal depends on the move the
    /// game went on with, which a sample does not keep); empty unless
    /// asked for.
    pub(crate) reply_moves: Vec<u32>,
    /// Position `i`'s reply target over `reply_moves` is
    /// `reply_targets[i * reply_moves.len()..][..reply_moves.len()]`, all
    /// 0 without a reply.
    pub(crate) reply_targets: Vec<f32>,
    pub(crate) values: Vec<f32>,
    /// Sum over the batch of the targets' entropies.
    pub(crate) target_entropy: f64,
}

impl PreparedBatch {
    /// # Panics
    /// On an empty batch or mixed board sizes.
    #[cfg(test)]
    pub(crate) fn new(batch: &[Sample]) -> PreparedBatch {
        assert!(!batch.is_empty(), "empty training batch");
        let size = batch[0].position.size();
        assert!(batch.iter().all(|s| s.position.size() == size), "one board size per batch");
        let every_output = NetConfig::tiny().with_soft_policy(true).with_reply_policy(true);
        PreparedBatch::of_size(size, batch, &every_output)
    }

    /// `batch` split by board size into one batch per size, in the order
    /// the sizes first appear (each keeping its samples' order), with the
    /// targets of the training-only outputs `net` has.
    ///
    /// # Panics
    /// On an empty batch.
    pub(crate) fn by_size(batch: &[Sample], net: &NetConfig) -> Vec<PreparedBatch> {
        assert!(!batch.is_empty(), "empty training batch");
        let mut sizes: Vec<Size> = Vec::new();
        for sample in batch {
            if !sizes.contains(&sample.position.size()) {
                sizes.push(sample.position.size());
            }
        }
        sizes.into_iter().map(|size| PreparedBatch::of_size(size, batch, net)).collect()
    }

    /// The samples of `batch` whose board is `size`, in order.
    fn of_size(size: Size, batch: &[Sample], net: &NetConfig) -> PreparedBatch {
        let samples = || batch.iter().filter(move |s| s.position.size() == size);
        let n = samples().count();
        let cells = size.cells();
        let mut data = PreparedBatch {
            size,
            planes: vec![0.0; n * INPUT_PLANES * cells],
            starts: vec![0],
            legal: Vec::new(),
            targets: Vec::new(),
            soft_targets: Vec::new(),
            reply_moves: if net.reply_policy {
                (0..policy_len(size) as u32).filter(|&i| index_move(size, i as usize).is_some()).collect()
            } else {
                Vec::new()
            },
            reply_targets: Vec::new(),
            values: Vec::with_capacity(n),
            target_entropy: 0.0,
        };
        let mut moves = MoveList::new();
        for (sample, planes) in samples().zip(data.planes.chunks_exact_mut(INPUT_PLANES * cells)) {
            write_planes(&sample.position, planes);
            sample.position.legal_moves(&mut moves);
            for &mv in &moves {
                data.legal.push(move_index(size, mv) as u32);
                let target = sample.policy.iter().find(|(m, _)| *m == mv).map_or(0.0, |&(_, p)| p);
                data.targets.push(target);
            }
            if net.soft_policy {
                let start = data.soft_targets.len();
                data.soft_targets.extend(data.targets[start..].iter().map(|t| t.max(0.0).powf(SOFT_POLICY_POWER)));
                let flattened = &mut data.soft_targets[start..];
                let sum: f32 = flattened.iter().sum();
                if sum > 0.0 {
                    flattened.iter_mut().for_each(|t| *t /= sum);
                }
            }
            data.starts.push(data.legal.len());
            if net.reply_policy {
                let start = data.reply_targets.len();
                data.reply_targets.resize(start + data.reply_moves.len(), 0.0);
                for &(mv, p) in &sample.reply {
                    let index = move_index(size, mv) as u32;
                    let at = data.reply_moves.binary_search(&index).expect("a move's index is on the board");
                    data.reply_targets[start + at] += p;
                }
            }
            for &(_, p) in &sample.policy {
                if p > 0.0 {
                    data.target_entropy -= f64::from(p) * f64::from(p).ln();
                }
            }
            data.values.push(sample.value);
        }
        data
    }

    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// As burn tensors on `device`.
    pub(crate) fn tensors(&self, device: &Device) -> BatchTensors {
        let (n, per) = (self.len(), policy_len(self.size));
        let soft = !self.soft_targets.is_empty();
        let reply = !self.reply_moves.is_empty();
        let mut targets = vec![0.0f32; n * per];
        let mut soft_targets = vec![0.0f32; if soft { n * per } else { 0 }];
        let mut mask = vec![-1e9f32; n * per];
        for i in 0..n {
            for j in self.starts[i]..self.starts[i + 1] {
                let at = i * per + self.legal[j] as usize;
                mask[at] = 0.0;
                targets[at] = self.targets[j];
                if soft {
                    soft_targets[at] = self.soft_targets[j];
                }
            }
        }
        let shape = [n, INPUT_PLANES, self.size.rows(), self.size.cols()];
        let matrix = |values: Vec<f32>| Tensor::<2>::from_data(TensorData::new(values, [n, per]), device);
        let reply = reply.then(|| {
            let (mut targets, mut mask) = (vec![0.0f32; n * per], vec![-1e9f32; n * per]);
            let rows = self.reply_targets.chunks_exact(self.reply_moves.len());
            for (i, row) in rows.enumerate() {
                for (&index, &p) in self.reply_moves.iter().zip(row) {
                    (targets[i * per + index as usize], mask[i * per + index as usize]) = (p, 0.0);
                }
            }
            (matrix(targets), matrix(mask))
        });
        BatchTensors {
            planes: Tensor::<4>::from_data(TensorData::new(self.planes.clone(), shape), device),
            targets: matrix(targets),
            soft_targets: soft.then(|| matrix(soft_targets)),
            reply,
            mask: matrix(mask),
            values: Tensor::<1>::from_data(TensorData::new(self.values.clone(), [n]), device),
        }
    }
}

/// A [`PreparedBatch`] as burn tensors.
pub(crate) struct BatchTensors {
    /// `[n, INPUT_PLANES, rows, cols]`.
    pub(crate) planes: Tensor<4>,
    /// `[n, policy_len]`: the policy targets, 0 off the legal moves.
    pub(crate) targets: Tensor<2>,
    /// `[n, policy_len]`: the soft policy targets, if prepared.
    pub(crate) soft_targets: Option<Tensor<2>>,
    /// `[n, policy_len]` twice, if prepared: the reply targets and their
    /// mask (0 on the board's moves, -1e9 for the rest).
    pub(crate) reply: Option<(Tensor<2>, Tensor<2>)>,
    /// `[n, policy_len]`: 0 for legal moves, -1e9 for the rest, added to
    /// the logits before the softmax.
    pub(crate) mask: Tensor<2>,
    /// `[n]`: the value targets.
    pub(crate) values: Tensor<1>,
}

/// The network with its optimizer state, on the training engine its
/// [`Backend`] names.
pub struct Learner {
    engine: Engine,
    /// The network's shape: which training-only outputs its batches carry
    /// targets for.
    shape: NetConfig,
}

enum Engine {
    /// burn's autodiff on flex, ndarray or a GPU backend.
    Burn(Box<BurnLearner>),
    /// konane's own kernels ([`NativeLearner`]).
    Native(Box<NativeLearner>),
}

impl Learner {
    /// Trains `net` on `backend`'s training engine: the native kernels for
    /// [`Backend::Native`], burn's autodiff for the others.
    pub fn new(net: Net, backend: Backend, settings: LearnerConfig) -> Learner {
        let shape = net.config();
        let engine = match backend {
            Backend::Native => Engine::Native(Box::new(NativeLearner::new(&net, settings))),
            Backend::Flex | Backend::Ndarray | Backend::Wgpu | Backend::Cuda => {
                Engine::Burn(Box::new(BurnLearner::new(net, backend, settings)))
            }
        };
        Learner { engine, shape }
    }

    /// Threads each step may use. The native engine splits a batch over
    /// them, with the same result for any count; burn's manages its own.
    pub fn set_threads(&mut self, threads: usize) {
        if let Engine::Native(native) = &mut self.engine {
            native.set_threads(threads);
        }
    }

    /// A copy of the network for inference on `device` (no autodiff).
    pub fn inference_net(&self, device: &Device) -> Net {
        match &self.engine {
            Engine::Burn(burn) => burn.inference_net(device),
            Engine::Native(native) => native.net().to_device(device),
        }
    }

    /// One step of gradient descent at learning rate `lr` on `batch`,
    /// returning the losses before the step. The loss is the mean over the
    /// batch's samples; a batch of several board sizes runs each size's
    /// samples through the network on their own (a convolution's input is
    /// one board shape) and sums the gradients, so no board is padded.
    ///
    /// # Panics
    /// On an empty batch.
    pub fn step(&mut self, batch: &[Sample], lr: f64) -> Losses {
        let groups = PreparedBatch::by_size(batch, &self.shape);
        match &mut self.engine {
            Engine::Burn(burn) => burn.step(&groups, lr),
            Engine::Native(native) => native.step(&groups, lr),
        }
    }

    /// Saves the optimizer state (for exact resume) to `path`.
    ///
    /// # Errors
    /// The file could not be written.
    pub fn save_optimizer(&self, path: &Path) -> Result<(), CheckpointError> {
        match &self.engine {
            Engine::Burn(burn) => burn.save_optimizer(path),
            Engine::Native(native) => native.save_optimizer(path),
        }
    }

    /// Loads optimizer state saved by [`Learner::save_optimizer`] on the
    /// same engine; the network must already be the one it was saved with.
    ///
    /// # Errors
    /// Missing, unreadable or foreign file.
    pub fn load_optimizer(&mut self, path: &Path) -> Result<(), CheckpointError> {
        match &mut self.engine {
            Engine::Burn(burn) => burn.load_optimizer(path),
            Engine::Native(native) => native.load_optimizer(path),
        }
    }
}

/// The loss sums of `net` on a batch, each `[1]`: the policy
/// cross-entropy, the soft and reply policy cross-entropies (0 without
/// their output) and the value squared error, then the entropy of the
/// network's legal-move distribution (for the metrics).
pub(crate) fn loss_sums(net: &Net, batch: BatchTensors) -> ([Tensor<1>; 4], Tensor<1>) {
    let BatchTensors { planes, targets, soft_targets, reply, mask, values } = batch;
    let outputs = net.forward_outputs(planes, soft_targets.is_some() || reply.is_some());
    let cross_entropy = |targets: Tensor<2>, logits: Tensor<2>, mask: Tensor<2>| {
        (targets * log_softmax(logits + mask, 1)).sum_dim(1).neg().sum()
    };
    let log_probs = log_softmax(outputs.policy + mask.clone(), 1);
    let policy = (targets * log_probs.clone()).sum_dim(1).neg().sum();
    let soft = match (outputs.soft_policy, soft_targets) {
        (Some(logits), Some(targets)) => cross_entropy(targets, logits, mask),
        _ => policy.zeros_like(),
    };
    let reply = match (outputs.reply_policy, reply) {
        (Some(logits), Some((targets, mask))) => cross_entropy(targets, logits, mask),
        _ => policy.zeros_like(),
    };
    let value = (outputs.value - values).powf_scalar(2.0).sum();
    let entropy = (log_probs.clone().exp() * log_probs.clamp_min(-1e4)).sum_dim(1).neg().sum();
    ([policy, soft, reply, value], entropy)
}

/// The network on burn's autodiff device with burn's optimizer.
struct BurnLearner {
    net: Option<Net>,
    optimizer: ModuleOptimizer,
    settings: LearnerConfig,
    device: Device,
}

impl BurnLearner {
    fn new(net: Net, backend: Backend, settings: LearnerConfig) -> BurnLearner {
        let device = backend.autodiff_device();
        let optimizer = match settings.optimizer {
            OptimizerKind::Adamw => AdamWConfig::new().with_weight_decay(settings.weight_decay).init(),
            OptimizerKind::Sgd => SgdConfig::new()
                .with_weight_decay(Some(burn::optim::decay::WeightDecayConfig::new(settings.weight_decay)))
                .with_momentum(Some(MomentumConfig::new().with_nesterov(true)))
                .init(),
        };
        // `train()` turns gradient tracking on for the parameters on the
        // autodiff device (a plain device move does not).
        let net = net.to_device(&backend.device()).train();
        BurnLearner { net: Some(net), optimizer, settings, device }
    }

    fn inference_net(&self, device: &Device) -> Net {
        self.net.as_ref().expect("net present between steps").valid().to_device(device)
    }

    fn step(&mut self, groups: &[PreparedBatch], lr: f64) -> Losses {
        let net = self.net.take().expect("net present between steps");
        let n: usize = groups.iter().map(PreparedBatch::len).sum();
        // Sums over each size's samples; one backward pass of their mean.
        let mut sums: Option<[Tensor<1>; 5]> = None;
        for data in groups {
            let ([policy, soft, reply, value], entropy) = loss_sums(&net, data.tensors(&self.device));
            let group = [policy, soft, reply, value, entropy.detach()];
            sums = Some(match sums {
                None => group,
                Some(sums) => {
                    let mut group = group.into_iter();
                    sums.map(|sum| sum + group.next().expect("five sums"))
                }
            });
        }
        let scale = 1.0 / n as f64;
        let [policy_loss, soft_loss, reply_loss, value_loss, entropy] =
            sums.expect("a group").map(|sum| sum.mul_scalar(scale));
        let loss = policy_loss.clone()
            + value_loss.clone().mul_scalar(self.settings.value_weight)
            + soft_loss.clone().mul_scalar(self.settings.soft_policy_weight)
            + reply_loss.clone().mul_scalar(self.settings.reply_policy_weight);
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        self.net = Some(self.optimizer.step(lr, net, grads));

        let scalar = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().expect("f32")[0];
        let target_entropy: f64 = groups.iter().map(|data| data.target_entropy).sum();
        Losses {
            policy: scalar(policy_loss),
            value: scalar(value_loss),
            policy_entropy: scalar(entropy),
            target_entropy: (target_entropy * scale) as f32,
            soft_policy: scalar(soft_loss),
            reply_policy: scalar(reply_loss),
        }
    }

    fn save_optimizer(&self, path: &Path) -> Result<(), CheckpointError> {
        self.optimizer.save(path).map_err(|e| CheckpointError::Invalid {
            path: path.to_path_buf(),
            reason: format!("saving optimizer: {e}"),
        })
    }

    fn load_optimizer(&mut self, path: &Path) -> Result<(), CheckpointError> {
        let optimizer = std::mem::replace(&mut self.optimizer, AdamWConfig::new().init());
        self.optimizer = optimizer.load(path).map_err(|e| CheckpointError::Invalid {
            path: path.to_path_buf(),
            reason: format!("loading optimizer: {e}"),
        })?;
        Ok(())
    }
}
