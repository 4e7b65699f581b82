//! The policy/value network: a residual convolutional tower with a fully
//! convolutional policy head and a globally pooled value head, so one set of
//! weights evaluates every board size.
//!
//! The tower has no batch normalisation: each residual branch is scaled by
//! a learned gate that starts at zero (ReZero), so a fresh network is the
//! identity plus its heads and trains stably with Adam. That keeps inference
//! identical between training and play (no running statistics to go stale,
//! see `docs/burn-0.22.md`) and saves the normalisation passes.

use std::ops::RangeInclusive;

use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::{relu, tanh};
use burn::tensor::{Device, Tensor};

use serde::{Deserialize, Serialize};

use crate::encoding::{INPUT_PLANES, MOVE_KINDS};

/// Shape of the network: the `[network]` table of a training config, and
/// saved in every checkpoint header, so a checkpoint rebuilds its own
/// network. The default, b4c48, is the shape of the shipped networks and of
/// `net:init`, `bench-net` and `train` alike.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetConfig {
    /// Residual blocks in the tower.
    pub blocks: usize,
    /// Channels of the tower.
    pub channels: usize,
    /// Channels of the policy head's hidden convolution.
    pub policy_channels: usize,
    /// Channels pooled by the value head.
    pub value_channels: usize,
    /// Width of the value head's hidden layer.
    pub value_hidden: usize,
    /// A second policy output beside the first, trained on the search's
    /// visit distribution flattened to the power 1/4 (KataGo's auxiliary
    /// soft policy target): its gradient reaches the shared layers from
    /// every visited move, not only the few the sharp target ranks. Only
    /// training reads it; play never computes it. Written to a checkpoint
    /// header only when on, so networks without it keep their files.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub soft_policy: bool,
    /// A third policy output predicting the opponent's reply: trained on
    /// the next position's search visits (KataGo's auxiliary opponent
    /// policy target), so the shared layers also learn what the move
    /// allows. Training only, like [`NetConfig::soft_policy`], and written
    /// to a header only when on.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reply_policy: bool,
}

impl Default for NetConfig {
    fn default() -> NetConfig {
        NetConfig {
            blocks: 4,
            channels: 48,
            policy_channels: 32,
            value_channels: 32,
            value_hidden: 64,
            soft_policy: false,
            reply_policy: false,
        }
    }
}

/// A network shape outside the sizes this project builds.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("network.{field} = {value}: must be in {start}..={end}")]
pub struct ShapeError {
    /// The field of [`NetConfig`].
    pub field: &'static str,
    /// The value given.
    pub value: usize,
    /// Smallest allowed.
    pub start: usize,
    /// Largest allowed.
    pub end: usize,
}

impl NetConfig {
    /// The default shape ([`NetConfig::default`]).
    pub fn new() -> NetConfig {
        NetConfig::default()
    }

    /// b1c8 with four-channel heads: the smallest network that still has
    /// every layer, which tests train, save and serve in milliseconds.
    pub fn tiny() -> NetConfig {
        NetConfig::new()
            .with_blocks(1)
            .with_channels(8)
            .with_policy_channels(4)
            .with_value_channels(4)
            .with_value_hidden(8)
    }

    /// With `blocks` residual blocks.
    pub fn with_blocks(self, blocks: usize) -> NetConfig {
        NetConfig { blocks, ..self }
    }

    /// With `channels` in the tower.
    pub fn with_channels(self, channels: usize) -> NetConfig {
        NetConfig { channels, ..self }
    }

    /// With `policy_channels` in the policy head.
    pub fn with_policy_channels(self, policy_channels: usize) -> NetConfig {
        NetConfig { policy_channels, ..self }
    }

    /// With `value_channels` pooled by the value head.
    pub fn with_value_channels(self, value_channels: usize) -> NetConfig {
        NetConfig { value_channels, ..self }
    }

    /// With a value head hidden layer `value_hidden` wide.
    pub fn with_value_hidden(self, value_hidden: usize) -> NetConfig {
        NetConfig { value_hidden, ..self }
    }

    /// With or without the soft policy output ([`NetConfig::soft_policy`]).
    pub fn with_soft_policy(self, soft_policy: bool) -> NetConfig {
        NetConfig { soft_policy, ..self }
    }

    /// With or without the reply policy output ([`NetConfig::reply_policy`]).
    pub fn with_reply_policy(self, reply_policy: bool) -> NetConfig {
        NetConfig { reply_policy, ..self }
    }

    /// This shape with `other`'s training-only outputs (the soft and reply
    /// policies): what a network of this shape becomes when a run that
    /// wants `other` starts from it.
    pub fn with_training_outputs_of(self, other: &NetConfig) -> NetConfig {
        NetConfig { soft_policy: other.soft_policy, reply_policy: other.reply_policy, ..self }
    }

    /// Allowed residual blocks: deeper towers than 40 do not train on a CPU.
    pub const BLOCKS: RangeInclusive<usize> = 0..=40;
    /// Allowed tower channels (b40c512 holds 190 M weights, 0.75 GB).
    pub const CHANNELS: RangeInclusive<usize> = 1..=512;
    /// Allowed policy and value head channels.
    pub const HEAD_CHANNELS: RangeInclusive<usize> = 1..=512;
    /// Allowed width of the value head's hidden layer.
    pub const VALUE_HIDDEN: RangeInclusive<usize> = 1..=4096;

    /// Checks every field against its range, before anything is allocated
    /// for it (a config key, a file header, a command-line option).
    ///
    /// # Errors
    /// The first field out of range.
    pub fn validate(&self) -> Result<(), ShapeError> {
        for (field, value, range) in [
            ("blocks", self.blocks, Self::BLOCKS),
            ("channels", self.channels, Self::CHANNELS),
            ("policy_channels", self.policy_channels, Self::HEAD_CHANNELS),
            ("value_channels", self.value_channels, Self::HEAD_CHANNELS),
            ("value_hidden", self.value_hidden, Self::VALUE_HIDDEN),
        ] {
            if !range.contains(&value) {
                return Err(ShapeError { field, value, start: *range.start(), end: *range.end() });
            }
        }
        Ok(())
    }

    /// Weights and biases of the network, all `f32`.
    pub fn parameters(&self) -> u64 {
        let (c, p, v, h) =
            (self.channels as u64, self.policy_channels as u64, self.value_channels as u64, self.value_hidden as u64);
        let conv = |from: u64, to: u64, kernel: u64| kernel * kernel * from * to + to;
        conv(INPUT_PLANES as u64, c, 3)
            + self.blocks as u64 * (2 * conv(c, c, 3) + 1)
            + conv(c, p, 3)
            + conv(p, MOVE_KINDS as u64, 1) * (1 + u64::from(self.soft_policy) + u64::from(self.reply_policy))
            + conv(c, v, 1)
            + (2 * v * h + h)
            + (h + 1)
    }

    /// `b6c64`-style name.
    pub fn name(&self) -> String {
        format!("b{}c{}", self.blocks, self.channels)
    }

    /// Multiply-adds of one forward pass of play on a `rows` x `cols` board
    /// (weights only; biases, activations and pooling are a rounding error;
    /// the training-only outputs are not computed in play). Turns
    /// positions/s into FLOP/s, so speeds compare across machines, nets and a
    /// core's own matrix-multiply ceiling (`konane bench-net`).
    pub fn multiply_adds(&self, rows: usize, cols: usize) -> u64 {
        let cells = (rows * cols) as u64;
        let (c, p, v) = (self.channels as u64, self.policy_channels as u64, self.value_channels as u64);
        let per_cell = 9 * INPUT_PLANES as u64 * c      // stem
            + self.blocks as u64 * 2 * 9 * c * c         // residual tower
            + 9 * c * p + p * MOVE_KINDS as u64          // policy head
            + c * v; // value head's 1x1 convolution
        cells * per_cell + 2 * v * self.value_hidden as u64 + self.value_hidden as u64
    }

    /// Builds a network with fresh weights on `device` (burn seeds its
    /// initialisers from the device's seed; see [`crate::init_net`]).
    pub fn init(&self, device: &Device) -> Net {
        let conv = |from: usize, to: usize, kernel: usize| {
            Conv2dConfig::new([from, to], [kernel, kernel])
                .with_padding(if kernel == 3 { PaddingConfig2d::Same } else { PaddingConfig2d::Valid })
                .init(device)
        };
        Net {
            stem: conv(INPUT_PLANES, self.channels, 3),
            blocks: (0..self.blocks)
                .map(|_| ResidualBlock {
                    first: conv(self.channels, self.channels, 3),
                    second: conv(self.channels, self.channels, 3),
                    gate: Param::from_tensor(Tensor::zeros([1], device)),
                })
                .collect(),
            policy_hidden: conv(self.channels, self.policy_channels, 3),
            policy_out: conv(self.policy_channels, MOVE_KINDS, 1),
            policy_soft: self.soft_policy.then(|| conv(self.policy_channels, MOVE_KINDS, 1)),
            policy_reply: self.reply_policy.then(|| conv(self.policy_channels, MOVE_KINDS, 1)),
            value_conv: conv(self.channels, self.value_channels, 1),
            value_hidden: LinearConfig::new(2 * self.value_channels, self.value_hidden).init(device),
            value_out: LinearConfig::new(self.value_hidden, 1).init(device),
        }
    }
}

/// `x + gate * conv(relu(conv(x)))`, then ReLU.
#[derive(Module, Debug)]
pub struct ResidualBlock {
    pub(crate) first: Conv2d,
    pub(crate) second: Conv2d,
    pub(crate) gate: Param<Tensor<1>>,
}

impl ResidualBlock {
    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let branch = self.second.forward(relu(self.first.forward(x.clone())));
        let gate = self.gate.val().reshape([1, 1, 1, 1]);
        relu(x + branch * gate)
    }
}

/// The network; see the module documentation.
#[derive(Module, Debug)]
pub struct Net {
    pub(crate) stem: Conv2d,
    pub(crate) blocks: Vec<ResidualBlock>,
    pub(crate) policy_hidden: Conv2d,
    pub(crate) policy_out: Conv2d,
    /// The soft policy output ([`NetConfig::soft_policy`]), if trained.
    pub(crate) policy_soft: Option<Conv2d>,
    /// The reply policy output ([`NetConfig::reply_policy`]), if trained.
    pub(crate) policy_reply: Option<Conv2d>,
    pub(crate) value_conv: Conv2d,
    pub(crate) value_hidden: Linear,
    pub(crate) value_out: Linear,
}

impl Net {
    /// The shape of this network, read off its weights: what a checkpoint
    /// header must say about it.
    pub fn config(&self) -> NetConfig {
        let out = |conv: &Conv2d| conv.weight.dims()[0];
        NetConfig {
            blocks: self.blocks.len(),
            channels: out(&self.stem),
            policy_channels: out(&self.policy_hidden),
            value_channels: out(&self.value_conv),
            value_hidden: self.value_hidden.weight.dims()[1],
            soft_policy: self.policy_soft.is_some(),
            reply_policy: self.policy_reply.is_some(),
        }
    }

    /// This network with the training-only outputs `wanted` names (the
    /// soft and reply policies): an output it lacks gets fresh weights
    /// (drawn by [`crate::init_net`] from `seed`), one `wanted` lacks is
    /// dropped, and every other weight is kept, so a run may start from a
    /// network of other settings.
    pub fn with_training_outputs_of(mut self, wanted: &NetConfig, device: &Device, seed: u64) -> Net {
        let add_soft = wanted.soft_policy && self.policy_soft.is_none();
        let add_reply = wanted.reply_policy && self.policy_reply.is_none();
        if add_soft || add_reply {
            let shape = self.config().with_blocks(0).with_soft_policy(add_soft).with_reply_policy(add_reply);
            let fresh = crate::init_net(&shape, device, seed);
            self.policy_soft = self.policy_soft.or(fresh.policy_soft);
            self.policy_reply = self.policy_reply.or(fresh.policy_reply);
        }
        self.policy_soft = self.policy_soft.filter(|_| wanted.soft_policy);
        self.policy_reply = self.policy_reply.filter(|_| wanted.reply_policy);
        self
    }

    /// This network with at least `blocks` residual blocks: the blocks it
    /// lacks are appended after its own, with fresh weights (drawn by
    /// [`crate::init_net`] from `seed`) and their gate at zero. Each new block
    /// is then the identity (`relu(x + 0 * branch)` of an `x` that is already
    /// a ReLU's output), so the deeper network computes exactly what this one
    /// did, and a run can grow a trained network instead of starting over
    /// (Net2Net's idea, which the ReZero gate makes exact).
    pub fn deepened_to(mut self, blocks: usize, device: &Device, seed: u64) -> Net {
        let have = self.blocks.len();
        if blocks > have {
            let shape = self.config().with_blocks(blocks - have).with_soft_policy(false).with_reply_policy(false);
            self.blocks.extend(crate::init_net(&shape, device, seed).blocks);
        }
        self
    }

    /// Draws every lazily initialised parameter now (see [`crate::init_net`]).
    pub(crate) fn materialize(&self) {
        struct Touch;
        impl ModuleVisitor for Touch {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                let _ = param.val();
            }
        }
        self.visit(&mut Touch);
    }

    /// Every float parameter in burn's visiting order: its path in the
    /// module (`blocks.2.first.weight`), its shape and its values.
    pub(crate) fn parameters(&self) -> Vec<(String, Vec<usize>, Vec<f32>)> {
        #[derive(Default)]
        struct Reader {
            path: Vec<String>,
            out: Vec<(String, Vec<usize>, Vec<f32>)>,
        }
        impl ModuleVisitor for Reader {
            fn enter_module(&mut self, name: &str, _: &str) {
                self.path.push(name.to_string());
            }
            fn exit_module(&mut self, _: &str, _: &str) {
                self.path.pop();
            }
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                let tensor = param.val();
                let shape = tensor.dims().to_vec();
                let values = tensor.into_data().try_to_vec::<f32>().expect("f32 parameters");
                self.out.push((self.path.join("."), shape, values));
            }
        }
        let mut reader = Reader::default();
        self.visit(&mut reader);
        reader.out
    }

    /// The first parameter holding a NaN or an infinity, by its path in
    /// the module (`blocks.2.first.weight`); `None` if every one is finite.
    /// A diverged training step shows here before any output does.
    pub fn non_finite_parameter(&self) -> Option<String> {
        self.parameters()
            .into_iter()
            .find(|(_, _, values)| !values.iter().all(|x| x.is_finite()))
            .map(|(path, ..)| path)
    }

    /// `planes`: `[batch, INPUT_PLANES, rows, cols]`, all of one board size.
    /// Returns policy logits `[batch, MOVE_KINDS * rows * cols]` (indexed as
    /// [`crate::encoding::move_index`]) and values `[batch]` in (-1, 1) for
    /// the side to move.
    pub fn forward(&self, planes: Tensor<4>) -> (Tensor<2>, Tensor<1>) {
        let outputs = self.forward_outputs(planes, false);
        (outputs.policy, outputs.value)
    }

    /// [`Net::forward`] with the training-only outputs as well when
    /// `training` (each `None` without that output), for training.
    pub(crate) fn forward_outputs(&self, planes: Tensor<4>, training: bool) -> Outputs {
        let [batch, _, rows, cols] = planes.dims();
        let mut x = relu(self.stem.forward(planes));
        for block in &self.blocks {
            x = block.forward(x);
        }
        // [batch, MOVE_KINDS, rows, cols] → [batch, MOVE_KINDS * rows * cols]
        let hidden = relu(self.policy_hidden.forward(x.clone()));
        let flat = |logits: Tensor<4>| logits.reshape([batch, MOVE_KINDS * rows * cols]);
        let extra =
            |conv: &Option<Conv2d>| conv.as_ref().filter(|_| training).map(|conv| flat(conv.forward(hidden.clone())));
        let (soft_policy, reply_policy) = (extra(&self.policy_soft), extra(&self.policy_reply));
        let policy = flat(self.policy_out.forward(hidden));
        // Global mean and max pooling over the board, as KataGo does.
        let v = relu(self.value_conv.forward(x));
        let channels = v.dims()[1];
        let v = v.reshape([batch, channels, rows * cols]);
        let mean = v.clone().mean_dim(2).reshape([batch, channels]);
        let max = v.max_dim(2).reshape([batch, channels]);
        let pooled = Tensor::cat(vec![mean, max], 1);
        let value = self.value_out.forward(relu(self.value_hidden.forward(pooled)));
        Outputs { policy, soft_policy, reply_policy, value: tanh(value).reshape([batch]) }
    }
}

/// What [`Net::forward_outputs`] computes: logits `[batch, policy_len]`
/// and values `[batch]`.
pub(crate) struct Outputs {
    pub(crate) policy: Tensor<2>,
    pub(crate) soft_policy: Option<Tensor<2>>,
    pub(crate) reply_policy: Option<Tensor<2>>,
    pub(crate) value: Tensor<1>,
}
