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

/// The nodes a report's statistics line counts.
fn nodes(stdout: &str) -> u64 {
    let stats = field(stdout, "side:");
    stats.split_whitespace().skip_while(|w| *w != "nodes:").nth(1).unwrap().parse().unwrap()
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
        let output = konane(&[&["solve", "4x4", "--no-policy"][..], extra].concat());
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

/// By default the shipped network's policy orders the moves near the root;
/// `--policy` names another network and `--policy-plies` its depth, and
/// `--no-policy` orders by fewest replies alone. The value and winning moves
/// are the same every way, the report counts the network's calls, and a
/// network that does not load is an error naming the flag.
#[test]
fn a_policy_orders_the_search_without_changing_its_answer() {
    let plain = konane(&["solve", "5x6", "--no-policy"]);
    let (plain, stderr) = text(&plain);
    assert!(!plain.contains("policy:"), "{plain}{stderr}");
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/checkpoints/konane");
    for extra in [&[][..], &["--policy", model, "--policy-plies", "3"]] {
        let output = konane(&[&["solve", "5x6"][..], extra].concat());
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{extra:?}: {stderr}");
        for key in ["value:", "winning:"] {
            assert_eq!(field(&stdout, key), field(&plain, key), "{extra:?}: {key}");
        }
        let calls: u64 = field(&stdout, "policy:").split_whitespace().next().unwrap().parse().unwrap();
        assert!(calls > 0, "{extra:?}: {stdout}");
    }
    fails_with(&konane(&["solve", "5x6", "--policy", "no/such/model"]), &["--policy", "no/such/model"]);
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
    fails_with(&konane(&["solve", "5x5", "--save", save_arg]), &["--save", "already exists"]);
    let missing = dir.path().join("missing");
    fails_with(&konane(&["solve", "--resume", missing.to_str().unwrap()]), &["--resume", "solve.json"]);
    std::fs::write(save.join("journal.bin"), b"not a journal at all").unwrap();
    fails_with(&konane(&["solve", "--resume", save_arg]), &["not a konane solve journal"]);
    fails_with(&konane(&["solve"]), &["<BOARD>"]);
    // A solve.json whose table size no solve could have had, and files too
    // long for what they claim to be (a device reads as endless zeros).
    let saved = std::fs::read_to_string(save.join("solve.json")).unwrap();
    let table_bits = |bits: &str| {
        let json: serde_json::Value = serde_json::from_str(&saved).unwrap();
        let mut json = json.as_object().unwrap().clone();
        json.insert("table_bits".into(), serde_json::from_str(bits).unwrap());
        std::fs::write(save.join("solve.json"), serde_json::to_string(&json).unwrap()).unwrap();
    };
    for bits in ["0", "9", "30"] {
        table_bits(bits);
        fails_with(
            &konane(&["solve", "--resume", save_arg]),
            &["--resume", "solve.json", &format!("table_bits {bits} is not in 10..=29")],
        );
    }
    table_bits("10");
    // Sparse files far longer than any journal or proof, refused unread.
    let huge = |path: &std::path::Path| std::fs::File::create(path).unwrap().set_len(1 << 36).unwrap();
    huge(&save.join("journal.bin"));
    fails_with(&konane(&["solve", "--resume", save_arg]), &["journal.bin", "too long for a solve journal"]);
    let proof = dir.path().join("huge-proof");
    huge(&proof);
    fails_with(
        &konane(&["solve", "--verify", proof.to_str().unwrap()]),
        &["--verify", "huge-proof", "too long for a proof"],
    );
}

/// `--replies` gives each move's value and the opponent's winning replies,
/// `--proof` writes a proof of it, and `--verify` checks the proof with
/// the naive rules and prints the same; a damaged or foreign proof fails
/// with the reason.
#[test]
fn replies_come_with_a_proof_the_naive_rules_check() {
    let dir = tempfile::tempdir().unwrap();
    let proof = dir.path().join("4x5.proof");
    let proof_arg = proof.to_str().unwrap();
    let solved = konane(&["solve", "4x5", "--replies", "--proof", proof_arg]);
    let (stdout, stderr) = text(&solved);
    assert!(solved.status.success(), "{stderr}");
    let size: Size = "4x5".parse().unwrap();
    let start = Position::start(size);
    let after: Vec<&str> = stdout.lines().filter(|l| l.starts_with("after ")).collect();
    assert_eq!(after.len(), start.moves().len(), "{stdout}");
    for mv in start.moves() {
        let mut child = start;
        child.play_unchecked(mv);
        let line = after.iter().find(|l| l.starts_with(&format!("after {}:", mv.to_text(size)))).unwrap();
        assert_eq!(line.ends_with("every reply loses"), !minimax_wins(&child), "{line}");
    }

    let checked = konane(&["solve", "--verify", proof_arg]);
    let (verified, stderr) = text(&checked);
    assert!(checked.status.success(), "{stderr}");
    assert_eq!(field(&verified, "value:"), field(&stdout, "value:"));
    assert_eq!(field(&verified, "winning:"), field(&stdout, "winning:"));
    assert_eq!(verified.lines().filter(|l| l.starts_with("after ")).collect::<Vec<_>>(), after);
    assert!(verified.contains("checked with the naive rules"), "{verified}");

    fails_with(&konane(&["solve", "4x5", "--proof", proof_arg]), &["--proof", "already exists"]);
    let bytes = std::fs::read(&proof).unwrap();
    std::fs::write(&proof, &bytes[..bytes.len() - 1]).unwrap();
    fails_with(&konane(&["solve", "--verify", proof_arg]), &["does not hold", "ends too early"]);
    std::fs::write(&proof, b"konane-journal\0\x01").unwrap();
    fails_with(&konane(&["solve", "--verify", proof_arg]), &["not a konane proof"]);

    // Two threads, the same answer; --no-proof leaves the proof out.
    let parallel = konane(&[
        "solve",
        "4x5",
        "--replies",
        "--threads",
        "2",
        "--save",
        dir.path().join("p").to_str().unwrap(),
        "--no-proof",
    ]);
    let (two, stderr) = text(&parallel);
    assert!(parallel.status.success(), "{stderr}");
    assert_eq!(field(&two, "value:"), field(&stdout, "value:"));
    assert_eq!(two.lines().filter(|l| l.starts_with("after ")).collect::<Vec<_>>(), after);
    assert!(!dir.path().join("p/proof").exists() && dir.path().join("p/result.txt").exists());

    // A saved solve keeps its proof; --verify takes the directory.
    let save = dir.path().join("saved");
    let saved = konane(&["solve", "4x4", "--save", save.to_str().unwrap()]);
    assert!(saved.status.success(), "{}", text(&saved).1);
    let checked = konane(&["solve", "--verify", save.to_str().unwrap()]);
    assert!(checked.status.success(), "{}", text(&checked).1);
    assert_eq!(field(&text(&checked).0, "value:"), field(&text(&saved).0, "value:"));
}

/// `--dfpn`: the same value, openings and white replies as alpha-beta, on
/// one thread or two, a proof the naive rules check, and the options it
/// does not take refused.
#[test]
fn proof_number_search_answers_as_alpha_beta_does() {
    let dir = tempfile::tempdir().unwrap();
    let proof = dir.path().join("5x6.proof");
    let proof_arg = proof.to_str().unwrap();
    let (alphabeta, dfpn) = (
        konane(&["solve", "5x6", "--replies", "--no-policy", "--threads", "1"]),
        konane(&["solve", "5x6", "--dfpn", "--threads", "1", "--replies", "--proof", proof_arg]),
    );
    assert!(alphabeta.status.success() && dfpn.status.success(), "{}\n{}", text(&alphabeta).1, text(&dfpn).1);
    let (alphabeta, ours) = (text(&alphabeta).0, text(&dfpn).0);
    assert!(ours.contains("df-pn"), "{ours}");
    for key in ["value:", "winning:"] {
        assert_eq!(field(&ours, key), field(&alphabeta, key), "{ours}");
    }
    let after = |report: &str| report.lines().filter(|l| l.starts_with("after ")).map(String::from).collect::<Vec<_>>();
    assert_eq!(after(&ours), after(&alphabeta));
    assert!(!after(&ours).is_empty());
    let two = konane(&["solve", "5x6", "--dfpn", "--threads", "2", "--replies", "--no-proof"]);
    let (two, stderr) = text(&two);
    for key in ["value:", "winning:"] {
        assert_eq!(field(&two, key), field(&ours, key), "{stderr}");
    }
    assert_eq!(after(&two), after(&ours));
    let checked = konane(&["solve", "--verify", proof_arg]);
    let (verified, stderr) = text(&checked);
    assert!(checked.status.success(), "{stderr}");
    assert_eq!(after(&verified), after(&ours));

    // df-pn from a saved alpha-beta solve's journal: the same report,
    // written to the directory's result.
    let saved = dir.path().join("saved");
    let saved_arg = saved.to_str().unwrap();
    let output =
        konane(&["solve", "5x6", "--no-policy", "--no-proof", "--journal-min-work", "1000", "--save", saved_arg]);
    assert!(output.status.success(), "{}", text(&output).1);
    let resumed = konane(&["solve", "--resume", saved_arg, "--dfpn", "--replies"]);
    let (stdout, stderr) = text(&resumed);
    assert!(resumed.status.success(), "{stderr}");
    let pinned: usize = stderr
        .split("starting 5x6 from ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(pinned > 10, "{pinned} results read back");
    assert_eq!(after(&stdout), after(&ours));
    let result = std::fs::read_to_string(saved.join("result.txt")).unwrap();
    assert!(result.contains("df-pn") && result.contains(&after(&ours)[0]), "{result}");

    fails_with(&konane(&["solve", "5x6", "--dfpn", "--no-symmetry"]), &["--no-symmetry", "--dfpn"]);
    fails_with(&konane(&["solve", "5x6", "--dfpn", "--proof", proof_arg]), &["--proof", "already exists"]);
}

/// A saved df-pn solve checkpoints its table, and `--resume` goes on from
/// the last checkpoint (the directory says the solve was df-pn's): a solve
/// stopped by `--max-nodes` resumes to the same value and winning moves as
/// one in a go, in fewer nodes than that (all on one thread, whose node
/// counts do not vary). A damaged checkpoint is an error naming it.
#[test]
fn a_proof_number_solve_resumes_from_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("6x5");
    let save_arg = save.to_str().unwrap();
    let whole = konane(&["solve", "6x5", "--dfpn", "--threads", "1", "--no-proof"]);
    let (stdout, stderr) = text(&whole);
    assert!(whole.status.success(), "{stderr}");
    assert!(stdout.contains("df-pn"), "{stdout}");
    assert!(nodes(&stdout) > 100_000, "{stdout}");
    // Stopped by its budget, as if killed there (with a checkpoint at
    // every offer, every 65,536 nodes, on the way).
    let stopped = konane(&[
        "solve",
        "6x5",
        "--dfpn",
        "--threads",
        "1",
        "--no-proof",
        "--save",
        save_arg,
        "--max-nodes",
        "100000",
        "--checkpoint-secs",
        "0",
    ]);
    fails_with(&stopped, &["--max-nodes 100000", "konane solve --resume"]);
    assert!(!save.join("result.txt").exists());
    let checkpoint = std::fs::read(save.join("table.bin")).unwrap();
    assert!(checkpoint.starts_with(b"konane-dfpn-tab\x01"));
    let entries = u64::from_le_bytes(checkpoint[16..24].try_into().unwrap());
    assert_eq!(checkpoint.len() as u64, 16 + 8 + 32 * entries + 4);
    assert!(entries > 100, "{entries} entries");

    let resumed = konane(&["solve", "--resume", save_arg, "--threads", "1"]);
    let (again, stderr) = text(&resumed);
    assert!(resumed.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("restored {entries} positions")), "{stderr}");
    assert!(again.contains("df-pn"), "resumed by df-pn, as saved: {again}");
    for key in ["value:", "winning:"] {
        assert_eq!(field(&again, key), field(&stdout, key));
    }
    assert!(nodes(&again) < nodes(&stdout), "resumed {} nodes, fresh {}", nodes(&again), nodes(&stdout));
    // The resumed solve wrote its proof into the directory; it checks.
    assert!(std::fs::read_to_string(save.join("result.txt")).unwrap().contains("proof: "));
    let checked = konane(&["solve", "--verify", save_arg]);
    assert!(checked.status.success(), "{}", text(&checked).1);
    assert_eq!(field(&text(&checked).0, "value:"), field(&stdout, "value:"));

    let mut damaged = checkpoint.clone();
    damaged[40] ^= 1;
    std::fs::write(save.join("table.bin"), &damaged).unwrap();
    fails_with(&konane(&["solve", "--resume", save_arg, "--no-proof"]), &["table.bin", "damaged checkpoint"]);
    std::fs::write(save.join("table.bin"), &checkpoint[..100]).unwrap();
    fails_with(&konane(&["solve", "--resume", save_arg, "--no-proof"]), &["table.bin", "damaged checkpoint"]);
}

/// `--warm-from DIR` starts a df-pn solve from another saved solve's table:
/// 6x5 from the table of its first opening's solve searches fewer nodes
/// than from nothing, for the same value and winning moves. A directory of
/// another board size, or one with nothing to start from, is refused.
#[test]
fn a_proof_number_solve_starts_from_another_solves_table() {
    let dir = tempfile::tempdir().unwrap();
    let size: Size = "6x5".parse().unwrap();
    let mut opening = Position::start(size);
    opening.play_unchecked(opening.moves()[0]);
    let part = dir.path().join("opening");
    let part_arg = part.to_str().unwrap();
    // No checkpoint is due in so short a solve: the table is written as it ends.
    let saved = konane(&["solve", &opening.to_string(), "--dfpn", "--threads", "1", "--no-proof", "--save", part_arg]);
    assert!(saved.status.success(), "{}", text(&saved).1);
    assert!(part.join("table.bin").exists());

    let fresh = konane(&["solve", "6x5", "--dfpn", "--threads", "1", "--no-proof"]);
    let warm = konane(&["solve", "6x5", "--dfpn", "--threads", "1", "--no-proof", "--warm-from", part_arg]);
    let ((fresh, _), (warm, stderr)) = (text(&fresh), text(&warm));
    assert!(stderr.contains("restored ") && stderr.contains("table.bin"), "{stderr}");
    for key in ["value:", "winning:"] {
        assert_eq!(field(&warm, key), field(&fresh, key));
    }
    assert!(nodes(&warm) < nodes(&fresh), "warm {} nodes, fresh {}", nodes(&warm), nodes(&fresh));

    fails_with(&konane(&["solve", "5x6", "--dfpn", "--warm-from", part_arg]), &["--warm-from", "6x5", "5x6"]);
    let empty = dir.path().join("empty");
    let empty_arg = empty.to_str().unwrap();
    let started = konane(&["solve", "4x4", "--dfpn", "--no-proof", "--save", empty_arg]);
    assert!(started.status.success(), "{}", text(&started).1);
    std::fs::remove_file(empty.join("table.bin")).unwrap();
    fails_with(&konane(&["solve", "4x4", "--dfpn", "--warm-from", empty_arg]), &["--warm-from", "table.bin"]);
    fails_with(&konane(&["solve", "6x5", "--warm-from", part_arg]), &["--warm-from", "--dfpn"]);
    fails_with(&konane(&["solve", "4x4", "--max-nodes", "10"]), &["--max-nodes", "--dfpn"]);
}

/// `--regions` decides the positions made of groups that can never meet
/// by the groups' game values: both solvers give the same value, winning
/// moves and replies as without it, the report says how many positions
/// the regions decided, and a proof written with it passes the naive
/// check. Its knobs are checked.
#[test]
fn regions_answer_as_the_plain_search_does() {
    let dir = tempfile::tempdir().unwrap();
    let proof = dir.path().join("6x5.proof");
    let plain = konane(&["solve", "6x5", "--no-policy", "--threads", "1", "--replies"]);
    let (plain, stderr) = text(&plain);
    assert!(!plain.is_empty(), "{stderr}");
    assert!(!plain.contains("regions:"), "{plain}");
    for dfpn in [&[][..], &["--dfpn"]] {
        let mut args = vec!["solve", "6x5", "--no-policy", "--threads", "1", "--replies", "--regions"];
        args.extend_from_slice(dfpn);
        args.extend_from_slice(&["--proof", proof.to_str().unwrap()]);
        let output = konane(&args);
        let (ours, stderr) = text(&output);
        assert!(output.status.success(), "{dfpn:?}: {stderr}");
        for key in ["value:", "winning:"] {
            assert_eq!(field(&ours, key), field(&plain, key), "{dfpn:?}: {ours}");
        }
        let after =
            |report: &str| report.lines().filter(|l| l.starts_with("after ")).map(String::from).collect::<Vec<_>>();
        assert_eq!(after(&ours), after(&plain), "{dfpn:?}");
        let decided: u64 = field(&ours, "regions:").split_whitespace().next().unwrap().parse().unwrap();
        assert!(decided > 0, "{dfpn:?}: {ours}");
        let checked = konane(&["solve", "--verify", proof.to_str().unwrap()]);
        assert!(checked.status.success(), "{dfpn:?}: {}", text(&checked).1);
        std::fs::remove_file(&proof).unwrap();
    }
    fails_with(&konane(&["solve", "6x5", "--regions", "--region-stones", "0"]), &["--region-stones", "0"]);
    fails_with(&konane(&["solve", "6x5", "--region-walk", "100"]), &["--regions"]);
}
