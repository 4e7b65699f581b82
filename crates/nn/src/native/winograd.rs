//! Winograd convolutions on the padded channels-last layout: F(2x2, 3x3)
//! forward and backward, the transforms that inference and training share;
//! F(4x4, 3x3) forward, which inference uses where it is cheaper; and a
//! bounds-checked matrix product over `gemm`.
//!
//! Forward, per input patch `d` and 3x3 filter `g`:
//! `y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A` (Lavin & Gray, 2015). F(2x2, 3x3) takes
//! 16 products per 4 outputs (2.25x fewer multiplications than a direct
//! convolution), F(4x4, 3x3) 36 per 16 (4x fewer), at the price of larger
//! transforms and a little more rounding; on 8x8 the tower's matrix
//! products, most of the inference time, shrink by 1.78x. The backward
//! passes are the transposes of F(2x2, 3x3)'s linear maps: the output
//! gradient goes through `A dy Aᵀ` into the Winograd domain, where the
//! filter gradient is one matrix product per tile element against the
//! forward pass's transformed input, and the input gradient one against the
//! filter; `B dV Bᵀ` brings the latter back to the board. So all three
//! passes of training run on the 2.25x cheaper Winograd products.

#![allow(clippy::needless_range_loop)] // the transforms index several small arrays by one tile coordinate

use gemm::Parallelism;

use super::lanes::{LANES, Lanes, by_lanes, simd_entry};
#[cfg(target_arch = "x86_64")]
use super::product;

use crate::encoding::INPUT_PLANES;

/// `G`, 4x3: the F(2x2, 3x3) filter transform.
const G: [[f32; 3]; 4] = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]];

/// `G`, 6x3: the F(4x4, 3x3) filter transform (interpolation points 0,
/// ±1, ±2 and infinity).
const G4: [[f32; 3]; 6] = [
    [1.0 / 4.0, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
    [0.0, 0.0, 1.0],
];

/// Shape of one pass over a batch of one board size, and the side of the
/// output tiles its convolutions compute (2 for F(2x2, 3x3), 4 for
/// F(4x4, 3x3)). The tile side fixes the padded layout, so every layer of
/// one pass uses the same one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Geometry {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) tile: usize,
}

/// An empty board of F(2x2, 3x3): what buffers are sized for before the
/// first pass.
impl Default for Geometry {
    fn default() -> Geometry {
        Geometry::new(0, 0)
    }
}

impl Geometry {
    /// F(2x2, 3x3), the tiles training runs on.
    pub(crate) fn new(rows: usize, cols: usize) -> Geometry {
        Geometry { rows, cols, tile: 2 }
    }

    /// The faster tiling for inference: F(4x4, 3x3) where its products
    /// (36 a tile) are at most 0.85 of F(2x2, 3x3)'s (16 a tile), and
    /// F(2x2, 3x3) otherwise. Measured (`konane bench-net`, b4c48, batch
    /// 32, Zen 4, with the AVX-512 transforms and product kernel): F(4x4)
    /// 1.3x on 8x8 (0.5625 of the products), 1.4x on 13x20 (0.64) and
    /// 14x17 (0.71), 1.1-1.45x on 14x14 (0.73), 1.15-1.3x on 9x13 (0.77),
    /// 1.2x on 10x10 (0.81), 1.1-1.3x on 6x18 (0.83); level on 6x14
    /// (0.86); a loss on 6x6 (1.0, 0.8-0.95x), where partial tiles and the
    /// costlier transforms eat the saving.
    pub(crate) fn for_inference(rows: usize, cols: usize) -> Geometry {
        let (two, four) = (Geometry::new(rows, cols), Geometry { rows, cols, tile: 4 });
        let products = |g: Geometry| g.tiles_per_position() * g.elements();
        if 20 * products(four) <= 17 * products(two) { four } else { two }
    }

    /// Winograd-domain elements of one tile: `(tile + 2)²`.
    pub(crate) fn elements(self) -> usize {
        (self.tile + 2) * (self.tile + 2)
    }

    /// Tiles per row and per column (a side that is not a multiple of the
    /// tile gets a partial tile; the padding is zeros, so it computes
    /// nothing wrong).
    pub(crate) fn tiles(self) -> (usize, usize) {
        (self.rows.div_ceil(self.tile), self.cols.div_ceil(self.tile))
    }

    /// Tiles of one position.
    pub(crate) fn tiles_per_position(self) -> usize {
        let (th, tw) = self.tiles();
        th * tw
    }

    /// The padded layout: one zero ring, plus zero rows/columns to complete
    /// the last tile of a side that is not a multiple of the tile.
    pub(crate) fn padded(self) -> (usize, usize) {
        let (th, tw) = self.tiles();
        (self.tile * th + 2, self.tile * tw + 2)
    }

    pub(crate) fn padded_cells(self) -> usize {
        let (hp, wp) = self.padded();
        hp * wp
    }

    pub(crate) fn cells(self) -> usize {
        self.rows * self.cols
    }

    /// Index of cell (`row`, `col`) of position `b` in the padded layout.
    pub(crate) fn padded_index(self, b: usize, row: usize, col: usize) -> usize {
        let (hp, wp) = self.padded();
        (b * hp + row + 1) * wp + col + 1
    }

    /// Position, tile row and tile column of tile `tile`.
    fn tile_position(self, tile: usize) -> (usize, usize, usize) {
        let (th, tw) = self.tiles();
        (tile / (th * tw), tile / tw % th, tile % tw)
    }

    /// Where tile `tile`'s `M`x`M` outputs are, in the padded layout or
    /// (with `compact`) the unpadded one; `None` past the last row or column.
    pub(crate) fn tile_outputs<const M: usize>(self, tile: usize, compact: bool) -> [[Option<usize>; M]; M] {
        debug_assert_eq!(M, self.tile, "outputs of a tile of another side");
        let (b, ty, tx) = self.tile_position(tile);
        std::array::from_fn(|oi| {
            std::array::from_fn(|oj| {
                let (y, x) = (M * ty + oi, M * tx + oj);
                (y < self.rows && x < self.cols)
                    .then(|| if compact { (b * self.rows + y) * self.cols + x } else { self.padded_index(b, y, x) })
            })
        })
    }

    /// Padded index of the top-left cell of tile `tile`'s input patch.
    fn patch_corner(self, tile: usize) -> usize {
        let (hp, wp) = self.padded();
        let (b, ty, tx) = self.tile_position(tile);
        (b * hp + self.tile * ty) * wp + self.tile * tx
    }

    /// Writes `batch` positions' input planes (`[batch][INPUT_PLANES][cells]`)
    /// into the board cells of the padded channels-last `input`.
    pub(crate) fn pad_planes(self, batch: usize, planes: &[f32], input: &mut [f32]) {
        let cells = self.cells();
        for b in 0..batch {
            let position = &planes[b * INPUT_PLANES * cells..][..INPUT_PLANES * cells];
            for (plane, values) in position.chunks_exact(cells).enumerate() {
                for (cell, &value) in values.iter().enumerate() {
                    input[self.padded_index(b, cell / self.cols, cell % self.cols) * INPUT_PLANES + plane] = value;
                }
            }
        }
    }
}

/// Grows `buffer` to at least `len` values (never shrinks: no reallocation
/// once the largest call has been seen).
pub(crate) fn grow(buffer: &mut Vec<f32>, len: usize) {
    if buffer.len() < len {
        // Exactly: a buffer grows to the largest board it has seen, not to
        // twice that (and the memory estimate counts exactly that).
        buffer.reserve_exact(len - buffer.len());
        buffer.resize(len, 0.0);
    }
}

/// `[rows][cols]` as `[cols][rows]` into `out`.
pub(crate) fn transpose(values: &[f32], rows: usize, cols: usize, out: &mut [f32]) {
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
}

/// `G g Gᵀ` of each filter of a burn convolution weight `[outputs][inputs][3][3]`,
/// as `[16][inputs][outputs]`: one matrix per tile element.
pub(crate) fn filter_transform(g: &[f32], inputs: usize, outputs: usize, u: &mut [f32]) {
    assert_eq!(g.len(), 9 * inputs * outputs);
    assert_eq!(u.len(), 16 * inputs * outputs);
    for o in 0..outputs {
        for i in 0..inputs {
            let kernel = &g[(o * inputs + i) * 9..][..9];
            for a in 0..4 {
                for b in 0..4 {
                    let mut sum = 0.0;
                    for (r, g_ar) in G[a].iter().enumerate() {
                        for (c, g_bc) in G[b].iter().enumerate() {
                            sum += g_ar * kernel[r * 3 + c] * g_bc;
                        }
                    }
                    u[((a * 4 + b) * inputs + i) * outputs + o] = sum;
                }
            }
        }
    }
}

/// The transpose of [`filter_transform`]: adds `Gᵀ dU G` to the burn-layout
/// filter gradient `dg` (`[outputs][inputs][3][3]`).
pub(crate) fn filter_transform_backward(du: &[f32], inputs: usize, outputs: usize, dg: &mut [f32]) {
    assert_eq!(dg.len(), 9 * inputs * outputs);
    assert_eq!(du.len(), 16 * inputs * outputs);
    for o in 0..outputs {
        for i in 0..inputs {
            let kernel = &mut dg[(o * inputs + i) * 9..][..9];
            for a in 0..4 {
                for b in 0..4 {
                    let d = du[((a * 4 + b) * inputs + i) * outputs + o];
                    for (r, g_ar) in G[a].iter().enumerate() {
                        for (c, g_bc) in G[b].iter().enumerate() {
                            kernel[r * 3 + c] += g_ar * d * g_bc;
                        }
                    }
                }
            }
        }
    }
}

/// `G g Gᵀ` of F(4x4, 3x3) for each filter of a burn convolution weight
/// `[outputs][inputs][3][3]`, as `[36][inputs][outputs]`.
pub(crate) fn filter_transform4(g: &[f32], inputs: usize, outputs: usize, u: &mut [f32]) {
    assert_eq!(g.len(), 9 * inputs * outputs);
    assert_eq!(u.len(), 36 * inputs * outputs);
    for o in 0..outputs {
        for i in 0..inputs {
            let kernel = &g[(o * inputs + i) * 9..][..9];
            for a in 0..6 {
                for b in 0..6 {
                    // Summed in f64, rounded to f32 once.
                    let mut sum = 0.0f64;
                    for (r, g_ar) in G4[a].iter().enumerate() {
                        for (c, g_bc) in G4[b].iter().enumerate() {
                            sum += f64::from(*g_ar) * f64::from(kernel[r * 3 + c]) * f64::from(*g_bc);
                        }
                    }
                    u[((a * 6 + b) * inputs + i) * outputs + o] = sum as f32;
                }
            }
        }
    }
}

/// `Bᵀ d` of F(4x4, 3x3) along one line of a 6x6 patch.
#[inline(always)]
fn input_line4<W: Lanes>(d: [W; 6]) -> [W; 6] {
    let (p, q) = (d[2].scale_add(-4.0, d[4]), d[1].scale_add(-4.0, d[3]));
    let (r, t) = (d[4].sub(d[2]), d[3].sub(d[1]));
    [
        d[2].scale_add(-5.0, d[0].scale_add(4.0, d[4])),
        p.add(q),
        p.sub(q),
        t.scale_add(2.0, r),
        t.scale_add(-2.0, r),
        d[3].scale_add(-5.0, d[1].scale_add(4.0, d[5])),
    ]
}

/// `Aᵀ m` of F(4x4, 3x3) along one line of a 6x6 tile.
#[inline(always)]
fn output_line4<W: Lanes>(m: [W; 6]) -> [W; 4] {
    let (p, q) = (m[1].add(m[2]), m[1].sub(m[2]));
    let (r, t) = (m[3].add(m[4]), m[3].sub(m[4]));
    [p.add(r).add(m[0]), t.scale_add(2.0, q), r.scale_add(4.0, p), t.scale_add(8.0, q).add(m[5])]
}

/// `Bᵀ d B` of one patch for the lane group at channel `c`.
#[inline(always)]
fn input_tile<W: Lanes>(source: &[f32], corner: usize, row: usize, cin: usize, out: &mut [f32], c: usize) {
    let d = |a: usize, b: usize| W::load(source, corner + a * row + b * cin + c);
    // Rows: t = Bᵀ d.
    let mut t = [[W::zero(); 4]; 4];
    for b in 0..4 {
        let (d0, d1, d2, d3) = (d(0, b), d(1, b), d(2, b), d(3, b));
        t[0][b] = d0.sub(d2);
        t[1][b] = d1.add(d2);
        t[2][b] = d2.sub(d1);
        t[3][b] = d1.sub(d3);
    }
    // Columns: V = t B.
    for (i, [t0, t1, t2, t3]) in t.into_iter().enumerate() {
        t0.sub(t2).store(out, (i * 4) * cin + c);
        t1.add(t2).store(out, (i * 4 + 1) * cin + c);
        t2.sub(t1).store(out, (i * 4 + 2) * cin + c);
        t1.sub(t3).store(out, (i * 4 + 3) * cin + c);
    }
}

simd_entry! {
    /// `Bᵀ d B` of every 4x4 patch of the padded `source` (`channels` wide)
    /// into `out`, `[tile][16][channels]`.
    pub(crate) fn input_transform<W>(
        geometry: Geometry,
        batch: usize,
        channels: usize,
        source: &[f32],
        out: &mut [f32],
    ) {
        assert_eq!(geometry.tile, 2, "an F(2x2, 3x3) transform of another tiling");
        let (_, wp) = geometry.padded();
        let cin = channels;
        let tiles = batch * geometry.tiles_per_position();
        for (tile, out) in out[..tiles * 16 * cin].chunks_exact_mut(16 * cin).enumerate() {
            let corner = geometry.patch_corner(tile) * cin;
            by_lanes!(cin, W, |c| input_tile(source, corner, wp * cin, cin, out, c));
        }
    }
}

/// `Bᵀ d B` of F(4x4, 3x3) of one 6x6 patch for the lane group at channel `c`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn input_tile4<W: Lanes>(
    source: &[f32],
    corner: usize,
    row: usize,
    cin: usize,
    out: &mut [f32],
    at: usize,
    plane: usize,
    c: usize,
) {
    // Columns: t = Bᵀ d, `columns[b][i]` = t[i][b]. Built in place and read
    // by index: moving these arrays (`into_iter`, a zeroed start) copied
    // 2 KiB a tile and cost as much as the arithmetic.
    let columns: [[W; 6]; 6] =
        std::array::from_fn(|b| input_line4(std::array::from_fn(|a| W::load(source, corner + a * row + b * cin + c))));
    // Rows: V = t B.
    for i in 0..6 {
        let line = input_line4(std::array::from_fn(|b| columns[b][i]));
        for j in 0..6 {
            line[j].store(out, (i * 6 + j) * plane + at + c);
        }
    }
}

simd_entry! {
    /// `Bᵀ d B` of F(4x4, 3x3) of every 6x6 patch (stride 4) of the padded
    /// `source` (`channels` wide) into `out`, `[36][tile][channels]`: element
    /// by element, so that each element's matrix product reads and writes
    /// contiguous rows.
    pub(crate) fn input_transform4<W>(
        geometry: Geometry,
        batch: usize,
        channels: usize,
        source: &[f32],
        out: &mut [f32],
    ) {
        assert_eq!(geometry.tile, 4, "an F(4x4, 3x3) transform of another tiling");
        let (_, wp) = geometry.padded();
        let cin = channels;
        let tiles = batch * geometry.tiles_per_position();
        let out = &mut out[..36 * tiles * cin];
        for tile in 0..tiles {
            let corner = geometry.patch_corner(tile) * cin;
            by_lanes!(cin, W, |c| input_tile4(source, corner, wp * cin, cin, out, tile * cin, tiles * cin, c));
        }
    }
}

/// `B dV Bᵀ` of one tile for the lane group at channel `c`, added into its patch.
#[inline(always)]
fn input_tile_backward<W: Lanes>(v: &[f32], cin: usize, dx: &mut [f32], corner: usize, row: usize, c: usize) {
    // Columns: dt = dV Bᵀ.
    let mut dt = [[W::zero(); 4]; 4];
    for (i, out) in dt.iter_mut().enumerate() {
        let e = |j: usize| W::load(v, (i * 4 + j) * cin + c);
        let (v0, v1, v2, v3) = (e(0), e(1), e(2), e(3));
        *out = [v0, v1.sub(v2).add(v3), v1.add(v2).sub(v0), v3.neg()];
    }
    // Rows: dd = B dt, added into the overlapping patch.
    for j in 0..4 {
        let (t0, t1, t2, t3) = (dt[0][j], dt[1][j], dt[2][j], dt[3][j]);
        let column = [t0, t1.sub(t2).add(t3), t1.add(t2).sub(t0), t3.neg()];
        for (i, value) in column.into_iter().enumerate() {
            let at = corner + i * row + j * cin + c;
            W::load(dx, at).add(value).store(dx, at);
        }
    }
}

simd_entry! {
    /// The transpose of [`input_transform`]: `B dV Bᵀ` of each tile of `dv`
    /// (`[tile][16][channels]`) summed into the padded `dx`, which it first
    /// clears. The padding ring receives gradient too; callers never read it
    /// (every consumer masks by an activation that is zero there, or reads
    /// the board's cells only).
    pub(crate) fn input_transform_backward<W>(
        geometry: Geometry,
        batch: usize,
        channels: usize,
        dv: &[f32],
        dx: &mut [f32],
    ) {
        assert_eq!(geometry.tile, 2, "an F(2x2, 3x3) transform of another tiling");
        let (_, wp) = geometry.padded();
        let cin = channels;
        let tiles = batch * geometry.tiles_per_position();
        dx[..batch * geometry.padded_cells() * cin].fill(0.0);
        for (tile, v) in dv[..tiles * 16 * cin].chunks_exact(16 * cin).enumerate() {
            let corner = geometry.patch_corner(tile) * cin;
            by_lanes!(cin, W, |c| input_tile_backward(v, cin, dx, corner, wp * cin, c));
        }
    }
}

/// What an output transform does with each value `y` (bias included) on
/// its way out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Epilogue {
    /// `y` into the padded layout.
    Raw,
    /// `relu(y)` into the padded layout.
    Relu,
    /// `relu(skip + gate * y)` into the padded layout: a residual block's
    /// second convolution, `skip` being the block's input.
    Residual { gate: f32 },
    /// `relu(y)` into the unpadded channels-last layout.
    ReluCompact,
}

/// `value` (bias included) through `epilogue`, `at` being where it goes
/// (and where its residual input is).
#[inline(always)]
fn apply<W: Lanes>(epilogue: Epilogue, value: W, skip: &[f32], at: usize) -> W {
    match epilogue {
        Epilogue::Raw => value,
        Epilogue::Relu | Epilogue::ReluCompact => value.relu(),
        Epilogue::Residual { gate } => value.scale_add(gate, W::load(skip, at)).relu(),
    }
}

/// `Aᵀ m A` plus the bias, through the epilogue, of one tile for channels
/// `c..c + L`, into the cells `targets` names.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn output_tile<W: Lanes>(
    m: &[f32],
    cout: usize,
    bias: &[f32],
    epilogue: Epilogue,
    targets: &[[Option<usize>; 2]; 2],
    skip: &[f32],
    destination: &mut [f32],
    c: usize,
) {
    let e = |k: usize| W::load(m, k * cout + c);
    // Rows: s = Aᵀ m (2x4).
    let mut s = [[W::zero(); 4]; 2];
    for j in 0..4 {
        let (m0, m1, m2, m3) = (e(j), e(4 + j), e(8 + j), e(12 + j));
        s[0][j] = m0.add(m1).add(m2);
        s[1][j] = m1.sub(m2).sub(m3);
    }
    let bias = W::load(bias, c);
    // Columns: y = s A, then the bias and the epilogue.
    for (si, row) in s.iter().zip(targets) {
        let outputs = [si[0].add(si[1]).add(si[2]), si[1].sub(si[2]).sub(si[3])];
        for (value, target) in outputs.into_iter().zip(row) {
            if let Some(at) = target {
                let at = at * cout + c;
                apply(epilogue, value.add(bias), skip, at).store(destination, at);
            }
        }
    }
}

simd_entry! {
    /// `y = Aᵀ m A + bias` of every tile of `m` (`[tile][16][channels]`)
    /// through `epilogue` into the board cells of `destination` (padded, or
    /// compact for [`Epilogue::ReluCompact`]); `skip` is the residual input.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn output_transform<W>(
        geometry: Geometry,
        batch: usize,
        channels: usize,
        m: &[f32],
        bias: &[f32],
        epilogue: Epilogue,
        skip: &[f32],
        destination: &mut [f32],
    ) {
        assert_eq!(geometry.tile, 2, "an F(2x2, 3x3) transform of another tiling");
        let cout = channels;
        let tiles = batch * geometry.tiles_per_position();
        for (tile, m) in m[..tiles * 16 * cout].chunks_exact(16 * cout).enumerate() {
            let targets = geometry.tile_outputs::<2>(tile, epilogue == Epilogue::ReluCompact);
            by_lanes!(cout, W, |c| output_tile(m, cout, bias, epilogue, &targets, skip, destination, c));
        }
    }
}

/// `Aᵀ m A` of F(4x4, 3x3) plus the bias, through the epilogue, of one
/// tile for the lane group at channel `c`, into the cells `targets` names.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn output_tile4<W: Lanes>(
    m: &[f32],
    (at, plane): (usize, usize),
    cout: usize,
    bias: &[f32],
    epilogue: Epilogue,
    targets: &[[Option<usize>; 4]; 4],
    skip: &[f32],
    destination: &mut [f32],
    c: usize,
) {
    // Columns: s = Aᵀ m (4x6), `columns[j][i]` = s[i][j]; indexed, not
    // moved, as in `input_tile4`.
    let columns: [[W; 4]; 6] =
        std::array::from_fn(|j| output_line4(std::array::from_fn(|i| W::load(m, (i * 6 + j) * plane + at + c))));
    let bias = W::load(bias, c);
    // Rows: y = s A, then the bias and the epilogue.
    for i in 0..4 {
        let line = output_line4(std::array::from_fn(|j| columns[j][i]));
        for j in 0..4 {
            if let Some(at) = targets[i][j] {
                let at = at * cout + c;
                apply(epilogue, line[j].add(bias), skip, at).store(destination, at);
            }
        }
    }
}

simd_entry! {
    /// `y = Aᵀ m A + bias` of F(4x4, 3x3) for every tile of `m`
    /// (`[36][tile][channels]`), as [`output_transform`] does for F(2x2, 3x3).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn output_transform4<W>(
        geometry: Geometry,
        batch: usize,
        channels: usize,
        m: &[f32],
        bias: &[f32],
        epilogue: Epilogue,
        skip: &[f32],
        destination: &mut [f32],
    ) {
        assert_eq!(geometry.tile, 4, "an F(4x4, 3x3) transform of another tiling");
        let cout = channels;
        let tiles = batch * geometry.tiles_per_position();
        let m = &m[..36 * tiles * cout];
        for tile in 0..tiles {
            let targets = geometry.tile_outputs::<4>(tile, epilogue == Epilogue::ReluCompact);
            let place = (tile * cout, tiles * cout);
            by_lanes!(cout, W, |c| output_tile4(m, place, cout, bias, epilogue, &targets, skip, destination, c));
        }
    }
}

/// `A dy Aᵀ` of one tile for the lane group at channel `c`; adds the outputs'
/// gradients to `bias`.
#[inline(always)]
fn output_tile_backward<W: Lanes>(
    dy: &[f32],
    targets: &[[Option<usize>; 2]; 2],
    cout: usize,
    m: &mut [f32],
    bias: &mut [f32],
    c: usize,
) {
    let g = |a: usize, b: usize| targets[a][b].map_or(W::zero(), |at| W::load(dy, at * cout + c));
    let dyt = [[g(0, 0), g(0, 1)], [g(1, 0), g(1, 1)]];
    let total = dyt[0][0].add(dyt[0][1]).add(dyt[1][0].add(dyt[1][1]));
    W::load(bias, c).add(total).store(bias, c);
    // Columns: ds = dy Aᵀ (2x4).
    let ds = dyt.map(|[y0, y1]| [y0, y0.add(y1), y0.sub(y1), y1.neg()]);
    // Rows: dm = A ds (4x4).
    for j in 0..4 {
        let (s0, s1) = (ds[0][j], ds[1][j]);
        s0.store(m, j * cout + c);
        s0.add(s1).store(m, (4 + j) * cout + c);
        s0.sub(s1).store(m, (8 + j) * cout + c);
        s1.neg().store(m, (12 + j) * cout + c);
    }
}

simd_entry! {
    /// The transpose of the output transform `y = Aᵀ m A`: `A dy Aᵀ` of each
    /// tile's 2x2 output gradient (read from the padded `dy`, zero past an odd
    /// side) into `dm`, `[tile][16][channels]`; adds each output gradient to
    /// `bias` too (the bias gradient is their sum).
    pub(crate) fn output_transform_backward<W>(
        geometry: Geometry,
        batch: usize,
        channels: usize,
        dy: &[f32],
        dm: &mut [f32],
        bias: &mut [f32],
    ) {
        assert_eq!(geometry.tile, 2, "an F(2x2, 3x3) transform of another tiling");
        let cout = channels;
        let tiles = batch * geometry.tiles_per_position();
        for (tile, m) in dm[..tiles * 16 * cout].chunks_exact_mut(16 * cout).enumerate() {
            let targets = geometry.tile_outputs::<2>(tile, false);
            by_lanes!(cout, W, |c| output_tile_backward(dy, &targets, cout, m, bias, c));
        }
    }
}

simd_entry! {
    /// Zeroes `d` wherever `x` is not positive: the gradient through a ReLU
    /// whose output was `x`.
    pub(crate) fn relu_backward<W>(d: &mut [f32], x: &[f32]) {
        for (d, &x) in d.iter_mut().zip(x) {
            if x <= 0.0 {
                *d = 0.0;
            }
        }
    }
}

simd_entry! {
    /// `d += t`.
    pub(crate) fn add_assign<W>(d: &mut [f32], t: &[f32]) {
        for (d, &t) in d.iter_mut().zip(t) {
            *d += t;
        }
    }
}

simd_entry! {
    /// A residual block's output `relu(x + gate * y)`.
    pub(crate) fn residual<W>(out: &mut [f32], x: &[f32], y: &[f32], gate: f32) {
        for ((out, &x), &y) in out.iter_mut().zip(x).zip(y) {
            *out = (x + gate * y).max(0.0);
        }
    }
}

simd_entry! {
    /// Backward through `out = relu(x + gate * y)`: `d` (the gradient at
    /// `out`) becomes the gradient at `x`, `dy` receives the gradient at `y`;
    /// returns the gate's gradient.
    pub(crate) fn residual_backward<W>(d: &mut [f32], out: &[f32], y: &[f32], dy: &mut [f32], gate: f32) -> f32 {
        let n = d.len().min(out.len()).min(y.len()).min(dy.len());
        let (d, out, y, dy) = (&mut d[..n], &out[..n], &y[..n], &mut dy[..n]);
        // LANES partial sums, so the sum vectorizes (its order is fixed).
        let mut sums = [0.0f32; LANES];
        let full = n / LANES * LANES;
        for at in (0..full).step_by(LANES) {
            for l in 0..LANES {
                let i = at + l;
                let g = if out[i] > 0.0 { d[i] } else { 0.0 };
                d[i] = g;
                sums[l] += g * y[i];
                dy[i] = gate * g;
            }
        }
        let mut gate_grad = 0.0;
        for i in full..n {
            let g = if out[i] > 0.0 { d[i] } else { 0.0 };
            d[i] = g;
            gate_grad += g * y[i];
            dy[i] = gate * g;
        }
        sums.iter().sum::<f32>() + gate_grad
    }
}

/// A whole 3x3 convolution forward in `geometry`'s tiling: input
/// transform, one product per tile element (`[tiles x inputs] x [inputs x
/// outputs]` against the filter `u` transformed for that tiling), output
/// transform with the bias and `epilogue`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn convolve(
    (geometry, batch): (Geometry, usize),
    (inputs, outputs): (usize, usize),
    (u, bias): (&[f32], &[f32]),
    source: &[f32],
    (transformed, products): (&mut [f32], &mut [f32]),
    epilogue: Epilogue,
    skip: &[f32],
    destination: &mut [f32],
) {
    let (cin, cout) = (inputs, outputs);
    let tiles = batch * geometry.tiles_per_position();
    let elements = geometry.elements();
    assert_eq!(u.len(), elements * cin * cout, "filters transformed for another tiling");
    match geometry.tile {
        2 => input_transform(geometry, batch, cin, source, transformed),
        4 => input_transform4(geometry, batch, cin, source, transformed),
        tile => unreachable!("no Winograd tiling of side {tile}"),
    }
    for k in 0..elements {
        let filter = View::rows(&u[k * cin * cout..(k + 1) * cin * cout], cout);
        if geometry.tile == 4 {
            // Element-major: `[36][tile][channels]`.
            let (lhs, dst) = (&transformed[k * tiles * cin..], &mut products[k * tiles * cout..]);
            matmul((tiles, cout, cin), dst, cout, false, View::rows(lhs, cin), filter);
        } else {
            // Tile-major: `[tile][16][channels]`, as training reads it.
            let lhs = View::strided(&transformed[k * cin..], elements * cin, 1);
            matmul((tiles, cout, cin), &mut products[k * cout..], elements * cout, false, lhs, filter);
        }
    }
    if geometry.tile == 4 {
        output_transform4(geometry, batch, cout, products, bias, epilogue, skip, destination);
    } else {
        output_transform(geometry, batch, cout, products, bias, epilogue, skip, destination);
    }
}

/// A 1x1 convolution or linear layer over `rows` rows:
/// `destination[r] = source[r] x weights + bias`, `weights` as
/// `[inputs][outputs]`.
pub(crate) fn dense(
    rows: usize,
    (inputs, outputs): (usize, usize),
    (weights, bias): (&[f32], &[f32]),
    source: &[f32],
    destination: &mut [f32],
) {
    let destination = &mut destination[..rows * outputs];
    for row in destination.chunks_exact_mut(outputs) {
        row.copy_from_slice(bias);
    }
    matmul(
        (rows, outputs, inputs),
        destination,
        outputs,
        true,
        View::rows(source, inputs),
        View::rows(weights, outputs),
    );
}

/// A matrix read from a slice with any row and column strides.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub(crate) data: &'a [f32],
    pub(crate) row_stride: usize,
    pub(crate) col_stride: usize,
}

impl<'a> View<'a> {
    /// A row-major matrix `cols` wide.
    pub(crate) fn rows(data: &'a [f32], cols: usize) -> View<'a> {
        View { data, row_stride: cols, col_stride: 1 }
    }

    /// The transpose of a row-major matrix `cols` wide.
    pub(crate) fn transposed(data: &'a [f32], cols: usize) -> View<'a> {
        View { data, row_stride: 1, col_stride: cols }
    }

    /// With these strides.
    pub(crate) fn strided(data: &'a [f32], row_stride: usize, col_stride: usize) -> View<'a> {
        View { data, row_stride, col_stride }
    }

    fn check(&self, rows: usize, cols: usize, what: &str) {
        if rows > 0 && cols > 0 {
            let last = (rows - 1) * self.row_stride + (cols - 1) * self.col_stride;
            assert!(last < self.data.len(), "{what}: {rows}x{cols} matrix past its slice");
        }
    }
}

/// `dst = lhs x rhs` (or `dst += lhs x rhs` when `accumulate`) for an
/// `m x k` by `k x n` product, `dst` row-major with rows `dst_row_stride`
/// apart, on the calling thread. Every index is checked against the slices
/// before `gemm` runs.
pub(crate) fn matmul(
    (m, n, k): (usize, usize, usize),
    dst: &mut [f32],
    dst_row_stride: usize,
    accumulate: bool,
    lhs: View<'_>,
    rhs: View<'_>,
) {
    if m == 0 || n == 0 {
        return;
    }
    lhs.check(m, k, "left factor");
    rhs.check(k, n, "right factor");
    assert!((m - 1) * dst_row_stride + n <= dst.len(), "product: {m}x{n} matrix past its slice");
    if k == 0 {
        if !accumulate {
            for row in 0..m {
                dst[row * dst_row_stride..][..n].fill(0.0);
            }
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = product::Kernel::best().filter(|kernel| kernel.takes(n, k, lhs.col_stride, rhs.col_stride)) {
        let operands = product::Operands {
            m,
            n,
            k,
            dst: dst.as_mut_ptr(),
            dst_row: dst_row_stride,
            lhs: lhs.data.as_ptr(),
            lhs_row: lhs.row_stride,
            rhs: rhs.data.as_ptr(),
            rhs_row: rhs.row_stride,
        };
        // SAFETY: `best` checked the CPU and `takes` the shapes; the bounds
        // were checked above; `dst` is a unique borrow.
        unsafe { kernel.product(operands, accumulate) };
        return;
    }
    // SAFETY: every index the product touches was checked above: rows and
    // columns of each matrix lie within its slice; `dst` is a unique borrow.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_row_stride as isize,
            accumulate,
            lhs.data.as_ptr(),
            lhs.col_stride as isize,
            lhs.row_stride as isize,
            rhs.data.as_ptr(),
            rhs.col_stride as isize,
            rhs.row_stride as isize,
            if accumulate { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random fill.
    fn fill(n: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    fn dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
    }

    /// Each backward map is the transpose of its forward map:
    /// `<F x, y> = <x, Fᵀ y>` for random `x` and `y`.
    #[test]
    fn backward_transforms_are_the_transposes_of_the_forward_ones() {
        let (inputs, outputs) = (3, 2);
        let g = fill(9 * inputs * outputs, 1);
        let du = fill(16 * inputs * outputs, 2);
        let mut u = vec![0.0; du.len()];
        filter_transform(&g, inputs, outputs, &mut u);
        let mut dg = vec![0.0; g.len()];
        filter_transform_backward(&du, inputs, outputs, &mut dg);
        assert!((dot(&u, &du) - dot(&g, &dg)).abs() < 1e-4, "filter transform");

        for (rows, cols, batch) in [(4, 4, 2), (5, 3, 1), (1, 1, 3), (2, 7, 1)] {
            let geometry = Geometry::new(rows, cols);
            let padded = batch * geometry.padded_cells() * inputs;
            let transformed = batch * geometry.tiles_per_position() * 16 * inputs;
            // The input transform reads the ring as zeros: compare on
            // inputs that are zero there.
            let mut x = fill(padded, 3);
            let (hp, wp) = geometry.padded();
            for (i, value) in x.chunks_exact_mut(inputs).enumerate() {
                let (row, col) = (i / wp % hp, i % wp);
                if !((1..=rows).contains(&row) && (1..=cols).contains(&col)) {
                    value.fill(0.0);
                }
            }
            let dv = fill(transformed, 4);
            let mut v = vec![0.0; transformed];
            input_transform(geometry, batch, inputs, &x, &mut v);
            let mut dx = vec![7.0; padded];
            input_transform_backward(geometry, batch, inputs, &dv, &mut dx);
            assert!((dot(&v, &dv) - dot(&x, &dx)).abs() < 1e-3, "{rows}x{cols}: input transform");

            // Output transform: y = Aᵀ m A at the board's cells.
            let m = fill(transformed, 5);
            let dy = fill(padded, 6);
            let mut dm = vec![0.0; transformed];
            let mut bias = vec![0.0; inputs];
            output_transform_backward(geometry, batch, inputs, &dy, &mut dm, &mut bias);
            let mut forward = 0.0f64;
            for (tile, mt) in m.chunks_exact(16 * inputs).enumerate() {
                let targets = geometry.tile_outputs::<2>(tile, false);
                for c in 0..inputs {
                    let e = |k: usize| mt[k * inputs + c];
                    let s: [[f32; 4]; 2] = std::array::from_fn(|a| {
                        std::array::from_fn(|j| {
                            if a == 0 { e(j) + e(4 + j) + e(8 + j) } else { e(4 + j) - e(8 + j) - e(12 + j) }
                        })
                    });
                    for a in 0..2 {
                        let y = [s[a][0] + s[a][1] + s[a][2], s[a][1] - s[a][2] - s[a][3]];
                        for (b, value) in y.into_iter().enumerate() {
                            if let Some(at) = targets[a][b] {
                                forward += f64::from(value) * f64::from(dy[at * inputs + c]);
                            }
                        }
                    }
                }
            }
            assert!((forward - dot(&m, &dm)).abs() < 1e-3, "{rows}x{cols}: output transform");
            // The bias gradient is the sum of the board cells' gradients.
            let mut expected = vec![0.0f32; inputs];
            for b in 0..batch {
                for row in 0..rows {
                    for col in 0..cols {
                        let at = geometry.padded_index(b, row, col);
                        for (c, e) in expected.iter_mut().enumerate() {
                            *e += dy[at * inputs + c];
                        }
                    }
                }
            }
            for (e, got) in expected.iter().zip(&bias) {
                assert!((e - got).abs() < 1e-4, "{rows}x{cols}: bias gradient");
            }
        }
    }

    /// Both tilings compute the 3x3 "same" convolution: against a direct
    /// one in f64 on boards whose sides are and are not multiples of the
    /// tile, with a bias and each epilogue that reads a padded layout.
    #[test]
    fn both_tilings_match_a_direct_convolution() {
        let (inputs, outputs) = (17, 18); // past one lane of channels, and a remainder
        let g = fill(9 * inputs * outputs, 11);
        let bias = fill(outputs, 12);
        let mut checked = [0; 2];
        for (rows, cols, batch) in [(8, 8, 3), (5, 7, 2), (1, 1, 2), (6, 6, 1), (13, 20, 1), (4, 9, 2)] {
            for tile in [2, 4] {
                let geometry = Geometry { rows, cols, tile };
                let elements = geometry.elements();
                let mut u = vec![0.0; elements * inputs * outputs];
                if tile == 2 {
                    filter_transform(&g, inputs, outputs, &mut u);
                } else {
                    filter_transform4(&g, inputs, outputs, &mut u);
                }
                // Board values in the padded layout, zeros in its ring.
                let values = fill(batch * rows * cols * inputs.max(outputs), 13 + tile as u32);
                let padded = batch * geometry.padded_cells();
                let (mut x, mut skip) = (vec![0.0; padded * inputs], vec![0.0; padded * outputs]);
                for b in 0..batch {
                    for cell in 0..rows * cols {
                        let at = geometry.padded_index(b, cell / cols, cell % cols);
                        let from = &values[(b * rows * cols + cell) * inputs.max(outputs)..];
                        x[at * inputs..][..inputs].copy_from_slice(&from[..inputs]);
                        skip[at * outputs..][..outputs].copy_from_slice(&from[..outputs]);
                    }
                }
                let tiles = batch * geometry.tiles_per_position();
                let mut transformed = vec![0.0; tiles * elements * inputs];
                let mut products = vec![0.0; tiles * elements * outputs];
                for epilogue in [Epilogue::Raw, Epilogue::Relu, Epilogue::Residual { gate: 0.6 }] {
                    let mut y = vec![0.0; padded * outputs];
                    let scratch = (&mut transformed[..], &mut products[..]);
                    convolve((geometry, batch), (inputs, outputs), (&u, &bias), &x, scratch, epilogue, &skip, &mut y);
                    for b in 0..batch {
                        for row in 0..rows {
                            for col in 0..cols {
                                let at = geometry.padded_index(b, row, col);
                                for o in 0..outputs {
                                    let mut sum = f64::from(bias[o]);
                                    for (dr, dc) in (0..9).map(|k| (k / 3, k % 3)) {
                                        let (r, c) = ((row + dr) as isize - 1, (col + dc) as isize - 1);
                                        if (0..rows as isize).contains(&r) && (0..cols as isize).contains(&c) {
                                            let source = geometry.padded_index(b, r as usize, c as usize);
                                            for i in 0..inputs {
                                                let w = g[(o * inputs + i) * 9 + dr * 3 + dc];
                                                sum += f64::from(w) * f64::from(x[source * inputs + i]);
                                            }
                                        }
                                    }
                                    let expected = match epilogue {
                                        Epilogue::Residual { gate } => {
                                            (f64::from(skip[at * outputs + o]) + f64::from(gate) * sum).max(0.0)
                                        }
                                        Epilogue::Relu => sum.max(0.0),
                                        _ => sum,
                                    };
                                    let got = f64::from(y[at * outputs + o]);
                                    assert!(
                                        (got - expected).abs() < 1e-4,
                                        "{rows}x{cols}, tile {tile}, {epilogue:?}: {got} against {expected}"
                                    );
                                }
                            }
                        }
                    }
                    // Nothing written off the board: the ring stays zero.
                    for b in 0..batch {
                        let (hp, wp) = geometry.padded();
                        for cell in 0..hp * wp {
                            let (row, col) = (cell / wp, cell % wp);
                            if !((1..=rows).contains(&row) && (1..=cols).contains(&col)) {
                                let at = (b * hp * wp + cell) * outputs;
                                assert!(y[at..at + outputs].iter().all(|&v| v == 0.0), "{rows}x{cols}: ring written");
                            }
                        }
                    }
                    checked[tile / 2 - 1] += 1;
                }
            }
        }
        assert_eq!(checked, [18, 18]);
    }

    /// Inference takes F(4x4, 3x3) where its products are at most 0.85 of
    /// F(2x2, 3x3)'s.
    #[test]
    fn inference_tiles_by_the_count_of_products() {
        for (rows, cols, tile) in [
            (8, 8, 4),
            (12, 12, 4),
            (7, 8, 4),
            (3, 3, 4),
            (10, 10, 4),
            (14, 14, 4),
            (14, 17, 4),
            (13, 20, 4),
            (9, 13, 4),
            (6, 18, 4),
            (6, 14, 2),
            (6, 10, 2),
            (6, 6, 2),
            (5, 5, 2),
            (1, 1, 2),
            (2, 5, 2),
        ] {
            assert_eq!(Geometry::for_inference(rows, cols).tile, tile, "{rows}x{cols}");
        }
        // Both sides 0 or 3 modulo 4 (whole 4x4 tiles, or one wasted row) is
        // always F(4x4, 3x3); a side of 1 or 2 cells is always F(2x2, 3x3).
        for rows in 1..=20 {
            for cols in 1..=20 {
                let fits = |side: usize| side.is_multiple_of(4) || side % 4 == 3;
                let tile = Geometry::for_inference(rows, cols).tile;
                if fits(rows) && fits(cols) {
                    assert_eq!(tile, 4, "{rows}x{cols}");
                }
                if rows <= 2 || cols <= 2 {
                    assert_eq!(tile, 2, "{rows}x{cols}");
                }
            }
        }
        let eight = Geometry::for_inference(8, 8);
        assert_eq!((eight.padded(), eight.tiles_per_position(), eight.elements()), ((10, 10), 4, 36));
    }

    #[test]
    fn products_follow_their_strides_and_refuse_to_overrun() {
        // [2x3] x [3x2], the left factor given transposed.
        let a_t = [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]; // a = [[1,2,3],[4,5,6]]
        let b = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let mut c = [9.0; 4];
        matmul((2, 2, 3), &mut c, 2, false, View::transposed(&a_t, 2), View::rows(&b, 2));
        assert_eq!(c, [4.0, 5.0, 10.0, 11.0]);
        matmul((2, 2, 3), &mut c, 2, true, View::transposed(&a_t, 2), View::rows(&b, 2));
        assert_eq!(c, [8.0, 10.0, 20.0, 22.0]);
        let overrun = std::panic::catch_unwind(|| {
            let mut c = [0.0; 4];
            matmul((2, 2, 4), &mut c, 2, false, View::rows(&a_t, 3), View::rows(&b, 2));
        });
        assert!(overrun.is_err());
    }
}
