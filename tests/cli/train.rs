//! End-to-end tests of `konane train` and `konane plot`: the real binary on
//! a tiny config (1 block x 8 channels on 5x5, a few short games).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{TINY, konane, konane_logging, text};

#[test]
fn train_resume_and_plot() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("tiny.toml");
    fs::write(&config, TINY).unwrap();
    let run = root.path().join("run");
    let run_arg = run.to_str().unwrap();

    let output = konane(&["train", config.to_str().unwrap(), "--run-dir", run_arg, "--iterations", "1", "--quiet"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("iterations completed: 1"), "{stdout}");
    assert!(stdout.contains(&format!("konane eval --a net:{run_arg},sims=200")), "{stdout}");
    assert!(Path::new(&run).join("checkpoints/iter-000001/net.knet").exists());

    // A changed config is refused on resume, naming the key...
    let changed = root.path().join("changed.toml");
    fs::write(&changed, TINY.replace("steps = 2", "steps = 3")).unwrap();
    let output = konane(&["train", changed.to_str().unwrap(), "--resume", run_arg, "--quiet"]);
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("training.steps") && stderr.contains("--override"), "{stderr}");

    // ...and accepted with --override; --iterations extends the run.
    let output = konane(&[
        "train",
        changed.to_str().unwrap(),
        "--resume",
        run_arg,
        "--override",
        "training.steps",
        "--iterations",
        "2",
        "--quiet",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("iterations completed: 2"), "{stdout}");
    assert_eq!(fs::read_to_string(run.join("metrics.jsonl")).unwrap().lines().count(), 2);

    // The trained network plays through the usual player spec.
    let spec = format!("net:{run_arg},sims=4");
    let eval = ["eval", "--a", &spec, "--b", "random", "--size", "5x5", "--games", "2", "--threads", "1"];
    let output = konane_logging(&eval, "info");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("2 games scored"), "{stdout}");
    // Piped output hides the progress bar, so progress is logged instead.
    assert!(stderr.contains("match progress games=1 of=2") && stderr.contains("games=2 of=2"), "{stderr}");

    // .ci/run installs a font (fonts-dejavu-core) where there is none.
    let svg = root.path().join("curves.svg");
    let output = konane(&["plot", run_arg, "--out", svg.to_str().unwrap(), "--hours"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let drawn = fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg") && drawn.contains("training hours"), "curves against hours: {stdout}");
    let png = root.path().join("curves.png");
    assert!(konane(&["plot", run_arg, "--out", png.to_str().unwrap()]).status.success());
    assert!(fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    // Its checkpoints rated against a fixed opponent: one record each (0, 1
    // and 2), skipped when rated again, drawn as the plot's strength panel
    // and in a comparison of runs.
    let rate = ["rate", run_arg, "--opponent", "random", "--search", "sims=2", "--games", "2", "--threads", "1"];
    let output = konane(&rate);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("iteration 0:") && stdout.contains("iteration 2:"), "{stdout}");
    let rated = konane_trainer::strength::read(&run).unwrap();
    assert_eq!(rated.iter().map(|r| r.iteration).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert!(rated.iter().all(|r| r.scored == 2 && r.wins <= 2 && r.opponent == "random" && r.search == "sims=2"));
    let output = konane(&rate);
    let (stdout, _) = text(&output);
    assert!(output.status.success() && !stdout.contains("iteration 1:"), "rated again: {stdout}");
    assert_eq!(konane_trainer::strength::read(&run).unwrap(), rated);
    // Another board is a curve of its own; the run's board, rated above,
    // and a board named twice are not played again.
    let boards = [&rate[..], &["--size", "5x5,4x6,4x6", "--every", "2"]].concat();
    let output = konane(&boards);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("iteration 2: ") && stdout.contains("on 4x6") && !stdout.contains("on 5x5"), "{stdout}");
    let rated_too = konane_trainer::strength::read(&run).unwrap();
    let on = |size: &str| rated_too.iter().filter(|r| r.size == size).map(|r| r.iteration).collect::<Vec<_>>();
    assert_eq!((on("5x5"), on("4x6")), (vec![0, 1, 2], vec![0, 2]));
    let output = konane(&["plot", run_arg, "--out", svg.to_str().unwrap(), "--hours"]);
    assert!(output.status.success());
    assert!(fs::read_to_string(&svg).unwrap().contains("konane rate"), "a strength panel");
    let compare = root.path().join("compare.svg");
    let output = konane(&["plot", run_arg, run_arg, "--out", compare.to_str().unwrap(), "--hours"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success() && stdout.contains("2 runs"), "{stdout}\n{stderr}");
    assert!(fs::read_to_string(&compare).unwrap().contains("run: sims=2 vs random"));
    let output = konane(&["rate", root.path().to_str().unwrap(), "--opponent", "random"]);
    let (_, stderr) = text(&output);
    assert!(!output.status.success() && stderr.contains("not a run directory"), "{stderr}");

    // The run's metrics carry the process's memory, which the binary measures.
    let metrics = konane_trainer::metrics::read(&run.join("metrics.jsonl")).unwrap();
    if cfg!(target_os = "linux") {
        for m in &metrics {
            assert!(m.timing.rss_mib > 0.0 && m.timing.peak_rss_mib >= m.timing.rss_mib, "{:?}", m.timing);
        }
    }
}

/// A whole run on burn's wgpu backend: self-play, training, evaluation and
/// checkpoints on the device, resumed for a third iteration, and the result
/// playing a match there. Built with `--features wgpu` only;
/// `scripts/test-gpu.sh` runs it on Mesa's software Vulkan where there is
/// no GPU.
#[cfg(feature = "wgpu")]
#[test]
fn a_run_trains_and_resumes_on_wgpu() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("wgpu.toml");
    fs::write(&config, TINY.replace("threads = 1\n", "threads = 1\nbackend = \"wgpu\"\n")).unwrap();
    let run = root.path().join("run");
    let run_arg = run.to_str().unwrap();
    let output = konane(&["train", config.to_str().unwrap(), "--run-dir", run_arg, "--quiet"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("iterations completed: 2"), "{stdout}");
    let output = konane(&["train", config.to_str().unwrap(), "--resume", run_arg, "--iterations", "3", "--quiet"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("iterations completed: 3"), "{stdout}");
    let metrics = konane_trainer::metrics::read(&run.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.iter().map(|m| m.iteration).collect::<Vec<_>>(), vec![1, 2, 3]);
    for m in &metrics {
        assert!(m.policy_loss.is_finite() && m.policy_loss > 0.0 && m.value_loss.is_finite(), "{m:?}");
    }
    let spec = format!("net:{run_arg},sims=4");
    let eval =
        ["eval", "--a", &spec, "--b", "random", "--size", "5x5", "--games", "2", "--threads", "1", "--backend", "wgpu"];
    let output = konane(&eval);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success() && stdout.contains("2 games scored"), "{stdout}\n{stderr}");
}

#[test]
fn a_bad_config_fails_at_start_naming_the_key() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("bad.toml");
    fs::write(&config, "[selfplay]\nsimulations = 0\n").unwrap();
    let output = konane(&["train", config.to_str().unwrap(), "--run-dir", root.path().join("r").to_str().unwrap()]);
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("selfplay.simulations") && stderr.contains("at least 1"), "{stderr}");
    fs::write(&config, "[selfplay]\nsimulatoins = 10\n").unwrap();
    let output = konane(&["train", config.to_str().unwrap()]);
    let (_, stderr) = text(&output);
    assert!(stderr.contains("selfplay.simulatoins") && stderr.contains("unknown field"), "{stderr}");
    assert!(!root.path().join("r").exists(), "no run directory for a bad config");
}

/// A real SIGINT (what Ctrl-C sends) stops the run at a safe point: the
/// process exits cleanly, `LATEST` names an intact checkpoint (of the last
/// iteration, or of the stopped one so far) whose metrics agree with it,
/// and `--resume` carries on from there.
#[cfg(unix)]
#[test]
fn ctrl_c_stops_at_a_safe_point_and_the_run_resumes() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("long.toml");
    fs::write(&config, TINY.replace("iterations = 2", "iterations = 1000")).unwrap();
    let run = root.path().join("run");
    let run_arg = run.to_str().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_konane"))
        .args(["train", config.to_str().unwrap(), "--run-dir", run_arg, "--quiet"])
        .env("KONANE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !run.join("checkpoints/iter-000001").exists() {
        assert!(started.elapsed() < Duration::from_secs(300), "no first checkpoint after 5 minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(120), "still running 2 minutes after Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("Ctrl-C: stopping"), "{stderr}");
    assert!(stdout.contains("(stopped early)") && stdout.contains("konane train --resume"), "{stdout}");
    // LATEST names the last finished iteration, or the stopped one when the
    // stop came after its self-play (then checkpointed part-way).
    let (latest, state, skipped) = konane_trainer::run::find_latest(&run).unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    let done = state.iteration as usize;
    assert!((1..1000).contains(&done), "{state:?}");
    assert_eq!(latest, run.join("checkpoints").join(format!("iter-{:06}", state.checkpoint_number())));
    assert_eq!(state.partial.is_some(), stderr.contains("are checkpointed"), "{stderr}");
    assert_eq!(fs::read_to_string(run.join("metrics.jsonl")).unwrap().lines().count(), done);
    assert!(
        !fs::read_dir(run.join("checkpoints")).unwrap().any(|e| e
            .unwrap()
            .path()
            .to_string_lossy()
            .ends_with(".partial"))
    );

    let target = (done + 1).to_string();
    let output = konane(&["train", "--resume", run_arg, "--iterations", &target, "--quiet"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("iterations completed: {target}")), "{stdout}");
}
