//! Fuzz target for the network file reader: random bytes, and random
//! mutations of a valid file (bytes flipped, lengths and header fields
//! overwritten with extreme values, the file cut or extended), half of them
//! with the checksum made right again so the reader's later checks are
//! reached too.
//!
//! Properties: the reader never panics, and never allocates much more than
//! the file holds: a header cannot make it build a network the file's
//! weights could not fill. Runs `KONANE_FUZZ_CASES` inputs (default 300).

use std::sync::atomic::{AtomicU64, Ordering};

use konane_fuzzing::{Damage, LargestAllocation, damage, fix_crc32_trailer};
use konane_nn::checkpoint::{self, FORMAT_VERSION, NetHeader};
use konane_nn::{Backend, NetConfig, init_net};
use proptest::prelude::*;

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

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
    fix_crc32_trailer(&mut out);
    Some(out)
}

/// Damage to the bytes, or a header field set to an extreme value (the
/// file rebuilt around it so the reader's field checks are reached).
#[derive(Clone, Debug)]
enum Mutation {
    Bytes(Damage),
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
        8 => damage().prop_map(Mutation::Bytes),
        3 => (field, value).prop_map(|(f, v)| Mutation::Field(f, v)),
    ]
}

fn apply(file: &[u8], mutations: &[Mutation], fix: bool) -> Vec<u8> {
    let mut bytes = file.to_vec();
    for m in mutations {
        match m {
            // The length fields sit in the first 64 bytes.
            Mutation::Bytes(damage) => damage.apply(&mut bytes, 64),
            Mutation::Field(field, value) if bytes.starts_with(b"KONANE-NET\n") => {
                if let Some(edited) = with_header_field(&bytes, field, value) {
                    bytes = edited;
                }
            }
            _ => {}
        }
    }
    if fix {
        fix_crc32_trailer(&mut bytes);
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
    let refused = AtomicU64::new(0);
    konane_fuzzing::fuzz_bounded(
        "network-file",
        300,
        input,
        |bytes| 64 * bytes.len() + (1 << 20),
        |bytes| {
            if let Err(e) = checkpoint::load_bytes(bytes, "fuzzed", &device) {
                prop_assert!(e.to_string().starts_with("fuzzed"), "the error names the file: {e}");
                refused.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        },
    );
    println!("network-file: {} refused", refused.into_inner());
}
