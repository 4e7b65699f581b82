//! What konane's fuzz targets share (a dev-dependency only).
//!
//! The targets are proptest runs with a fixed seed, sized by
//! `KONANE_FUZZ_CASES` and seeded by `KONANE_FUZZ_SEED` so that
//! `scripts/fuzz.sh` can run them long and a failure reproduces.
//! Readers are also held to a memory bound: a test binary installs
//! [`LargestAllocation`] as its global allocator and checks
//! [`largest_allocation`] after each input, so a length field cannot make
//! a reader ask for far more memory than its file holds.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestRunner};

/// The seed when `KONANE_FUZZ_SEED` is unset.
pub const DEFAULT_SEED: u64 = 20_261_201;

/// A runner of `KONANE_FUZZ_CASES` inputs (else `default_cases`) from
/// `KONANE_FUZZ_SEED`, with no failure files written into the tree.
pub fn runner(default_cases: u32) -> TestRunner {
    let cases = env_number("KONANE_FUZZ_CASES").map_or(default_cases, |n| n.min(u64::from(u32::MAX)) as u32);
    let seed = env_number("KONANE_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    TestRunner::new(ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..ProptestConfig::default()
    })
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Runs `property` on inputs from `strategy` (see [`runner`]), panics with
/// the target's name and the shrunk input on the first failure, and prints
/// how many inputs ran.
pub fn fuzz<S: Strategy>(
    name: &str,
    default_cases: u32,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let ran = Cell::new(0u64);
    runner(default_cases)
        .run(&strategy, |value| {
            property(value)?;
            ran.set(ran.get() + 1);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("fuzz target {name}: {e}"));
    println!("fuzz target {name}: {} inputs", ran.get());
}

/// [`fuzz`], also failing when one allocation made while `property` ran
/// exceeds `limit(input)` bytes. Needs [`LargestAllocation`] installed as
/// the test binary's global allocator.
pub fn fuzz_bounded<S: Strategy>(
    name: &str,
    default_cases: u32,
    strategy: S,
    limit: impl Fn(&S::Value) -> usize,
    property: impl Fn(&S::Value) -> Result<(), TestCaseError>,
) {
    fuzz(name, default_cases, strategy, |value| {
        reset_largest_allocation();
        property(&value)?;
        let (largest, limit) = (largest_allocation(), limit(&value));
        prop_assert!(largest <= limit, "{name}: one allocation of {largest} bytes, over {limit}");
        Ok(())
    });
}

/// A global allocator that records, per thread, the largest single
/// allocation since [`reset_largest_allocation`]:
/// `#[global_allocator] static A: LargestAllocation = LargestAllocation;`
pub struct LargestAllocation;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed to the system allocator unchanged; the
// thread-local is a plain `Cell` with a const initialiser, which allocates
// nothing, and `try_with` only skips the record while the thread is torn
// down.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(layout.size())));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(new_size)));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Starts a new record of this thread's largest allocation.
pub fn reset_largest_allocation() {
    LARGEST.with(|l| l.set(0));
}

/// This thread's largest single allocation since the last reset (0 when
/// [`LargestAllocation`] is not the global allocator).
pub fn largest_allocation() -> usize {
    LARGEST.with(Cell::get)
}

/// Byte-level damage to a file.
#[derive(Clone, Debug)]
pub enum Damage {
    /// XORs one byte with a non-zero mask.
    Flip(prop::sample::Index, u8),
    /// Cuts the file short.
    Truncate(prop::sample::Index),
    /// Appends bytes.
    Extend(Vec<u8>),
    /// Overwrites eight bytes with a word, often an extreme one: lengths
    /// and counts are where readers go wrong.
    Word(prop::sample::Index, u64),
}

/// Flips most often, then overwritten words, cuts and extensions.
pub fn damage() -> impl Strategy<Value = Damage> {
    let word = prop_oneof![any::<u64>(), Just(u64::MAX), Just(u64::MAX - 64), Just(1u64 << 40), 0u64..70_000];
    prop_oneof![
        4 => (any::<prop::sample::Index>(), 1u8..=255).prop_map(|(i, x)| Damage::Flip(i, x)),
        1 => any::<prop::sample::Index>().prop_map(Damage::Truncate),
        1 => proptest::collection::vec(any::<u8>(), 1..64).prop_map(Damage::Extend),
        2 => (any::<prop::sample::Index>(), word).prop_map(|(i, w)| Damage::Word(i, w)),
    ]
}

impl Damage {
    /// Damages `bytes`; half the words land in the first `header` bytes,
    /// where formats keep their lengths. Damage that does not fit (a flip
    /// of an empty file) does nothing.
    pub fn apply(&self, bytes: &mut Vec<u8>, header: usize) {
        match self {
            Damage::Flip(i, x) if !bytes.is_empty() => {
                let at = i.index(bytes.len());
                bytes[at] ^= x;
            }
            Damage::Truncate(i) if !bytes.is_empty() => bytes.truncate(i.index(bytes.len())),
            Damage::Extend(more) => bytes.extend_from_slice(more),
            Damage::Word(i, w) if bytes.len() >= 8 => {
                let span = if w & 1 == 0 { header.clamp(1, bytes.len() - 7) } else { bytes.len() - 7 };
                let at = i.index(span);
                bytes[at..at + 8].copy_from_slice(&w.to_le_bytes());
            }
            _ => {}
        }
    }
}

/// Puts the CRC-32 of everything before the last four bytes there (little
/// endian), as konane's binary files end, so damage reaches the checks
/// behind the checksum too.
pub fn fix_crc32_trailer(bytes: &mut [u8]) {
    if bytes.len() >= 4 {
        let end = bytes.len() - 4;
        let crc = crc32fast::hash(&bytes[..end]);
        bytes[end..].copy_from_slice(&crc.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damage_changes_what_it_says_and_the_trailer_checks() {
        fuzz("damage", 500, (damage(), 0usize..40), |(damage, len)| {
            let file: Vec<u8> = (0..len as u8).collect();
            let mut bytes = file.clone();
            damage.apply(&mut bytes, 8);
            match &damage {
                Damage::Flip(..) if len > 0 => {
                    prop_assert_eq!(bytes.len(), len);
                    prop_assert_eq!(bytes.iter().zip(&file).filter(|(a, b)| a != b).count(), 1);
                }
                Damage::Word(..) => prop_assert_eq!(bytes.len(), len),
                Damage::Truncate(..) if len > 0 => prop_assert!(bytes.len() < len),
                Damage::Extend(more) => prop_assert_eq!(&bytes[len..], &more[..]),
                _ => prop_assert_eq!(&bytes, &file),
            }
            Ok(())
        });
        let mut file = b"payload\0\0\0\0".to_vec();
        fix_crc32_trailer(&mut file);
        assert_eq!(file[7..], crc32fast::hash(b"payload").to_le_bytes());
    }

    #[test]
    fn the_runner_reports_a_failing_input() {
        let failed = std::panic::catch_unwind(|| {
            fuzz("always-fails", 10, 0u8..10, |v| {
                prop_assert!(v > 200);
                Ok(())
            })
        });
        assert!(failed.is_err());
    }
}
