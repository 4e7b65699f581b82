//! Fixed-width bit sets that hold one bit per cell.
//!
//! Cells are numbered `row * cols + col` with no guard columns, so an 8x8
//! board fits one `u64`, a 10x10 board one `u128`, and only boards above 256
//! cells pay for seven words. Every board operation is written once, generic
//! over [`Bits`], and instantiated for each width.

use std::fmt::Debug;
use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, BitXor, BitXorAssign, Not};

/// A set of cell indices `0..Self::CAPACITY` with the shifts move generation needs.
pub trait Bits:
    Copy
    + Eq
    + std::hash::Hash
    + Debug
    + Send
    + Sync
    + 'static
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
    + Not<Output = Self>
    + BitAndAssign
    + BitOrAssign
    + BitXorAssign
{
    /// Number of cells the set can hold.
    const CAPACITY: usize;
    /// The empty set.
    const EMPTY: Self;

    /// Moves every cell `n` indices up (towards higher indices); cells pushed
    /// past the capacity vanish.
    fn shift_up(self, n: u32) -> Self;
    /// Moves every cell `n` indices down; cells pushed below 0 vanish.
    fn shift_down(self, n: u32) -> Self;
    /// Number of cells in the set.
    fn count(self) -> u32;
    /// Whether the set is empty.
    fn is_empty(self) -> bool;
    /// The set holding just `index`.
    fn single(index: usize) -> Self;
    /// Whether `index` is in the set.
    fn contains(self, index: usize) -> bool;
    /// Removes and returns the lowest index, if any.
    fn pop_lowest(&mut self) -> Option<usize>;
}

macro_rules! impl_bits_for_int {
    ($t:ty) => {
        impl Bits for $t {
            const CAPACITY: usize = <$t>::BITS as usize;
            const EMPTY: Self = 0;

            #[inline(always)]
            fn shift_up(self, n: u32) -> Self {
                self.checked_shl(n).unwrap_or(0)
            }
            #[inline(always)]
            fn shift_down(self, n: u32) -> Self {
                self.checked_shr(n).unwrap_or(0)
            }
            #[inline(always)]
            fn count(self) -> u32 {
                self.count_ones()
            }
            #[inline(always)]
            fn is_empty(self) -> bool {
                self == 0
            }
            #[inline(always)]
            fn single(index: usize) -> Self {
                1 << index
            }
            #[inline(always)]
            fn contains(self, index: usize) -> bool {
                (self >> index) & 1 != 0
            }
            #[inline(always)]
            fn pop_lowest(&mut self) -> Option<usize> {
                if *self == 0 {
                    None
                } else {
                    let index = self.trailing_zeros() as usize;
                    *self &= *self - 1;
                    Some(index)
                }
            }
        }
    };
}

impl_bits_for_int!(u64);
impl_bits_for_int!(u128);

/// `N` 64-bit words, least significant word first: the bit set for boards
/// larger than 128 cells.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Wide<const N: usize>(pub [u64; N]);

impl<const N: usize> BitAnd for Wide<N> {
    type Output = Self;
    #[inline(always)]
    fn bitand(self, rhs: Self) -> Self {
        Wide(std::array::from_fn(|i| self.0[i] & rhs.0[i]))
    }
}
impl<const N: usize> BitOr for Wide<N> {
    type Output = Self;
    #[inline(always)]
    fn bitor(self, rhs: Self) -> Self {
        Wide(std::array::from_fn(|i| self.0[i] | rhs.0[i]))
    }
}
impl<const N: usize> BitXor for Wide<N> {
    type Output = Self;
    #[inline(always)]
    fn bitxor(self, rhs: Self) -> Self {
        Wide(std::array::from_fn(|i| self.0[i] ^ rhs.0[i]))
    }
}
impl<const N: usize> Not for Wide<N> {
    type Output = Self;
    #[inline(always)]
    fn not(self) -> Self {
        Wide(std::array::from_fn(|i| !self.0[i]))
    }
}
impl<const N: usize> BitAndAssign for Wide<N> {
    #[inline(always)]
    fn bitand_assign(&mut self, rhs: Self) {
        *self = *self & rhs;
    }
}
impl<const N: usize> BitOrAssign for Wide<N> {
    #[inline(always)]
    fn bitor_assign(&mut self, rhs: Self) {
        *self = *self | rhs;
    }
}
impl<const N: usize> BitXorAssign for Wide<N> {
    #[inline(always)]
    fn bitxor_assign(&mut self, rhs: Self) {
        *self = *self ^ rhs;
    }
}

impl<const N: usize> Bits for Wide<N> {
    const CAPACITY: usize = 64 * N;
    const EMPTY: Self = Wide([0; N]);

    #[inline(always)]
    fn shift_up(self, n: u32) -> Self {
        let words = (n / 64) as usize;
        let bits = n % 64;
        Wide(std::array::from_fn(|i| {
            if i < words {
                return 0;
            }
            let src = i - words;
            let mut word = self.0[src] << bits;
            if bits != 0 && src > 0 {
                word |= self.0[src - 1] >> (64 - bits);
            }
            word
        }))
    }

    #[inline(always)]
    fn shift_down(self, n: u32) -> Self {
        let words = (n / 64) as usize;
        let bits = n % 64;
        Wide(std::array::from_fn(|i| {
            let src = i + words;
            if src >= N {
                return 0;
            }
            let mut word = self.0[src] >> bits;
            if bits != 0 && src + 1 < N {
                word |= self.0[src + 1] << (64 - bits);
            }
            word
        }))
    }

    #[inline(always)]
    fn count(self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    #[inline(always)]
    fn is_empty(self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    #[inline(always)]
    fn single(index: usize) -> Self {
        let mut words = [0; N];
        words[index / 64] = 1 << (index % 64);
        Wide(words)
    }

    #[inline(always)]
    fn contains(self, index: usize) -> bool {
        (self.0[index / 64] >> (index % 64)) & 1 != 0
    }

    #[inline(always)]
    fn pop_lowest(&mut self) -> Option<usize> {
        for (i, word) in self.0.iter_mut().enumerate() {
            if *word != 0 {
                let bit = word.trailing_zeros() as usize;
                *word &= *word - 1;
                return Some(i * 64 + bit);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_vec<B: Bits>(mut b: B) -> Vec<usize> {
        let mut out = Vec::new();
        while let Some(i) = b.pop_lowest() {
            out.push(i);
        }
        out
    }

    #[test]
    fn wide_shifts_match_u128() {
        let samples = [0usize, 1, 5, 63, 64, 65, 100, 127];
        for &a in &samples {
            for &b in &samples {
                let narrow = u128::single(a) | u128::single(b);
                let wide = Wide::<2>::single(a) | Wide::<2>::single(b);
                for n in [0u32, 1, 2, 8, 13, 63, 64, 65, 127, 128, 200] {
                    assert_eq!(to_vec(narrow.shift_up(n)), to_vec(wide.shift_up(n)), "up {a} {b} {n}");
                    assert_eq!(to_vec(narrow.shift_down(n)), to_vec(wide.shift_down(n)), "down {a} {b} {n}");
                }
                assert_eq!(narrow.count(), wide.count());
            }
        }
    }

    #[test]
    fn pop_lowest_walks_every_word() {
        let set = Wide::<7>::single(3) | Wide::<7>::single(300) | Wide::<7>::single(447);
        assert_eq!(to_vec(set), vec![3, 300, 447]);
        assert!(set.contains(300) && !set.contains(299));
    }
}
