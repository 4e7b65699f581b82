//! An AVX-512 matrix product for the small, fixed shapes of the Winograd
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
//! one value broadcast at a time, so this kernel packs nothing: 8 rows by
//! 48 columns accumulate in 24 registers across the whole `k`, then go
//! to `dst` once. Shapes it does not take go to `gemm`.

#![allow(clippy::needless_range_loop)] // registers indexed by row and column alike, each loop unrolled

use std::arch::x86_64::*;

/// `f32` values in one AVX-512 register.
const WIDTH: usize = 16;

/// Whether [`product`] computes `[m x k] x [k x n]` for these shapes:
/// whole registers of columns (`n` a multiple of 16), rows of both factors
/// contiguous, and a `k` small enough that a column block of the right
/// factor (`k` x 48) stays in the first-level cache.
pub(crate) fn takes(n: usize, k: usize, lhs_col_stride: usize, rhs_col_stride: usize) -> bool {
    n.is_multiple_of(WIDTH)
        && n > 0
        && (1..=256).contains(&k)
        && lhs_col_stride == 1
        && rhs_col_stride == 1
        && std::arch::is_x86_feature_detected!("avx512f")
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

/// `dst = lhs x rhs`, or `dst += lhs x rhs` when `accumulate`.
///
/// # Safety
/// [`takes`] holds for the shapes, and every row and column the
/// [`Operands`] name lies within its allocation (the caller checked).
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn product(o: Operands, accumulate: bool) {
    let mut column = 0;
    while column + 3 * WIDTH <= o.n {
        // SAFETY: within the caller's bounds.
        unsafe { columns::<3>(o, column, accumulate) };
        column += 3 * WIDTH;
    }
    // SAFETY: as above.
    unsafe {
        match (o.n - column) / WIDTH {
            2 => columns::<2>(o, column, accumulate),
            1 => columns::<1>(o, column, accumulate),
            _ => {}
        }
    }
}

/// The columns `column..column + 16 * C` of every row, in blocks of 8
/// rows and then 4, 2 and 1.
#[inline(always)]
unsafe fn columns<const C: usize>(o: Operands, column: usize, accumulate: bool) {
    let mut row = 0;
    // SAFETY (every call): within the caller's bounds.
    while row + 8 <= o.m {
        unsafe { block::<C, 8>(o, row, column, accumulate) };
        row += 8;
    }
    if o.m - row >= 4 {
        unsafe { block::<C, 4>(o, row, column, accumulate) };
        row += 4;
    }
    if o.m - row >= 2 {
        unsafe { block::<C, 2>(o, row, column, accumulate) };
        row += 2;
    }
    if o.m - row >= 1 {
        unsafe { block::<C, 1>(o, row, column, accumulate) };
    }
}

/// `R` rows by `16 * C` columns, accumulated in `R * C` registers over
/// the whole `k`.
#[inline(always)]
unsafe fn block<const C: usize, const R: usize>(o: Operands, row: usize, column: usize, accumulate: bool) {
    // SAFETY (the whole body): AVX-512F is enabled by the caller's target
    // feature; rows `row..row + R` and columns `column..column + 16 C` lie
    // within the caller's bounds.
    unsafe {
        let dst = o.dst.add(row * o.dst_row + column);
        let mut sums = [[_mm512_setzero_ps(); C]; R];
        if accumulate {
            for r in 0..R {
                for c in 0..C {
                    sums[r][c] = _mm512_loadu_ps(dst.add(r * o.dst_row + c * WIDTH));
                }
            }
        }
        let lhs = o.lhs.add(row * o.lhs_row);
        let rhs = o.rhs.add(column);
        for i in 0..o.k {
            let filter: [__m512; C] = std::array::from_fn(|c| _mm512_loadu_ps(rhs.add(i * o.rhs_row + c * WIDTH)));
            for r in 0..R {
                let x = _mm512_set1_ps(*lhs.add(r * o.lhs_row + i));
                for c in 0..C {
                    sums[r][c] = _mm512_fmadd_ps(x, filter[c], sums[r][c]);
                }
            }
        }
        for r in 0..R {
            for c in 0..C {
                _mm512_storeu_ps(dst.add(r * o.dst_row + c * WIDTH), sums[r][c]);
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
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let value = |i: usize, salt: usize| (((i * 7919 + salt * 104_729) % 2003) as f32 - 1001.0) / 997.0;
        for (m, n, k) in [(1, 16, 1), (3, 32, 5), (7, 48, 48), (8, 64, 17), (20, 48, 48), (21, 80, 256), (64, 96, 33)] {
            assert!(takes(n, k, 1, 1), "{m}x{n}x{k}");
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
                // SAFETY: AVX-512F checked above; every row lies within its vector.
                unsafe { product(operands, accumulate) };
                for r in 0..m {
                    for j in 0..dst_row {
                        let got = dst[r * dst_row + j];
                        if j >= n {
                            assert_eq!(got, start[r * dst_row + j], "{m}x{n}x{k}: gap at row {r} column {j} written");
                            continue;
                        }
                        let sum: f64 =
                            (0..k).map(|i| f64::from(lhs[r * lhs_row + i]) * f64::from(rhs[i * rhs_row + j])).sum();
                        let want = sum + if accumulate { f64::from(start[r * dst_row + j]) } else { 0.0 };
                        assert!(
                            (f64::from(got) - want).abs() <= 1e-5 * (k as f64).sqrt() * 4.0,
                            "{m}x{n}x{k} accumulate {accumulate}: row {r} column {j} is {got}, not {want}"
                        );
                    }
                }
            }
        }
        // Shapes it leaves to `gemm`.
        assert!(!takes(20, 48, 1, 1) && !takes(48, 0, 1, 1) && !takes(48, 257, 1, 1));
        assert!(!takes(48, 48, 2, 1) && !takes(48, 48, 1, 48));
    }
}
