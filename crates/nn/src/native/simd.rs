//! Which vector instructions the native kernels may use.
//!
//! Each kernel picks the widest its CPU has, at every call (a cached
//! flag). [`limit`] narrows that choice for the whole process, so that
//! one machine can measure (`konane --simd avx2 bench-net ...`) and test
//! the code an older CPU would run: the same results to float rounding,
//! at that CPU's kind of speed.

use std::sync::atomic::{AtomicBool, Ordering};

/// The widest vector instructions the native kernels may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Simd {
    /// The widest the CPU has: AVX-512 where it has AVX-512F.
    #[default]
    Auto,
    /// At most AVX2 and FMA, as on CPUs without AVX-512.
    Avx2,
}

/// Whether AVX-512 is off limits (set once by the front end).
static NO_AVX512: AtomicBool = AtomicBool::new(false);

/// Narrows the kernels' choice for the rest of the process.
pub fn limit(simd: Simd) {
    NO_AVX512.store(simd == Simd::Avx2, Ordering::Relaxed);
}

/// Whether the kernels run AVX-512F code.
pub(crate) fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    if !NO_AVX512.load(Ordering::Relaxed) {
        return std::arch::is_x86_feature_detected!("avx512f");
    }
    false
}

/// Whether the kernels run AVX2 code with fused multiply-adds.
pub(crate) fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The instructions the kernels run now, for benchmark reports.
pub fn in_use() -> &'static str {
    if avx512() {
        "AVX-512"
    } else if avx2() {
        "AVX2+FMA"
    } else {
        "baseline"
    }
}
