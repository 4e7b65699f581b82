//! End-to-end tests of `konane play`: the real binary with piped input, as
//! a script would drive it, against the network shipped in the binary.

use std::io::Write;
use std::process::{Output, Stdio};

use crate::common::konane_command;

fn play(args: &[&str], input: &str) -> Output {
    let mut child = konane_command()
        .arg("play")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start konane play");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_shipped_network_plays_a_scripted_game() {
    // Black: remove d4 (a middle cell of 6x6), then the network (white) replies.
    let out = play(&["--sims", "16", "--threads", "1"], "moves\nd4\nhint\neval\nquit\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("you are black on 6x6 against checkpoints/6x6 (embedded)"), "{text}");
    assert!(text.contains("legal (4): "), "black has four removals on 6x6: {text}");
    assert!(text.contains("network plays "), "{text}");
    assert!(text.contains("last move: "), "{text}");
    assert!(text.contains("hint: "), "{text}");
    assert!(text.contains("your winning chances: "), "{text}");
}

#[test]
fn the_network_moves_first_for_a_white_user_and_bad_input_is_survived() {
    let out = play(&["--model", "init", "--size", "4x4", "--color", "white", "--sims", "0"], "e9\nc3-c1\nundo\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("network plays "), "black moves first: {text}");
    assert!(text.contains("'e9':"), "{text}");
    assert!(text.contains("nothing to undo"), "{text}");
}

#[test]
fn a_missing_model_is_one_clear_error() {
    let out = play(&["--model", "no/such/model"], "");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no/such/model"), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("error")).count(), 1, "{err}");
}

#[test]
fn the_8x8_specialist_loads_from_its_directory() {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/checkpoints/8x8");
    let out =
        play(&["--model", model, "--size", "8x8", "--color", "white", "--sims", "8", "--threads", "1"], "moves\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("you are white on 8x8") && text.contains("trained on 8x8"), "{text}");
    assert!(text.contains("network plays "), "black (the network) opens: {text}");
    assert!(text.contains("legal ("), "{text}");
}

#[test]
fn all_eight_symmetries_make_the_network_independent_of_its_seed() {
    let session = |sym: &str, seed: &str| {
        // The search alone: solved leaves would leave the seed nothing to change.
        let args = ["--sims", "24", "--threads", "1", "--color", "white", "--sym", sym, "--seed", seed, "--solve", "0"];
        let out = play(&args, "hint\neval\nquit\n");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let (one, other) = (session("8", "1"), session("8", "2"));
    assert!(one.contains("network plays ") && one.contains('%'), "{one}");
    assert_eq!(one, other, "averaged over every symmetry, the search has nothing random left");
    assert_ne!(session("1", "1"), session("1", "2"), "one random symmetry: the seed shows in the visit shares");
    let out = play(&["--sym", "9"], "");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sym"), "the error names the flag");
}
