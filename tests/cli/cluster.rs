//! A learner and self-play workers as separate processes on one machine,
//! sharing a temporary run directory: kills at random moments, a second
//! learner, storage that cannot be written. Every wait is bounded.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use konane_trainer::cluster::Shard;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::common::{TINY, fails_with, konane, text};

/// The tiny config, its iterations fed by workers' two-game shards, with
/// short polls and a four-second lease so that the kills cost little time.
fn cluster_config(iterations: u64) -> String {
    TINY.replace("iterations = 2", &format!("iterations = {iterations}")).replace("games = 4\n", "games = 8\n")
        + "[cluster]\nshard_games = 2\nmax_generation_lag = 1\npoll_seconds = 0.05\nlease_seconds = 4.0\n"
}

/// A `konane` process with its output piped and warnings only in its log.
fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_konane"))
        .args(args)
        .env("KONANE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start konane")
}

/// A temporary directory holding the cluster config of `iterations`
/// (`cluster.toml`), and the path of a run in it.
fn new_run(iterations: u64) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("cluster.toml");
    fs::write(&config, cluster_config(iterations)).unwrap();
    let run = root.path().join("run");
    (root, config, run)
}

/// A learner starting the run of `config` in `run`.
fn learner(config: &Path, run: &Path) -> Child {
    spawn(&["train", config.to_str().unwrap(), "--run-dir", run.to_str().unwrap(), "--role", "learner", "--quiet"])
}

/// A learner resuming the run in `run`.
fn resumed_learner(run: &Path) -> Child {
    spawn(&["train", "--resume", run.to_str().unwrap(), "--role", "learner", "--quiet"])
}

fn worker(run: &Path, name: &str, extra: &[&str]) -> Child {
    let run = run.to_str().unwrap();
    spawn(&[&["selfplay", run, "--worker", name, "--threads", "1"], extra].concat())
}

/// Waits for `child` to exit (killing it after `limit`) and returns its
/// output.
fn finish(mut child: Child, limit: Duration, what: &str) -> std::process::Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            let (stdout, stderr) = text(&output);
            panic!("{what} still running after {limit:?}:\n{stdout}\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "no {what} after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn metrics_lines(run: &Path) -> usize {
    fs::read_to_string(run.join("metrics.jsonl")).map_or(0, |t| t.lines().count())
}

/// Every shard file of the run, by worker and sequence number.
fn shards(run: &Path) -> BTreeMap<(String, u64), PathBuf> {
    let mut all = BTreeMap::new();
    let Ok(workers) = fs::read_dir(run.join("shards")) else { return all };
    for worker in workers {
        let worker = worker.unwrap();
        for file in fs::read_dir(worker.path()).unwrap() {
            let path = file.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            // A worker killed mid-write leaves its staging file
            // (`00000005.shard#1`), which no listing of the store shows.
            if name.contains('#') {
                continue;
            }
            let seq = name.strip_suffix(".shard").unwrap_or_else(|| panic!("a foreign file {name} in the shards"));
            all.insert((worker.file_name().to_string_lossy().into_owned(), seq.parse().unwrap()), path);
        }
    }
    all
}

/// The fault test of the cluster issue: a learner and two workers for
/// four iterations; worker `w1` killed with SIGKILL twice at random
/// moments and restarted, the learner killed after its first iteration and
/// resumed. Afterwards every visible shard is whole, each worker's shards
/// are numbered without gaps or repeats, and the learner's games (its
/// iterations' plus the stale ones it dropped) are exactly those of the
/// shards its checkpoint says it read.
///
/// Until the learner is killed the workers publish at most 14 two-game
/// shards, less than four iterations of eight games need, so however fast
/// the build the learner is still in the run when it is killed.
#[test]
fn a_learner_and_two_workers_survive_kills() {
    let (_root, config, run) = new_run(4);
    let mut learner = learner(&config, &run);
    let mut w1 = worker(&run, "w1", &["--shards", "4"]);
    let w2 = worker(&run, "w2", &["--shards", "2"]);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    // w1 killed twice, each time at a random moment of its life.
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(rng.random_range(100..600)));
        w1.kill().unwrap();
        w1.wait().unwrap();
        w1 = worker(&run, "w1", &["--shards", "4"]);
    }
    // The learner, killed once its first iteration is done (in a later one,
    // or between), then resumed once its lease has expired.
    wait_for("a first iteration", Duration::from_secs(120), || metrics_lines(&run) >= 1);
    std::thread::sleep(Duration::from_millis(rng.random_range(0..50)));
    learner.kill().unwrap();
    learner.wait().unwrap();
    assert!(metrics_lines(&run) < 4, "the learner finished on fewer shards than four iterations need");
    // The rationed workers finish their shards; unrationed ones replace them.
    for (name, child) in [("w1", w1), ("w2", w2)] {
        let output = finish(child, Duration::from_secs(60), name);
        assert!(output.status.success(), "{name}: {}", text(&output).1);
    }
    let w1 = worker(&run, "w1", &[]);
    let w2 = worker(&run, "w2", &[]);
    std::thread::sleep(Duration::from_millis(4500));
    let output = finish(resumed_learner(&run), Duration::from_secs(180), "the resumed learner");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("iterations completed: 4"), "{stdout}");
    // The workers see the run finished and stop by themselves.
    for (name, child) in [("w1", w1), ("w2", w2)] {
        let output = finish(child, Duration::from_secs(60), name);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{name}: {stdout}\n{stderr}");
        assert!(stdout.contains("the learner finished the run"), "{name}: {stdout}");
    }

    let all = shards(&run);
    let mut games_by_shard = BTreeMap::new();
    for ((worker, seq), path) in &all {
        let shard = Shard::from_bytes(&fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!((&shard.header.worker, shard.header.seq), (worker, *seq));
        games_by_shard.insert((worker.clone(), *seq), shard.header.stats.games as u64);
    }
    for name in ["w1", "w2"] {
        let seqs: Vec<u64> = all.keys().filter(|(w, _)| w == name).map(|(_, s)| *s).collect();
        assert!(!seqs.is_empty(), "{name} published nothing");
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{name}'s shards are numbered 1, 2, ...");
    }
    let (_, state, skipped) = konane_trainer::run::find_latest(&run).unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(state.iteration, 4);
    let next = state.ingest.expect("the learner's reading state").next;
    let read: Vec<&(String, u64)> =
        games_by_shard.keys().filter(|(w, s)| *s < next.get(w).copied().unwrap_or(1)).collect();
    let reports: Vec<_> = state.metrics.iter().map(|m| m.ingest.clone().expect("a learner's iteration")).collect();
    let total = |count: fn(&konane_trainer::cluster::IngestReport) -> u64| reports.iter().map(count).sum::<u64>();
    assert_eq!(total(|r| r.shards), read.len() as u64, "each shard read once");
    assert_eq!(total(|r| r.damaged_shards), 0);
    let games_read: u64 = read.iter().map(|k| games_by_shard[*k]).sum();
    let trained_on: u64 = state.metrics.iter().map(|m| m.games as u64).sum();
    assert_eq!(
        trained_on + total(|r| r.stale_games),
        games_read,
        "the iterations hold exactly the games of the shards read"
    );
    assert!(state.metrics.iter().all(|m| m.games >= 8), "{:?}", state.metrics);
    assert!(state.steps > 0, "training went on");
    assert_eq!(metrics_lines(&run), 4);
}

/// One learner per run: a second one refuses while the first holds the
/// lease, and takes over once a killed learner's lease has expired.
#[test]
fn a_second_learner_is_refused_until_the_first_is_gone() {
    let (_root, config, run) = new_run(1);
    let run_arg = run.to_str().unwrap();
    let mut first = learner(&config, &run);
    // Without workers it waits for shards after publishing its first network.
    wait_for("first network", Duration::from_secs(60), || run.join("networks/gen-000000.knet").exists());
    let second = konane(&["train", "--resume", run_arg, "--role", "learner", "--quiet"]);
    fails_with(&second, &["another learner holds", "learner.lease"]);
    first.kill().unwrap();
    first.wait().unwrap();
    std::thread::sleep(Duration::from_millis(4500));
    let taken_over = resumed_learner(&run);
    let feeder = worker(&run, "w1", &["--shards", "20"]);
    let output = finish(taken_over, Duration::from_secs(120), "the second learner");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("iterations completed: 1"), "{stdout}");
    let output = finish(feeder, Duration::from_secs(60), "the worker");
    assert!(output.status.success(), "{}", text(&output).1);
    // The finished learner released its lease.
    assert!(!run.join("learner.lease").exists());
}

/// Storage that cannot be written gives one clear error and leaves nothing
/// half-visible; the other processes carry on.
#[test]
fn unwritable_storage_is_a_clear_error() {
    let (root, config, run) = new_run(1);
    // A learner whose shared storage is a file: refused before the run
    // directory holds anything.
    let blocker = root.path().join("not-a-directory");
    fs::write(&blocker, "x").unwrap();
    let run_arg = run.to_str().unwrap();
    let config_arg = config.to_str().unwrap();
    let exchange = blocker.join("shared");
    let output = konane(&[
        "train",
        config_arg,
        "--run-dir",
        run_arg,
        "--role",
        "learner",
        "--exchange",
        exchange.to_str().unwrap(),
        "--quiet",
    ]);
    fails_with(&output, &["not-a-directory", "cannot create the directory"]);
    assert!(!run.join("config.toml").exists(), "a refused learner writes nothing");

    // A worker whose shard directory cannot be made: its error names it;
    // another worker feeds the learner to the end.
    let learner = learner(&config, &run);
    wait_for("first network", Duration::from_secs(60), || run.join("networks/gen-000000.knet").exists());
    fs::create_dir_all(run.join("shards")).unwrap();
    fs::write(run.join("shards/w1"), "in the way").unwrap();
    let output = finish(worker(&run, "w1", &["--shards", "1"]), Duration::from_secs(60), "w1");
    fails_with(&output, &["shards/w1"]);
    let output = finish(worker(&run, "w2", &["--shards", "20"]), Duration::from_secs(60), "w2");
    assert!(output.status.success(), "{}", text(&output).1);
    let output = finish(learner, Duration::from_secs(60), "the learner");
    assert!(output.status.success(), "{}", text(&output).1);
    let names: Vec<String> =
        fs::read_dir(run.join("shards/w2")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    assert!(names.iter().all(|n| n.ends_with(".shard")), "only whole shards are visible: {names:?}");

    // Bad names and numbers are refused before anything starts.
    fails_with(&konane(&["selfplay", run_arg, "--worker", "../x"]), &["worker name"]);
    fails_with(&konane(&["selfplay", run_arg, "--worker", "w3", "--shards", "0"]), &["--shards"]);
    fails_with(&konane(&["train", config_arg, "--exchange", "/tmp/x"]), &["--role learner"]);
}
