//! End to end on a tiny config: a two-iteration run, exact resume, and a
//! damaged checkpoint falling back to the previous one, and the teacher
//! bootstrap phase on its own.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use konane_trainer::config::TrainingConfig;
use konane_trainer::replay::{ReplayBuffer, SizeMix};
use konane_trainer::run::{self, REPLAY_FILE};
use konane_trainer::{RunObserver, TrainConfig, TrainOptions, train};

/// 1 block x 8 channels on 5x5, a handful of short games: seconds per
/// iteration even unoptimised.
const TINY: &str = r#"
name = "tiny"
seed = 7
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
games = 6
parallel_games = 3
simulations = 12
leaves_per_game = 4
temperature_plies = 4
max_nodes = 10000
[replay]
window = 150
min_samples = 10
[training]
batch_size = 16
steps = 3
lr_schedule = "cosine"
lr = 0.01
[evaluation]
opponents = ["random", "greedy"]
games = 2
previous_games = 2
simulations = 4
[checkpoint]
keep_last = 2
keep_every = 0
"#;

fn tiny(iterations: u64) -> TrainConfig {
    let mut config = TrainConfig::parse(TINY, "tiny").unwrap();
    config.iterations = iterations;
    config
}

fn options(config: Option<TrainConfig>, dir: &Path) -> TrainOptions {
    TrainOptions { config, run_dir: Some(dir.to_path_buf()), ..TrainOptions::default() }
}

fn resume_options(dir: &Path) -> TrainOptions {
    TrainOptions { resume: Some(dir.to_path_buf()), ..TrainOptions::default() }
}

/// Raises the run's stop flag at a chosen point, as a Ctrl-C would there.
struct StopAt {
    stop: Arc<AtomicBool>,
    after_iteration: Option<u64>,
    after_step: Option<u64>,
}

impl RunObserver for StopAt {
    fn iteration_done(&self, iteration: u64) {
        if self.after_iteration == Some(iteration) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn step_taken(&self, step: u64) {
        if self.after_step == Some(step) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// `options` stopping after `iteration`, or after training step `step`.
fn stopping(options: TrainOptions, after_iteration: Option<u64>, after_step: Option<u64>) -> TrainOptions {
    let stop = Arc::new(AtomicBool::new(false));
    let observer = Arc::new(StopAt { stop: stop.clone(), after_iteration, after_step });
    TrainOptions { stop, observer, ..options }
}

/// `metrics.jsonl` without the clock-dependent `timing` objects.
fn metrics_without_timing(dir: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("timing");
            v
        })
        .collect()
}

/// What the latest network says about a fixed set of positions, as bits:
/// equal outputs everywhere mean equal weights for every purpose. (The
/// files themselves differ: burn stores a random parameter id with each
/// tensor.)
fn latest_net(dir: &Path) -> Vec<u32> {
    let path = konane_nn::checkpoint::resolve(dir).unwrap();
    let net = konane_nn::checkpoint::load(&path, &konane_nn::Backend::Flex.device()).unwrap().0;
    let mut evaluator = konane_nn::NetEvaluator::new(net, konane_nn::Backend::Flex.device());
    let mut positions = Vec::new();
    let mut position = konane_rules::Position::start("5x5".parse().unwrap());
    while !position.is_over() {
        positions.push(position);
        let moves = position.moves();
        position.play_unchecked(moves[positions.len() % moves.len()]);
    }
    let (logits, values) = evaluator.forward(&positions);
    logits.iter().chain(&values).map(|x| x.to_bits()).collect()
}

fn same(a: &[u32], b: &[u32]) -> bool {
    a == b
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn two_iterations_end_to_end() {
    let root = temp();
    let dir = root.path().join("run");
    let outcome = train(options(Some(tiny(2)), &dir)).unwrap();
    assert_eq!(outcome.iterations, 2);
    assert!(!outcome.stopped);
    assert_eq!(outcome.net, Some(dir.join("checkpoints/iter-000002/net.knet")));
    let metrics = konane_trainer::metrics::read(&dir.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.len(), 2);
    for (i, m) in metrics.iter().enumerate() {
        assert_eq!(m.iteration, i as u64 + 1);
        assert_eq!(m.games, 6);
        assert!(m.samples > 0 && m.train_steps == 3);
        assert!(m.cache_hits > 0, "the openings repeat across games");
        assert!(m.policy_loss.is_finite() && m.value_loss.is_finite());
        let opponents: Vec<&str> = m.evaluation.iter().map(|r| r.opponent.as_str()).collect();
        assert_eq!(opponents, ["previous", "random", "greedy"]);
        assert!(m.elo.is_some());
        assert!(m.timing.selfplay_positions_per_second > 0.0);
        // The policy loss is a cross-entropy: never below the targets' entropy.
        assert!(m.target_entropy > 0.0 && m.policy_loss >= m.target_entropy - 1e-4, "{m:?}");
        // Memory is the host's to measure; the library's quiet default reports none.
        assert_eq!((m.timing.rss_mib, m.timing.peak_rss_mib), (0.0, 0.0));
    }
    assert_eq!(metrics[1].total_steps, 6);
    // Retention keeps the newest two; the network loads and the stored
    // config is the one given.
    assert_eq!(run::list_checkpoints(&dir), [2, 1]);
    let header = konane_nn::checkpoint::read_header(outcome.net.as_ref().unwrap()).unwrap();
    assert_eq!(header.iteration, 2);
    assert_eq!(TrainConfig::load(&dir.join("config.toml")).unwrap(), tiny(2));
    // The replay window on disk holds this run's samples and round-trips.
    let replay_path = dir.join("checkpoints/iter-000002").join(REPLAY_FILE);
    let replay = ReplayBuffer::load(&replay_path, 150).unwrap();
    assert_eq!(replay.len(), (metrics[0].samples + metrics[1].samples).min(150) as usize);
    assert_eq!(ReplayBuffer::from_bytes(&replay.to_bytes(), 150).unwrap(), replay);
    // A second start in the same directory is refused.
    let again = train(options(Some(tiny(2)), &dir)).unwrap_err().to_string();
    assert!(again.contains("--resume"), "{again}");
}

#[test]
fn interrupted_and_resumed_equals_uninterrupted() {
    let root = temp();
    let straight = root.path().join("straight");
    train(options(Some(tiny(3)), &straight)).unwrap();

    let interrupted = root.path().join("interrupted");
    let first = train(stopping(options(Some(tiny(3)), &interrupted), Some(1), None)).unwrap();
    assert!(first.stopped);
    assert_eq!(first.iterations, 1);
    let second = train(resume_options(&interrupted)).unwrap();
    assert_eq!(second.iterations, 3);

    assert_eq!(metrics_without_timing(&straight), metrics_without_timing(&interrupted));
    // The resume kept the wall time of the iteration it resumed from (the
    // checkpoint's own copy of that line lacks it).
    for m in konane_trainer::metrics::read(&interrupted.join("metrics.jsonl")).unwrap() {
        assert!(m.timing.total_seconds > 0.0, "iteration {} lost its total time", m.iteration);
    }
    assert!(same(&latest_net(&straight), &latest_net(&interrupted)), "final networks differ");
    let replay = |d: &Path| fs::read(d.join("checkpoints/iter-000003").join(REPLAY_FILE)).unwrap();
    assert!(replay(&straight) == replay(&interrupted), "replay windows differ");
}

/// Ctrl-C after an iteration's self-play checkpoints the iteration so far;
/// the resume finishes it and the run ends as if never stopped.
#[test]
fn stopped_mid_iteration_resumes_to_the_same_run() {
    stops_mid_iteration_and_resumes_exactly(tiny);
}

/// The same with games dealt over three sizes by weight and training
/// batches that mix them: the resume still equals the straight run.
#[test]
fn a_mixed_size_run_stopped_mid_iteration_resumes_to_the_same_run() {
    let mixed = |iterations| {
        let tiny = tiny(iterations);
        TrainConfig {
            sizes: ["5x5", "4x6", "6x4"].map(|s| s.parse().unwrap()).to_vec(),
            size_weights: vec![2, 1, 1],
            training: TrainingConfig { size_mix: SizeMix::Mixed, ..tiny.training.clone() },
            ..tiny
        }
    };
    let root = stops_mid_iteration_and_resumes_exactly(mixed);
    let bytes = fs::read(root.path().join("straight/checkpoints/iter-000003").join(REPLAY_FILE)).unwrap();
    let window = ReplayBuffer::from_bytes(&bytes, usize::MAX).unwrap();
    let sizes: std::collections::BTreeSet<String> = window.iter().map(|s| s.size().to_string()).collect();
    assert_eq!(sizes.into_iter().collect::<Vec<_>>(), ["4x6", "5x5", "6x4"], "every size's games reach the window");
    // The metrics break each iteration down by size, in the weights' proportions.
    for line in metrics_without_timing(&root.path().join("straight")) {
        let per_size = line["sizes"].as_object().unwrap();
        let games = |size: &str| per_size[size]["games"].as_u64().unwrap();
        assert_eq!((games("5x5"), games("4x6"), games("6x4")), (3, 2, 1), "6 games dealt 5x5 4x6 6x4 5x5, 5x5 4x6");
        let samples: u64 = per_size.values().map(|t| t["samples"].as_u64().unwrap()).sum();
        assert_eq!(samples, line["samples"].as_u64().unwrap());
    }
}

/// A cap on the draws per window sample cuts an iteration's steps while
/// the window is short (as after `--init-from`), lifts as it fills, and a
/// run stopped inside a capped iteration still resumes exactly.
#[test]
fn the_draws_per_sample_cap_cuts_steps_while_the_window_is_short() {
    let capped = |iterations| {
        let tiny = tiny(iterations);
        let training = TrainingConfig { steps: 40, max_draws_per_sample: 0.5, ..tiny.training.clone() };
        TrainConfig { training, ..tiny }
    };
    let root = temp();
    let straight = root.path().join("straight");
    train(options(Some(capped(2)), &straight)).unwrap();
    let metrics = konane_trainer::metrics::read(&straight.join("metrics.jsonl")).unwrap();
    for m in &metrics {
        // Half a draw per sample of the window, in batches of 16.
        let cap = (m.replay_size as f64 * 0.5 / 16.0).ceil() as u64;
        assert!(cap < 40, "the tiny window must be short enough to cap: {cap}");
        assert_eq!(m.train_steps, cap, "{m:?}");
    }
    assert_eq!(metrics[1].total_steps, metrics[0].train_steps + metrics[1].train_steps);
    assert!(metrics[1].train_steps > metrics[0].train_steps, "the cap rises as the window fills");

    let dir = root.path().join("stopped");
    let first_of_second = metrics[0].train_steps + 1;
    let first = train(stopping(options(Some(capped(2)), &dir), None, Some(first_of_second))).unwrap();
    assert!(first.stopped);
    let partial = run::find_latest(&dir).unwrap().1.partial.expect("a mid-iteration checkpoint");
    assert_eq!((partial.iteration, partial.train_steps), (2, 1));
    train(resume_options(&dir)).unwrap();
    assert_eq!(metrics_without_timing(&straight), metrics_without_timing(&dir));
    assert!(same(&latest_net(&straight), &latest_net(&dir)), "final networks differ");
}

fn stops_mid_iteration_and_resumes_exactly(config: impl Fn(u64) -> TrainConfig) -> tempfile::TempDir {
    let root = temp();
    let straight = root.path().join("straight");
    train(options(Some(config(3)), &straight)).unwrap();
    // Iteration 1 takes steps 1-3; iteration 2 steps 4-6.
    for (name, stop_at_step, trained) in [("in-training", 4, false), ("in-evaluation", 6, true)] {
        let dir = root.path().join(name);
        let first = train(stopping(options(Some(config(3)), &dir), None, Some(stop_at_step))).unwrap();
        assert!(first.stopped, "{name}");
        assert_eq!(first.iterations, 1, "{name}");
        let (latest, state, skipped) = run::find_latest(&dir).unwrap();
        assert!(skipped.is_empty(), "{name}: {skipped:?}");
        assert_eq!(latest, run::checkpoint_dir(&dir, 2), "{name}: LATEST names the stopped iteration");
        let partial = state.partial.expect("a mid-iteration checkpoint");
        assert_eq!((state.iteration, partial.iteration, partial.trained), (1, 2, trained), "{name}");
        assert_eq!(partial.train_steps, if trained { 3 } else { 1 }, "{name}");
        assert_eq!(metrics_without_timing(&dir).len(), 1, "{name}: only finished iterations have lines");

        let second = train(resume_options(&dir)).unwrap();
        assert_eq!(second.iterations, 3, "{name}");
        assert_eq!(metrics_without_timing(&straight), metrics_without_timing(&dir), "{name}");
        assert!(same(&latest_net(&straight), &latest_net(&dir)), "{name}: final networks differ");
        let replay = |d: &Path| fs::read(d.join("checkpoints/iter-000003").join(REPLAY_FILE)).unwrap();
        assert!(replay(&straight) == replay(&dir), "{name}: replay windows differ");
    }
    root
}

#[test]
fn a_damaged_latest_checkpoint_falls_back_to_the_previous_one() {
    let root = temp();
    let reference = root.path().join("reference");
    train(options(Some(tiny(2)), &reference)).unwrap();

    for damage in ["truncate net", "flip replay", "truncate state", "delete optimizer"] {
        let dir = root.path().join(damage.replace(' ', "-"));
        train(options(Some(tiny(2)), &dir)).unwrap();
        let latest: PathBuf = run::checkpoint_dir(&dir, 2);
        match damage {
            "truncate net" => {
                let path = latest.join("net.knet");
                let bytes = fs::read(&path).unwrap();
                fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            }
            "flip replay" => {
                let path = latest.join(REPLAY_FILE);
                let mut bytes = fs::read(&path).unwrap();
                bytes[30] ^= 0x10;
                fs::write(&path, bytes).unwrap();
            }
            "truncate state" => {
                let path = latest.join("state.json");
                let text = fs::read_to_string(&path).unwrap();
                fs::write(&path, &text[..text.len() - 5]).unwrap();
            }
            _ => fs::remove_file(latest.join("optimizer.bpk")).unwrap(),
        }
        assert!(run::verify_checkpoint(&latest).is_err(), "{damage}");
        let (found, state, skipped) = run::find_latest(&dir).unwrap();
        assert_eq!(found, run::checkpoint_dir(&dir, 1), "{damage}");
        assert_eq!(state.iteration, 1);
        assert!(!skipped.is_empty());
        // Resuming redoes iteration 2 from checkpoint 1, exactly.
        let outcome = train(resume_options(&dir)).unwrap();
        assert_eq!(outcome.iterations, 2, "{damage}");
        assert!(same(&latest_net(&dir), &latest_net(&reference)), "{damage}: networks differ");
        assert_eq!(metrics_without_timing(&dir), metrics_without_timing(&reference), "{damage}");
    }
}

#[test]
fn resuming_with_a_changed_config_needs_override() {
    let root = temp();
    let dir = root.path().join("run");
    train(options(Some(tiny(1)), &dir)).unwrap();
    let mut changed = tiny(1);
    changed.training.lr = 0.02;
    changed.selfplay.games = 4;
    let refused = train(TrainOptions { config: Some(changed.clone()), ..resume_options(&dir) }).unwrap_err();
    let message = refused.to_string();
    assert!(message.contains("selfplay.games") && message.contains("training.lr"), "{message}");
    // --iterations is always allowed; --override names the rest.
    let outcome = train(TrainOptions {
        config: Some(changed.clone()),
        overrides: vec!["training.lr".into(), "selfplay".into()],
        iterations: Some(2),
        ..resume_options(&dir)
    })
    .unwrap();
    assert_eq!(outcome.iterations, 2);
    let mut stored = changed;
    stored.iterations = 2;
    assert_eq!(TrainConfig::load(&dir.join("config.toml")).unwrap(), stored);
    // The training engine cannot change: its optimizer state is in its own
    // format. The run is left as it was.
    let mut other_engine = stored.clone();
    other_engine.backend = konane_nn::Backend::Flex;
    let refused =
        train(TrainOptions { config: Some(other_engine), overrides: vec!["backend".into()], ..resume_options(&dir) })
            .unwrap_err()
            .to_string();
    assert!(refused.contains("backend") && refused.contains("optimizer state"), "{refused}");
    assert_eq!(TrainConfig::load(&dir.join("config.toml")).unwrap(), stored);
}

#[test]
fn the_teacher_bootstrap_learns_the_teachers_moves_and_stops_on_request() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use konane_nn::train::Learner;
    use konane_nn::{NetConfig, init_net};
    use konane_trainer::bootstrap::{self, label_positions};
    use konane_trainer::config::BootstrapConfig;

    let spec: konane_nn::spec::PlayerSpec = "alphabeta:depth=2".parse().unwrap();
    let teacher = spec.baseline().unwrap();
    let config = BootstrapConfig { teacher: spec.clone(), positions: 300, steps: 40, random_move_probability: 0.25 };
    let sizes = ["5x5".parse().unwrap()];
    let samples = label_positions(&teacher, &config, &sizes, 3);
    assert_eq!(samples.len(), 300);
    assert!(samples == label_positions(&teacher, &config, &sizes, 3), "labelling is not reproducible");
    for sample in &samples {
        let s = sample.unpack(konane_rules::Symmetry::Identity);
        // One target move, the teacher's, legal where it was chosen.
        assert_eq!(s.policy.len(), 1);
        assert_eq!(s.policy[0].1, 1.0);
        assert!(s.position.moves().contains(&s.policy[0].0));
        assert!(s.value.abs() <= 1.0);
    }

    let training = tiny(1).training;
    let learner = || {
        let net = init_net(&NetConfig::new().with_blocks(1).with_channels(8), &konane_nn::Backend::Flex.device(), 5);
        Learner::new(net, konane_nn::Backend::Flex, training.learner)
    };
    let (stop, steps) = (AtomicBool::new(false), AtomicU64::new(0));
    let on_step = |s: u64| steps.store(s, Ordering::Relaxed);
    let report =
        bootstrap::run(&mut learner(), &teacher, &config, &training, &sizes, 3, &stop, &on_step).unwrap().unwrap();
    assert_eq!((report.positions, report.steps, steps.load(Ordering::Relaxed)), (300, 40, 40));
    assert!(
        report.last_policy_loss < report.first_policy_loss,
        "policy loss {} -> {}",
        report.first_policy_loss,
        report.last_policy_loss
    );
    stop.store(true, Ordering::Relaxed);
    assert!(
        bootstrap::run(&mut learner(), &teacher, &config, &training, &sizes, 3, &stop, &on_step).unwrap().is_none()
    );
}

#[test]
fn state_files_of_older_versions_load_and_newer_ones_are_refused() {
    let root = temp();
    let dir = root.path().join("run");
    train(options(Some(tiny(1)), &dir)).unwrap();
    let checkpoint = run::checkpoint_dir(&dir, 1);
    let path = checkpoint.join(run::STATE_FILE);
    let original = fs::read_to_string(&path).unwrap();
    // Rewrites state.json as `edit` makes it, with a valid checksum line.
    let rewrite = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut json: serde_json::Value = serde_json::from_str(original.lines().next().unwrap()).unwrap();
        edit(&mut json);
        let text = json.to_string();
        fs::write(&path, format!("{text}\ncrc32 {:08x}\n", crc32fast::hash(text.as_bytes()))).unwrap();
    };
    rewrite(&|json| {
        json["format"] = 1.into();
        json.as_object_mut().unwrap().remove("partial");
    });
    let state = run::verify_checkpoint(&checkpoint).expect("a version-1 state loads");
    assert_eq!((state.iteration, state.partial), (1, None));
    rewrite(&|json| json["format"] = 99.into());
    let error = run::verify_checkpoint(&checkpoint).unwrap_err().to_string();
    assert!(error.contains("state version 99"), "{error}");
}

#[test]
fn gating_accepts_a_network_only_when_it_beats_the_best() {
    let root = temp();
    let dir = root.path().join("gated");
    let mut config = tiny(3);
    config.evaluation.gating = true;
    config.evaluation.gating_threshold = 0.5;
    train(options(Some(config), &dir)).unwrap();
    let metrics = konane_trainer::metrics::read(&dir.join("metrics.jsonl")).unwrap();
    let mut best = 0;
    for m in &metrics {
        let previous = m.evaluation.iter().find(|r| r.opponent == "previous").expect("a match against the best");
        assert_eq!(m.accepted, Some(previous.score >= 0.5), "iteration {}", m.iteration);
        if previous.score >= 0.5 {
            best = m.iteration;
        }
    }
    let (_, state, _) = run::find_latest(&dir).unwrap();
    assert_eq!(state.best_iteration, best);
    assert!(state.files.contains_key(run::BEST_FILE));
}

/// With solved openings the batches mix in the exact opening samples (the
/// losses differ from a plain run), the solved set is cached in the run,
/// and a stopped run resumes from the cache to the same end.
#[test]
fn solved_openings_join_the_batches_and_resume_exactly() {
    let with_openings = |iterations| {
        let mut config = tiny(iterations);
        config.replay.solved_openings_plies = 5;
        config.replay.solved_openings_share = 0.5;
        config
    };
    let root = temp();
    let straight = root.path().join("straight");
    train(options(Some(with_openings(2)), &straight)).unwrap();
    let cache = konane_trainer::openings::cache_path(&straight, "5x5".parse().unwrap(), 5, 10_000_000);
    let book = ReplayBuffer::load(&cache, usize::MAX).unwrap();
    assert!(book.len() > 10 && book.iter().all(|s| s.value.abs() == 1.0), "{} samples", book.len());

    let plain = root.path().join("plain");
    train(options(Some(tiny(2)), &plain)).unwrap();
    let losses = |d: &Path| {
        konane_trainer::metrics::read(&d.join("metrics.jsonl"))
            .unwrap()
            .iter()
            .map(|m| (m.policy_loss, m.value_loss))
            .collect::<Vec<_>>()
    };
    assert_ne!(losses(&straight), losses(&plain), "the openings changed the batches");

    let interrupted = root.path().join("interrupted");
    train(stopping(options(Some(with_openings(2)), &interrupted), Some(1), None)).unwrap();
    train(resume_options(&interrupted)).unwrap();
    assert_eq!(metrics_without_timing(&straight), metrics_without_timing(&interrupted));
    assert!(same(&latest_net(&straight), &latest_net(&interrupted)), "final networks differ");
}

/// A mixed-size run solves the openings of the boards it names and no
/// others; a board it does not play is refused.
#[test]
fn a_mixed_size_run_solves_the_openings_of_the_boards_it_names() {
    let mut config = tiny(1);
    config.sizes = ["5x5", "4x6"].map(|s| s.parse().unwrap()).to_vec();
    config.replay.solved_openings_plies = 5;
    config.replay.solved_openings_sizes = vec!["4x6".parse().unwrap()];
    let root = temp();
    let dir = root.path().join("run");
    train(options(Some(config.clone()), &dir)).unwrap();
    let cache = |size: &str| konane_trainer::openings::cache_path(&dir, size.parse().unwrap(), 5, 10_000_000);
    assert!(cache("4x6").exists());
    assert!(!cache("5x5").exists());
    config.replay.solved_openings_sizes = vec!["6x6".parse().unwrap()];
    let other = root.path().join("other");
    let err = train(options(Some(config.clone()), &other)).unwrap_err().to_string();
    assert!(err.contains("replay.solved_openings_sizes") && err.contains("6x6"), "{err}");
    assert!(!other.exists());
    config.replay.solved_openings_sizes = vec!["4x6".parse().unwrap(); 2];
    let err = train(options(Some(config), &other)).unwrap_err().to_string();
    assert!(err.contains("replay.solved_openings_sizes") && err.contains("named twice"), "{err}");
}

#[test]
fn a_run_can_start_from_another_runs_network() {
    let root = temp();
    let (first, second) = (root.path().join("first"), root.path().join("second"));
    train(options(Some(tiny(1)), &first)).unwrap();
    let source = latest_net(&first);
    // Another seed: fresh weights would differ from the source's.
    let mut config = tiny(1);
    config.seed = 8;
    let outcome =
        train(TrainOptions { init_from: Some(first.clone()), ..options(Some(config.clone()), &second) }).unwrap();
    assert_eq!(outcome.iterations, 1);
    // Iteration 0 of the new run is the source network, with an empty
    // replay window; the state remembers where it came from.
    let start = second.join("checkpoints/iter-000000");
    assert!(same(&latest_net(&start.join("net.knet")), &source));
    assert_eq!(ReplayBuffer::load(&start.join(REPLAY_FILE), 150).unwrap().len(), 0);
    let state = fs::read_to_string(start.join(run::STATE_FILE)).unwrap();
    assert!(state.contains("\"init_from\""), "{state}");
    // Training went on from there.
    assert!(!same(&latest_net(&second), &source));
    // A network of another shape is refused, naming both shapes, before
    // anything is written.
    config.network.channels = 16;
    let third = root.path().join("third");
    let err =
        train(TrainOptions { init_from: Some(first.clone()), ..options(Some(config.clone()), &third) }).unwrap_err();
    let err = err.to_string();
    assert!(err.contains("b1c8") && err.contains("b1c16"), "{err}");
    assert!(!third.exists());
    // More blocks are allowed: they start as identities, so the new run's
    // first network plays exactly as the source; fewer are refused.
    config.network.channels = 8;
    config.network.blocks = 2;
    let deeper = root.path().join("deeper");
    train(TrainOptions { init_from: Some(first.clone()), ..options(Some(config.clone()), &deeper) }).unwrap();
    let start = deeper.join("checkpoints/iter-000000/net.knet");
    assert!(same(&latest_net(&start), &source), "the new blocks change nothing");
    assert_eq!(konane_nn::checkpoint::read_header(&start).unwrap().net.blocks, 2);
    assert!(!same(&latest_net(&deeper), &source));
    config.network.blocks = 0;
    let shallower = root.path().join("shallower");
    let err = train(TrainOptions { init_from: Some(first.clone()), ..options(Some(config.clone()), &shallower) })
        .unwrap_err()
        .to_string();
    assert!(err.contains("b1c8") && err.contains("b0c8"), "{err}");
    assert!(!shallower.exists());
    config.network.blocks = 1;
    // The soft and reply policy outputs are not part of that: a run that
    // trains them starts from the same network with fresh outputs beside it.
    config.network.soft_policy = true;
    config.network.reply_policy = true;
    let soft = root.path().join("soft");
    train(TrainOptions { init_from: Some(first.clone()), ..options(Some(config), &soft) }).unwrap();
    let start = soft.join("checkpoints/iter-000000/net.knet");
    assert!(same(&latest_net(&start), &source), "play reads the same network");
    let header = konane_nn::checkpoint::read_header(&konane_nn::checkpoint::resolve(&soft).unwrap()).unwrap();
    assert!(header.net.soft_policy && header.net.reply_policy);
    let metrics = metrics_without_timing(&soft);
    for key in ["soft_policy_loss", "reply_policy_loss"] {
        let loss = metrics[0][key].as_f64().unwrap();
        assert!(loss > 0.0 && loss.is_finite(), "{key} {loss}");
        assert!(metrics_without_timing(&second)[0].get(key).is_none(), "{key}");
    }
}
