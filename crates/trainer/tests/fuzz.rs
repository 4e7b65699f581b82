//! Fuzz targets for the trainer's readers: the config parser (random TOML
//! built from the real keys, with values of every type and magnitude), the
//! replay file, `state.json` and `metrics.jsonl` (random bytes and random
//! mutations of valid files, half of them with their checksum made right).
//!
//! Properties: nothing panics; a config that parses is within every range
//! and round-trips; a reader never allocates much more than its file holds.
//! Runs `KONANE_FUZZ_CASES` inputs a target (default 1,000) from
//! `KONANE_FUZZ_SEED`.

use konane_fuzzing::{Damage, LargestAllocation, damage, fix_crc32_trailer};
use konane_rules::{Position, Size};
use konane_trainer::TrainConfig;
use konane_trainer::metrics::{self, IterationMetrics};
use konane_trainer::replay::{PackedSample, ReplayBuffer};
use konane_trainer::run::{self, RunState};
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// Runs `property` on `KONANE_FUZZ_CASES` inputs (default 1,000), no single
/// allocation over `limit(input)`.
fn fuzz<S: Strategy>(
    name: &str,
    strategy: S,
    limit: impl Fn(&S::Value) -> usize,
    property: impl Fn(&S::Value) -> Result<(), TestCaseError>,
) {
    konane_fuzzing::fuzz_bounded(name, 1_000, strategy, limit, property);
}

/// Applies `damage`, aiming overwritten words at the first 40 bytes,
/// where the replay and state formats keep their lengths.
fn damaged(file: &[u8], damage: &[Damage]) -> Vec<u8> {
    let mut bytes = file.to_vec();
    for d in damage {
        d.apply(&mut bytes, 40);
    }
    bytes
}

// ---- config ----------------------------------------------------------

/// Every dotted key of the full config (bootstrap included) with its value.
fn config_keys() -> Vec<(String, toml::Value)> {
    fn walk(prefix: &str, value: &toml::Value, out: &mut Vec<(String, toml::Value)>) {
        match value {
            toml::Value::Table(table) => {
                for (k, v) in table {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&key, v, out);
                }
            }
            other => out.push((prefix.to_string(), other.clone())),
        }
    }
    let full = TrainConfig { bootstrap: Some(Default::default()), ..TrainConfig::default() };
    let mut out = Vec::new();
    walk("", &toml::Value::try_from(&full).unwrap(), &mut out);
    out
}

fn toml_value() -> impl Strategy<Value = toml::Value> {
    use toml::Value;
    let leaf = prop_oneof![
        prop_oneof![
            Just(0i64),
            Just(1),
            Just(-1),
            Just(i64::MAX),
            Just(1 << 62),
            Just(1_000_000_000_000),
            Just(4096),
            Just(4097),
            any::<i64>()
        ]
        .prop_map(Value::Integer),
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(1e30),
            Just(1e39),
            Just(-0.0),
            Just(0.5),
            Just(1.0),
            any::<f64>()
        ]
        .prop_map(Value::Float),
        any::<bool>().prop_map(Value::Boolean),
        prop_oneof![
            Just("6x6".to_string()),
            Just("21x21".to_string()),
            Just("net:init".to_string()),
            Just("net:missing.knet".to_string()),
            Just("alphabeta:depth=2".to_string()),
            Just("alphabeta:ms=5".to_string()),
            Just("adamw".to_string()),
            Just("cosine".to_string()),
            Just("flex".to_string()),
            any::<String>()
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Table(m.into_iter().collect())),
        ]
    })
}

/// Sets `key` (dotted) in `table` to `value`, making tables on the way.
fn set_key(table: &mut toml::Table, key: &str, value: toml::Value) {
    match key.split_once('.') {
        Some((head, rest)) => {
            let entry = table.entry(head.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if let toml::Value::Table(inner) = entry {
                set_key(inner, rest, value);
            }
        }
        None => {
            table.insert(key.to_string(), value);
        }
    }
}

#[test]
fn configs() {
    let keys = config_keys();
    let document = proptest::collection::vec(
        (
            prop_oneof![
                8 => prop::sample::select(keys.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>()),
                1 => "[a-z_]{1,10}(\\.[a-z_]{1,10})?",
            ],
            prop_oneof![3 => toml_value(), 1 => prop::sample::select(keys.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>())],
        ),
        0..6,
    )
    .prop_map(|edits| {
        let mut table = toml::Table::new();
        for (key, value) in edits {
            set_key(&mut table, &key, value);
        }
        toml::to_string(&table).unwrap_or_default()
    });
    let text = prop_oneof![8 => document, 1 => any::<String>()];
    fuzz(
        "config",
        text,
        |text| 64 * text.len() + (1 << 20),
        |text| {
            if let Ok(config) = TrainConfig::parse(text, "fuzz.toml") {
                let resolved = config.validate();
                prop_assert!(resolved.is_ok(), "parse validated it: {text}");
                prop_assert_eq!(TrainConfig::parse(&config.to_toml(), "again").ok(), Some(config.clone()));
                prop_assert!(config.replay.window <= 10_000_000 && config.training.batch_size <= 8192);
                prop_assert!(config.selfplay.parallel_games <= 4096 && config.network.channels <= 512);
            }
            Ok(())
        },
    );
}

// ---- replay file -----------------------------------------------------

fn valid_replay() -> Vec<u8> {
    let mut buffer = ReplayBuffer::new(1000);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for size in ["5x5", "6x4", "8x8"] {
        let mut position = Position::start(size.parse::<Size>().unwrap());
        let mut samples = Vec::new();
        while !position.is_over() {
            let moves = position.moves();
            let visits: Vec<_> = moves.iter().map(|&m| (m, rng.random_range(0..9u32))).collect();
            samples.push(PackedSample::new(&position, visits, 0.5));
            position.play_unchecked(moves[rng.random_range(0..moves.len())]);
        }
        buffer.extend(samples);
    }
    buffer.to_bytes()
}

#[test]
fn replay_files() {
    let file = valid_replay();
    assert!(ReplayBuffer::from_bytes(&file, 1000).is_ok());
    let input = prop_oneof![
        6 => (proptest::collection::vec(damage(), 1..4), any::<bool>()).prop_map({
            let file = file.clone();
            move |(damage, fix)| {
                let mut bytes = damaged(&file, &damage);
                if fix {
                    fix_crc32_trailer(&mut bytes);
                }
                bytes
            }
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..128),
    ];
    fuzz(
        "replay-file",
        input,
        // A sample's claimed lengths may reserve up to the per-sample limit
        // (64 KiB) before the bytes behind them are found missing; beyond
        // that, memory follows the file.
        |bytes| 16 * bytes.len() + (64 << 10) + 4096,
        |bytes| {
            if let Ok(buffer) = ReplayBuffer::from_bytes(bytes, 1000) {
                for sample in buffer.iter() {
                    let unpacked = sample.unpack(konane_rules::Symmetry::Identity);
                    prop_assert!((-1.0..=1.0).contains(&unpacked.value));
                }
                prop_assert_eq!(ReplayBuffer::from_bytes(&buffer.to_bytes(), 1000).ok(), Some(buffer));
            }
            Ok(())
        },
    );
}

// ---- state.json and metrics.jsonl --------------------------------------

fn valid_state() -> String {
    let metrics = IterationMetrics { iteration: 1, games: 4, policy_loss: 1.5, ..IterationMetrics::default() };
    let state = RunState { format: run::STATE_VERSION, iteration: 1, metrics: vec![metrics], ..RunState::default() };
    let json = serde_json::to_string(&state).unwrap();
    format!("{json}\ncrc32 {:08x}\n", crc32fast::hash(json.as_bytes()))
}

#[test]
fn state_and_metrics_files() {
    let dir = tempfile::tempdir().unwrap();
    let valid = valid_state();
    std::fs::write(dir.path().join(run::STATE_FILE), &valid).unwrap();
    assert!(run::read_state(dir.path()).is_ok());
    let input = (proptest::collection::vec(damage(), 1..4), any::<bool>()).prop_map(move |(damage, fix)| {
        let mut bytes = damaged(valid.as_bytes(), &damage);
        if fix {
            // Make the checksum line right for whatever the first line is now.
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let json = text.lines().next().unwrap_or("").to_string();
            bytes = format!("{json}\ncrc32 {:08x}\n", crc32fast::hash(json.as_bytes())).into_bytes();
        }
        bytes
    });
    let path = dir.path().to_path_buf();
    fuzz(
        "state-and-metrics",
        input,
        |bytes| 64 * bytes.len() + (1 << 16),
        |bytes| {
            std::fs::write(path.join(run::STATE_FILE), bytes).unwrap();
            if let Ok(state) = run::read_state(&path) {
                prop_assert!((1..=run::STATE_VERSION).contains(&state.format));
            }
            std::fs::write(path.join("metrics.jsonl"), bytes).unwrap();
            let _ = metrics::read(&path.join("metrics.jsonl"));
            Ok(())
        },
    );
}
