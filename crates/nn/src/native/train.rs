//! Training on konane's own kernels: the forward pass of [`Net`] that keeps
//! what the backward pass needs, the backward pass itself, and AdamW or
//! SGD over the weights, on one or more threads.
//!
//! burn-flex trains the default network at about a fifth of PyTorch's speed
//! on one core (`docs/performance.md`), while the native inference kernels
//! beat PyTorch; so training runs on the same kernels. Every 3x3
//! convolution runs forward and backward in the Winograd domain (see
//! [`super::winograd`]); the 1x1 convolutions and linear layers are plain
//! matrix products. The network stays burn's: the weights are read from a
//! [`Net`] and written back into one ([`NativeLearner::net`]), so
//! checkpoints are unchanged. Gradients match burn's autograd to float
//! rounding (tests below).
//!
//! A batch is cut into chunks of at most [`TRAIN_MAX_TILES`] tiles, each
//! run forward and backward on its own (the loss is a mean over positions,
//! so this is exact) while its activations stay in the core's caches. Each
//! chunk's gradient goes to its own slot and the slots are summed in chunk
//! order: the result is the same bit for bit whatever the thread count.

use std::ops::Range;
use std::path::Path;

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Tensor, TensorData};

use super::winograd::{
    self, Epilogue, Geometry, View, add_assign, convolve, filter_transform, filter_transform_backward, grow,
    input_transform, input_transform_backward, matmul, output_transform_backward, relu_backward, residual,
    residual_backward, transpose,
};
use konane_rules::Size;

use crate::checkpoint::CheckpointError;
use crate::encoding::{INPUT_PLANES, MOVE_KINDS};
use crate::model::{Net, NetConfig};
use crate::train::{LearnerConfig, Losses, OptimizerKind, PreparedBatch};

/// Tiles per training chunk (16 positions of 8x8): half of inference's
/// F(2x2, 3x3) sub-batch, because a chunk also keeps every activation and
/// its gradient.
/// Measured on AVX2 (b4c48, 8x8, batch 256): 11% faster on one thread and
/// 20% on two than 512 tiles.
const TRAIN_MAX_TILES: usize = 256;

/// Positions of a training chunk on a board of `geometry`: as many as
/// fill [`TRAIN_MAX_TILES`], at least one.
fn positions_per_chunk(geometry: Geometry) -> usize {
    (TRAIN_MAX_TILES / geometry.tiles_per_position()).max(1)
}

/// The tiling a board of `size` trains on: [`Geometry::new`]'s, which
/// says which it is.
fn training_geometry(size: Size) -> Geometry {
    Geometry::new(size.rows(), size.cols())
}

/// A network's parameters in burn's layouts and visiting order.
#[derive(Clone, Debug, PartialEq)]
struct Parameters {
    paths: Vec<String>,
    shapes: Vec<Vec<usize>>,
    values: Vec<Vec<f32>>,
}

impl Parameters {
    fn read(net: &Net) -> Parameters {
        let mut parameters = Parameters { paths: Vec::new(), shapes: Vec::new(), values: Vec::new() };
        for (path, shape, values) in net.parameters() {
            parameters.paths.push(path);
            parameters.shapes.push(shape);
            parameters.values.push(values);
        }
        parameters
    }

    /// `net` with these values in its parameters (same shapes and order).
    fn write(&self, net: Net) -> Net {
        struct Writer<'a> {
            parameters: &'a Parameters,
            next: usize,
        }
        impl ModuleMapper for Writer<'_> {
            fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
                let (values, shape) = (&self.parameters.values[self.next], &self.parameters.shapes[self.next]);
                self.next += 1;
                param.map(|tensor| {
                    assert_eq!(tensor.dims().as_slice(), shape.as_slice(), "parameter shapes are fixed");
                    let device = tensor.device();
                    Tensor::from_data(TensorData::new(values.clone(), shape.clone()), &device)
                })
            }
        }
        let mut writer = Writer { parameters: self, next: 0 };
        let net = net.map(&mut writer);
        assert_eq!(writer.next, self.values.len(), "every parameter written");
        net
    }

    fn index(&self, path: &str) -> usize {
        self.paths.iter().position(|p| p == path).unwrap_or_else(|| panic!("the network has no parameter {path}"))
    }

    fn zeros_like(&self) -> Vec<Vec<f32>> {
        self.values.iter().map(|v| vec![0.0; v.len()]).collect()
    }
}

/// A 3x3 convolution: the indices of its weight and bias.
#[derive(Clone, Copy, Debug)]
struct Conv3 {
    weight: usize,
    bias: usize,
    inputs: usize,
    outputs: usize,
}

/// A 1x1 convolution or a linear layer, natively `[inputs][outputs]` (burn
/// stores a 1x1 convolution's weight as `[outputs][inputs]`).
#[derive(Clone, Copy, Debug)]
struct Dense {
    weight: usize,
    bias: usize,
    inputs: usize,
    outputs: usize,
}

/// Where each layer's parameters are.
#[derive(Clone, Debug)]
struct Layout {
    stem: Conv3,
    /// Each block's two convolutions and its gate's index.
    blocks: Vec<(Conv3, Conv3, usize)>,
    policy_hidden: Conv3,
    policy_out: Dense,
    /// The soft policy output, if the network has one.
    policy_soft: Option<Dense>,
    /// The reply policy output, if the network has one.
    policy_reply: Option<Dense>,
    value_conv: Dense,
    value_hidden: Dense,
    value_out: Dense,
    /// The widest channel count of any 3x3 convolution.
    widest: usize,
    kinds: Vec<Kind>,
}

/// How a parameter's native layout differs from burn's.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A 3x3 filter, held in the Winograd domain (16 values per 9).
    Winograd { inputs: usize, outputs: usize },
    /// A 1x1 convolution's `[outputs][inputs]`, held as `[inputs][outputs]`.
    Transposed { inputs: usize, outputs: usize },
    /// The same layout.
    Same,
}

impl Layout {
    fn new(parameters: &Parameters) -> Layout {
        let conv3 = |name: &str| {
            let weight = parameters.index(&format!("{name}.weight"));
            let shape = &parameters.shapes[weight];
            assert_eq!(&shape[2..], &[3, 3], "{name} is a 3x3 convolution");
            Conv3 { weight, bias: parameters.index(&format!("{name}.bias")), inputs: shape[1], outputs: shape[0] }
        };
        let conv1 = |name: &str| {
            let weight = parameters.index(&format!("{name}.weight"));
            let shape = &parameters.shapes[weight];
            assert_eq!(&shape[2..], &[1, 1], "{name} is a 1x1 convolution");
            let bias = parameters.index(&format!("{name}.bias"));
            Dense { weight, bias, inputs: shape[1], outputs: shape[0] }
        };
        let linear = |name: &str| {
            let weight = parameters.index(&format!("{name}.weight"));
            let shape = &parameters.shapes[weight];
            let bias = parameters.index(&format!("{name}.bias"));
            Dense { weight, bias, inputs: shape[0], outputs: shape[1] }
        };
        let blocks = (0..)
            .map_while(|b| {
                let first = format!("blocks.{b}.first");
                parameters.paths.iter().any(|p| p.starts_with(&format!("{first}."))).then(|| {
                    (conv3(&first), conv3(&format!("blocks.{b}.second")), parameters.index(&format!("blocks.{b}.gate")))
                })
            })
            .collect::<Vec<_>>();
        let mut layout = Layout {
            stem: conv3("stem"),
            blocks,
            policy_hidden: conv3("policy_hidden"),
            policy_out: conv1("policy_out"),
            policy_soft: parameters.paths.iter().any(|p| p == "policy_soft.weight").then(|| conv1("policy_soft")),
            policy_reply: parameters.paths.iter().any(|p| p == "policy_reply.weight").then(|| conv1("policy_reply")),
            value_conv: conv1("value_conv"),
            value_hidden: linear("value_hidden"),
            value_out: linear("value_out"),
            widest: 0,
            kinds: vec![Kind::Same; parameters.values.len()],
        };
        let convs: Vec<Conv3> = layout.convolutions().collect();
        layout.widest = convs.iter().map(|c| c.inputs.max(c.outputs)).max().expect("a stem");
        for conv in convs {
            layout.kinds[conv.weight] = Kind::Winograd { inputs: conv.inputs, outputs: conv.outputs };
        }
        for dense in
            [layout.policy_out, layout.value_conv].into_iter().chain(layout.policy_soft).chain(layout.policy_reply)
        {
            layout.kinds[dense.weight] = Kind::Transposed { inputs: dense.inputs, outputs: dense.outputs };
        }
        layout
    }

    /// Every 3x3 convolution.
    fn convolutions(&self) -> impl Iterator<Item = Conv3> + '_ {
        [self.stem, self.policy_hidden].into_iter().chain(self.blocks.iter().flat_map(|(a, b, _)| [*a, *b]))
    }

    /// The native layout of burn-layout `values`.
    fn to_native(&self, values: &[Vec<f32>], native: &mut [Vec<f32>]) {
        for ((kind, value), out) in self.kinds.iter().zip(values).zip(native) {
            match *kind {
                Kind::Winograd { inputs, outputs } => {
                    out.resize(16 * inputs * outputs, 0.0);
                    filter_transform(value, inputs, outputs, out);
                }
                Kind::Transposed { inputs, outputs } => {
                    out.resize(inputs * outputs, 0.0);
                    transpose(value, outputs, inputs, out);
                }
                Kind::Same => {
                    out.clear();
                    out.extend_from_slice(value);
                }
            }
        }
    }

    /// The burn layout of native-layout gradients (the transposes of
    /// [`Layout::to_native`]), replacing what `burn` held.
    fn to_burn(&self, native: &[Vec<f32>], burn: &mut [Vec<f32>]) {
        for ((kind, grad), out) in self.kinds.iter().zip(native).zip(burn) {
            match *kind {
                Kind::Winograd { inputs, outputs } => {
                    out.fill(0.0);
                    filter_transform_backward(grad, inputs, outputs, out);
                }
                Kind::Transposed { inputs, outputs } => transpose(grad, inputs, outputs, out),
                Kind::Same => out.copy_from_slice(grad),
            }
        }
    }

    fn native_sizes(&self, parameters: &Parameters) -> Vec<usize> {
        self.kinds
            .iter()
            .zip(&parameters.values)
            .map(|(kind, v)| match *kind {
                Kind::Winograd { inputs, outputs } => 16 * inputs * outputs,
                _ => v.len(),
            })
            .collect()
    }
}

/// One chunk's gradient (native layout) and loss sums.
#[derive(Clone, Debug, Default)]
struct Slot {
    grads: Vec<Vec<f32>>,
    policy: f64,
    soft: f64,
    reply: f64,
    value: f64,
    entropy: f64,
}

impl Slot {
    fn clear(&mut self, sizes: &[usize]) {
        self.grads.resize_with(sizes.len(), Vec::new);
        for (grad, &size) in self.grads.iter_mut().zip(sizes) {
            grad.clear();
            grad.resize(size, 0.0);
        }
        (self.policy, self.soft, self.reply, self.value, self.entropy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    }
}

/// One thread's buffers for a chunk. The padded activations keep zero rings
/// for as long as the board size stays the same: forward passes write board
/// cells only, or values that are zero on the ring.
#[derive(Default)]
struct Workspace {
    geometry: Geometry,
    input: Vec<f32>,
    /// The tower's activations: the stem's output, then each block's.
    acts: Vec<Vec<f32>>,
    /// Each block's `relu(first(x))`.
    hidden: Vec<Vec<f32>>,
    /// Each block's `second(hidden)`, before the gate.
    branch: Vec<Vec<f32>>,
    policy_hidden: Vec<f32>,
    logits: Vec<f32>,
    soft_logits: Vec<f32>,
    reply_logits: Vec<f32>,
    value_planes: Vec<f32>,
    pooled: Vec<f32>,
    argmax: Vec<u32>,
    value_hidden: Vec<f32>,
    values: Vec<f32>,
    transformed: Vec<f32>,
    products: Vec<f32>,
    d_act: Vec<f32>,
    d_tmp: Vec<f32>,
    d_hidden: Vec<f32>,
    d_policy_hidden: Vec<f32>,
    d_logits: Vec<f32>,
    d_soft_logits: Vec<f32>,
    d_reply_logits: Vec<f32>,
    d_value_planes: Vec<f32>,
    d_pooled: Vec<f32>,
    d_value_hidden: Vec<f32>,
    d_out: Vec<f32>,
}

/// The widths a [`Workspace`]'s buffers depend on: from a network's
/// [`Layout`] when training, from its [`NetConfig`] when estimating.
#[derive(Clone, Copy, Debug)]
struct Widths {
    blocks: usize,
    channels: usize,
    policy: usize,
    value: usize,
    hidden: usize,
    widest: usize,
    soft: bool,
    reply: bool,
}

impl Widths {
    fn of_layout(layout: &Layout) -> Widths {
        Widths {
            blocks: layout.blocks.len(),
            channels: layout.stem.outputs,
            policy: layout.policy_hidden.outputs,
            value: layout.value_conv.outputs,
            hidden: layout.value_hidden.outputs,
            widest: layout.widest,
            soft: layout.policy_soft.is_some(),
            reply: layout.policy_reply.is_some(),
        }
    }

    fn of_net(net: &NetConfig) -> Widths {
        Widths {
            blocks: net.blocks,
            channels: net.channels,
            policy: net.policy_channels,
            value: net.value_channels,
            hidden: net.value_hidden,
            widest: net.channels.max(net.policy_channels).max(INPUT_PLANES),
            soft: net.soft_policy,
            reply: net.reply_policy,
        }
    }
}

/// The length of each of a [`Workspace`]'s buffers for a chunk of `batch`
/// positions: the one table both [`Workspace::prepare`] and
/// [`step_bytes`] read.
#[derive(Default)]
struct WorkspaceLengths {
    input: usize,
    /// Each of the tower's `3 * blocks + 1` buffers (`acts`, `hidden`,
    /// `branch`).
    tower: usize,
    /// The other float buffers, in [`Workspace::others`]' order.
    others: [usize; 21],
    argmax: usize,
}

impl WorkspaceLengths {
    fn new(widths: Widths, geometry: Geometry, batch: usize) -> WorkspaceLengths {
        let padded = batch * geometry.padded_cells();
        let Widths { channels, policy: p, value: v, hidden: h, widest, .. } = widths;
        let tiles = batch * geometry.tiles_per_position();
        let logits_of = |on: bool| if on { padded * MOVE_KINDS } else { 0 };
        let (soft, reply) = (logits_of(widths.soft), logits_of(widths.reply));
        WorkspaceLengths {
            input: padded * INPUT_PLANES,
            tower: padded * channels,
            others: [
                padded * p,
                padded * MOVE_KINDS,
                soft,
                soft,
                reply,
                reply,
                padded * v,
                batch * 2 * v,
                batch * h,
                batch,
                tiles * 16 * widest,
                tiles * 16 * widest,
                padded * channels,
                padded * channels,
                padded * channels,
                padded * p,
                padded * MOVE_KINDS,
                padded * v,
                batch * 2 * v,
                batch * h,
                batch,
            ],
            argmax: batch * v,
        }
    }

    /// Each buffer at the longer of the two: what a workspace holds after
    /// chunks of both shapes, its buffers only growing.
    fn longest(self, other: WorkspaceLengths) -> WorkspaceLengths {
        let mut others = self.others;
        for (most, len) in others.iter_mut().zip(other.others) {
            *most = (*most).max(len);
        }
        WorkspaceLengths {
            input: self.input.max(other.input),
            tower: self.tower.max(other.tower),
            others,
            argmax: self.argmax.max(other.argmax),
        }
    }

    /// Floats (and `u32`s) of a whole workspace.
    fn total(&self, blocks: usize) -> usize {
        self.input + (3 * blocks + 1) * self.tower + self.others.iter().sum::<usize>() + self.argmax
    }
}

impl Workspace {
    /// The float buffers besides the input and the tower's, in the order
    /// of [`WorkspaceLengths::others`].
    fn others(&mut self) -> [&mut Vec<f32>; 21] {
        [
            &mut self.policy_hidden,
            &mut self.logits,
            &mut self.soft_logits,
            &mut self.d_soft_logits,
            &mut self.reply_logits,
            &mut self.d_reply_logits,
            &mut self.value_planes,
            &mut self.pooled,
            &mut self.value_hidden,
            &mut self.values,
            &mut self.transformed,
            &mut self.products,
            &mut self.d_act,
            &mut self.d_tmp,
            &mut self.d_hidden,
            &mut self.d_policy_hidden,
            &mut self.d_logits,
            &mut self.d_value_planes,
            &mut self.d_pooled,
            &mut self.d_value_hidden,
            &mut self.d_out,
        ]
    }

    fn prepare(&mut self, layout: &Layout, geometry: Geometry, batch: usize) {
        let widths = Widths::of_layout(layout);
        let lengths = WorkspaceLengths::new(widths, geometry, batch);
        self.acts.resize_with(widths.blocks + 1, Vec::new);
        self.hidden.resize_with(widths.blocks, Vec::new);
        self.branch.resize_with(widths.blocks, Vec::new);
        // The convolutions' inputs (and the branches that make the next
        // block's input) need zero rings: cleared when the size changes.
        if self.geometry != geometry {
            self.geometry = geometry;
            for buffer in
                [&mut self.input].into_iter().chain(&mut self.acts).chain(&mut self.hidden).chain(&mut self.branch)
            {
                buffer.clear();
            }
        }
        grow(&mut self.input, lengths.input);
        for buffer in self.acts.iter_mut().chain(&mut self.hidden).chain(&mut self.branch) {
            grow(buffer, lengths.tower);
        }
        for (buffer, len) in self.others().into_iter().zip(lengths.others) {
            grow(buffer, len);
        }
        if self.argmax.len() < lengths.argmax {
            self.argmax.resize(lengths.argmax, 0);
        }
    }

    /// Floats (and `u32`s) the workspace holds.
    #[cfg(test)]
    fn held(&mut self) -> usize {
        let tower: usize = self.acts.iter().chain(&self.hidden).chain(&self.branch).map(Vec::capacity).sum();
        let others: usize = self.others().iter().map(|buffer| buffer.capacity()).sum();
        self.input.capacity() + tower + others + self.argmax.capacity()
    }
}

/// Floats a [`NativeLearner`] holds after steps of `net` on batches of
/// `batch` positions of the boards `sizes` with `threads` threads: a
/// gradient per chunk of the batch (the chunks are summed in order, which
/// keeps the result the same on any number of threads), a workspace per
/// thread, the weights in both layouts, the gradient and AdamW's two
/// moments. Buffers only grow, so over several sizes each holds its
/// largest: a workspace's every buffer its largest over the sizes, and the
/// gradients the most chunks of any size, plus one for each further size (a
/// batch of mixed sizes cuts each size's share into chunks of its own).
fn learner_floats(net: &NetConfig, sizes: &[Size], batch: u64, threads: u64) -> u64 {
    let widths = Widths::of_net(net);
    let mut chunks = 1;
    let mut workspace = WorkspaceLengths::default();
    for size in sizes {
        let geometry = training_geometry(*size);
        let per_chunk = positions_per_chunk(geometry) as u64;
        chunks = chunks.max(batch.div_ceil(per_chunk));
        workspace = workspace.longest(WorkspaceLengths::new(widths, geometry, per_chunk.min(batch.max(1)) as usize));
    }
    let chunks = chunks.saturating_add(sizes.len().saturating_sub(1) as u64);
    let workspace = workspace.total(widths.blocks) as u64;
    let weights = net.parameters();
    // The 3x3 filters are held in the Winograd domain: 16 values per 9.
    let (c, p, blocks) = (net.channels as u64, net.policy_channels as u64, net.blocks as u64);
    let filters = INPUT_PLANES as u64 * c + c * p + 2 * blocks * c * c;
    let native = weights + 7 * filters;
    chunks
        .saturating_mul(native)
        .saturating_add(threads.clamp(1, chunks).saturating_mul(workspace))
        .saturating_add(native)
        .saturating_add(4 * weights)
}

/// Bytes a native training step of `net` holds for batches of `batch`
/// positions of the boards `sizes` on `threads` threads: what the learner
/// keeps ([`learner_floats`]; the chunks' gradients grow with the batch
/// times the weights, so they are most of it for wide networks), the
/// network burn keeps, and at most the batch turned into input planes and
/// targets. A config's memory check reads it before anything is allocated.
pub fn step_bytes(net: &NetConfig, sizes: &[Size], batch: u64, threads: u64) -> u64 {
    let cells = sizes.iter().map(|size| size.cells() as u64).max().unwrap_or(0);
    let reply_targets = if net.reply_policy { MOVE_KINDS as u64 } else { 0 };
    let prepared = batch.saturating_mul((INPUT_PLANES as u64 + reply_targets + 2) * cells);
    learner_floats(net, sizes, batch, threads)
        .saturating_add(net.parameters())
        .saturating_add(prepared)
        .saturating_mul(4)
}

/// What every thread reads during a step: the layout and the weights in
/// their native layouts.
struct Model<'a> {
    layout: &'a Layout,
    weights: &'a [Vec<f32>],
    settings: LearnerConfig,
}

impl Model<'_> {
    fn conv_forward(
        &self,
        conv: Conv3,
        (geometry, batch): (Geometry, usize),
        source: &[f32],
        destination: &mut [f32],
        relu: bool,
        (transformed, products): (&mut [f32], &mut [f32]),
    ) {
        let weights = (&self.weights[conv.weight][..], &self.weights[conv.bias][..]);
        let epilogue = if relu { Epilogue::Relu } else { Epilogue::Raw };
        let scratch = (transformed, products);
        convolve((geometry, batch), (conv.inputs, conv.outputs), weights, source, scratch, epilogue, &[], destination);
    }

    /// Adds the filter and bias gradients of `conv` given its input
    /// `source` and output gradient `dy` to `grads`; writes the input
    /// gradient to `dx` when asked.
    #[allow(clippy::too_many_arguments)]
    fn conv_backward(
        &self,
        conv: Conv3,
        (geometry, batch): (Geometry, usize),
        source: &[f32],
        dy: &[f32],
        grads: &mut [Vec<f32>],
        dx: Option<&mut [f32]>,
        (transformed, products): (&mut [f32], &mut [f32]),
    ) {
        let (cin, cout) = (conv.inputs, conv.outputs);
        let tiles = batch * geometry.tiles_per_position();
        input_transform(geometry, batch, cin, source, transformed);
        output_transform_backward(geometry, batch, cout, dy, products, &mut grads[conv.bias]);
        let du = &mut grads[conv.weight];
        for k in 0..16 {
            matmul(
                (cin, cout, tiles),
                &mut du[k * cin * cout..(k + 1) * cin * cout],
                cout,
                true,
                View::strided(&transformed[k * cin..], 1, 16 * cin),
                View::strided(&products[k * cout..], 16 * cout, 1),
            );
        }
        if let Some(dx) = dx {
            let u = &self.weights[conv.weight];
            for k in 0..16 {
                matmul(
                    (tiles, cin, cout),
                    &mut transformed[k * cin..],
                    16 * cin,
                    false,
                    View::strided(&products[k * cout..], 16 * cout, 1),
                    View::strided(&u[k * cin * cout..(k + 1) * cin * cout], 1, cout),
                );
            }
            input_transform_backward(geometry, batch, cin, transformed, dx);
        }
    }

    /// `destination = source x weights + bias` over `rows` rows.
    fn dense_forward(&self, dense: Dense, rows: usize, source: &[f32], destination: &mut [f32], relu: bool) {
        let weights = (&self.weights[dense.weight][..], &self.weights[dense.bias][..]);
        winograd::dense(rows, (dense.inputs, dense.outputs), weights, source, destination);
        if relu {
            for x in &mut destination[..rows * dense.outputs] {
                *x = x.max(0.0);
            }
        }
    }

    /// Adds the weight and bias gradients of `dense` to `grads`; writes (or
    /// with `accumulate`, adds) the input gradient to `dx`.
    #[allow(clippy::too_many_arguments)]
    fn dense_backward(
        &self,
        dense: Dense,
        rows: usize,
        source: &[f32],
        dy: &[f32],
        grads: &mut [Vec<f32>],
        dx: Option<&mut [f32]>,
        accumulate: bool,
    ) {
        let (inputs, outputs) = (dense.inputs, dense.outputs);
        let dy = &dy[..rows * outputs];
        matmul(
            (inputs, outputs, rows),
            &mut grads[dense.weight],
            outputs,
            true,
            View::transposed(source, inputs),
            View::rows(dy, outputs),
        );
        let db = &mut grads[dense.bias];
        for row in dy.chunks_exact(outputs) {
            for (b, d) in db.iter_mut().zip(row) {
                *b += d;
            }
        }
        if let Some(dx) = dx {
            let weights = &self.weights[dense.weight];
            matmul(
                (rows, inputs, outputs),
                dx,
                inputs,
                accumulate,
                View::rows(dy, outputs),
                View::transposed(weights, outputs),
            );
        }
    }

    /// Forward and backward over positions `range` of `data`: adds their
    /// gradient (of the loss summed over positions, times `scale`: one over
    /// the whole step's positions, for a mean) and loss sums to `slot`.
    fn chunk(&self, ws: &mut Workspace, data: &PreparedBatch, range: Range<usize>, scale: f32, slot: &mut Slot) {
        let layout = self.layout;
        let value_weight = self.settings.value_weight;
        let geometry = training_geometry(data.size);
        let (cells, cols) = (geometry.cells(), geometry.cols);
        let batch = range.len();
        ws.prepare(layout, geometry, batch);
        let shape = (geometry, batch);
        let rows_padded = batch * geometry.padded_cells();

        let planes = &data.planes[range.start * INPUT_PLANES * cells..range.end * INPUT_PLANES * cells];
        geometry.pad_planes(batch, planes, &mut ws.input);

        // Forward, keeping every activation.
        let scratch = (&mut ws.transformed[..], &mut ws.products[..]);
        self.conv_forward(layout.stem, shape, &ws.input, &mut ws.acts[0], true, scratch);
        for (k, &(first, second, gate)) in layout.blocks.iter().enumerate() {
            let scratch = (&mut ws.transformed[..], &mut ws.products[..]);
            self.conv_forward(first, shape, &ws.acts[k], &mut ws.hidden[k], true, scratch);
            let scratch = (&mut ws.transformed[..], &mut ws.products[..]);
            self.conv_forward(second, shape, &ws.hidden[k], &mut ws.branch[k], false, scratch);
            let gate = self.weights[gate][0];
            let (before, after) = ws.acts.split_at_mut(k + 1);
            let n = rows_padded * first.inputs;
            residual(&mut after[0][..n], &before[k][..n], &ws.branch[k][..n], gate);
        }
        let tower = &ws.acts[layout.blocks.len()];
        let scratch = (&mut ws.transformed[..], &mut ws.products[..]);
        self.conv_forward(layout.policy_hidden, shape, tower, &mut ws.policy_hidden, true, scratch);
        self.dense_forward(layout.policy_out, rows_padded, &ws.policy_hidden, &mut ws.logits, false);
        for (output, logits) in [(layout.policy_soft, &mut ws.soft_logits), (layout.policy_reply, &mut ws.reply_logits)]
        {
            if let Some(output) = output {
                self.dense_forward(output, rows_padded, &ws.policy_hidden, logits, false);
            }
        }
        self.dense_forward(layout.value_conv, rows_padded, tower, &mut ws.value_planes, true);
        let v = layout.value_conv.outputs;
        for b in 0..batch {
            let pooled = &mut ws.pooled[b * 2 * v..][..2 * v];
            pooled[..v].fill(0.0);
            pooled[v..].fill(f32::NEG_INFINITY);
            for cell in 0..cells {
                let at = geometry.padded_index(b, cell / cols, cell % cols);
                for (c, &x) in ws.value_planes[at * v..][..v].iter().enumerate() {
                    pooled[c] += x;
                    if x > pooled[v + c] {
                        pooled[v + c] = x;
                        ws.argmax[b * v + c] = at as u32;
                    }
                }
            }
            for mean in &mut pooled[..v] {
                *mean /= cells as f32;
            }
        }
        self.dense_forward(layout.value_hidden, batch, &ws.pooled, &mut ws.value_hidden, true);
        self.dense_forward(layout.value_out, batch, &ws.value_hidden, &mut ws.values, false);

        // Losses and their gradients at the outputs.
        let d_logits = &mut ws.d_logits[..rows_padded * MOVE_KINDS];
        d_logits.fill(0.0);
        let soft_scale = self.settings.soft_policy_weight * scale;
        let reply_scale = self.settings.reply_policy_weight * scale;
        ws.d_soft_logits.fill(0.0);
        ws.d_reply_logits.fill(0.0);
        for b in 0..batch {
            let i = range.start + b;
            let moves = data.starts[i]..data.starts[i + 1];
            let at = |index: u32| {
                let (kind, cell) = (index as usize / cells, index as usize % cells);
                geometry.padded_index(b, cell / cols, cell % cols) * MOVE_KINDS + kind
            };
            let legal = moves.clone().map(|j| at(data.legal[j]));
            let targets = &data.targets[moves.clone()];
            let (policy, entropy) = cross_entropy(&ws.logits, legal.clone(), targets, d_logits, scale);
            slot.policy += policy;
            slot.entropy += entropy;
            if layout.policy_soft.is_some() {
                let soft_targets = &data.soft_targets[moves];
                let d_soft = &mut ws.d_soft_logits[..];
                slot.soft += cross_entropy(&ws.soft_logits, legal, soft_targets, d_soft, soft_scale).0;
            }
            let per = data.reply_moves.len();
            let reply_targets = data.reply_targets.get(i * per..(i + 1) * per).unwrap_or_default();
            if layout.policy_reply.is_some() && reply_targets.iter().any(|&t| t > 0.0) {
                let on_board = data.reply_moves.iter().map(|&m| at(m));
                let d_reply = &mut ws.d_reply_logits[..];
                slot.reply += cross_entropy(&ws.reply_logits, on_board, reply_targets, d_reply, reply_scale).0;
            }
            let value = ws.values[b].tanh();
            let diff = value - data.values[i];
            slot.value += f64::from(diff * diff);
            ws.d_out[b] = value_weight * 2.0 * diff * scale * (1.0 - value * value);
        }

        // Backward: the heads into d_act, then the tower.
        let grads = &mut slot.grads[..];
        self.dense_backward(
            layout.value_out,
            batch,
            &ws.value_hidden,
            &ws.d_out,
            grads,
            Some(&mut ws.d_value_hidden),
            false,
        );
        let hidden = batch * layout.value_hidden.outputs;
        relu_backward(&mut ws.d_value_hidden[..hidden], &ws.value_hidden[..hidden]);
        self.dense_backward(
            layout.value_hidden,
            batch,
            &ws.pooled,
            &ws.d_value_hidden,
            grads,
            Some(&mut ws.d_pooled),
            false,
        );
        let d_planes = &mut ws.d_value_planes[..rows_padded * v];
        d_planes.fill(0.0);
        for b in 0..batch {
            let d_pooled = &ws.d_pooled[b * 2 * v..][..2 * v];
            for cell in 0..cells {
                let at = geometry.padded_index(b, cell / cols, cell % cols);
                for c in 0..v {
                    d_planes[at * v + c] = d_pooled[c] / cells as f32;
                }
            }
            for c in 0..v {
                d_planes[ws.argmax[b * v + c] as usize * v + c] += d_pooled[v + c];
            }
        }
        relu_backward(d_planes, &ws.value_planes);
        let tower = &ws.acts[layout.blocks.len()];
        self.dense_backward(layout.value_conv, rows_padded, tower, d_planes, grads, Some(&mut ws.d_act), false);
        let d_hidden = &mut ws.d_policy_hidden;
        let d_logits = &ws.d_logits;
        self.dense_backward(layout.policy_out, rows_padded, &ws.policy_hidden, d_logits, grads, Some(d_hidden), false);
        // The training-only outputs add their gradients to the hidden layer's.
        for (output, d_out) in [(layout.policy_soft, &ws.d_soft_logits), (layout.policy_reply, &ws.d_reply_logits)] {
            if let Some(output) = output {
                self.dense_backward(output, rows_padded, &ws.policy_hidden, d_out, grads, Some(&mut *d_hidden), true);
            }
        }
        let width = layout.policy_hidden.outputs;
        relu_backward(&mut d_hidden[..rows_padded * width], &ws.policy_hidden);
        let scratch = (&mut ws.transformed[..], &mut ws.products[..]);
        self.conv_backward(layout.policy_hidden, shape, tower, d_hidden, grads, Some(&mut ws.d_tmp), scratch);
        let n = rows_padded * layout.stem.outputs;
        add_assign(&mut ws.d_act[..n], &ws.d_tmp);
        for (k, &(first, second, gate_index)) in layout.blocks.iter().enumerate().rev() {
            let gate = self.weights[gate_index][0];
            grads[gate_index][0] +=
                residual_backward(&mut ws.d_act[..n], &ws.acts[k + 1], &ws.branch[k], &mut ws.d_tmp, gate);
            let scratch = (&mut ws.transformed[..], &mut ws.products[..]);
            self.conv_backward(second, shape, &ws.hidden[k], &ws.d_tmp, grads, Some(&mut ws.d_hidden), scratch);
            relu_backward(&mut ws.d_hidden[..n], &ws.hidden[k]);
            let scratch = (&mut ws.transformed[..], &mut ws.products[..]);
            self.conv_backward(first, shape, &ws.acts[k], &ws.d_hidden, grads, Some(&mut ws.d_tmp), scratch);
            add_assign(&mut ws.d_act[..n], &ws.d_tmp);
        }
        relu_backward(&mut ws.d_act[..n], &ws.acts[0]);
        let scratch = (&mut ws.transformed[..], &mut ws.products[..]);
        self.conv_backward(layout.stem, shape, &ws.input, &ws.d_act, grads, None, scratch);
    }
}

/// The cross-entropy of `targets` (summing to at most 1) against the
/// softmax of `logits` over the entries `legal`, and the entropy of that
/// softmax; writes the loss's gradient times `scale` at `legal` in
/// `d_logits`.
fn cross_entropy(
    logits: &[f32],
    legal: impl Iterator<Item = usize> + Clone,
    targets: &[f32],
    d_logits: &mut [f32],
    scale: f32,
) -> (f64, f64) {
    let max = legal.clone().map(|at| logits[at]).fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = legal.clone().map(|at| (logits[at] - max).exp()).sum();
    let log_sum = max + sum.ln();
    let target_sum: f32 = targets.iter().sum();
    let (mut loss, mut entropy) = (0.0, 0.0);
    for (at, &t) in legal.zip(targets) {
        let log_p = logits[at] - log_sum;
        let p = log_p.exp();
        loss -= f64::from(t * log_p);
        entropy -= f64::from(p * log_p.max(-1e4));
        d_logits[at] = (p * target_sum - t) * scale;
    }
    (loss, entropy)
}

/// The optimizer's state over the burn-layout parameters.
#[derive(Clone, Debug, PartialEq)]
enum OptimizerState {
    /// burn's `AdamW` (beta 0.9 / 0.999, epsilon 1e-5): moments and steps taken.
    Adamw { time: u64, first: Vec<Vec<f32>>, second: Vec<Vec<f32>> },
    /// burn's `Sgd` with Nesterov momentum 0.9 and dampening 0.1: the
    /// velocity after the first step.
    Sgd { velocity: Option<Vec<Vec<f32>>> },
}

const BETA_1: f32 = 0.9;
const BETA_2: f32 = 0.999;
const EPSILON: f32 = 1e-5;
const MOMENTUM: f32 = 0.9;
const DAMPENING: f32 = 0.1;

/// First bytes of a native optimizer state file.
const OPTIMIZER_MAGIC: &[u8; 16] = b"konane-optimizer";
const OPTIMIZER_VERSION: u32 = 1;

/// The network trained on the native kernels; see the module documentation.
pub struct NativeLearner {
    template: Net,
    parameters: Parameters,
    layout: Layout,
    native_sizes: Vec<usize>,
    weights: Vec<Vec<f32>>,
    grads: Vec<Vec<f32>>,
    slots: Vec<Slot>,
    workspaces: Vec<Workspace>,
    state: OptimizerState,
    settings: LearnerConfig,
    threads: usize,
}

impl NativeLearner {
    /// Starts from the weights of `net` with a fresh optimizer.
    pub fn new(net: &Net, settings: LearnerConfig) -> NativeLearner {
        let parameters = Parameters::read(net);
        let layout = Layout::new(&parameters);
        let native_sizes = layout.native_sizes(&parameters);
        let state = match settings.optimizer {
            OptimizerKind::Adamw => {
                OptimizerState::Adamw { time: 0, first: parameters.zeros_like(), second: parameters.zeros_like() }
            }
            OptimizerKind::Sgd => OptimizerState::Sgd { velocity: None },
        };
        NativeLearner {
            template: net.clone(),
            grads: parameters.zeros_like(),
            weights: vec![Vec::new(); parameters.values.len()],
            parameters,
            layout,
            native_sizes,
            slots: Vec::new(),
            workspaces: Vec::new(),
            state,
            settings,
            threads: 1,
        }
    }

    /// Runs each step on `threads` threads (the result does not depend on it).
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// The network with the current weights, on the template's device.
    pub fn net(&self) -> Net {
        self.parameters.write(self.template.clone())
    }

    /// The gradient of the mean loss over every position of `groups` (one
    /// board size each), in burn's layouts and visiting order, and the
    /// losses, without changing the weights.
    fn gradient(&mut self, groups: &[PreparedBatch]) -> Losses {
        let layout = &self.layout;
        layout.to_native(&self.parameters.values, &mut self.weights);
        let n: usize = groups.iter().map(PreparedBatch::len).sum();
        let scale = 1.0 / n as f32;
        // Each group is cut into chunks of its own size; the slots of all
        // groups' chunks are summed in order at the end.
        let per_chunk = |data: &PreparedBatch| positions_per_chunk(training_geometry(data.size));
        let chunks: usize = groups.iter().map(|data| data.len().div_ceil(per_chunk(data))).sum();
        if self.slots.len() < chunks {
            self.slots.resize_with(chunks, Slot::default);
        }
        let model = Model { layout, weights: &self.weights, settings: self.settings };
        let sizes = &self.native_sizes;
        let mut rest = &mut self.slots[..chunks];
        for data in groups {
            let per_chunk = per_chunk(data);
            let group_chunks = data.len().div_ceil(per_chunk);
            let (slots, others) = rest.split_at_mut(group_chunks);
            rest = others;
            let threads = self.threads.min(group_chunks);
            if self.workspaces.len() < threads {
                self.workspaces.resize_with(threads, Workspace::default);
            }
            let run = |first_chunk: usize, slots: &mut [Slot], ws: &mut Workspace| {
                for (j, slot) in slots.iter_mut().enumerate() {
                    let start = (first_chunk + j) * per_chunk;
                    slot.clear(sizes);
                    model.chunk(ws, data, start..(start + per_chunk).min(data.len()), scale, slot);
                }
            };
            if threads == 1 {
                run(0, slots, &mut self.workspaces[0]);
            } else {
                // Contiguous runs of chunks per thread.
                std::thread::scope(|scope| {
                    let mut rest = slots;
                    let mut first = 0;
                    for (t, ws) in self.workspaces[..threads].iter_mut().enumerate() {
                        let take = group_chunks * (t + 1) / threads - first;
                        let (mine, others) = rest.split_at_mut(take);
                        rest = others;
                        let run = &run;
                        scope.spawn(move || run(first, mine, ws));
                        first += take;
                    }
                });
            }
        }
        // Sum the slots in chunk order.
        let (first, others) = self.slots[..chunks].split_first_mut().expect("a chunk");
        for slot in others.iter() {
            for (total, grad) in first.grads.iter_mut().zip(&slot.grads) {
                for (t, g) in total.iter_mut().zip(grad) {
                    *t += g;
                }
            }
            first.policy += slot.policy;
            first.soft += slot.soft;
            first.reply += slot.reply;
            first.value += slot.value;
            first.entropy += slot.entropy;
        }
        layout.to_burn(&first.grads, &mut self.grads);
        let target_entropy: f64 = groups.iter().map(|data| data.target_entropy).sum();
        let n = n as f64;
        Losses {
            policy: (first.policy / n) as f32,
            value: (first.value / n) as f32,
            policy_entropy: (first.entropy / n) as f32,
            target_entropy: (target_entropy / n) as f32,
            soft_policy: (first.soft / n) as f32,
            reply_policy: (first.reply / n) as f32,
        }
    }

    /// One step at learning rate `lr` on `groups` (one board size each);
    /// returns the losses before it.
    pub(crate) fn step(&mut self, groups: &[PreparedBatch], lr: f64) -> Losses {
        let losses = self.gradient(groups);
        let lr = lr as f32;
        let decay = self.settings.weight_decay;
        let zeros = matches!(self.state, OptimizerState::Sgd { velocity: None }).then(|| self.parameters.zeros_like());
        let parameters = self.parameters.values.iter_mut().zip(&self.grads);
        match &mut self.state {
            OptimizerState::Adamw { time, first, second } => {
                *time += 1;
                let t = i32::try_from(*time).unwrap_or(i32::MAX);
                let (c1, c2) = (1.0 - BETA_1.powi(t), 1.0 - BETA_2.powi(t));
                let keep = 1.0 - lr * decay;
                for ((values, grads), (m, v)) in parameters.zip(first.iter_mut().zip(second.iter_mut())) {
                    for (((x, &g), m), v) in values.iter_mut().zip(grads).zip(m.iter_mut()).zip(v.iter_mut()) {
                        *m = *m * BETA_1 + g * (1.0 - BETA_1);
                        *v = *v * BETA_2 + g * g * (1.0 - BETA_2);
                        let delta = (*m / c1) / ((*v / c2).sqrt() + EPSILON);
                        *x = *x * keep - delta * lr;
                    }
                }
            }
            OptimizerState::Sgd { velocity } => {
                let first_step = velocity.is_none();
                let velocity = velocity.get_or_insert_with(|| zeros.unwrap_or_default());
                for ((values, grads), velocity) in parameters.zip(velocity.iter_mut()) {
                    for ((x, &g), u) in values.iter_mut().zip(grads).zip(velocity.iter_mut()) {
                        let g = g + decay * *x;
                        *u = if first_step { g } else { g * (1.0 - DAMPENING) + *u * MOMENTUM };
                        *x -= lr * (*u * MOMENTUM + g);
                    }
                }
            }
        }
        losses
    }

    /// The optimizer state as bytes: magic, version, kind, step count, the
    /// moments in parameter order, CRC-32 of all before it.
    fn state_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(OPTIMIZER_MAGIC);
        out.extend_from_slice(&OPTIMIZER_VERSION.to_le_bytes());
        let tensors: Vec<&Vec<f32>> = match &self.state {
            OptimizerState::Adamw { time, first, second } => {
                out.push(0);
                out.extend_from_slice(&time.to_le_bytes());
                first.iter().chain(second).collect()
            }
            OptimizerState::Sgd { velocity } => {
                out.push(1);
                out.extend_from_slice(&u64::from(velocity.is_some()).to_le_bytes());
                velocity.iter().flatten().collect()
            }
        };
        for tensor in tensors {
            for x in tensor {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Saves the optimizer state (for exact resume) to `path`, atomically.
    ///
    /// # Errors
    /// The file could not be written.
    pub fn save_optimizer(&self, path: &Path) -> Result<(), CheckpointError> {
        konane_files::write_atomically(path, &self.state_bytes()).map_err(|e| CheckpointError::Invalid {
            path: path.to_path_buf(),
            reason: format!("saving optimizer: {e}"),
        })
    }

    /// Loads the state [`NativeLearner::save_optimizer`] wrote for a
    /// network of this shape and this optimizer.
    ///
    /// # Errors
    /// A missing, damaged or foreign file (a burn optimizer record, another
    /// shape or optimizer), naming what is wrong.
    pub fn load_optimizer(&mut self, path: &Path) -> Result<(), CheckpointError> {
        let invalid = |reason: String| CheckpointError::Invalid { path: path.to_path_buf(), reason };
        let floats: usize = self.parameters.values.iter().map(Vec::len).sum();
        let header = OPTIMIZER_MAGIC.len() + 4 + 1 + 8;
        let most = header + 2 * 4 * floats + 4;
        let bytes = konane_files::read_bounded(path, most as u64, "optimizer state")
            .map_err(|e| invalid(format!("loading optimizer: {e}")))?;
        if bytes.len() < header + 4 || &bytes[..OPTIMIZER_MAGIC.len()] != OPTIMIZER_MAGIC {
            return Err(invalid(
                "not a native optimizer state (a run trained by burn's learner resumes with its backend)".into(),
            ));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err(invalid("optimizer state checksum mismatch".into()));
        }
        let at = OPTIMIZER_MAGIC.len();
        let version = u32::from_le_bytes(body[at..at + 4].try_into().expect("4 bytes"));
        if version != OPTIMIZER_VERSION {
            return Err(invalid(format!("optimizer state version {version}; this build reads {OPTIMIZER_VERSION}")));
        }
        let kind = body[at + 4];
        let count = u64::from_le_bytes(body[at + 5..at + 13].try_into().expect("8 bytes"));
        let data = &body[header..];
        let read = |tensors: usize| -> Result<Vec<Vec<f32>>, CheckpointError> {
            if data.len() != 4 * floats * tensors {
                return Err(invalid(format!(
                    "optimizer state holds {} values, this network needs {}",
                    data.len() / 4,
                    floats * tensors
                )));
            }
            let mut values = data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")));
            Ok((0..tensors)
                .flat_map(|_| self.parameters.values.iter())
                .map(|v| values.by_ref().take(v.len()).collect())
                .collect())
        };
        let state = match (kind, self.settings.optimizer) {
            (0, OptimizerKind::Adamw) => {
                let mut moments = read(2)?;
                let second = moments.split_off(self.parameters.values.len());
                OptimizerState::Adamw { time: count, first: moments, second }
            }
            (1, OptimizerKind::Sgd) => OptimizerState::Sgd { velocity: if count == 1 { Some(read(1)?) } else { None } },
            (kind, wanted) => {
                return Err(invalid(format!("optimizer state of kind {kind}, this run trains with {wanted:?}")));
            }
        };
        self.state = state;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{index_move, move_index, policy_len};
    use crate::init_net;
    use crate::model::NetConfig;
    use crate::train::{Learner, Sample, loss_sums};
    use burn::module::ModuleVisitor;
    use burn::optim::GradientsParams;
    use burn::tensor::Device;
    use konane_rules::sample::cycled_positions;
    use konane_rules::{Move, Size};

    /// A small net with its gates switched on (fresh gates are zero, which
    /// would hide the residual branches' gradients).
    fn gated_net(blocks: usize, channels: usize, seed: u64) -> Net {
        let device = Device::flex();
        let mut net = init_net(&NetConfig::new().with_blocks(blocks).with_channels(channels), &device, seed);
        for (i, block) in net.blocks.iter_mut().enumerate() {
            block.gate =
                Param::from_tensor(Tensor::from_data(TensorData::new(vec![0.6 - 0.25 * i as f32], [1]), &device));
        }
        net
    }

    /// Positions of `size` with spread targets and values, and reply
    /// targets spread over the next position's moves (none for every third
    /// position, as at a game's end).
    fn batch(size: Size, n: usize) -> Vec<Sample> {
        cycled_positions(size, n)
            .into_iter()
            .enumerate()
            .filter_map(|(i, position)| {
                let moves = position.moves();
                if moves.is_empty() {
                    return None;
                }
                let weights: Vec<f32> = (0..moves.len()).map(|j| ((i + 3 * j) % 5) as f32 + 0.5).collect();
                let total: f32 = weights.iter().sum();
                let policy = moves.iter().zip(&weights).map(|(&mv, w)| (mv, w / total)).collect();
                let mut next = position;
                next.play_unchecked(moves[i % moves.len()]);
                let replies = if i % 3 == 0 { Vec::new() } else { next.moves().to_vec() };
                let spread = |j: usize| (j % 3) as f32 + 1.0;
                let total: f32 = (0..replies.len()).map(spread).sum();
                let reply = replies.iter().enumerate().map(|(j, &mv)| (mv, spread(j) / total)).collect();
                Some(Sample { position, policy, value: ((i % 7) as f32 - 3.0) / 3.5, reply })
            })
            .collect()
    }

    /// burn's gradients of the same loss, in the same order as
    /// [`Parameters`].
    fn burn_gradients(net: &Net, data: &PreparedBatch, settings: LearnerConfig) -> (Vec<Vec<f32>>, f32) {
        let device = Device::flex().autodiff();
        let net = net.clone().to_device(&device).train();
        let ([policy, soft, reply, value], _) = loss_sums(&net, data.tensors(&device));
        let weighted = policy
            + value.mul_scalar(settings.value_weight)
            + soft.mul_scalar(settings.soft_policy_weight)
            + reply.mul_scalar(settings.reply_policy_weight);
        let loss = weighted.div_scalar(data.len() as f64);
        let loss_value = loss.clone().into_data().try_to_vec::<f32>().unwrap()[0];
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        struct Collect<'a> {
            grads: &'a GradientsParams,
            out: Vec<Vec<f32>>,
        }
        impl ModuleVisitor for Collect<'_> {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                let grad = self.grads.get::<D>(param.id).expect("every parameter has a gradient");
                self.out.push(grad.into_data().try_to_vec::<f32>().unwrap());
            }
        }
        let mut collect = Collect { grads: &grads, out: Vec::new() };
        net.valid().visit(&mut collect);
        (collect.out, loss_value)
    }

    /// `samples` with the first move of every position of several moves
    /// given no visits, as a search's target often has.
    fn with_unvisited_moves(mut samples: Vec<Sample>) -> Vec<Sample> {
        for sample in &mut samples {
            if sample.policy.len() > 1 {
                sample.policy[0].1 = 0.0;
                let total: f32 = sample.policy.iter().map(|&(_, p)| p).sum();
                sample.policy.iter_mut().for_each(|(_, p)| *p /= total);
            }
        }
        samples
    }

    #[test]
    fn the_memory_estimate_is_what_a_step_holds() {
        // Shapes that cut the batch into one chunk, several, and several
        // over threads; the training-only outputs; a rectangle; steps on
        // two boards in turn, whose buffers each keep their largest.
        let cases = [
            (NetConfig::new().with_blocks(2).with_channels(12), &["6x6"][..], 40, 1),
            (
                NetConfig::new().with_blocks(1).with_channels(20).with_soft_policy(true).with_reply_policy(true),
                &["8x8"],
                70,
                2,
            ),
            (NetConfig::new().with_blocks(3).with_channels(8), &["5x7"], 90, 3),
            (NetConfig::new().with_blocks(0).with_channels(16), &["4x4"], 300, 2),
            (NetConfig::new().with_blocks(1).with_channels(8), &["6x6", "13x20", "8x8"], 40, 2),
        ];
        for (config, sizes, n, threads) in cases {
            let sizes: Vec<Size> = sizes.iter().map(|size| size.parse().unwrap()).collect();
            let net = init_net(&config, &Device::flex(), 3);
            let mut learner = NativeLearner::new(&net, LearnerConfig::default());
            learner.set_threads(threads);
            let mut most = 0;
            for &size in &sizes {
                let data = PreparedBatch::new(&batch(size, n));
                learner.step(std::slice::from_ref(&data), 1e-3);
                most = most.max(data.len());
            }
            let vectors = |v: &[Vec<f32>]| v.iter().map(Vec::capacity).sum::<usize>();
            let OptimizerState::Adamw { first, second, .. } = &learner.state else { unreachable!("AdamW") };
            let held = learner.slots.iter().map(|slot| vectors(&slot.grads)).sum::<usize>()
                + learner.workspaces.iter_mut().map(Workspace::held).sum::<usize>()
                + vectors(&learner.weights)
                + vectors(&learner.grads)
                + vectors(&learner.parameters.values)
                + vectors(first)
                + vectors(second);
            let estimate = learner_floats(&config, &sizes, most as u64, threads as u64);
            // A vector of one float (a gate, a bias) holds four. Over
            // several sizes the estimate is an upper bound: it keeps a
            // gradient for each further size (which a batch of mixed sizes
            // may need and steps of one size do not), and it sizes every
            // thread's workspace for a whole chunk of each board, where a
            // thread may only ever get a short last chunk of one.
            let (held, name) = (held as u64, config.name());
            let spare = (sizes.len() as u64 - 1) * (learner.native_sizes.iter().sum::<usize>() as u64 + held / 10);
            assert!(
                estimate + held / 1000 >= held && estimate <= held + spare + held / 1000,
                "{name} on {sizes:?}, {threads} threads: {estimate} for {held}"
            );
        }
    }

    #[test]
    fn gradients_match_burns_autograd_on_every_shape_of_board() {
        let plain = gated_net(2, 12, 4);
        let with = |soft: bool, reply: bool| {
            let outputs = plain.config().with_soft_policy(soft).with_reply_policy(reply);
            plain.clone().with_training_outputs_of(&outputs, &Device::flex(), 7)
        };
        for net in [with(false, false), with(true, false), with(false, true), with(true, true)] {
            let (has_soft, has_reply) = (net.config().soft_policy, net.config().reply_policy);
            let settings = LearnerConfig {
                value_weight: 1.5,
                soft_policy_weight: 3.0,
                reply_policy_weight: 0.7,
                ..LearnerConfig::default()
            };
            let mut learner = NativeLearner::new(&net, settings);
            assert_eq!(learner.layout.policy_soft.is_some(), has_soft);
            assert_eq!(learner.layout.policy_reply.is_some(), has_reply);
            // Even and odd sides, a single row, a rectangle, a batch cut into
            // several chunks (4x4 has 4 tiles: 128 positions a chunk).
            for (size, n) in [("8x8", 6), ("5x7", 5), ("1x6", 3), ("3x3", 4), ("13x20", 2), ("4x4", 300)] {
                let size: Size = size.parse().unwrap();
                let samples = with_unvisited_moves(batch(size, n));
                let data = PreparedBatch::new(&samples);
                let losses = learner.gradient(std::slice::from_ref(&data));
                assert_eq!(losses.soft_policy > 0.0, has_soft, "{size}: {losses:?}");
                assert_eq!(losses.reply_policy > 0.0, has_reply, "{size}: {losses:?}");
                let (expected, burn_loss) = burn_gradients(&net, &data, settings);
                let native_loss = losses.policy
                    + settings.value_weight * losses.value
                    + settings.soft_policy_weight * losses.soft_policy
                    + settings.reply_policy_weight * losses.reply_policy;
                assert!((native_loss - burn_loss).abs() < 1e-4 * burn_loss.abs().max(1.0), "{size}: loss");
                for ((path, got), want) in learner.parameters.paths.iter().zip(&learner.grads).zip(&expected) {
                    let scale = want.iter().fold(0.0f32, |m, x| m.max(x.abs()));
                    let worst = got.iter().zip(want).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
                    assert!(worst <= 2e-4 * scale.max(1e-3), "{size}: {path} off by {worst} (largest {scale})");
                    assert!(scale > 0.0 || path.contains("gate"), "{size}: {path} has a zero gradient");
                }
            }
        }
    }

    #[test]
    fn the_soft_target_is_the_visits_flattened_and_the_reply_target_the_next_positions_visits() {
        let samples = with_unvisited_moves(batch("6x6".parse().unwrap(), 5));
        let data = PreparedBatch::new(&samples);
        let per = data.reply_moves.len();
        let size = data.size;
        assert_eq!(per, (0..policy_len(size)).filter(|&i| index_move(size, i).is_some()).count());
        for (i, sample) in samples.iter().enumerate() {
            let moves = data.starts[i]..data.starts[i + 1];
            let (targets, soft) = (&data.targets[moves.clone()], &data.soft_targets[moves]);
            assert!((soft.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            let (t_max, s_max) =
                (targets.iter().fold(0.0f32, |m, &t| m.max(t)), soft.iter().fold(0.0f32, |m, &s| m.max(s)));
            for (&t, &s) in targets.iter().zip(soft) {
                assert_eq!(t == 0.0, s == 0.0, "unvisited moves stay unvisited");
                // Flatter: each ratio to the most visited move is its fourth root.
                assert!((s / s_max - (t / t_max).powf(0.25)).abs() < 1e-5, "{t} -> {s}");
            }
            // The reply target is the sample's own, placed at each move's index.
            let reply = &data.reply_targets[i * per..(i + 1) * per];
            let placed: Vec<(Move, f32)> = data
                .reply_moves
                .iter()
                .zip(reply)
                .filter(|&(_, &p)| p > 0.0)
                .map(|(&index, &p)| (index_move(size, index as usize).unwrap(), p))
                .collect();
            let mut expected = sample.reply.clone();
            expected.sort_by_key(|&(mv, _)| move_index(size, mv));
            assert_eq!(placed, expected, "sample {i}");
        }
        assert!(samples.iter().any(|s| s.reply.is_empty()) && samples.iter().any(|s| !s.reply.is_empty()));
        // Each extra loss changes the shared layers' gradient and its own
        // output's, and no other output's.
        let both = NetConfig::new().with_blocks(1).with_channels(8).with_soft_policy(true).with_reply_policy(true);
        let net = gated_net(1, 8, 3).with_training_outputs_of(&both, &Device::flex(), 1);
        let gradients = |soft_policy_weight: f32, reply_policy_weight: f32| {
            let settings = LearnerConfig { soft_policy_weight, reply_policy_weight, ..LearnerConfig::default() };
            let mut learner = NativeLearner::new(&net, settings);
            learner.gradient(std::slice::from_ref(&data));
            learner.parameters.paths.iter().cloned().zip(learner.grads).collect::<Vec<_>>()
        };
        let none = gradients(0.0, 0.0);
        for (weights, own) in [((8.0, 0.0), "policy_soft."), ((0.0, 2.0), "policy_reply.")] {
            let with = gradients(weights.0, weights.1);
            for ((path, a), (_, b)) in none.iter().zip(&with) {
                let is_head = |head: &str| path.starts_with(head);
                let other_output = ["policy_out.", "policy_soft.", "policy_reply.", "value_"]
                    .into_iter()
                    .any(|head| head != own && is_head(head));
                assert_eq!(a == b, other_output, "{own} {path}");
            }
        }
    }

    #[test]
    fn a_step_matches_burns_optimizers_and_threads_change_nothing() {
        let plain = gated_net(1, 8, 9);
        let both = plain.config().with_soft_policy(true).with_reply_policy(true);
        let extra = plain.clone().with_training_outputs_of(&both, &Device::flex(), 2);
        let samples = with_unvisited_moves(batch("6x6".parse().unwrap(), 40));
        for (net, optimizer) in
            [(&plain, OptimizerKind::Adamw), (&plain, OptimizerKind::Sgd), (&extra, OptimizerKind::Adamw)]
        {
            let settings = LearnerConfig { optimizer, ..LearnerConfig::default() };
            let mut burn = Learner::new(net.clone(), crate::Backend::Flex, settings);
            let mut one = Learner::new(net.clone(), crate::Backend::Native, settings);
            let mut two = Learner::new(net.clone(), crate::Backend::Native, settings);
            two.set_threads(2);
            for _ in 0..3 {
                let b = burn.step(&samples, 1e-2);
                let o = one.step(&samples, 1e-2);
                let t = two.step(&samples, 1e-2);
                assert_eq!(o, t, "{optimizer:?}: threads change the losses");
                assert!((b.policy - o.policy).abs() < 1e-4 && (b.value - o.value).abs() < 1e-4, "{optimizer:?}");
                assert!((b.soft_policy - o.soft_policy).abs() < 1e-4, "{optimizer:?}: {b:?} {o:?}");
                assert!((b.reply_policy - o.reply_policy).abs() < 1e-4, "{optimizer:?}: {b:?} {o:?}");
            }
            let device = Device::flex();
            let weights = |learner: &Learner| Parameters::read(&learner.inference_net(&device)).values;
            let (b, o, t) = (weights(&burn), weights(&one), weights(&two));
            assert_eq!(o, t, "{optimizer:?}: threads change the weights");
            let worst = b.iter().flatten().zip(o.iter().flatten()).fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
            assert!(worst < 1e-4, "{optimizer:?}: weights differ from burn's by {worst}");
            let moved = Parameters::read(net).values.iter().flatten().zip(o.iter().flatten()).any(|(x, y)| x != y);
            assert!(moved, "the step changed the weights");
        }
    }

    #[test]
    fn a_mixed_size_batch_is_the_sample_weighted_mean_of_its_sizes() {
        let net = gated_net(2, 8, 5);
        let settings = LearnerConfig { value_weight: 1.5, ..LearnerConfig::default() };
        let mut learner = NativeLearner::new(&net, settings);
        // 40 positions of 4x4 fill more than one chunk.
        let (a, b) = (batch("6x6".parse().unwrap(), 7), batch("4x4".parse().unwrap(), 140));
        let mut mixed: Vec<Sample> = a.iter().chain(&b).cloned().collect();
        mixed.swap(0, 9);
        let groups = PreparedBatch::by_size(&mixed, &net.config());
        assert_eq!(
            groups.iter().map(|g| (g.size.to_string(), g.len())).collect::<Vec<_>>(),
            [("4x4".to_string(), 140), ("6x6".to_string(), 7)]
        );
        let losses = learner.gradient(&groups);
        let together = learner.grads.clone();
        let mut expected = learner.parameters.zeros_like();
        let (mut policy, mut value) = (0.0, 0.0);
        for group in &groups {
            let part = learner.gradient(std::slice::from_ref(group));
            let weight = group.len() as f32 / mixed.len() as f32;
            for (e, g) in expected.iter_mut().flatten().zip(learner.grads.iter().flatten()) {
                *e += weight * g;
            }
            policy += weight * part.policy;
            value += weight * part.value;
        }
        assert!((losses.policy - policy).abs() < 1e-5 && (losses.value - value).abs() < 1e-5, "{losses:?}");
        for ((path, got), want) in learner.parameters.paths.iter().zip(&together).zip(&expected) {
            let scale = want.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            let worst = got.iter().zip(want).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(worst <= 1e-5 * scale.max(1e-3), "{path} off by {worst} (largest {scale})");
        }
        // burn's engine takes the same step on the same mixed batch.
        let mut burn = Learner::new(net.clone(), crate::Backend::Flex, settings);
        let mut native = Learner::new(net.clone(), crate::Backend::Native, settings);
        native.set_threads(2);
        let (b, n) = (burn.step(&mixed, 1e-2), native.step(&mixed, 1e-2));
        assert!((b.policy - n.policy).abs() < 1e-4 && (b.value - n.value).abs() < 1e-4, "{b:?} {n:?}");
        assert!((n.policy - losses.policy).abs() < 1e-6, "threads change the mixed loss");
        let device = Device::flex();
        let weights = |learner: &Learner| Parameters::read(&learner.inference_net(&device)).values;
        let worst = weights(&burn)
            .iter()
            .flatten()
            .zip(weights(&native).iter().flatten())
            .fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
        assert!(worst < 1e-4, "weights differ from burn's by {worst}");
    }

    #[test]
    fn optimizer_state_round_trips_and_refuses_foreign_files() {
        let net = gated_net(1, 8, 2);
        let samples = batch("5x5".parse().unwrap(), 10);
        let data = PreparedBatch::new(&samples);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("optimizer.bin");
        for optimizer in [OptimizerKind::Adamw, OptimizerKind::Sgd] {
            let settings = LearnerConfig { optimizer, ..LearnerConfig::default() };
            let mut learner = NativeLearner::new(&net, settings);
            learner.step(std::slice::from_ref(&data), 1e-3);
            learner.save_optimizer(&path).unwrap();
            let mut resumed = NativeLearner::new(&learner.net(), settings);
            resumed.load_optimizer(&path).unwrap();
            assert_eq!(resumed.state, learner.state, "{optimizer:?}");
            let data = std::slice::from_ref(&data);
            assert_eq!(resumed.step(data, 1e-3), learner.step(data, 1e-3));
            assert_eq!(resumed.parameters, learner.parameters, "{optimizer:?}: resumed step differs");
        }
        // Damaged, foreign, other optimizer, other shape.
        let settings = LearnerConfig::default();
        let mut learner = NativeLearner::new(&net, settings);
        learner.save_optimizer(&path).unwrap();
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        flipped[40] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(learner.load_optimizer(&path).unwrap_err().to_string().contains("checksum"));
        std::fs::write(&path, b"burnpack...").unwrap();
        assert!(learner.load_optimizer(&path).unwrap_err().to_string().contains("not a native optimizer"));
        std::fs::write(&path, &good).unwrap();
        let sgd = LearnerConfig { optimizer: OptimizerKind::Sgd, ..settings };
        assert!(NativeLearner::new(&net, sgd).load_optimizer(&path).is_err());
        let bigger = gated_net(2, 8, 2);
        assert!(NativeLearner::new(&bigger, settings).load_optimizer(&path).is_err());
    }
}
