//! The training loop: self-play → train → evaluate → checkpoint, with
//! resume from the newest intact checkpoint.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use konane_nn::checkpoint::{self, NetHeader};
use konane_nn::player::player_factories;
use konane_nn::train::Learner;
use konane_nn::{Net, init_net};
use konane_players::arena::PlayerFactory;
use konane_rules::Size;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::TrainError;
use crate::cluster::{self, LearnerLink};
use crate::config::TrainConfig;
use crate::evaluation;
use crate::memory::MemoryEstimate;
use crate::metrics::{self, IterationMetrics, Timing};
use crate::observer::{Phase, PhaseProgress, Quiet, RunObserver};
use crate::replay::ReplayBuffer;
use crate::run::{self, BEST_FILE, NET_FILE, OPTIMIZER_FILE, PartialIteration, REPLAY_FILE, RunState};
use crate::selfplay::{self, SelfPlayJob, Stream, derive_seed};
use crate::training::{StepPlan, train_steps};

/// How to start (or continue) a run.
pub struct TrainOptions {
    /// The config (for `--resume`: the config to continue with; `None`
    /// takes the run's own `config.toml`).
    pub config: Option<TrainConfig>,
    /// Where to put a new run (default `runs_root/<name>-<YYYYMMDD-HHMM>`).
    pub run_dir: Option<PathBuf>,
    /// Parent of new run directories.
    pub runs_root: PathBuf,
    /// Continue this run from its newest intact checkpoint.
    pub resume: Option<PathBuf>,
    /// Start a new run from this network (a `.knet` file or a model
    /// directory with `LATEST`) instead of fresh weights: a fresh optimizer
    /// and an empty replay window. Continues a shipped network, whose
    /// directory keeps no optimizer or replay data, with a new config.
    pub init_from: Option<PathBuf>,
    /// Keys allowed to differ from the run's config on resume.
    pub overrides: Vec<String>,
    /// Overrides `iterations` (always allowed on resume).
    pub iterations: Option<u64>,
    /// Sees the run's progress and provides its host's hooks (progress
    /// bars, memory); [`Quiet`] by default.
    pub observer: Arc<dyn RunObserver>,
    /// Raised by Ctrl-C: the loop stops at the next safe point (between
    /// self-play batches, training steps or evaluation matches). Stopped
    /// during self-play it keeps the previous iteration's checkpoint; later
    /// it checkpoints the iteration so far, which a resume finishes.
    pub stop: Arc<AtomicBool>,
    /// Self-play in this process, or by workers ([`Role::Learner`]).
    pub role: Role,
    /// Under [`Role::Learner`]: the storage shared with the workers (a
    /// directory or a URL); `None` is the run directory.
    pub exchange: Option<String>,
}

/// Who plays the run's self-play games.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// This process: self-play, training, evaluation in turn.
    #[default]
    Both,
    /// Workers in other processes (`konane selfplay`): this process reads
    /// their shards, trains, evaluates and publishes networks for them.
    Learner,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            config: None,
            run_dir: None,
            runs_root: PathBuf::from("runs"),
            resume: None,
            init_from: None,
            overrides: Vec::new(),
            iterations: None,
            observer: Arc::new(Quiet),
            stop: Arc::new(AtomicBool::new(false)),
            role: Role::Both,
            exchange: None,
        }
    }
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct TrainOutcome {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Iterations completed (in total, across resumes).
    pub iterations: u64,
    /// Whether it was stopped before its last iteration.
    pub stopped: bool,
    /// The latest network file (`None` if stopped before the run's first
    /// checkpoint: a resume then starts the run again).
    pub net: Option<PathBuf>,
    /// Metrics of the last completed iteration.
    pub last: Option<IterationMetrics>,
    /// Seconds this invocation ran.
    pub seconds: f64,
}

/// Everything the loop carries between iterations.
struct Loop {
    /// The run's config, validated.
    config: TrainConfig,
    run_dir: PathBuf,
    learner: Learner,
    /// The current network for inference.
    net: Net,
    /// Under gating: the network that plays self-play.
    best: Net,
    replay: ReplayBuffer,
    /// Solved openings mixed into each batch (`replay.solved_openings_plies`).
    book: Option<ReplayBuffer>,
    state: RunState,
    observer: Arc<dyn RunObserver>,
    stop: Arc<AtomicBool>,
    /// `threads` threads for burn's own parallelism in training: with one,
    /// every reduction runs in a fixed order and runs are bit-reproducible.
    pool: rayon::ThreadPool,
    /// The evaluation opponents, `config.evaluation.opponents` in order.
    opponents: Vec<Box<dyn PlayerFactory>>,
    /// Under [`Role::Learner`]: the shared storage and the lease.
    link: Option<LearnerLink>,
}

/// What a loop starts from: a new run's network, or a checkpoint's files.
struct Origin {
    net: Net,
    best: Net,
    learner: Learner,
    replay: ReplayBuffer,
    state: RunState,
    link: Option<LearnerLink>,
}

/// A network file of the run (the loads and initialisations of every run
/// in the process are serialised by `konane_nn`).
fn load_net(path: &Path, device: &burn::tensor::Device) -> Result<Net, TrainError> {
    Ok(checkpoint::load(path, device)?.0)
}

fn pool(threads: usize) -> Result<rayon::ThreadPool, TrainError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| TrainError::Threads { threads, reason: e.to_string() })
}

/// Runs (or resumes) training until `iterations` are done or `stop` is raised.
///
/// # Errors
/// Bad config, a changed config on resume without `--override`, no intact
/// checkpoint to resume from, or I/O failure.
pub fn train(options: TrainOptions) -> Result<TrainOutcome, TrainError> {
    let started = Instant::now();
    let begun = match &options.resume {
        Some(dir) => resume(&options, dir)?,
        None => start(&options, None)?,
    };
    let mut lp = match begun {
        Begun::Running(lp) => *lp,
        Begun::StoppedBeforeCheckpoint(run_dir) => {
            tracing::warn!(
                "stopped before the first checkpoint: `konane train --resume {}` starts the run again",
                run_dir.display()
            );
            return Ok(TrainOutcome {
                run_dir,
                iterations: 0,
                stopped: true,
                net: None,
                last: None,
                seconds: started.elapsed().as_secs_f64(),
            });
        }
    };
    let first = lp.state.iteration + 1;
    let last = lp.config.iterations;
    tracing::info!(
        run = %lp.run_dir.display(),
        net = %lp.config.network.name(),
        sizes = %lp.config.sizes.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "),
        threads = lp.config.threads(),
        iterations = last,
        "training from iteration {first}"
    );
    let mut stopped = false;
    for iteration in first..=last {
        let span = tracing::info_span!("iteration", n = iteration);
        let _guard = span.enter();
        match lp.iteration(iteration, started)? {
            Some(m) => log_iteration(&m),
            None => {
                stopped = true;
                tracing::warn!(
                    "stopped during iteration {iteration}: continue with `konane train --resume {}`",
                    lp.run_dir.display()
                );
                break;
            }
        }
        lp.observer.iteration_done(iteration);
        if lp.stop.load(Ordering::Relaxed) && iteration < last {
            stopped = true;
            tracing::warn!(
                "stopped after iteration {iteration}: continue with `konane train --resume {}`",
                lp.run_dir.display()
            );
            break;
        }
    }
    if let Some(link) = lp.link.take() {
        let finished = (!stopped && lp.state.iteration >= last).then_some(lp.state.iteration);
        link.close(finished)?;
    }
    let net = checkpoint::resolve(&lp.run_dir)?;
    Ok(TrainOutcome {
        run_dir: lp.run_dir.clone(),
        iterations: lp.state.iteration,
        stopped,
        net: Some(net),
        last: lp.state.metrics.last().cloned(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn log_iteration(m: &IterationMetrics) {
    let scores: Vec<String> = m.evaluation.iter().map(|r| format!("{} {:.0}%", r.opponent, 100.0 * r.score)).collect();
    tracing::info!(
        games = m.games,
        samples = m.samples,
        policy_loss = format!("{:.3}", m.policy_loss),
        target_entropy = format!("{:.3}", m.target_entropy),
        value_loss = format!("{:.3}", m.value_loss),
        elo = m.elo.map(|e| format!("{e:.0}")).unwrap_or_default(),
        positions_per_s = format!("{:.0}", m.timing.selfplay_positions_per_second),
        samples_per_s = format!("{:.0}", m.timing.train_samples_per_second),
        seconds = format!("{:.1}", m.timing.total_seconds),
        peak_rss_mib = format!("{:.0}", m.timing.peak_rss_mib),
        "iteration {} done: {}",
        m.iteration,
        scores.join(", ")
    );
}

/// Every key in its range, and the memory the run's role needs within the
/// machine's ([`MemoryEstimate`]): checked on the final config of a start
/// or a resume, before anything is written.
fn validate(config: &TrainConfig, role: Role) -> Result<(), TrainError> {
    let invalid = |e: crate::config::InvalidKey| TrainError::Config(e.in_config("config"));
    config.validate().map_err(invalid)?;
    let estimate = MemoryEstimate::of(config, config.threads());
    let estimate = if role == Role::Learner { estimate.without_selfplay() } else { estimate };
    estimate.check_machine().map_err(invalid)
}

/// A run directory's `config.toml`.
fn config_text(config: &TrainConfig) -> String {
    format!(
        "# The config of this run (konane train --resume refuses changes to it\n# unless --override names the keys).\n{}",
        config.to_toml()
    )
}

fn write_config(run_dir: &Path, config: &TrainConfig) -> Result<(), TrainError> {
    konane_files::write_atomically(&run_dir.join("config.toml"), config_text(config).as_bytes())?;
    Ok(())
}

/// Under [`Role::Learner`]: the run's shared storage, its lease taken and
/// `config` published there (before anything else of the run is written,
/// so that a second learner changes nothing).
fn link_for(
    options: &TrainOptions,
    run_dir: &Path,
    config: &TrainConfig,
    new_run: bool,
) -> Result<Option<LearnerLink>, TrainError> {
    if options.role != Role::Learner {
        return Ok(None);
    }
    // A directory is created as the storage opens.
    let location = options.exchange.clone().unwrap_or_else(|| run_dir.display().to_string());
    Ok(Some(LearnerLink::open(&location, config, &config_text(config), new_run, options.stop.clone())?))
}

/// How starting or resuming a run ended.
enum Begun {
    /// Ready to run its iterations.
    Running(Box<Loop>),
    /// Stopped (Ctrl-C) before its first checkpoint, in this directory.
    StoppedBeforeCheckpoint(PathBuf),
}

/// A new run: directory, fresh network, anchor ratings, optional bootstrap,
/// and checkpoint 0. `restart` is a run directory that holds a config but
/// no checkpoint (a start that stopped early), to start again with that
/// config.
fn start(options: &TrainOptions, restart: Option<(&Path, TrainConfig)>) -> Result<Begun, TrainError> {
    let (mut config, run_dir) = match restart {
        Some((dir, config)) => (config, dir.to_path_buf()),
        None => {
            let config = options.config.clone().unwrap_or_else(TrainConfig::quick);
            let dir = match &options.run_dir {
                Some(dir) => dir.clone(),
                None => options.runs_root.join(format!("{}-{}", config.name, timestamp())),
            };
            if dir.join("config.toml").exists() {
                return Err(TrainError::RunExists { dir });
            }
            (config, dir)
        }
    };
    if let Some(n) = options.iterations {
        config.iterations = n;
    }
    validate(&config, options.role)?;
    let device = config.backend.device();
    // Everything that could fail later is checked before anything is
    // written: the network to start from and the evaluation opponents
    // (their network files), so a run directory never holds a config that
    // neither a fresh start nor a resume accepts.
    let from_file = options.init_from.as_deref().map(|path| initial_net(path, &config, &device)).transpose()?;
    let opponents = player_factories(&config.evaluation.opponents, config.backend)?;
    let pool = pool(config.threads())?;
    let link = link_for(options, &run_dir, &config, true)?;
    fs::create_dir_all(&run_dir).map_err(|e| TrainError::io(&run_dir, e))?;
    write_config(&run_dir, &config)?;
    tracing::info!(run = %run_dir.display(), init_from = ?options.init_from, "new run");

    let net = if let Some(net) = from_file {
        net
    } else {
        // On the run's threads: with one, the draws are the same every time.
        pool.install(|| init_net(&config.network, &device, derive_seed(config.seed, 0, 0, Stream::InitialWeights)))
    };
    let learner = learner_for(&config, &net);
    let mut state =
        RunState { init_from: options.init_from.as_ref().map(|p| p.display().to_string()), ..RunState::default() };
    let opponent_specs = &config.evaluation.opponents;
    if opponent_specs.len() > 1 {
        let started = Instant::now();
        state.anchors = evaluation::rate_anchors(
            opponent_specs,
            &opponents,
            config.sizes[0],
            config.evaluation.games,
            config.threads(),
            derive_seed(config.seed, 0, 0, Stream::AnchorMatches),
        )?;
        tracing::info!(anchors = ?state.anchors, seconds = format!("{:.1}", started.elapsed().as_secs_f64()), "anchor round robin");
    } else {
        state.anchors = opponent_specs.iter().map(|s| (s.to_string(), 0.0)).collect();
    }
    let replay = ReplayBuffer::new(config.replay.window);
    let origin = Origin { best: net.clone(), net, learner, replay, state, link };
    let Some(mut lp) = Loop::new(config, run_dir.clone(), options, pool, opponents, origin)? else {
        return Ok(Begun::StoppedBeforeCheckpoint(run_dir));
    };
    if let (Some(bootstrap), Some(teacher)) = (lp.config.bootstrap.clone(), lp.config.teacher()) {
        let progress = PhaseProgress::start(&*lp.observer, Phase::Bootstrap, bootstrap.steps, 0);
        let (pool, learner) = (&lp.pool, &mut lp.learner);
        let (training, sizes, seed, stop) = (&lp.config.training, &lp.config.size_deal(), lp.config.seed, &lp.stop);
        let report = pool.install(|| {
            crate::bootstrap::run(learner, &teacher, &bootstrap, training, sizes, seed, stop, &|_| progress.advance(""))
        })?;
        let Some(report) = report else {
            return Ok(Begun::StoppedBeforeCheckpoint(lp.run_dir));
        };
        progress.finish();
        tracing::info!(?report, "bootstrap done");
        lp.state.bootstrap = Some(report);
        lp.net = lp.learner.inference_net(&device);
        lp.best = lp.net.clone();
    }
    metrics::rewrite(&lp.run_dir.join("metrics.jsonl"), &[])?;
    lp.checkpoint()?;
    lp.publish()?;
    Ok(Begun::Running(Box::new(lp)))
}

/// The learner of a run: its backend's training engine and optimizer, each
/// step on the run's threads.
fn learner_for(config: &TrainConfig, net: &Net) -> Learner {
    let mut learner = Learner::new(net.clone(), config.backend, config.training.learner);
    learner.set_threads(config.threads());
    learner
}

/// The network a run started with `init_from` begins with: it must have
/// the config's shape, or its weights could not train under that config.
/// Two differences are allowed: the training-only outputs, which are added
/// fresh or dropped, and fewer residual blocks than the config's, which
/// are added as identities ([`Net::deepened_to`]).
fn initial_net(path: &Path, config: &TrainConfig, device: &burn::tensor::Device) -> Result<Net, TrainError> {
    let file = checkpoint::resolve(path)?;
    let (net, header) = checkpoint::load(&file, device)?;
    let wanted = config.network.clone();
    let found = header.net.clone().with_training_outputs_of(&wanted);
    if found.blocks > wanted.blocks || found.clone().with_blocks(wanted.blocks) != wanted {
        return Err(TrainError::InitShape { file, found: header.net.name(), wanted: wanted.name() });
    }
    if found.blocks < wanted.blocks {
        tracing::info!(from = found.blocks, to = wanted.blocks, "new residual blocks start as identities");
    }
    Ok(net.with_training_outputs_of(&wanted, device, config.seed).deepened_to(wanted.blocks, device, config.seed))
}

/// Config keys a resumed run cannot take a new value for, with the reason:
/// the run's files were made under the old value.
pub const FIXED_KEYS: &[(&str, &str)] = &[
    ("network", "the run's checkpoints hold a network of its shape; start a new run with --init-from to change it"),
    ("training.learner.optimizer", "the run's optimizer state belongs to its optimizer"),
    (
        "backend",
        "the run's optimizer state is in its training engine's format (native, or burn's for flex and ndarray)",
    ),
    ("evaluation.opponents", "the run's Elo anchors were rated against its opponents at its start"),
];

/// The reason `key` (or its table) cannot change on resume, if it cannot.
fn fixed_reason(key: &str) -> Option<&'static str> {
    FIXED_KEYS.iter().find(|(fixed, _)| key == *fixed || key.starts_with(&format!("{fixed}."))).map(|(_, why)| *why)
}

/// Continues a run from its newest intact checkpoint; a run with a config
/// but no checkpoint yet (its start was stopped) starts again.
fn resume(options: &TrainOptions, dir: &Path) -> Result<Begun, TrainError> {
    let stored = TrainConfig::load(&dir.join("config.toml"))?;
    let mut config = options.config.clone().unwrap_or_else(|| stored.clone());
    if let Some(n) = options.iterations {
        config.iterations = n;
    }
    if run::has_no_checkpoint(dir) {
        // Nothing was trained under the stored config: any config may start it.
        tracing::info!(run = %dir.display(), "the run has no checkpoint yet: starting it again");
        return start(options, Some((dir, config)));
    }
    let changed = stored.differing_keys(&config);
    for key in &options.overrides {
        if let Some(reason) = fixed_reason(key) {
            return Err(TrainError::FixedKey { key: key.clone(), reason: reason.into() });
        }
    }
    let differing: Vec<String> = changed
        .iter()
        .filter(|k| !(*k == "iterations" && options.iterations.is_some()))
        .filter(|k| !options.overrides.iter().any(|o| *k == o || k.starts_with(&format!("{o}."))))
        .cloned()
        .collect();
    if !differing.is_empty() {
        return Err(TrainError::ConfigChanged { keys: differing });
    }
    if let Some((key, reason)) = changed.iter().find_map(|k| fixed_reason(k).map(|r| (k, r))) {
        return Err(TrainError::FixedKey { key: key.clone(), reason: reason.into() });
    }
    validate(&config, options.role)?;
    let opponents = player_factories(&config.evaluation.opponents, config.backend)?;
    let pool = pool(config.threads())?;
    let link = link_for(options, dir, &config, false)?;
    if config != stored {
        tracing::info!(keys = ?stored.differing_keys(&config), "config changed on resume");
        write_config(dir, &config)?;
    }
    let (checkpoint_dir, mut state, skipped) = run::find_latest(dir)?;
    for reason in &skipped {
        tracing::warn!("skipped checkpoint: {reason}");
    }
    tracing::info!(checkpoint = %checkpoint_dir.display(), iteration = state.iteration, "resuming");
    let device = config.backend.device();
    let net = load_net(&checkpoint_dir.join(NET_FILE), &device)?;
    let mut learner = learner_for(&config, &net);
    learner.load_optimizer(&checkpoint_dir.join(OPTIMIZER_FILE))?;
    let replay = ReplayBuffer::load(&checkpoint_dir.join(REPLAY_FILE), config.replay.window)?;
    let best = if state.files.contains_key(BEST_FILE) {
        load_net(&checkpoint_dir.join(BEST_FILE), &device)?
    } else {
        net.clone()
    };
    // Later checkpoints (damaged, or from the lost iteration) are rewritten.
    run::drop_newer(dir, state.checkpoint_number())?;
    let metrics_path = dir.join("metrics.jsonl");
    let on_disk = metrics::read(&metrics_path).unwrap_or_default();
    state.metrics = metrics::resume_history(&state.metrics, &on_disk);
    metrics::rewrite(&metrics_path, &state.metrics)?;
    let origin = Origin { net, best, learner, replay, state, link };
    let Some(lp) = Loop::new(config, dir.to_path_buf(), options, pool, opponents, origin)? else {
        return Ok(Begun::StoppedBeforeCheckpoint(dir.to_path_buf()));
    };
    // Workers may be waiting for a network, and after a fall back past a
    // damaged checkpoint the published ones are newer than this one's.
    lp.publish()?;
    if !skipped.is_empty() {
        // LATEST pointed at a damaged checkpoint: point it at the good one.
        let relative = checkpoint_dir.strip_prefix(dir).unwrap_or(&checkpoint_dir).join(NET_FILE);
        checkpoint::set_latest(dir, &relative)?;
    }
    Ok(Begun::Running(Box::new(lp)))
}

fn timestamp() -> String {
    // UTC from the system clock, without a date crate: days to civil date
    // (Howard Hinnant's algorithm).
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + (month <= 2) as i64;
    format!("{year:04}{month:02}{day:02}-{:02}{:02}", rem / 3600, rem % 3600 / 60)
}

impl Loop {
    /// The loop of `config` in `run_dir`, from `origin` (a new run's first
    /// network, or a checkpoint), with the solved openings read or solved;
    /// `None` if stopped while solving them.
    fn new(
        config: TrainConfig,
        run_dir: PathBuf,
        options: &TrainOptions,
        pool: rayon::ThreadPool,
        opponents: Vec<Box<dyn PlayerFactory>>,
        origin: Origin,
    ) -> Result<Option<Loop>, TrainError> {
        let Origin { net, best, learner, replay, state, link } = origin;
        let mut lp = Loop {
            config,
            run_dir,
            learner,
            net,
            best,
            replay,
            book: None,
            state,
            observer: options.observer.clone(),
            stop: options.stop.clone(),
            pool,
            opponents,
            link,
        };
        Ok(lp.load_book()?.then_some(lp))
    }

    /// Reads or solves the openings `replay.solved_openings_plies` asks for;
    /// false if stopped first.
    fn load_book(&mut self) -> Result<bool, TrainError> {
        let replay = &self.config.replay;
        if replay.solved_openings_plies == 0 {
            return Ok(true);
        }
        let progress = PhaseProgress::start(&*self.observer, Phase::Openings, 0, 0);
        let book = crate::openings::load_or_solve(
            &self.run_dir,
            self.config.solved_openings_sizes(),
            replay.solved_openings_plies,
            replay.solved_openings_nodes,
            &self.stop,
            &|done, total| progress.set(done as u64, total as u64),
        )?;
        let Some(book) = book else {
            return Ok(false);
        };
        progress.finish();
        self.book = Some(book);
        Ok(true)
    }

    fn total_steps(&self) -> u64 {
        self.config.iterations * self.config.training.steps
    }

    /// One iteration; `None` if stopped first (after its self-play, a
    /// checkpoint of the iteration so far is written).
    fn iteration(&mut self, iteration: u64, run_started: Instant) -> Result<Option<IterationMetrics>, TrainError> {
        let started = Instant::now();
        self.observer.iteration_started();
        let config = self.config.clone();
        // A run stopped part-way resumes after the phases it checkpointed.
        let resumed = self.state.partial.take().filter(|p| p.iteration == iteration);
        let mut partial = match resumed {
            Some(partial) => partial,
            None => {
                let played = if self.link.is_some() {
                    self.ingest(iteration, &config)?
                } else {
                    self.self_play(iteration, &config)?
                };
                match played {
                    Some(partial) => partial,
                    None => return Ok(None),
                }
            }
        };

        self.observer.between_phases();

        // Training.
        if !partial.trained {
            if !self.train_phase(iteration, &config, &mut partial)? {
                return self.stop_partial(partial, started);
            }
            partial.trained = true;
        }
        self.observer.between_phases();
        let mut m = self.metrics_of(&partial);

        // Evaluation.
        let eval_started = Instant::now();
        if iteration.is_multiple_of(config.evaluation.every) || iteration == config.iterations {
            // Loaded only for an evaluation: skipped iterations read nothing.
            let previous = if config.evaluation.gating { self.best.clone() } else { self.previous_net()? };
            if !self.evaluate(iteration, &previous, &mut m)? {
                return self.stop_partial(partial, started);
            }
        }
        let eval_seconds = eval_started.elapsed().as_secs_f64();
        self.observer.between_phases();

        // Checkpoint.
        self.state.iteration = iteration;
        let checkpoint_started = Instant::now();
        m.timing.eval_seconds = eval_seconds;
        self.state.metrics.push(m);
        self.checkpoint()?;
        self.publish()?;
        let checkpoint_seconds = checkpoint_started.elapsed().as_secs_f64();
        let total = partial.seconds + started.elapsed().as_secs_f64();
        let m = self.state.metrics.last_mut().expect("just pushed");
        m.timing.checkpoint_seconds = checkpoint_seconds;
        m.timing.total_seconds = total;
        m.timing.selfplay_share = m.timing.selfplay_seconds / total;
        m.timing.train_share = m.timing.train_seconds / total;
        m.timing.eval_share = eval_seconds / total;
        m.timing.elapsed_seconds = run_started.elapsed().as_secs_f64();
        (m.timing.rss_mib, m.timing.peak_rss_mib) = self.observer.memory_mib();
        // The line is appended after the checkpoint: a kill in between loses
        // it from metrics.jsonl only until the resume rewrites the file from
        // the checkpoint (whose copy has the timings of the write before).
        let m = m.clone();
        metrics::append(&self.run_dir.join("metrics.jsonl"), &m)?;
        Ok(Some(m))
    }

    /// The iteration's gradient steps (those not taken before a stop), into
    /// `partial`; false if stopped first. Nothing while the replay window is
    /// still filling.
    ///
    /// # Errors
    /// [`TrainError::Diverged`]: a loss or weight stopped being finite.
    fn train_phase(
        &mut self,
        iteration: u64,
        config: &TrainConfig,
        partial: &mut PartialIteration,
    ) -> Result<bool, TrainError> {
        if self.replay.len() < config.replay.min_samples || self.replay.is_empty() {
            tracing::info!(
                samples = self.replay.len(),
                needed = config.replay.min_samples,
                "replay window still filling: no training"
            );
            return Ok(true);
        }
        let started = Instant::now();
        let training = &config.training;
        let done = partial.train_steps;
        // The window is as the self-play left it, also after a resume.
        let steps = training.steps_for_window(self.replay.len());
        let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(config.seed, iteration, 0, Stream::TrainingBatches));
        let per_batch = config.replay.solved_openings_per_batch(training.batch_size);
        let book = self.book.as_ref().map(|book| (book, per_batch));
        let plan = StepPlan {
            // An override may have lowered the steps below those taken.
            steps: steps.saturating_sub(done),
            batch_size: training.batch_size,
            augment: config.replay.augment,
            size_mix: training.size_mix,
            stop: &self.stop,
            book,
        };
        // Steps taken before a stop: draw their batches again, so the
        // stream continues where it stopped.
        for _ in 0..done {
            plan.batch(&self.replay, &mut rng);
        }
        let progress = PhaseProgress::start(&*self.observer, Phase::Training, steps, done);
        let mut sums = partial.loss_sums.map(f64::from_bits);
        let mut soft_sum = f64::from_bits(partial.soft_policy_sum);
        let mut reply_sum = f64::from_bits(partial.reply_policy_sum);
        let (first_step, total_steps) = (self.state.steps, self.total_steps());
        let observer = &*self.observer;
        let (mut taken, mut trained_samples) = (0u64, 0u64);
        let (pool, learner, replay) = (&self.pool, &mut self.learner, &self.replay);
        let trained = pool.install(|| {
            let lr = |k| training.lr_at(first_step + k, total_steps);
            train_steps(replay, learner, &plan, &mut rng, lr, |k, batch_len, losses| {
                taken += 1;
                trained_samples += batch_len as u64;
                for (sum, loss) in
                    sums.iter_mut().zip([losses.policy, losses.value, losses.policy_entropy, losses.target_entropy])
                {
                    *sum += loss as f64;
                }
                soft_sum += losses.soft_policy as f64;
                reply_sum += losses.reply_policy as f64;
                progress.advance(&format!("policy {:.3} value {:.3}", losses.policy, losses.value));
                observer.step_taken(first_step + k + 1);
            })
        });
        let finished = match trained {
            Ok(finished) => finished,
            Err(TrainError::Diverged { at, what }) => {
                let at = format!("in iteration {iteration}, {at}");
                return Err(TrainError::Diverged { at, what });
            }
            Err(e) => return Err(e),
        };
        self.state.steps += taken;
        partial.train_steps += taken;
        partial.trained_samples += trained_samples;
        partial.loss_sums = sums.map(f64::to_bits);
        partial.soft_policy_sum = soft_sum.to_bits();
        partial.reply_policy_sum = reply_sum.to_bits();
        partial.train_seconds += started.elapsed().as_secs_f64();
        self.net = self.learner.inference_net(&config.backend.device());
        // The last step's update is seen by no loss: check the weights.
        if let Some(parameter) = self.net.non_finite_parameter() {
            return Err(TrainError::Diverged {
                at: format!("in iteration {iteration}, by step {}", self.state.steps),
                what: format!("parameter {parameter} is not finite"),
            });
        }
        if finished {
            progress.finish();
        }
        Ok(finished)
    }

    /// The iteration's record from its self-play and training (evaluation
    /// and the final timings are added after).
    fn metrics_of(&self, partial: &PartialIteration) -> IterationMetrics {
        let (stats, games) = (&partial.selfplay, partial.selfplay.games.max(1) as f64);
        let steps = partial.train_steps.max(1) as f64;
        let [policy, value, entropy, target_entropy] = partial.loss_sums.map(|bits| f64::from_bits(bits) / steps);
        let seconds = partial.selfplay_seconds.max(1e-9);
        IterationMetrics {
            iteration: partial.iteration,
            games: stats.games,
            samples: stats.samples,
            // The window is as the self-play left it (saved with it in a
            // part-way checkpoint).
            replay_size: self.replay.len(),
            mean_game_length: stats.moves as f64 / games,
            black_win_rate: stats.black_wins as f64 / games,
            mean_batch: stats.evaluations as f64 / stats.batches.max(1) as f64,
            cache_hits: stats.cache_hits,
            solved_samples: stats.solved,
            solver_disagreement: stats.solver_disagreed as f64 / stats.solved.max(1) as f64,
            solver_policy_corrected: stats.policy_corrected,
            random_moves: stats.random_moves,
            train_steps: partial.train_steps,
            total_steps: self.state.steps,
            // The rate of the last step taken.
            lr: if partial.train_steps > 0 {
                self.config.training.lr_at(self.state.steps - 1, self.total_steps())
            } else {
                0.0
            },
            policy_loss: policy,
            value_loss: value,
            policy_entropy: entropy,
            target_entropy,
            soft_policy_loss: self.config.network.soft_policy.then(|| f64::from_bits(partial.soft_policy_sum) / steps),
            reply_policy_loss: self
                .config
                .network
                .reply_policy
                .then(|| f64::from_bits(partial.reply_policy_sum) / steps),
            elo_chain: self.state.elo_chain,
            sizes: if self.config.sizes.len() > 1 { stats.sizes.clone() } else { BTreeMap::new() },
            ingest: partial.ingest.clone(),
            timing: Timing {
                selfplay_seconds: partial.selfplay_seconds,
                train_seconds: partial.train_seconds,
                selfplay_positions_per_second: stats.moves as f64 / seconds,
                selfplay_games_per_second: stats.games as f64 / seconds,
                selfplay_evaluations_per_second: stats.evaluations as f64 / seconds,
                train_samples_per_second: partial.trained_samples as f64 / partial.train_seconds.max(1e-9),
                ..Timing::default()
            },
            ..IterationMetrics::default()
        }
    }

    /// The iteration's self-play: its games go into the replay window and
    /// their totals into the returned record; `None` if stopped (the games
    /// so far are dropped: a game's moves depend on the batches it shared,
    /// so only whole self-play phases replay exactly).
    ///
    /// # Errors
    /// The network's outputs are not finite.
    fn self_play(&mut self, iteration: u64, config: &TrainConfig) -> Result<Option<PartialIteration>, TrainError> {
        let started = Instant::now();
        let progress = PhaseProgress::start(&*self.observer, Phase::SelfPlay, config.selfplay.games as u64, 0);
        let finished = AtomicUsize::new(0);
        let plies = AtomicUsize::new(0);
        let selfplay_net = if config.evaluation.gating { &self.best } else { &self.net };
        let job = SelfPlayJob {
            net: selfplay_net,
            backend: config.backend,
            config: &config.selfplay,
            sizes: &self.config.size_deal(),
            seed: config.seed,
            iteration,
            threads: self.config.threads(),
            stop: &self.stop,
            on_game: &|game| {
                let n = finished.fetch_add(1, Ordering::Relaxed) + 1;
                let p = plies.fetch_add(game.plies as usize, Ordering::Relaxed) + game.plies as usize;
                progress.advance(&format!("{:.1} plies/game", p as f64 / n as f64));
            },
        };
        let Some((games, stats)) = selfplay::play_games(&job)? else { return Ok(None) };
        progress.finish();
        self.replay.extend(games.into_iter().flat_map(|g| g.samples));
        self.state.games += stats.games as u64;
        Ok(Some(PartialIteration {
            iteration,
            selfplay: stats,
            selfplay_seconds: started.elapsed().as_secs_f64(),
            ..PartialIteration::default()
        }))
    }

    /// Writes a checkpoint of the iteration so far (stopped after its
    /// self-play) and reports the stop.
    fn stop_partial(
        &mut self,
        mut partial: PartialIteration,
        started: Instant,
    ) -> Result<Option<IterationMetrics>, TrainError> {
        partial.seconds += started.elapsed().as_secs_f64();
        let (iteration, steps, trained) = (partial.iteration, partial.train_steps, partial.trained);
        self.state.partial = Some(partial);
        self.checkpoint()?;
        let done = if trained {
            "self-play and training".to_string()
        } else {
            format!("self-play and {steps} training steps")
        };
        tracing::warn!("stopped during iteration {iteration}: its {done} are checkpointed");
        Ok(None)
    }

    /// The network of the previous checkpoint, for the match against it.
    fn previous_net(&self) -> Result<Net, TrainError> {
        let dir = run::checkpoint_dir(&self.run_dir, self.state.iteration);
        load_net(&dir.join(NET_FILE), &self.config.backend.device())
    }

    /// Plays the evaluation matches into `m`; false if stopped (the run's
    /// state then untouched).
    fn evaluate(&mut self, iteration: u64, previous: &Net, m: &mut IterationMetrics) -> Result<bool, TrainError> {
        let config = &self.config;
        let e = &config.evaluation;
        let size: Size = config.sizes[0];
        let search = config.selfplay.search;
        let label = format!("net@{iteration}");
        let current = evaluation::net_factory(&self.net, config.backend, e.simulations, search, label);
        let total = e.previous_games + e.games * self.opponents.len();
        let progress = PhaseProgress::start(&*self.observer, Phase::Evaluation, total as u64, 0);
        let on_game = |_: &konane_players::arena::GameResult| progress.advance("");
        let threads = config.threads();
        let stopped = || self.stop.load(Ordering::Relaxed);
        let mut results = Vec::new();
        let mut previous_result = None;
        if stopped() {
            return Ok(false);
        }
        if e.previous_games > 0 {
            let old = evaluation::net_factory(previous, config.backend, e.simulations, search, "previous".into());
            let seed = derive_seed(config.seed, iteration, 0, Stream::EvaluationMatches);
            let result = evaluation::play(&current, &old, size, e.previous_games, threads, seed, &on_game)?;
            previous_result = Some((result.elo_diff, result.score));
            results.push(result);
        }
        let mut against = Vec::new();
        for (k, opponent) in self.opponents.iter().enumerate() {
            if stopped() {
                return Ok(false);
            }
            let seed = derive_seed(config.seed, iteration, k as u64 + 1, Stream::EvaluationMatches);
            let result = evaluation::play(&current, opponent.as_ref(), size, e.games, threads, seed, &on_game)?;
            let anchor = self.state.anchors.get(k).map_or(0.0, |a| a.1);
            against.push((anchor, result.wins, result.games));
            results.push(result);
        }
        progress.finish();
        // The state changes only once the whole evaluation is done, so a
        // stop leaves it as it was and the resume plays the evaluation again.
        if let Some((elo_diff, score)) = previous_result {
            self.state.elo_chain += elo_diff;
            if e.gating {
                let accepted = score >= e.gating_threshold;
                m.accepted = Some(accepted);
                if accepted {
                    self.best = self.net.clone();
                    self.state.best_iteration = iteration;
                }
            }
        }
        m.elo_chain = self.state.elo_chain;
        m.evaluation = results;
        m.elo = evaluation::rating_against(&against);
        Ok(true)
    }

    /// The header of the current network's file.
    fn header(&self) -> NetHeader {
        NetHeader {
            format: checkpoint::FORMAT_VERSION,
            net: self.net.config(),
            sizes: self.config.sizes.clone(),
            iteration: self.state.iteration,
            // No paths or times: identical runs write identical files.
            note: match &self.state.partial {
                None => format!("konane train {}", self.config.name),
                Some(p) => format!(
                    "konane train {}, stopped in iteration {} after {} of its training steps",
                    self.config.name, p.iteration, p.train_steps
                ),
            },
        }
    }

    /// Under [`Role::Learner`]: publishes the self-play network (the best
    /// one under gating) as generation `state.iteration`, keeping the
    /// generations a worker's shards may still come from.
    fn publish(&self) -> Result<(), TrainError> {
        let Some(link) = &self.link else { return Ok(()) };
        let (net, header) = if self.config.evaluation.gating {
            (&self.best, NetHeader { iteration: self.state.best_iteration, ..self.header() })
        } else {
            (&self.net, self.header())
        };
        let generation = self.state.iteration;
        let keep = self.config.cluster.max_generation_lag + 2;
        cluster::publish(&link.exchange, generation, checkpoint::to_bytes(net, &header)?, keep)?;
        tracing::info!(generation, "network published");
        Ok(())
    }

    /// Under [`Role::Learner`], instead of [`Loop::self_play`]: reads the
    /// workers' shards until the iteration's games have arrived; `None` if
    /// stopped first (nothing read is kept: the checkpoint still says where
    /// the reading stands).
    fn ingest(&mut self, iteration: u64, config: &TrainConfig) -> Result<Option<PartialIteration>, TrainError> {
        let started = Instant::now();
        let link = self.link.as_ref().expect("a learner");
        let games = config.selfplay.games;
        let progress = PhaseProgress::start(&*self.observer, Phase::SelfPlay, games as u64, 0);
        let mut state = self.state.ingest.clone().unwrap_or_default();
        let read = cluster::ingest(
            &link.exchange,
            &mut state,
            games,
            self.state.iteration,
            &config.cluster,
            &self.stop,
            &|n| progress.set(n as u64, games as u64),
        )?;
        let Some((samples, stats, report)) = read else { return Ok(None) };
        progress.finish();
        tracing::info!(
            shards = report.shards,
            workers = report.workers,
            stale_games = report.stale_games,
            wait_seconds = format!("{:.1}", report.wait_seconds),
            "shards read"
        );
        self.replay.extend(samples);
        self.state.games += stats.games as u64;
        self.state.ingest = Some(state);
        Ok(Some(PartialIteration {
            iteration,
            selfplay: stats,
            selfplay_seconds: started.elapsed().as_secs_f64(),
            ingest: Some(report),
            ..PartialIteration::default()
        }))
    }

    /// Writes checkpoint `state.iteration` and prunes old ones.
    fn checkpoint(&mut self) -> Result<(), TrainError> {
        if self.link.as_ref().is_some_and(LearnerLink::lost) {
            // Another learner owns the run now: write nothing more into it.
            return Err(TrainError::Cluster("the learner lease was lost; this learner stops".into()));
        }
        let number = self.state.checkpoint_number();
        let partial = run::begin_checkpoint(&self.run_dir, number)?;
        let header = self.header();
        checkpoint::save(&self.net, &header, &partial.join(NET_FILE))?;
        if self.config.evaluation.gating {
            let header = NetHeader { iteration: self.state.best_iteration, net: self.best.config(), ..header };
            checkpoint::save(&self.best, &header, &partial.join(BEST_FILE))?;
        }
        self.learner.save_optimizer(&partial.join(OPTIMIZER_FILE))?;
        self.replay.save(&partial.join(REPLAY_FILE))?;
        run::commit_checkpoint(&self.run_dir, &partial, &mut self.state)?;
        run::prune(&self.run_dir, self.config.checkpoint.keep_last, self.config.checkpoint.keep_every, number)?;
        Ok(())
    }
}
