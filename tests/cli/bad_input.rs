//! Bad input against the real binary, one test per family: every case ends
//! in one clear error (or, in `play` and `ktp`, a message and the next
//! prompt or answer), never a panic, a hang or a damaged run directory.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::Tensor;
use konane_nn::checkpoint::{self, FORMAT_VERSION, NetHeader};
use konane_nn::{Backend, NetConfig, init_net};

use crate::common::{TINY, fails_with, konane, konane_logging, run_with_input, text};

fn tiny_net() -> NetConfig {
    NetConfig::new().with_blocks(1).with_channels(8).with_policy_channels(8).with_value_channels(8).with_value_hidden(8)
}

/// Multiplies every weight by a factor.
struct Scale(f32);

impl ModuleMapper for Scale {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let factor = self.0;
        param.map(|t| t.mul_scalar(factor))
    }
}

/// A network file of the tiny shape with every weight multiplied by
/// `factor` (NaN gives NaN weights; 1e20 finite weights whose outputs are
/// not; 1e10 finite outputs whose first gradient step overflows), with a
/// valid checksum.
fn scaled_net_file(dir: &Path, name: &str, factor: f32) -> PathBuf {
    let net = init_net(&tiny_net(), &Backend::Flex.device(), 1).map(&mut Scale(factor));
    let header = NetHeader {
        format: FORMAT_VERSION,
        net: tiny_net(),
        sizes: vec!["5x5".parse().unwrap()],
        iteration: 1,
        note: name.into(),
    };
    let path = dir.join(name);
    fs::write(&path, checkpoint::to_bytes(&net, &header).unwrap()).unwrap();
    path
}

#[test]
fn non_finite_numbers_are_errors_not_endless_searches() {
    let dir = tempfile::tempdir().unwrap();
    // Finite as f64, infinite as f32.
    fails_with(&konane(&["ktp", "--player", "net:init,fpu=1e39"]), &["fpu=1e39", "0 to 10"]);
    fails_with(&konane(&["eval", "--a", "net:init,c=inf", "--b", "random"]), &["c=inf"]);

    // Weights that are all NaN: refused when the file loads.
    let nan = scaled_net_file(dir.path(), "nan.knet", f32::NAN);
    let nan_arg = nan.to_str().unwrap();
    fails_with(&run_with_input(&["play", "--model", nan_arg, "--size", "5x5"], b"quit\n"), &["nan.knet", "NaN"]);

    // Finite weights whose outputs overflow: the search's evaluations fail.
    let huge = scaled_net_file(dir.path(), "huge.knet", 1e20);
    let spec = format!("net:{},sims=20", huge.display());
    let output = run_with_input(&["ktp", "--player", &spec, "--threads", "1"], b"newgame 5x5\ngenmove\nshow\nquit\n");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let answers: Vec<&str> = stdout.split_terminator("\n\n").collect();
    assert_eq!(answers.len(), 4, "{stdout}");
    assert!(answers[1].starts_with("? ") && answers[1].contains("huge.knet"), "{stdout}");
    assert!(answers[1].contains("not a finite number"), "{stdout}");
    assert_eq!(answers[2], "= BWBWB/WBWBW/BWBWB/WBWBW/BWBWB b", "a failed genmove plays nothing");

    let output = konane(&["eval", "--a", &spec, "--b", "random", "--size", "5x5", "--games", "4", "--threads", "1"]);
    fails_with(&output, &["huge.knet", "player A failed", "not a finite number"]);
    let output = run_with_input(
        &["play", "--model", huge.to_str().unwrap(), "--size", "5x5", "--sims", "0", "--color", "white"],
        b"quit\n",
    );
    fails_with(&output, &["huge.knet", "not a finite number"]);
}

#[test]
fn degenerate_boards_play_out() {
    for size in ["1x1", "1x2", "2x1", "1x3"] {
        let output = konane(&["eval", "--a", "random", "--b", "greedy", "--size", size, "--games", "4"]);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{size}: {stderr}");
        assert!(stdout.contains(&format!("on {size}: 4 games scored")), "{size}: {stdout}");
        let output = konane(&["tournament", "--players", "random;greedy", "--size", size, "--games", "2"]);
        assert!(output.status.success(), "{size}: {}", text(&output).1);
    }
}

#[test]
fn every_number_has_a_range() {
    for (args, parts) in [
        (&["solve", "6x6", "--table-bits", "30"][..], &["--table-bits", "10..=29"][..]),
        (&["solve", "6x6", "--table-gib", "17"], &["--table-gib", "0.001 to 16"]),
        (&["solve", "6x6", "--table-gib", "nan"], &["--table-gib", "0.001 to 16"]),
        (&["solve", "6x6", "--policy-plies", "41"], &["--policy-plies", "1..=40"]),
        (&["accuracy", "--players", "random", "--positions", "1000000000000"], &["--positions", "1..=100000"]),
        (&["bench-net", "--batches", "100000000"], &["--batches", "1..=4096"]),
        (&["bench-net", "--seconds", "nan"], &["--seconds", "at most 3600"]),
        (&["bench-net", "--channels", "1000000"], &["network.channels", "1..=512"]),
        (&["ktp", "--threads", "4096"], &["--threads", "four per core"]),
        (&["eval", "--a", "random", "--b", "random", "--threads", "0"], &["--threads"]),
        (&["play", "--sims", "1000000000000"], &["--sims"]),
        (&["perft", "6x6", "65"], &["65"]),
        (&["eval", "--a", "random", "--b", "random", "--size", "21x21"], &["21x21"]),
        (&["train", "--iterations", "2000000"], &["--iterations"]),
    ] {
        fails_with(&konane(args), parts);
    }
    let dir = tempfile::tempdir().unwrap();
    for (key, value, parts) in [
        ("training.batch_size", "4611686018427387904", &["training.batch_size", "at most 8192"][..]),
        ("selfplay.parallel_games", "1000000000000", &["selfplay.parallel_games", "at most 4096"]),
        ("network.channels", "1000000", &["network.channels", "1..=512"]),
        ("training.lr", "1e30", &["training.lr", "at most 10"]),
        ("selfplay.search.fpu_reduction", "nan", &["selfplay.search.fpu_reduction"]),
        ("threads", "4096", &["threads"]),
        ("replay.window", "100000000000", &["replay.window"]),
    ] {
        let (table, name) = key.split_once('.').unwrap_or(("", key));
        let body =
            if table.is_empty() { format!("{name} = {value}\n") } else { format!("[{table}]\n{name} = {value}\n") };
        let config = dir.path().join("bad.toml");
        fs::write(&config, body).unwrap();
        let run = dir.path().join("run");
        let output = konane(&["train", config.to_str().unwrap(), "--run-dir", run.to_str().unwrap()]);
        fails_with(&output, parts);
        assert!(!run.exists(), "{key}: nothing is written for a bad config");
    }
    // A header claiming a network no file could hold.
    let mut header = serde_json::to_vec(&serde_json::json!({
        "format": FORMAT_VERSION,
        "net": {"blocks": u64::MAX, "channels": 8, "policy_channels": 8, "value_channels": 8, "value_hidden": 8},
        "sizes": ["5x5"], "iteration": 0, "note": ""
    }))
    .unwrap();
    let mut file = b"KONANE-NET\n".to_vec();
    file.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    file.extend_from_slice(&(header.len() as u32).to_le_bytes());
    file.append(&mut header);
    file.extend_from_slice(&0u64.to_le_bytes());
    let crc = crc32fast::hash(&file);
    file.extend_from_slice(&crc.to_le_bytes());
    let path = dir.path().join("liar.knet");
    fs::write(&path, file).unwrap();
    fails_with(
        &run_with_input(&["play", "--model", path.to_str().unwrap()], b"quit\n"),
        &["liar.knet", "network.blocks"],
    );
}

/// Every key in range, their product not: the memory check reads the
/// machine's memory from `/proc/meminfo`.
#[cfg(target_os = "linux")]
#[test]
fn a_run_that_cannot_fit_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    // Terabytes for the step are refused before a run directory exists,
    // not killed by the kernel.
    let config = dir.path().join("huge.toml");
    fs::write(&config, "sizes = [\"20x20\"]\n[network]\nblocks = 40\nchannels = 512\n[training]\nbatch_size = 8192\n")
        .unwrap();
    let run = dir.path().join("run");
    fails_with(
        &konane(&["train", config.to_str().unwrap(), "--run-dir", run.to_str().unwrap()]),
        &["training.batch_size", "GiB", "more than this machine's"],
    );
    assert!(!run.exists(), "nothing is written for a run that cannot fit");
    fails_with(
        &konane(&["bench-train", "--size", "20x20", "--blocks", "40", "--channels", "512", "--batch", "4096"]),
        &["--batch 4096", "GiB", "lower --batch"],
    );
}

#[cfg(target_os = "linux")]
#[test]
fn output_errors_are_messages_and_a_closed_pipe_ends_quietly() {
    for args in [
        &["show", "6x6"][..],
        &["perft", "6x6", "3"],
        &["solve", "4x4"],
        &["eval", "--a", "random", "--b", "random", "--size", "4x4", "--games", "2"],
        &["tournament", "--players", "random;greedy", "--size", "4x4", "--games", "2"],
        &["accuracy", "--players", "random", "--size", "4x4", "--positions", "20"],
    ] {
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_konane"))
            .args(args)
            .env("KONANE_LOG", "warn")
            .stdout(full)
            .output()
            .unwrap();
        fails_with(&output, &["standard output", "No space left on device"]);
    }
    // The reader goes away after the first line: a quiet end.
    let mut child = Command::new(env!("CARGO_BIN_EXE_konane"))
        .args(["perft", "8x8", "12"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("1 "), "{first}");
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn play_answers_lines_that_are_not_text_and_prompts_again() {
    let mut input = b"\xff\xfe\xfd\n".to_vec();
    input.extend_from_slice(&[b'a'; 5000]);
    input.extend_from_slice(b"\nmoves\nquit\n");
    let output = run_with_input(&["play", "--sims", "5", "--size", "4x4", "--model", "init"], &input);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("not valid UTF-8"), "{stdout}");
    assert!(stdout.contains("longer than 4096 bytes"), "{stdout}");
    assert!(stdout.contains("legal (4): a1 b2 c3 d4"), "the session goes on: {stdout}");
    assert_eq!(stdout.matches("black (you)> ").count(), 4, "{stdout}");
}

/// Every file under `dir` with its bytes, to compare before and after.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = fs::read(&path).unwrap();
                files.push((path, bytes));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn run_directories_refuse_what_they_cannot_honour() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("tiny.toml");
    fs::write(&config, TINY).unwrap();
    let run = root.path().join("run");
    let (config_arg, run_arg) = (config.to_str().unwrap(), run.to_str().unwrap());

    // A missing network opponent fails before anything is written...
    let broken = root.path().join("broken.toml");
    fs::write(&broken, TINY.replace(r#"opponents = ["random"]"#, r#"opponents = ["random", "net:missing.knet"]"#))
        .unwrap();
    fails_with(&konane(&["train", broken.to_str().unwrap(), "--run-dir", run_arg, "--quiet"]), &["missing.knet"]);
    assert!(!run.join("config.toml").exists(), "no config left behind");

    // ...so the same directory takes a good config afterwards.
    let output = konane(&["train", config_arg, "--run-dir", run_arg, "--quiet"]);
    assert!(output.status.success(), "{}", text(&output).1);
    let before = snapshot(&run);

    // A change of network shape cannot be honoured by a resume.
    let wider = root.path().join("wider.toml");
    fs::write(&wider, TINY.replace("channels = 8\npolicy", "channels = 16\npolicy")).unwrap();
    let args = ["train", wider.to_str().unwrap(), "--resume", run_arg, "--override", "network", "--quiet"];
    fails_with(&konane(&args), &["network", "cannot change", "--init-from"]);
    let args = ["train", wider.to_str().unwrap(), "--resume", run_arg, "--override", "network.channels"];
    fails_with(&konane(&args), &["network.channels", "cannot change"]);
    let other_opponents = root.path().join("opponents.toml");
    fs::write(&other_opponents, TINY.replace(r#"opponents = ["random"]"#, r#"opponents = ["greedy"]"#)).unwrap();
    let args = ["train", other_opponents.to_str().unwrap(), "--resume", run_arg, "--override", "evaluation"];
    fails_with(&konane(&args), &["evaluation.opponents", "anchors"]);
    assert_eq!(snapshot(&run), before, "refused resumes change nothing");

    // A LATEST pointing outside the run, or at another run's checkpoint,
    // is ignored: the run resumes from its own newest checkpoint and
    // deletes none of them.
    let other = root.path().join("other");
    fs::create_dir_all(other.join("checkpoints/iter-000009")).unwrap();
    for pointer in ["../other/checkpoints/iter-000009/net.knet\n", "/etc/passwd\n"] {
        fs::write(run.join("LATEST"), pointer).unwrap();
        let output = konane_logging(&["train", "--resume", run_arg, "--iterations", "2", "--quiet"], "warn");
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stderr}");
        assert!(stderr.contains("outside its directory"), "the skipped pointer is reported: {stderr}");
        assert!(stdout.contains("iterations completed: 2"), "{stdout}");
        assert_eq!(fs::read_to_string(run.join("LATEST")).unwrap().trim(), "checkpoints/iter-000002/net.knet");
    }
    assert!(run.join("checkpoints/iter-000002/net.knet").exists());
}

#[test]
fn a_run_stopped_before_its_first_checkpoint_starts_again_on_resume() {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    fs::create_dir_all(&run).unwrap();
    // What a start stopped during its bootstrap or opening solve leaves.
    fs::write(run.join("config.toml"), TINY.replace("iterations = 2", "iterations = 1")).unwrap();
    let output = konane(&["train", "--resume", run.to_str().unwrap(), "--quiet"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("iterations completed: 1"), "{stdout}");
    assert!(run.join("checkpoints/iter-000001/net.knet").exists());
}

#[test]
fn a_diverging_run_stops_at_once_and_keeps_its_last_good_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("tiny.toml");
    fs::write(&config, TINY).unwrap();
    // Weights this large still give finite evaluations, so self-play runs,
    // but the first gradient step overflows.
    let wild = scaled_net_file(root.path(), "wild.knet", 1e10);
    let run = root.path().join("run");
    let run_arg = run.to_str().unwrap();
    let args = ["train", config.to_str().unwrap(), "--run-dir", run_arg, "--init-from", wild.to_str().unwrap()];
    // (Which check fires first, a loss or a weight, depends on the engine:
    // either way the message names what is not finite.)
    fails_with(
        &konane(&args),
        &["training diverged in iteration 1", "finite", "LATEST checkpoint is the last good one"],
    );
    // The checkpoint LATEST names is intact and its state readable: nothing
    // of the diverged iteration was written, and resuming fails the same
    // clear way rather than writing anything.
    let (dir, state, skipped) = konane_trainer::run::find_latest(&run).unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!((state.iteration, state.metrics.len()), (0, 0));
    assert!(dir.ends_with("checkpoints/iter-000000"), "{}", dir.display());
    let before = snapshot(&run);
    fails_with(&konane(&["train", "--resume", run_arg]), &["training diverged in iteration 1"]);
    assert_eq!(snapshot(&run), before);

    // A network whose outputs are not finite stops self-play the same way.
    let huge = scaled_net_file(root.path(), "huge.knet", 1e20);
    let run = root.path().join("run2");
    let args =
        ["train", config.to_str().unwrap(), "--run-dir", run.to_str().unwrap(), "--init-from", huge.to_str().unwrap()];
    fails_with(&konane(&args), &["self-play", "not a finite number"]);
    assert_eq!(konane_trainer::run::find_latest(&run).unwrap().1.iteration, 0);
}

#[test]
fn json_goes_through_devices_and_failed_writes_leave_nothing() {
    // A path that is no file of its kind is read only as far as one goes.
    #[cfg(target_os = "linux")]
    {
        fails_with(&konane(&["train", "/dev/zero"]), &["/dev/zero", "too long for a config"]);
        fails_with(&konane(&["play", "--model", "/dev/zero"]), &["/dev/zero"]);
    }
    let output =
        konane(&["eval", "--a", "random", "--b", "greedy", "--size", "4x4", "--games", "2", "--json", "/dev/stdout"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("\"score_interval\""), "the JSON went to standard output: {stdout}");
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("taken");
    fs::create_dir(&taken).unwrap();
    let output = konane(&[
        "eval",
        "--a",
        "random",
        "--b",
        "greedy",
        "--size",
        "4x4",
        "--games",
        "2",
        "--json",
        taken.to_str().unwrap(),
    ]);
    fails_with(&output, &["taken", "directory"]);
    let left: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [std::ffi::OsString::from("taken")], "no temporary file is left");
}
