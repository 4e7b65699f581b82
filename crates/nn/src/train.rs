//! One gradient step on a batch of self-play samples: policy cross-entropy
//! against the search's visit distribution, value mean squared error against
//! the game result, L2 through AdamW's decoupled weight decay.
//!
//! A hand-written loop (rather than burn's epoch-based learner) fits a
//! replay window that changes every iteration.

use std::path::Path;

use burn::module::Module;
use burn::optim::{AdamWConfig, GradientsParams, ModuleOptimizer, SgdConfig, momentum::MomentumConfig};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor, TensorData};
use konane_rules::{Move, MoveList, Position};
use serde::{Deserialize, Serialize};

use crate::backend::Backend;
use crate::checkpoint::CheckpointError;
use crate::encoding::{INPUT_PLANES, move_index, policy_len, write_planes};
use crate::model::Net;

/// A training example: a position, the target move distribution (legal
/// moves with probabilities summing to 1) and the target value for the side
/// to move in [-1, 1].
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The position.
    pub position: Position,
    /// Target policy over legal moves.
    pub policy: Vec<(Move, f32)>,
    /// Target value for the side to move.
    pub value: f32,
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
}

impl Default for LearnerConfig {
    fn default() -> Self {
        LearnerConfig { optimizer: OptimizerKind::Adamw, weight_decay: 1e-4, value_weight: 1.0 }
    }
}

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
}

/// The network on the autodiff device with its optimizer state.
pub struct Learner {
    net: Option<Net>,
    optimizer: ModuleOptimizer,
    settings: LearnerConfig,
    device: Device,
    moves: MoveList,
}

impl Learner {
    /// Moves `net` to the training device of `backend`.
    pub fn new(net: Net, backend: Backend, settings: LearnerConfig) -> Learner {
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
        Learner { net: Some(net), optimizer, settings, device, moves: MoveList::new() }
    }

    /// A copy of the network for inference on `device` (no autodiff).
    pub fn inference_net(&self, device: &Device) -> Net {
        self.net.as_ref().expect("net present between steps").valid().to_device(device)
    }

    /// One step of gradient descent at learning rate `lr` on `batch` (all of
    /// one board size), returning the losses before the step.
    ///
    /// # Panics
    /// On an empty batch or mixed board sizes.
    pub fn step(&mut self, batch: &[Sample], lr: f64) -> Losses {
        assert!(!batch.is_empty(), "empty training batch");
        let size = batch[0].position.size();
        let (cells, per) = (size.cells(), policy_len(size));
        let n = batch.len();
        let mut planes = vec![0.0f32; n * INPUT_PLANES * cells];
        let mut targets = vec![0.0f32; n * per];
        // Illegal moves get a large negative logit offset before the softmax.
        let mut mask = vec![-1e9f32; n * per];
        let mut values = Vec::with_capacity(n);
        let mut target_entropy = 0.0f64;
        for (i, sample) in batch.iter().enumerate() {
            assert_eq!(sample.position.size(), size, "one board size per batch");
            write_planes(&sample.position, &mut planes[i * INPUT_PLANES * cells..(i + 1) * INPUT_PLANES * cells]);
            sample.position.legal_moves(&mut self.moves);
            for &mv in &self.moves {
                mask[i * per + move_index(size, mv)] = 0.0;
            }
            for &(mv, p) in &sample.policy {
                targets[i * per + move_index(size, mv)] = p;
                if p > 0.0 {
                    target_entropy -= f64::from(p) * f64::from(p).ln();
                }
            }
            values.push(sample.value);
        }
        let device = &self.device;
        let input =
            Tensor::<4>::from_data(TensorData::new(planes, [n, INPUT_PLANES, size.rows(), size.cols()]), device);
        let targets = Tensor::<2>::from_data(TensorData::new(targets, [n, per]), device);
        let mask = Tensor::<2>::from_data(TensorData::new(mask, [n, per]), device);
        let value_targets = Tensor::<1>::from_data(TensorData::new(values, [n]), device);

        let net = self.net.take().expect("net present between steps");
        let (logits, value) = net.forward(input);
        let log_probs = log_softmax(logits + mask, 1);
        let policy_loss = (targets * log_probs.clone()).sum_dim(1).neg().mean();
        let value_loss = (value - value_targets).powf_scalar(2.0).mean();
        let loss = policy_loss.clone() + value_loss.clone().mul_scalar(self.settings.value_weight);
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        self.net = Some(self.optimizer.step(lr, net, grads));

        // Entropy of the legal-move distribution, for the metrics.
        let probs = log_probs.clone().exp();
        let entropy = (probs * log_probs.clamp_min(-1e4)).sum_dim(1).neg().mean();
        let scalar = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().expect("f32")[0];
        Losses {
            policy: scalar(policy_loss),
            value: scalar(value_loss),
            policy_entropy: scalar(entropy),
            target_entropy: (target_entropy / n as f64) as f32,
        }
    }

    /// Saves the optimizer state (for exact resume) to `path`.
    ///
    /// # Errors
    /// burn could not write the file.
    pub fn save_optimizer(&self, path: &Path) -> Result<(), CheckpointError> {
        self.optimizer.save(path).map_err(|e| CheckpointError::Invalid {
            path: path.to_path_buf(),
            reason: format!("saving optimizer: {e}"),
        })
    }

    /// Loads optimizer state saved by [`Learner::save_optimizer`]; the
    /// network must already be the one it was saved with.
    ///
    /// # Errors
    /// Missing or unreadable file.
    pub fn load_optimizer(&mut self, path: &Path) -> Result<(), CheckpointError> {
        let optimizer = std::mem::replace(&mut self.optimizer, AdamWConfig::new().init());
        self.optimizer = optimizer.load(path).map_err(|e| CheckpointError::Invalid {
            path: path.to_path_buf(),
            reason: format!("loading optimizer: {e}"),
        })?;
        Ok(())
    }
}
