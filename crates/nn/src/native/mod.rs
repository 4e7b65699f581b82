//! Native CPU inference: the trained [`Net`] run by konane's own kernels
//! instead of burn's tensor operations, for the search's network calls.
//!
//! burn-flex runs the tower at about 0.55 of PyTorch's speed on one core
//! (`docs/performance.md`): its convolution is a
//! small im2col + matrix product per position, and nothing built from burn
//! tensor operations did better (a Winograd probe was 1.9x slower, its
//! strided copies alone costing most of a convolution). Leela Zero's CPU
//! backend shows the way: Winograd F(2x2, 3x3) convolutions, whose 16
//! matrix products per layer take 2.25x fewer multiplications than a direct
//! convolution (F(4x4, 3x3), whose 36 take 4x fewer, on every board
//! where they number at most 0.85 of F(2x2, 3x3)'s: 7x7 and up, but not
//! 6x6), on
//! activations kept in one padded channels-last layout so that the
//! transforms are plain loops and no layer copies its input.
//!
//! The weights are the burn network's own (read once from its parameters),
//! so every checkpoint runs here unchanged; training runs on the same
//! F(2x2, 3x3) kernels ([`train`]).
//! Outputs match [`Net::forward`] to float rounding (tests below). Our
//! buffers are kept between calls and only grow. On AVX-512 and AVX2 CPUs
//! the tower's products run on [`product`], which allocates nothing; `gemm`,
//! which takes the rest (and every product elsewhere), still allocates its
//! small packing buffers inside each one.

mod lanes;
#[cfg(target_arch = "x86_64")]
mod product;
pub mod simd;
pub mod train;
mod winograd;

use burn::tensor::Tensor;
use winograd::{Epilogue, Geometry, convolve, dense, filter_transform, filter_transform4, grow, transpose};

use crate::encoding::{INPUT_PLANES, MOVE_KINDS};
use crate::model::Net;

/// Winograd-domain elements per sub-batch (512 tiles of F(2x2, 3x3): 32
/// positions of 8x8), measured: at this size a layer's Winograd-domain
/// data (2 MiB each way at 64 channels) still runs at full speed, a whole
/// batch of 128 8x8 positions in one piece ran at 0.65x as it spills out of
/// the core's caches.
pub(crate) const MAX_TILE_ELEMENTS: usize = 512 * 16;

/// The same for F(4x4, 3x3), measured on Zen 4 (`konane bench-net`, 8x8
/// b4c48, batch 32): sub-batches of 4-6 8x8 positions ran 8,400-9,100
/// positions/s, of 8 7,800-8,400, of 16 7,000, of 56 6,500-7,800. Its
/// products are element-major, so a sub-batch's rows stay in cache only
/// while the sub-batch is small; F(2x2, 3x3) ran 6,200-6,700 at every
/// size from 4 to 32 positions.
pub(crate) const MAX_TILE_ELEMENTS_F4: usize = 5 * 4 * 36;

/// A 3x3 convolution with "same" padding, its weights in the Winograd
/// domain.
struct WinogradConv {
    inputs: usize,
    outputs: usize,
    /// `G g Gᵀ` for each of the 16 tile elements of F(2x2, 3x3):
    /// `[16][inputs][outputs]`.
    weights: Vec<f32>,
    /// The same for the 36 of F(4x4, 3x3): `[36][inputs][outputs]`.
    weights4: Vec<f32>,
    bias: Vec<f32>,
}

/// A 1x1 convolution or a linear layer: `[inputs][outputs]` weights.
struct Dense {
    inputs: usize,
    outputs: usize,
    weights: Vec<f32>,
    bias: Vec<f32>,
}

/// The network on konane's own CPU kernels; see the module documentation.
pub struct NativeNet {
    stem: WinogradConv,
    blocks: Vec<(WinogradConv, WinogradConv, f32)>,
    policy_hidden: WinogradConv,
    policy_out: Dense,
    value_conv: Dense,
    value_hidden: Dense,
    value_out: Dense,
    /// The most channels any convolution reads or writes: the width of
    /// the Winograd-domain buffers.
    widest: usize,
    scratch: Scratch,
}

/// Buffers reused between calls. The padded activations keep their zero
/// borders as long as the board size stays the same: only interior cells
/// are ever written.
#[derive(Default)]
struct Scratch {
    geometry: Geometry,
    /// Positions the padded buffers hold room for.
    capacity: usize,
    input: Vec<f32>,
    current: Vec<f32>,
    next: Vec<f32>,
    middle: Vec<f32>,
    /// Winograd-domain inputs and outputs: `[tile][16][channels]` for
    /// F(2x2, 3x3), `[36][tile][channels]` for F(4x4, 3x3).
    transformed: Vec<f32>,
    products: Vec<f32>,
    policy_hidden: Vec<f32>,
    logits: Vec<f32>,
    value_planes: Vec<f32>,
    pooled: Vec<f32>,
    hidden: Vec<f32>,
}

fn values_of<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor.into_data().try_to_vec::<f32>().expect("f32 tensors")
}

impl WinogradConv {
    fn new(conv: &burn::nn::conv::Conv2d) -> WinogradConv {
        let [outputs, inputs, kh, kw] = conv.weight.dims();
        assert_eq!([kh, kw], [3, 3], "Winograd F(m x m, 3x3) needs 3x3 kernels");
        assert!(
            conv.stride == [1, 1]
                && conv.dilation == [1, 1]
                && conv.groups == 1
                && matches!(conv.padding, burn::nn::PaddingConfig2d::Same),
            "the native kernels implement stride-1, same-padded, ungrouped convolutions only"
        );
        let kernels = values_of(conv.weight.val());
        let mut weights = vec![0.0; 16 * inputs * outputs];
        filter_transform(&kernels, inputs, outputs, &mut weights);
        let mut weights4 = vec![0.0; 36 * inputs * outputs];
        filter_transform4(&kernels, inputs, outputs, &mut weights4);
        let bias = conv.bias.as_ref().map_or_else(|| vec![0.0; outputs], |b| values_of(b.val()));
        WinogradConv { inputs, outputs, weights, weights4, bias }
    }

    /// Convolves the padded `source` into `destination` (padded or
    /// compact, as `epilogue` says); `skip` is the residual input.
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        geometry: Geometry,
        batch: usize,
        source: &[f32],
        skip: &[f32],
        destination: &mut [f32],
        transformed: &mut [f32],
        products: &mut [f32],
        epilogue: Epilogue,
    ) {
        let shape = (self.inputs, self.outputs);
        let scratch = (transformed, products);
        let weights = if geometry.tile == 4 { &self.weights4 } else { &self.weights };
        convolve((geometry, batch), shape, (weights, &self.bias), source, scratch, epilogue, skip, destination);
    }
}

impl Dense {
    fn conv(conv: &burn::nn::conv::Conv2d) -> Dense {
        let [outputs, inputs, kh, kw] = conv.weight.dims();
        assert!([kh, kw] == [1, 1] && conv.groups == 1, "a dense layer is an ungrouped 1x1 convolution");
        let mut weights = vec![0.0; inputs * outputs];
        transpose(&values_of(conv.weight.val()), outputs, inputs, &mut weights);
        let bias = conv.bias.as_ref().map_or_else(|| vec![0.0; outputs], |b| values_of(b.val()));
        Dense { inputs, outputs, weights, bias }
    }

    fn linear(linear: &burn::nn::Linear) -> Dense {
        let [inputs, outputs] = linear.weight.dims();
        let bias = linear.bias.as_ref().map_or_else(|| vec![0.0; outputs], |b| values_of(b.val()));
        Dense { inputs, outputs, weights: values_of(linear.weight.val()), bias }
    }

    /// `destination[r] = source[r] x weights + bias` for `rows` rows.
    fn forward(&self, rows: usize, source: &[f32], destination: &mut [f32]) {
        dense(rows, (self.inputs, self.outputs), (&self.weights, &self.bias), source, destination);
    }
}

impl NativeNet {
    /// Reads the weights of `net`.
    pub fn new(net: &Net) -> NativeNet {
        let stem = WinogradConv::new(&net.stem);
        let blocks: Vec<_> = net
            .blocks
            .iter()
            .map(|block| {
                let gate = values_of(block.gate.val())[0];
                (WinogradConv::new(&block.first), WinogradConv::new(&block.second), gate)
            })
            .collect();
        let policy_hidden = WinogradConv::new(&net.policy_hidden);
        let convolutions = [&stem, &policy_hidden].into_iter().chain(blocks.iter().flat_map(|(a, b, _)| [a, b]));
        let widest = convolutions.map(|conv| conv.inputs.max(conv.outputs)).max().expect("a stem");
        NativeNet {
            stem,
            blocks,
            policy_hidden,
            widest,
            policy_out: Dense::conv(&net.policy_out),
            value_conv: Dense::conv(&net.value_conv),
            value_hidden: Dense::linear(&net.value_hidden),
            value_out: Dense::linear(&net.value_out),
            scratch: Scratch::default(),
        }
    }

    /// As [`Net::forward`]: `planes` holds `batch` positions of `rows` x
    /// `cols` as `[batch, INPUT_PLANES, rows, cols]`; `policy` receives the
    /// logits `[batch, MOVE_KINDS * rows * cols]` and `values` the values,
    /// both replacing what they held.
    pub fn forward(
        &mut self,
        batch: usize,
        rows: usize,
        cols: usize,
        planes: &[f32],
        policy: &mut Vec<f32>,
        values: &mut Vec<f32>,
    ) {
        let geometry = Geometry::for_inference(rows, cols);
        let cells = rows * cols;
        assert_eq!(planes.len(), batch * INPUT_PLANES * cells, "planes of {batch} positions of {rows}x{cols}");
        policy.clear();
        policy.resize(batch * MOVE_KINDS * cells, 0.0);
        values.clear();
        // Sub-batches of at most MAX_TILE_ELEMENTS(_F4) Winograd-domain elements.
        let most = if geometry.tile == 4 { MAX_TILE_ELEMENTS_F4 } else { MAX_TILE_ELEMENTS };
        let chunk = (most / (geometry.tiles_per_position() * geometry.elements())).max(1);
        let mut start = 0;
        while start < batch {
            let n = chunk.min(batch - start);
            let planes = &planes[start * INPUT_PLANES * cells..(start + n) * INPUT_PLANES * cells];
            let policy = &mut policy[start * MOVE_KINDS * cells..(start + n) * MOVE_KINDS * cells];
            self.forward_chunk(geometry, n, planes, policy, values);
            start += n;
        }
    }

    /// [`NativeNet::forward`] of one sub-batch: writes `policy`, appends to
    /// `values`.
    fn forward_chunk(
        &mut self,
        geometry: Geometry,
        batch: usize,
        planes: &[f32],
        policy: &mut [f32],
        values: &mut Vec<f32>,
    ) {
        let (rows, cols) = (geometry.rows, geometry.cols);
        let cells = rows * cols;
        self.prepare(geometry, batch);
        let s = &mut self.scratch;

        geometry.pad_planes(batch, planes, &mut s.input);
        let (t, p) = (&mut s.transformed, &mut s.products);
        self.stem.forward(geometry, batch, &s.input, &[], &mut s.current, t, p, Epilogue::Relu);
        for (first, second, gate) in &self.blocks {
            first.forward(geometry, batch, &s.current, &[], &mut s.middle, t, p, Epilogue::Relu);
            let residual = Epilogue::Residual { gate: *gate };
            second.forward(geometry, batch, &s.middle, &s.current, &mut s.next, t, p, residual);
            std::mem::swap(&mut s.current, &mut s.next);
        }

        // Policy: 3x3 then 1x1, channels-last, then to burn's
        // [batch, kind, row, col] order.
        let positions = batch * cells;
        let hidden = &mut s.policy_hidden;
        self.policy_hidden.forward(geometry, batch, &s.current, &[], hidden, t, p, Epilogue::ReluCompact);
        self.policy_out.forward(positions, hidden, &mut s.logits);
        for (at, logits) in s.logits[..positions * MOVE_KINDS].chunks_exact(MOVE_KINDS).enumerate() {
            let (b, cell) = (at / cells, at % cells);
            for (kind, &logit) in logits.iter().enumerate() {
                policy[(b * MOVE_KINDS + kind) * cells + cell] = logit;
            }
        }

        // Value: 1x1 over every padded cell (the border's results are
        // skipped), mean and max over the board, two linear layers.
        let v = self.value_conv.outputs;
        self.value_conv.forward(batch * geometry.padded_cells(), &s.current, &mut s.value_planes);
        for b in 0..batch {
            let pooled = &mut s.pooled[..2 * v];
            pooled[..v].fill(0.0);
            pooled[v..].fill(f32::NEG_INFINITY);
            for cell in 0..cells {
                let at = geometry.padded_index(b, cell / cols, cell % cols) * v;
                for (c, &x) in s.value_planes[at..at + v].iter().enumerate() {
                    let x = x.max(0.0);
                    pooled[c] += x;
                    pooled[v + c] = pooled[v + c].max(x);
                }
            }
            for mean in &mut pooled[..v] {
                *mean /= cells as f32;
            }
            self.value_hidden.forward(1, pooled, &mut s.hidden);
            for h in &mut s.hidden[..self.value_hidden.outputs] {
                *h = h.max(0.0);
            }
            let mut out = [0.0f32];
            self.value_out.forward(1, &s.hidden, &mut out);
            values.push(out[0].tanh());
        }
    }

    /// Sizes the buffers for `batch` positions of `geometry`, clearing the
    /// padded ones when the board size changes (a new size starts from its
    /// own batch: a big batch of small boards must not size a big board's
    /// buffers).
    fn prepare(&mut self, geometry: Geometry, batch: usize) {
        let channels = self.stem.outputs;
        let s = &mut self.scratch;
        if s.geometry != geometry || s.capacity < batch {
            let positions = if s.geometry == geometry { batch.max(s.capacity) } else { batch };
            let padded = positions * geometry.padded_cells();
            for (buffer, width) in [
                (&mut s.input, INPUT_PLANES),
                (&mut s.current, channels),
                (&mut s.next, channels),
                (&mut s.middle, channels),
            ] {
                buffer.clear();
                buffer.resize(padded * width, 0.0);
            }
            s.geometry = geometry;
            s.capacity = positions;
        }
        let elements = batch * geometry.tiles_per_position() * geometry.elements();
        let cells = batch * geometry.rows * geometry.cols;
        grow(&mut s.transformed, elements * self.widest);
        grow(&mut s.products, elements * self.widest);
        grow(&mut s.policy_hidden, cells * self.policy_hidden.outputs);
        grow(&mut s.logits, cells * MOVE_KINDS);
        grow(&mut s.value_planes, batch * geometry.padded_cells() * self.value_conv.outputs);
        grow(&mut s.pooled, 2 * self.value_conv.outputs);
        grow(&mut s.hidden, self.value_hidden.outputs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::write_planes;
    use crate::model::NetConfig;
    use burn::module::Param;
    use burn::tensor::{Device, TensorData};
    use konane_rules::Size;
    use konane_rules::sample::cycled_positions;

    /// A small net whose residual gates are switched on (fresh nets start
    /// with zero gates, which would hide the residual branches).
    fn gated_net(blocks: usize, channels: usize) -> Net {
        let device = Device::flex();
        let mut net = NetConfig::new().with_blocks(blocks).with_channels(channels).init(&device);
        for (i, block) in net.blocks.iter_mut().enumerate() {
            block.gate =
                Param::from_tensor(Tensor::from_data(TensorData::new(vec![0.7 - 0.3 * i as f32], [1]), &device));
        }
        net
    }

    #[test]
    fn matches_burn_on_every_shape_of_board() {
        let net = gated_net(2, 16);
        let mut native = NativeNet::new(&net);
        // Odd sides, a single cell, a rectangle and the biggest board; a
        // batch that outgrows the buffers of its size; batches split in
        // sub-batches (6x10 on F(2x2, 3x3); 13x13, 8x8 and 12x12 on F(4x4,
        // 3x3)); F(4x4, 3x3) with partial tiles (5x7, 7x7, 13x20, 3x20).
        for (size, batch) in [
            ("8x8", 5),
            ("5x7", 3),
            ("1x1", 1),
            ("13x20", 2),
            ("8x8", 2),
            ("6x6", 4),
            ("6x6", 30),
            ("13x13", 20),
            ("7x7", 3),
            ("12x12", 5),
            ("3x20", 2),
            ("8x8", 12),
            ("6x10", 40),
        ] {
            let size: Size = size.parse().unwrap();
            let boards = cycled_positions(size, batch);
            let stride = INPUT_PLANES * size.cells();
            let mut planes = vec![0.0; batch * stride];
            for (position, out) in boards.iter().zip(planes.chunks_exact_mut(stride)) {
                write_planes(position, out);
            }
            let shape = [batch, INPUT_PLANES, size.rows(), size.cols()];
            let input = Tensor::<4>::from_data(TensorData::new(planes.clone(), shape), &Device::flex());
            let (burn_policy, burn_values) = net.forward(input);
            let burn_policy = values_of(burn_policy);
            let burn_values = values_of(burn_values);
            let (mut policy, mut values) = (vec![9.0; 3], vec![9.0]);
            native.forward(batch, size.rows(), size.cols(), &planes, &mut policy, &mut values);
            assert_eq!(policy.len(), burn_policy.len(), "{size}");
            assert_eq!(values.len(), batch, "{size}");
            let worst = policy.iter().zip(&burn_policy).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(worst < 1e-4, "{size}: policy differs by {worst}");
            let worst = values.iter().zip(&burn_values).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(worst < 1e-5, "{size}: value differs by {worst}");
            // Not a vacuous match: the outputs vary across positions.
            assert!(burn_policy.iter().any(|&x| (x - burn_policy[0]).abs() > 1e-3), "{size}");
        }
    }
}
