//! Perft against the independent reference counts in `tests/data/perft.tsv`
//! (a copy of `shared/reference/perft.tsv`).

use konane_rules::perft::perft;
use konane_rules::{Position, Size};

/// Rows with more leaves than this are skipped in debug builds of the tests.
const LEAF_BUDGET: u64 = 60_000_000;

#[test]
fn perft_matches_every_reachable_reference_row() {
    let table = include_str!("data/perft.tsv");
    let mut checked = 0;
    for line in table.lines().filter(|l| !l.starts_with('#') && !l.starts_with("size")) {
        let fields: Vec<&str> = line.split('\t').collect();
        let size: Size = fields[0].parse().unwrap();
        let depth: u32 = fields[1].parse().unwrap();
        let leaves: u64 = fields[2].parse().unwrap();
        if leaves > LEAF_BUDGET {
            continue;
        }
        assert_eq!(perft(&Position::start(size), depth), leaves, "{size} depth {depth}");
        checked += 1;
    }
    assert!(checked >= 50, "only {checked} rows checked");
}
