//! Matrix products in AVX-512 or AVX2 for the small, fixed shapes of the Winograd
//! convolutions: a few dozen rows of `[tiles x channels]` against a
//! `[channels x channels]` filter element, 36 or 16 of them per layer.
//!
//! `gemm` packs both factors into its own layout on every call and ends
//! each product with edge kernels for the rows and columns its 48x6 tile
//! does not cover; at these sizes that work rivals the multiplications
//! (`perf` of 8x8 self-play: packing copies, dispatch and edge kernels
//! about a fifth of the product time). The filter is already in the
//! layout a register-blocked kernel wants (`[inputs][outputs]`, rows of
//! whole registers) and the left factor's rows are read where they are,
//! one value broadcast at a time, so these kernels pack nothing: 8 rows by
//! 48 columns accumulate in 24 registers across the whole `k` (AVX-512;
//! 6 rows by 16 columns in 12 with AVX2), then go to `dst` once. Shapes
//! they do not take go to `gemm`.

#![allow(clippy::needless_range_loop)] // registers indexed by row and column alike, each loop unrolled

use std::arch::x86_64::*;

use super::simd;

/// The kernel a product runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// 16-wide registers, blocks of 8 rows by 48 columns (24 of the 32
    /// registers).
    Avx512,
    /// 8-wide registers, blocks of 6 rows by 16 columns (12 of the 16
    /// registers, the shape of the classic AVX2 kernels).
    Avx2,
}

impl Kernel {
    /// The widest kernel [`simd`] allows.
    pub(crate) fn best() -> Option<Kernel> {
        if simd::avx512() {
            Some(Kernel::Avx512)
        } else if simd::avx2() {
            Some(Kernel::Avx2)
        } else {
            None
        }
    }

    fn width(self) -> usize {
        match self {
            Kernel::Avx512 => 16,
            Kernel::Avx2 => 8,
        }
    }

    /// Whether this kernel computes `[m x k] x [k x n]` for these shapes:
    /// whole registers of columns, rows of both factors contiguous, and a
    /// `k` small enough that a column block of the right factor (`k` x 48)
    /// stays in the first-level cache.
    pub(crate) fn takes(self, n: usize, k: usize, lhs_col_stride: usize, rhs_col_stride: usize) -> bool {
        n.is_multiple_of(self.width()) && n > 0 && (1..=256).contains(&k) && lhs_col_stride == 1 && rhs_col_stride == 1
    }

    /// `dst = lhs x rhs`, or `dst += lhs x rhs` when `accumulate`.
    ///
    /// # Safety
    /// The CPU has this kernel's instructions, [`Kernel::takes`] holds for
    /// the shapes, and every row and column the [`Operands`] name lies
    /// within its allocation (the caller checked).
    pub(crate) unsafe fn product(self, o: Operands, accumulate: bool) {
        // SAFETY: the caller's.
        unsafe {
            match self {
                Kernel::Avx512 => avx512(o, accumulate),
                Kernel::Avx2 => avx2(o, accumulate),
            }
        }
    }
}

/// The factors of one product, as raw rows: `lhs` `[m][k]` with rows
/// `lhs_row` apart, `rhs` `[k][n]` with rows `rhs_row` apart, `dst`
/// `[m][n]` with rows `dst_row` apart.
#[derive(Clone, Copy)]
pub(crate) struct Operands {
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) dst: *mut f32,
    pub(crate) dst_row: usize,
    pub(crate) lhs: *const f32,
    pub(crate) lhs_row: usize,
    pub(crate) rhs: *const f32,
    pub(crate) rhs_row: usize,
}

#[target_feature(enable = "avx512f")]
unsafe fn avx512(o: Operands, accumulate: bool) {
    // SAFETY: the caller's; AVX-512F is enabled here.
    unsafe { product::<__m512, 3, 8>(o, accumulate) }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn avx2(o: Operands, accumulate: bool) {
    // SAFETY: the caller's; AVX2 and FMA are enabled here.
    unsafe { product::<__m256, 2, 6>(o, accumulate) }
}

/// One register of `f32` and the operations the kernel needs. Each
/// method executes its instruction set's instructions: only code compiled
/// with that set enabled, after the CPU was checked, calls them.
trait Register: Copy {
    const WIDTH: usize;
    unsafe fn zero() -> Self;
    unsafe fn load(from: *const f32) -> Self;
    unsafe fn store(self, to: *mut f32);
    unsafe fn splat(x: f32) -> Self;
    /// `self * b + c`, rounded once.
    unsafe fn fma(self, b: Self, c: Self) -> Self;
}

impl Register for __m512 {
    const WIDTH: usize = 16;
    #[inline(always)]
    unsafe fn zero() -> Self {
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn load(from: *const f32) -> Self {
        unsafe { _mm512_loadu_ps(from) }
    }
    #[inline(always)]
    unsafe fn store(self, to: *mut f32) {
        unsafe { _mm512_storeu_ps(to, self) }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        unsafe { _mm512_fmadd_ps(self, b, c) }
    }
}

impl Register for __m256 {
    const WIDTH: usize = 8;
    #[inline(always)]
    unsafe fn zero() -> Self {
        unsafe { _mm256_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn load(from: *const f32) -> Self {
        unsafe { _mm256_loadu_ps(from) }
    }
    #[inline(always)]
    unsafe fn store(self, to: *mut f32) {
        unsafe { _mm256_storeu_ps(to, self) }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        unsafe { _mm256_fmadd_ps(self, b, c) }
    }
}

/// The product in blocks of `ROWS` rows by `COLUMNS` registers, then the
/// rows and columns left over in smaller blocks.
#[inline(always)]
unsafe fn product<V: Register, const COLUMNS: usize, const ROWS: usize>(o: Operands, accumulate: bool) {
    let mut column = 0;
    // SAFETY (every call): within the caller's bounds.
    while column + COLUMNS * V::WIDTH <= o.n {
        unsafe { columns::<V, COLUMNS, ROWS>(o, column, accumulate) };
        column += COLUMNS * V::WIDTH;
    }
    let mut left = (o.n - column) / V::WIDTH;
    if left >= 2 {
        unsafe { columns::<V, 2, ROWS>(o, column, accumulate) };
        column += 2 * V::WIDTH;
        left -= 2;
    }
    if left >= 1 {
        unsafe { columns::<V, 1, ROWS>(o, column, accumulate) };
    }
}

/// The columns `column..column + WIDTH * C` of every row, in blocks of
/// `ROWS` rows and then 4, 2 and 1.
#[inline(always)]
unsafe fn columns<V: Register, const C: usize, const ROWS: usize>(o: Operands, column: usize, accumulate: bool) {
    let mut row = 0;
    // SAFETY (every call): within the caller's bounds.
    while row + ROWS <= o.m {
        unsafe { block::<V, C, ROWS>(o, row, column, accumulate) };
        row += ROWS;
    }
    if o.m - row >= 4 {
        unsafe { block::<V, C, 4>(o, row, column, accumulate) };
        row += 4;
    }
    if o.m - row >= 2 {
        unsafe { block::<V, C, 2>(o, row, column, accumulate) };
        row += 2;
    }
    if o.m - row >= 1 {
        unsafe { block::<V, C, 1>(o, row, column, accumulate) };
    }
}

/// `R` rows by `WIDTH * C` columns, accumulated in `R * C` registers over
/// the whole `k`.
#[inline(always)]
unsafe fn block<V: Register, const C: usize, const R: usize>(o: Operands, row: usize, column: usize, accumulate: bool) {
    // SAFETY (the whole body): the instruction set of `V` is enabled by the
    // caller's target feature; rows `row..row + R` and columns
    // `column..column + WIDTH * C` lie within the caller's bounds.
    unsafe {
        let dst = o.dst.add(row * o.dst_row + column);
        let mut sums = [[V::zero(); C]; R];
        if accumulate {
            for r in 0..R {
                for c in 0..C {
                    sums[r][c] = V::load(dst.add(r * o.dst_row + c * V::WIDTH));
                }
            }
        }
        let lhs = o.lhs.add(row * o.lhs_row);
        let rhs = o.rhs.add(column);
        for i in 0..o.k {
            let filter: [V; C] = std::array::from_fn(|c| V::load(rhs.add(i * o.rhs_row + c * V::WIDTH)));
            for r in 0..R {
                let x = V::splat(*lhs.add(r * o.lhs_row + i));
                for c in 0..C {
                    sums[r][c] = x.fma(filter[c], sums[r][c]);
                }
            }
        }
        for r in 0..R {
            for c in 0..C {
                sums[r][c].store(dst.add(r * o.dst_row + c * V::WIDTH));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel against a direct f64 product on every row-block and
    /// column-block count it has, with row strides past the row lengths
    /// (whose gaps it must leave alone) and both with and without
    /// accumulation.
    #[test]
    fn products_match_a_direct_product_and_stay_in_their_rows() {
        let kernels: Vec<Kernel> =
            [(Kernel::Avx512, std::arch::is_x86_feature_detected!("avx512f")), (Kernel::Avx2, simd::avx2())]
                .into_iter()
                .filter_map(|(kernel, runs)| runs.then_some(kernel))
                .collect();
        let value = |i: usize, salt: usize| (((i * 7919 + salt * 104_729) % 2003) as f32 - 1001.0) / 997.0;
        let shapes =
            [(1, 16, 1), (3, 32, 5), (7, 48, 48), (8, 64, 17), (20, 48, 48), (21, 80, 256), (64, 96, 33), (13, 40, 9)];
        for (kernel, (m, n, k)) in kernels.iter().flat_map(|&kernel| shapes.map(|shape| (kernel, shape))) {
            if !kernel.takes(n, k, 1, 1) {
                assert_eq!((kernel, n), (Kernel::Avx512, 40), "{m}x{n}x{k}");
                continue;
            }
            let (lhs_row, rhs_row, dst_row) = (k + 3, n + 5, n + 7);
            let lhs: Vec<f32> = (0..m * lhs_row).map(|i| value(i, 1)).collect();
            let rhs: Vec<f32> = (0..k * rhs_row).map(|i| value(i, 2)).collect();
            for accumulate in [false, true] {
                let start: Vec<f32> = (0..m * dst_row).map(|i| value(i, 3)).collect();
                let mut dst = start.clone();
                let operands = Operands {
                    m,
                    n,
                    k,
                    dst: dst.as_mut_ptr(),
                    dst_row,
                    lhs: lhs.as_ptr(),
                    lhs_row,
                    rhs: rhs.as_ptr(),
                    rhs_row,
                };
                // SAFETY: the CPU was checked above; every row lies within its vector.
                unsafe { kernel.product(operands, accumulate) };
                for r in 0..m {
                    for j in 0..dst_row {
                        let got = dst[r * dst_row + j];
                        if j >= n {
                            assert_eq!(
                                got,
                                start[r * dst_row + j],
                                "{kernel:?} {m}x{n}x{k}: gap at row {r} column {j} written"
                            );
                            continue;
                        }
                        let sum: f64 =
                            (0..k).map(|i| f64::from(lhs[r * lhs_row + i]) * f64::from(rhs[i * rhs_row + j])).sum();
                        let want = sum + if accumulate { f64::from(start[r * dst_row + j]) } else { 0.0 };
                        assert!(
                            (f64::from(got) - want).abs() <= 1e-5 * (k as f64).sqrt() * 4.0,
                            "{kernel:?} {m}x{n}x{k} accumulate {accumulate}: row {r} column {j} is {got}, not {want}"
                        );
                    }
                }
            }
        }
        // Shapes they leave to `gemm`.
        for kernel in [Kernel::Avx512, Kernel::Avx2] {
            assert!(!kernel.takes(20, 48, 1, 1) && !kernel.takes(48, 0, 1, 1) && !kernel.takes(48, 257, 1, 1));
            assert!(!kernel.takes(48, 48, 2, 1) && !kernel.takes(48, 48, 1, 48));
        }
    }
}
