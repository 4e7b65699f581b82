//! What the end-to-end tests share: running the binary, reading its output,
//! and the tiny training config (1 block x 8 channels on 5x5, a few short
//! games) that keeps a training run to a second.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The `konane` binary under test.
pub fn konane_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_konane"))
}

/// Runs the binary with `args`, no input, and warnings only in its log.
pub fn konane(args: &[&str]) -> Output {
    run_with_input(args, b"")
}

/// Runs the binary with its log filter (`KONANE_LOG`) set to `level`.
pub fn konane_logging(args: &[&str], level: &str) -> Output {
    konane_command().args(args).env("KONANE_LOG", level).output().expect("run konane")
}

/// Runs the binary with `input` on its standard input.
pub fn run_with_input(args: &[&str], input: &[u8]) -> Output {
    let mut child = konane_command()
        .args(args)
        .env("KONANE_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run konane");
    // A command that fails at start may exit before reading its input.
    let _ = child.stdin.take().expect("piped").write_all(input);
    child.wait_with_output().expect("wait for konane")
}

/// Standard output and standard error, as text.
pub fn text(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The command failed with an error that contains every `part`, and did
/// not panic.
pub fn fails_with(output: &Output, parts: &[&str]) {
    let (stdout, stderr) = text(output);
    assert!(!output.status.success(), "succeeded: {stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for part in parts {
        assert!(stderr.contains(part), "no {part:?} in: {stderr}");
    }
}

/// A training config that runs in about a second.
pub const TINY: &str = r#"
name = "tiny"
seed = 3
iterations = 2
threads = 1
sizes = ["5x5"]
[network]
blocks = 1
channels = 8
policy_channels = 8
value_channels = 8
value_hidden = 8
[selfplay]
games = 4
parallel_games = 4
simulations = 8
max_nodes = 10000
[replay]
window = 100
min_samples = 10
[training]
batch_size = 16
steps = 2
[evaluation]
opponents = ["random"]
games = 2
previous_games = 2
simulations = 4
"#;
