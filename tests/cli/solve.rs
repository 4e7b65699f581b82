//! `konane solve` end to end: the value and winning moves of a board small
//! enough to check by hand against the rules crate's plain minimax, with
//! and without the table's symmetry folding.

use konane_rules::solver::minimax_wins;
use konane_rules::{Position, Size};

use crate::common::{fails_with, konane, text};

/// The `key: value` field of `stdout`'s line starting with `key:`.
fn field<'a>(stdout: &'a str, key: &str) -> &'a str {
    stdout.lines().find_map(|l| l.strip_prefix(key)).map(str::trim).unwrap_or_else(|| panic!("no {key} in {stdout}"))
}

#[test]
fn solves_a_board_as_minimax_does_and_folding_symmetries_saves_nodes() {
    let size: Size = "4x4".parse().unwrap();
    let start = Position::start(size);
    // The moves that leave the opponent lost, by plain minimax.
    let mut expected: Vec<String> = start
        .moves()
        .into_iter()
        .filter(|&mv| {
            let mut child = start;
            child.play_unchecked(mv);
            !minimax_wins(&child)
        })
        .map(|mv| mv.to_text(size))
        .collect();
    expected.sort();
    let mut nodes = Vec::new();
    for extra in [&[][..], &["--no-symmetry"], &["--table-gib", "0.01"]] {
        let output = konane(&[&["solve", "4x4"][..], extra].concat());
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{extra:?}: {stderr}");
        let value = field(&stdout, "value:");
        assert_eq!(value, if expected.is_empty() { "L" } else { "W" }, "{extra:?}: {stdout}");
        let mut winning: Vec<String> = field(&stdout, "winning:").split_whitespace().map(String::from).collect();
        winning.sort();
        assert_eq!(winning, expected, "{extra:?}");
        let stats = field(&stdout, "side:");
        let count: u64 = stats.split_whitespace().skip_while(|w| *w != "nodes:").nth(1).unwrap().parse().unwrap();
        nodes.push(count);
    }
    // The four corner openings (and the centre ones) are one class.
    assert!(nodes[0] < nodes[1], "folded {} nodes, plain {}", nodes[0], nodes[1]);
}

/// `--save` keeps a journal of the expensive results; `--resume` reads it
/// back (a torn last record cut off), finishes with the same answer in
/// fewer nodes, and refuses what is not its own.
#[test]
fn a_saved_solve_resumes_from_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("5x5");
    let save_arg = save.to_str().unwrap();
    let fresh = konane(&["solve", "5x5", "--save", save_arg, "--journal-min-work", "50"]);
    let (stdout, stderr) = text(&fresh);
    assert!(fresh.status.success(), "{stderr}");
    let result = std::fs::read_to_string(save.join("result.txt")).unwrap();
    assert!(result.ends_with(&stdout), "{result}");
    let nodes = |stdout: &str| -> u64 {
        let stats = field(stdout, "side:");
        stats.split_whitespace().skip_while(|w| *w != "nodes:").nth(1).unwrap().parse().unwrap()
    };
    let journal = std::fs::read(save.join("journal.bin")).unwrap();
    let records = (journal.len() - 16) / 25;
    assert!(records >= 2 && (journal.len() - 16).is_multiple_of(25), "{} bytes", journal.len());

    // A torn tail: half a record more.
    std::fs::write(save.join("journal.bin"), [&journal[..], &journal[16..28]].concat()).unwrap();
    let resumed = konane(&["solve", "--resume", save_arg]);
    let (again, stderr) = text(&resumed);
    assert!(resumed.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("{records} results")), "{stderr}");
    assert_eq!(field(&again, "value:"), field(&stdout, "value:"));
    assert_eq!(field(&again, "winning:"), field(&stdout, "winning:"));
    assert!(nodes(&again) < nodes(&stdout), "resumed {} nodes, fresh {}", nodes(&again), nodes(&stdout));
    let cut = std::fs::read(save.join("journal.bin")).unwrap();
    assert_eq!(&cut[..journal.len()], &journal[..], "the torn record is cut, the intact ones kept");

    // Refusals: an existing directory to save in, a missing one to resume, a foreign journal.
    fails_with(&konane(&["solve", "5x5", "--save", save_arg]), &["--save", "a new directory"]);
    let missing = dir.path().join("missing");
    fails_with(&konane(&["solve", "--resume", missing.to_str().unwrap()]), &["--resume", "solve.json"]);
    std::fs::write(save.join("journal.bin"), b"not a journal at all").unwrap();
    fails_with(&konane(&["solve", "--resume", save_arg]), &["not a konane solve journal"]);
    fails_with(&konane(&["solve"]), &["<BOARD>"]);
}
