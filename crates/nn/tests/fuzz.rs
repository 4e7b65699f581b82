//! Fuzz target for the network file reader: random bytes, and random
//! mutations of a valid file (bytes flipped, lengths and header fields
//! overwritten with extreme values, the file cut or extended), half of them
//! with the checksum made right again so the reader's later checks are
//! reached too.
//!
//! Properties: the reader never panics, and never allocates much more than
//! the file holds: a header cannot make it build a network the file's
//! weights could not fill. Runs `KONANE_FUZZ_CASES` inputs (default 300).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use konane_nn::checkpoint::{self, FORMAT_VERSION, NetHeader};
use konane_nn::{Backend, NetConfig, init_net};
use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestRunner};

/// Records the largest single allocation of the current thread.
struct Tracking;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed to the system allocator unchanged; the
// thread-local is a plain `Cell` with a const initialiser, which allocates
// nothing.
unsafe impl GlobalAlloc for Tracking {
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

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

fn runner() -> TestRunner {
    let cases = std::env::var("KONANE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let seed = std::env::var("KONANE_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(20_261_201);
    TestRunner::new(ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..ProptestConfig::default()
    })
}

/// A valid file of a tiny network.
fn valid_file() -> Vec<u8> {
    let config = NetConfig::new().with_blocks(1).with_channels(4).with_policy_channels(2).with_value_channels(2);
    let config = config.with_value_hidden(3);
    let net = init_net(&config, &Backend::Flex.device(), 1);
    let header = NetHeader {
        format: FORMAT_VERSION,
        net: config,
        sizes: vec!["5x5".parse().unwrap()],
        iteration: 3,
        note: "fuzz".into(),
    };
    checkpoint::to_bytes(&net, &header).unwrap()
}

const MAGIC_LEN: usize = b"KONANE-NET\n".len();

/// Puts the CRC-32 of everything before the last four bytes there.
fn fix_checksum(bytes: &mut [u8]) {
    if bytes.len() >= 4 {
        let end = bytes.len() - 4;
        let crc = crc32fast::hash(&bytes[..end]);
        bytes[end..].copy_from_slice(&crc.to_le_bytes());
    }
}

/// The header JSON with one field set to `value`, and the file rebuilt
/// around it with consistent lengths; `None` if earlier mutations left no
/// header to edit.
fn with_header_field(file: &[u8], field: &str, value: &str) -> Option<Vec<u8>> {
    let header_len = u32::from_le_bytes(file.get(MAGIC_LEN + 4..MAGIC_LEN + 8)?.try_into().ok()?) as usize;
    let header_at = MAGIC_LEN + 8;
    let header = std::str::from_utf8(file.get(header_at..header_at.checked_add(header_len)?)?).ok()?;
    let mut json: serde_json::Value = serde_json::from_str(header).ok()?;
    if !json.is_object() || (field.contains('.') && !json["net"].is_object()) {
        return None;
    }
    let new: serde_json::Value = serde_json::from_str(value).unwrap_or(serde_json::Value::String(value.into()));
    match field.split_once('.') {
        Some((table, key)) => json[table][key] = new,
        None => json[field] = new,
    }
    let header = serde_json::to_vec(&json).unwrap();
    let mut out = file[..MAGIC_LEN + 4].to_vec();
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&file[header_at + header_len..]);
    fix_checksum(&mut out);
    Some(out)
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip(prop::sample::Index, u8),
    Truncate(prop::sample::Index),
    Extend(Vec<u8>),
    Word(prop::sample::Index, u64),
    Field(&'static str, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let field = prop::sample::select(vec![
        "format",
        "net.blocks",
        "net.channels",
        "net.policy_channels",
        "net.value_channels",
        "net.value_hidden",
        "sizes",
        "iteration",
        "note",
        "extra",
    ]);
    let value = prop_oneof![
        Just("18446744073709551615".to_string()),
        Just("4294967296".to_string()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("512".to_string()),
        Just("40".to_string()),
        Just("1e308".to_string()),
        Just("null".to_string()),
        Just("[\"6x6\",\"99x99\"]".to_string()),
        (0u64..100).prop_map(|n| n.to_string()),
    ];
    prop_oneof![
        4 => (any::<prop::sample::Index>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        1 => any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        1 => proptest::collection::vec(any::<u8>(), 1..64).prop_map(Mutation::Extend),
        2 => (any::<prop::sample::Index>(), prop_oneof![any::<u64>(), Just(u64::MAX), Just(u64::MAX - 64), Just(1 << 40)])
            .prop_map(|(i, w)| Mutation::Word(i, w)),
        3 => (field, value).prop_map(|(f, v)| Mutation::Field(f, v)),
    ]
}

fn apply(file: &[u8], mutations: &[Mutation], fix: bool) -> Vec<u8> {
    let mut bytes = file.to_vec();
    for m in mutations {
        match m {
            Mutation::Flip(i, x) if !bytes.is_empty() => {
                let at = i.index(bytes.len());
                bytes[at] ^= x;
            }
            Mutation::Truncate(i) if !bytes.is_empty() => bytes.truncate(i.index(bytes.len())),
            Mutation::Extend(more) => bytes.extend_from_slice(more),
            Mutation::Word(i, w) if bytes.len() >= 8 => {
                // The length fields sit near the start: aim there half the time.
                let span = if w & 1 == 0 { 64.min(bytes.len() - 7) } else { bytes.len() - 7 };
                let at = i.index(span);
                bytes[at..at + 8].copy_from_slice(&w.to_le_bytes());
            }
            Mutation::Field(field, value) if bytes.starts_with(b"KONANE-NET\n") => {
                if let Some(edited) = with_header_field(&bytes, field, value) {
                    bytes = edited;
                }
            }
            _ => {}
        }
    }
    if fix {
        fix_checksum(&mut bytes);
    }
    bytes
}

#[test]
fn network_files() {
    let file = valid_file();
    let device = Backend::Flex.device();
    assert!(checkpoint::load_bytes(&file, "valid", &device).is_ok());
    let input = prop_oneof![
        6 => (proptest::collection::vec(mutation(), 1..4), any::<bool>()).prop_map({
            let file = file.clone();
            move |(mutations, fix)| apply(&file, &mutations, fix)
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..256),
    ];
    let (ran, refused) = (AtomicU64::new(0), AtomicU64::new(0));
    runner()
        .run(&input, |bytes| {
            LARGEST.with(|l| l.set(0));
            let loaded = checkpoint::load_bytes(&bytes, "fuzzed", &device);
            let largest = LARGEST.with(Cell::get);
            prop_assert!(
                largest <= 64 * bytes.len() + (1 << 20),
                "a {}-byte file made the reader allocate {largest} bytes at once",
                bytes.len()
            );
            if let Err(e) = loaded {
                prop_assert!(e.to_string().starts_with("fuzzed"), "the error names the file: {e}");
                refused.fetch_add(1, Ordering::Relaxed);
            }
            ran.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    println!("fuzz target network-file: {} inputs ({} refused)", ran.into_inner(), refused.into_inner());
}
