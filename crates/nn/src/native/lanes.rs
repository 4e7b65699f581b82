//! Groups of channels the Winograd transforms compute together, and the
//! dispatch that picks the widest group the CPU has.
//!
//! The transforms were first written once over `[f32; 16]` arrays and
//! left to the compiler's vectorizer (compiled by `multiversion` for
//! AVX-512 and AVX2). On AVX-512 it assembled those arrays from 128- and
//! 256-bit pieces and read them back as 512-bit words, stalling on
//! store-to-load forwarding: `perf` put the F(4x4, 3x3) input transform at
//! 18% of 8x8 self-play, a third of the matrix products' time, for a
//! tenth of their arithmetic. [`Zmm`] holds one AVX-512 register and uses
//! its instructions directly, so every lane group is one register from
//! load to store. The same arithmetic in the same order runs on `[f32; L]`
//! elsewhere, so both give the same bits (tested).

/// Channels in a full group: one AVX-512 register of `f32`.
pub(crate) const LANES: usize = 16;

/// `WIDTH` channels of one cell, and the few operations the transforms
/// need. No fused multiply-add: `scale_add` rounds twice on every target,
/// so every implementation computes the same values.
pub(crate) trait Lanes: Copy {
    const WIDTH: usize;
    fn zero() -> Self;
    fn load(s: &[f32], at: usize) -> Self;
    fn store(self, s: &mut [f32], at: usize);
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn neg(self) -> Self;
    /// `self * s + b`.
    fn scale_add(self, s: f32, b: Self) -> Self;
    fn relu(self) -> Self;
}

impl<const L: usize> Lanes for [f32; L] {
    const WIDTH: usize = L;

    #[inline(always)]
    fn zero() -> Self {
        [0.0; L]
    }

    #[inline(always)]
    fn load(s: &[f32], at: usize) -> Self {
        s[at..at + L].try_into().expect("L values")
    }

    #[inline(always)]
    fn store(self, s: &mut [f32], at: usize) {
        s[at..at + L].copy_from_slice(&self);
    }

    #[inline(always)]
    fn add(self, b: Self) -> Self {
        std::array::from_fn(|l| self[l] + b[l])
    }

    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        std::array::from_fn(|l| self[l] - b[l])
    }

    #[inline(always)]
    fn neg(self) -> Self {
        self.map(|x| -x)
    }

    #[inline(always)]
    fn scale_add(self, s: f32, b: Self) -> Self {
        std::array::from_fn(|l| self[l] * s + b[l])
    }

    #[inline(always)]
    fn relu(self) -> Self {
        self.map(|x| x.max(0.0))
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use avx512::Zmm;

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{LANES, Lanes};

    /// One AVX-512 register of `f32`.
    ///
    /// Its methods execute AVX-512F instructions, so code that uses it
    /// must only run where the CPU has them: only the `avx512` variants
    /// that `simd_entry!` defines touch it, and they run after
    /// `simd::avx512()` (which checks `is_x86_feature_detected!("avx512f")`).
    #[derive(Clone, Copy)]
    pub(crate) struct Zmm(__m512);

    impl Lanes for Zmm {
        const WIDTH: usize = LANES;

        #[inline(always)]
        fn zero() -> Self {
            // SAFETY: runs only on AVX-512F CPUs (see the type).
            Zmm(unsafe { _mm512_setzero_ps() })
        }

        #[inline(always)]
        fn load(s: &[f32], at: usize) -> Self {
            let s = &s[at..at + LANES];
            // SAFETY: `s` holds 16 values; AVX-512F as above.
            Zmm(unsafe { _mm512_loadu_ps(s.as_ptr()) })
        }

        #[inline(always)]
        fn store(self, s: &mut [f32], at: usize) {
            let s = &mut s[at..at + LANES];
            // SAFETY: `s` has room for 16 values; AVX-512F as above.
            unsafe { _mm512_storeu_ps(s.as_mut_ptr(), self.0) }
        }

        #[inline(always)]
        fn add(self, b: Self) -> Self {
            // SAFETY: AVX-512F as above.
            Zmm(unsafe { _mm512_add_ps(self.0, b.0) })
        }

        #[inline(always)]
        fn sub(self, b: Self) -> Self {
            // SAFETY: AVX-512F as above.
            Zmm(unsafe { _mm512_sub_ps(self.0, b.0) })
        }

        #[inline(always)]
        fn neg(self) -> Self {
            // Flips the sign bit, as `-x` does (`0 - x` would turn -0 into +0).
            // SAFETY: AVX-512F as above.
            Zmm(unsafe {
                _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(self.0), _mm512_set1_epi32(i32::MIN)))
            })
        }

        #[inline(always)]
        fn scale_add(self, s: f32, b: Self) -> Self {
            // SAFETY: AVX-512F as above.
            Zmm(unsafe { _mm512_add_ps(_mm512_mul_ps(self.0, _mm512_set1_ps(s)), b.0) })
        }

        #[inline(always)]
        fn relu(self) -> Self {
            // SAFETY: AVX-512F as above.
            Zmm(unsafe { _mm512_max_ps(self.0, _mm512_setzero_ps()) })
        }
    }
}

/// Runs `$kernel::<$wide>(args)` on each full group of channels (the
/// argument named `$c` being the group's first channel), then
/// `$kernel::<[f32; 1]>(args)` on each channel left over.
macro_rules! by_lanes {
    ($channels:expr, $wide:ty, |$c:ident| $kernel:ident($($arg:expr),* $(,)?)) => {{
        let width = <$wide as $crate::native::lanes::Lanes>::WIDTH;
        let full = $channels / width * width;
        let mut $c = 0;
        while $c < full {
            $kernel::<$wide>($($arg),*);
            $c += width;
        }
        while $c < $channels {
            $kernel::<[f32; 1]>($($arg),*);
            $c += 1;
        }
    }};
}
pub(crate) use by_lanes;

/// Defines `fn $name(args)` from a body generic over the lane group
/// `$w`, run with the widest group the CPU has: [`Zmm`] where it has
/// AVX-512F and [`simd::limit`](super::simd::limit) allows it (checked at
/// each call: cached flags), else `[f32; LANES]` compiled by
/// `multiversion` for the best of AVX2 and the baseline. The
/// body is inlined into each variant, so each compiles it for its target;
/// a body that ignores `$w` is plain loops left to the vectorizer.
macro_rules! simd_entry {
    ($(#[$meta:meta])* $vis:vis fn $name:ident<$w:ident>($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            fn body<$w: $crate::native::lanes::Lanes>($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            if $crate::native::simd::avx512() {
                #[target_feature(enable = "avx512f")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                    body::<$crate::native::lanes::Zmm>($($arg),*)
                }
                // SAFETY: the CPU has AVX-512F, all `Zmm` needs.
                return unsafe { avx512($($arg),*) };
            }
            // x86-64-v3 (AVX2) and v2 only: a CPU with AVX-512 takes the
            // branch above unless `simd::limit` forbids it, and then this
            // must run what a CPU without AVX-512 would.
            #[multiversion::multiversion(targets(
                "x86_64+avx+avx2+bmi1+bmi2+cmpxchg16b+f16c+fma+lzcnt+movbe+popcnt+sse3+sse4.1+sse4.2+ssse3+xsave",
                "x86_64+cmpxchg16b+popcnt+sse3+sse4.1+sse4.2+ssse3",
                "aarch64+neon",
            ))]
            #[allow(clippy::too_many_arguments)]
            fn portable($($arg: $ty),*) $(-> $ret)? {
                body::<[f32; $crate::native::lanes::LANES]>($($arg),*)
            }
            portable($($arg),*)
        }
    };
}
pub(crate) use simd_entry;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation of [`Zmm`] gives the bits `[f32; 16]` gives.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn zmm_matches_arrays() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let a: Vec<f32> = (0..32).map(|i| (i as f32 - 15.5) * 0.37).chain([-0.0, 0.0]).collect();
        let b: Vec<f32> = (0..34).map(|i| ((i * 7) % 11) as f32 * -0.29 + 1.0).collect();
        #[target_feature(enable = "avx512f")]
        fn ops<W: Lanes>(a: &[f32], b: &[f32], at: usize) -> Vec<f32> {
            let (x, y) = (W::load(a, at), W::load(b, at));
            let results = [x.add(y), x.sub(y), x.neg(), x.scale_add(-2.5, y), x.relu(), W::zero().add(x)];
            let mut out = vec![0.0; results.len() * W::WIDTH];
            for (i, r) in results.into_iter().enumerate() {
                r.store(&mut out, i * W::WIDTH);
            }
            out
        }
        for at in [0, 3, 18] {
            // SAFETY: the CPU has AVX-512F (checked above).
            let (wide, arrays) = unsafe { (ops::<Zmm>(&a, &b, at), ops::<[f32; 16]>(&a, &b, at)) };
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            // relu's sign of zero is the instruction's choice; compare it by value.
            assert_eq!(bits(&wide[..64]), bits(&arrays[..64]), "add, sub, neg, scale_add at {at}");
            assert_eq!(wide[64..80], arrays[64..80], "relu at {at}");
            assert_eq!(bits(&wide[80..]), bits(&arrays[80..]), "zero at {at}");
        }
    }
}
