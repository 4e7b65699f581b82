//! The training configuration: one TOML file holds every knob of a run.
//!
//! Every field has a default (the values below, also written out with
//! comments in `configs/*.toml`), unknown keys are refused, and
//! [`TrainConfig::validate`] checks ranges, so a bad config fails at start
//! with the key and the reason rather than hours into a run.

use std::collections::BTreeMap;
use std::path::Path;

use konane_mcts::{SearchConfig, SearchPatch};
use konane_nn::Backend;
use konane_nn::NetConfig;
use konane_nn::spec::PlayerSpec;
use konane_nn::train::LearnerConfig;
use konane_players::BaselineFactory;
use konane_players::arena::max_threads;
use konane_rules::Size;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::replay::SizeMix;

/// The quick 6x6 config, embedded so that `konane train` works from any
/// directory.
pub const QUICK_CONFIG: &str = include_str!("../../../configs/6x6-quick.toml");

/// A config that could not be read, parsed or validated.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error(transparent)]
    Read(#[from] konane_files::ReadError),
    /// A key is unknown, mistyped or out of range.
    #[error("{origin}: {key}: {reason}")]
    Invalid {
        /// Where the config came from (a path, or `<embedded>`).
        origin: String,
        /// The dotted key (`selfplay.simulations`), or `(file)` for syntax errors.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

/// One key of a config and what is wrong with its value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct InvalidKey {
    /// The dotted key (`selfplay.simulations`).
    pub key: String,
    /// What is wrong, with the value and the allowed range.
    pub reason: String,
}

impl InvalidKey {
    pub(crate) fn new(key: impl Into<String>, reason: impl Into<String>) -> InvalidKey {
        InvalidKey { key: key.into(), reason: reason.into() }
    }

    /// The same problem in a config read from `origin`.
    pub fn in_config(self, origin: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { origin: origin.into(), key: self.key, reason: self.reason }
    }
}

/// Everything a training run needs; see `configs/6x6.toml` for the
/// commented reference.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// Run name: the run directory is `runs/<name>-<YYYYMMDD-HHMM>`.
    pub name: String,
    /// Master seed: every game, sampler and network derives its seed from
    /// it, the iteration and an index.
    pub seed: u64,
    /// Training iterations (self-play, train, evaluate, checkpoint).
    pub iterations: u64,
    /// Worker threads for self-play and evaluation; 0 = every core.
    pub threads: usize,
    /// What trains and runs the network ([`Backend`]): `native`, `flex`,
    /// `ndarray`, or `wgpu` / `cuda` in builds with those features.
    pub backend: Backend,
    /// Board sizes (`"6x6"`); games are dealt round-robin over a mix.
    pub sizes: Vec<Size>,
    /// Games of each size per round of the deal, in the order of `sizes`
    /// (KataGo's relative size probabilities, dealt evenly rather than
    /// drawn); empty = one each.
    pub size_weights: Vec<u32>,
    /// The network's shape.
    pub network: NetConfig,
    /// Self-play.
    pub selfplay: SelfPlayConfig,
    /// The replay window.
    pub replay: ReplayConfig,
    /// Gradient descent.
    pub training: TrainingConfig,
    /// Matches after each iteration.
    pub evaluation: EvaluationConfig,
    /// Checkpoint retention.
    pub checkpoint: CheckpointConfig,
    /// Optional supervised phase from a teacher before self-play.
    pub bootstrap: Option<BootstrapConfig>,
    /// A learner and self-play workers as separate processes
    /// (`konane train --role learner`, `konane selfplay`).
    pub cluster: ClusterConfig,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            name: "run".into(),
            seed: 1,
            iterations: 10,
            threads: 0,
            backend: Backend::Native,
            sizes: vec![Size::new_const(6, 6)],
            size_weights: Vec::new(),
            network: NetConfig::default(),
            selfplay: SelfPlayConfig::default(),
            replay: ReplayConfig::default(),
            training: TrainingConfig::default(),
            evaluation: EvaluationConfig::default(),
            checkpoint: CheckpointConfig::default(),
            bootstrap: None,
            cluster: ClusterConfig::default(),
        }
    }
}

/// Self-play settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SelfPlayConfig {
    /// Games per iteration.
    pub games: usize,
    /// Games each worker plays at once; their leaves share one network call.
    pub parallel_games: usize,
    /// New simulations per move (the tree of the previous move is reused).
    pub simulations: u64,
    /// The search of every move: `[selfplay.search]`, the keys of
    /// [`SearchConfig`] over [`SearchConfig::self_play`]. Its `batch_size`
    /// is the leaves gathered from one game's tree per network call.
    #[serde(deserialize_with = "self_play_search")]
    pub search: SearchConfig,
    /// Temperature of the move choice for the first `temperature_plies` plies.
    pub temperature: f32,
    /// Plies played at `temperature`; later moves use `final_temperature`.
    pub temperature_plies: u32,
    /// Temperature after `temperature_plies` (0: the most visited move).
    pub final_temperature: f32,
    /// Playout-cap randomisation (KataGo): the share of moves searched with
    /// `simulations` and recorded as training samples; the other moves get
    /// `fast_simulations` and are not recorded. 1 turns it off.
    pub full_search_probability: f64,
    /// Simulations of the fast moves under playout-cap randomisation.
    pub fast_simulations: u64,
    /// Exact value targets: positions with at most this many stones are
    /// solved by the rules crate's solver and get the exact result as value
    /// target instead of the game's. 0 turns it off.
    pub solver_max_stones: u32,
    /// Node budget of one solve (an unsolved position keeps the game result).
    pub solver_nodes: u64,
    /// Exact policy targets too: a solved won position's target keeps only
    /// the visits of winning moves (each winning move gets one visit if the
    /// search visited none), so the network learns the solver's moves, not
    /// the search's mistakes. Costs a solve of every move instead of a
    /// probe that stops at the first win.
    pub solver_policy: bool,
    /// Share of moves played uniformly at random instead of by the search,
    /// in positions the solver labelled (so at most `solver_max_stones`
    /// stones), so the network also learns positions that weaker players
    /// reach. Their targets stay exact, and the unsolved positions before
    /// them take as value the exact result of the game's first solved
    /// position rather than the game's result. 0 turns it off.
    pub random_move_probability: f64,
    /// Opening variety: each game first plays a uniformly drawn number of
    /// plies, 0 up to this, uniformly at random (never one that ends the
    /// game), unsearched and unrecorded, and self-play starts from there.
    /// Self-play with temperature keeps to the openings its network likes;
    /// this spreads its games over the openings other players choose (as
    /// KataGo's and Leela's varied starting positions do). 0 turns it off.
    pub random_opening_plies: u32,
    /// Share of a sample's value target taken from its search's root value
    /// instead of the game's result: `(1 - w) z + w q`. The result says
    /// who won the one game played from there, the root value what the
    /// search expected; mixing them lowers the target's noise early in a
    /// game. Exact (solver) targets are kept as they are. 0 turns it off.
    pub root_value_weight: f64,
    /// KataGo's policy surprise weighting: this share of a game's recorded
    /// samples is dealt out again in proportion to how far the search's
    /// policy target moved from the network's (noised) root prior, their
    /// KL divergence, so the positions where the search taught the network
    /// most are written into the window more often (the rest stay one copy
    /// each; a game keeps about as many samples as it recorded). KataGo
    /// uses 0.5. 0 turns it off.
    pub policy_surprise_weight: f64,
    /// Network outputs each self-play worker remembers, by position, for
    /// the iteration (every game searches the same openings, and jumps in
    /// different places reach one position in several orders): a
    /// remembered position costs no network call. The network answers a
    /// position the same in any batch, so the games do not change. 0 = off.
    pub eval_cache: usize,
}

impl Default for SelfPlayConfig {
    fn default() -> Self {
        SelfPlayConfig {
            games: 200,
            parallel_games: 32,
            simulations: 200,
            search: SearchConfig::self_play(),
            temperature: 1.0,
            temperature_plies: 12,
            final_temperature: 0.0,
            full_search_probability: 1.0,
            fast_simulations: 32,
            solver_max_stones: 0,
            solver_nodes: 100_000,
            solver_policy: false,
            random_move_probability: 0.0,
            random_opening_plies: 0,
            root_value_weight: 0.0,
            policy_surprise_weight: 0.0,
            eval_cache: 1 << 16,
        }
    }
}

impl SelfPlayConfig {
    /// The temperature of the move at `ply` (0-based, openings included).
    pub fn temperature_at(&self, ply: u32) -> f32 {
        if ply < self.temperature_plies { self.temperature } else { self.final_temperature }
    }
}

/// `[selfplay.search]`: the keys it sets, over [`SearchConfig::self_play`].
fn self_play_search<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<SearchConfig, D::Error> {
    Ok(SearchPatch::deserialize(deserializer)?.apply(SearchConfig::self_play()))
}

/// The replay window.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ReplayConfig {
    /// Positions kept: the newest `window` samples (bounds memory).
    pub window: usize,
    /// Training waits until the window holds at least this many samples.
    pub min_samples: usize,
    /// Apply a random board symmetry to each sampled position.
    pub augment: bool,
    /// Solved openings: every position within this many plies of the start
    /// (removals included), solved exactly once per run and cached in the
    /// run directory, joins every training batch, so openings self-play
    /// avoids are still learnt exactly (see `openings`). Only for boards
    /// the solver finishes: 6x6 at 6 plies takes minutes. 0 turns it off.
    pub solved_openings_plies: u32,
    /// Share of each batch drawn from the solved openings.
    pub solved_openings_share: f64,
    /// Solver nodes allowed per opening position; positions that need more
    /// are left out.
    pub solved_openings_nodes: u64,
    /// The boards whose openings are solved, each one of the run's `sizes`;
    /// empty: every size. A mixed-size run names its small boards here
    /// (`["6x6"]`): the others' opening trees do not solve, and their
    /// batches come from the window alone.
    pub solved_openings_sizes: Vec<Size>,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            window: 100_000,
            min_samples: 1_000,
            augment: true,
            solved_openings_plies: 0,
            solved_openings_share: 0.25,
            solved_openings_nodes: 10_000_000,
            solved_openings_sizes: Vec::new(),
        }
    }
}

impl ReplayConfig {
    /// Samples of each batch of `batch_size` drawn from the solved openings
    /// (0 when they are off).
    pub fn solved_openings_per_batch(&self, batch_size: usize) -> usize {
        if self.solved_openings_plies == 0 {
            return 0;
        }
        (self.solved_openings_share * batch_size as f64).round() as usize
    }
}

/// Learning-rate schedule over the global training step.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LrSchedule {
    /// `lr` throughout.
    Constant,
    /// `lr * lr_step_factor^(step / lr_step_every)`.
    Step,
    /// Cosine from `lr` to `lr_final` over all the run's steps.
    Cosine,
}

/// Gradient descent settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TrainingConfig {
    /// Samples per step.
    pub batch_size: usize,
    /// Whether a step's batch is one board size (`one_size`) or every size
    /// of the window in proportion (`mixed`): only matters with several sizes.
    pub size_mix: SizeMix,
    /// Steps per iteration.
    pub steps: u64,
    /// Caps an iteration's steps while the replay window is short, so a
    /// run restarted from a network (`--init-from`, whose window starts
    /// empty) does not draw its first games dozens of times each: at most
    /// `window samples x this / batch_size` steps. 0 turns the cap off.
    /// (`configs/all.toml` draws 25,600 samples an iteration from a full
    /// window of 60,000, 0.43 each; its first iteration after a restart
    /// would draw each of its 3,500 samples 7.3 times.)
    pub max_draws_per_sample: f64,
    /// `constant`, `step` or `cosine`.
    pub lr_schedule: LrSchedule,
    /// Initial learning rate.
    pub lr: f64,
    /// Final learning rate of the cosine schedule.
    pub lr_final: f64,
    /// Steps between decays of the step schedule.
    pub lr_step_every: u64,
    /// Factor of each decay of the step schedule.
    pub lr_step_factor: f64,
    /// The optimizer and the loss weighting: `[training.learner]`.
    pub learner: LearnerConfig,
}

impl Default for TrainingConfig {
    fn default() -> Self {
        TrainingConfig {
            batch_size: 256,
            size_mix: SizeMix::OneSize,
            steps: 200,
            max_draws_per_sample: 0.0,
            lr_schedule: LrSchedule::Constant,
            lr: 1e-3,
            lr_final: 1e-4,
            lr_step_every: 10_000,
            lr_step_factor: 0.3,
            learner: LearnerConfig::default(),
        }
    }
}

impl TrainingConfig {
    /// The steps of an iteration that starts training on a window of
    /// `window_samples`: `steps`, cut by `max_draws_per_sample` (at least
    /// one step, so a run never stalls).
    pub fn steps_for_window(&self, window_samples: usize) -> u64 {
        if self.max_draws_per_sample <= 0.0 {
            return self.steps;
        }
        let draws = window_samples as f64 * self.max_draws_per_sample;
        let capped = (draws / self.batch_size.max(1) as f64).ceil() as u64;
        self.steps.min(capped.max(1))
    }

    /// The learning rate at global step `step` of a run of `total_steps`.
    pub fn lr_at(&self, step: u64, total_steps: u64) -> f64 {
        match self.lr_schedule {
            LrSchedule::Constant => self.lr,
            LrSchedule::Step => self.lr * self.lr_step_factor.powi((step / self.lr_step_every.max(1)) as i32),
            LrSchedule::Cosine => {
                let t = (step as f64 / total_steps.max(1) as f64).min(1.0);
                self.lr_final + 0.5 * (self.lr - self.lr_final) * (1.0 + (std::f64::consts::PI * t).cos())
            }
        }
    }
}

/// Matches played after training each iteration.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EvaluationConfig {
    /// Baseline opponents (player specs); the first is the Elo anchor at 0.
    pub opponents: Vec<PlayerSpec>,
    /// Games against each opponent (pairs with colours swapped).
    pub games: usize,
    /// Games against the previous iteration's network (0: none).
    pub previous_games: usize,
    /// Simulations per move of the network player in evaluation games.
    pub simulations: u64,
    /// Evaluate every this many iterations (and always at the last).
    pub every: u64,
    /// Keep the best network for self-play: a new network replaces it only
    /// if it scores at least `gating_threshold` against the previous one.
    pub gating: bool,
    /// Score the new network needs against the previous one under gating.
    pub gating_threshold: f64,
}

impl Default for EvaluationConfig {
    fn default() -> Self {
        EvaluationConfig {
            opponents: ["random", "greedy", "alphabeta:depth=2"].map(|s| s.parse().expect("a valid spec")).to_vec(),
            games: 40,
            previous_games: 40,
            simulations: 100,
            every: 1,
            gating: false,
            gating_threshold: 0.55,
        }
    }
}

/// Checkpoint retention. A checkpoint is written after every iteration (a
/// kill loses at most the iteration in progress); older ones are pruned.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointConfig {
    /// Most recent checkpoints kept (at least 2, so a damaged latest one
    /// has a predecessor to fall back on).
    pub keep_last: usize,
    /// Also keep every checkpoint whose iteration is a multiple of this
    /// (0: none).
    pub keep_every: u64,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig { keep_last: 3, keep_every: 10 }
    }
}

/// How a learner and its self-play workers share a run
/// (`docs/cluster.md`). A single-process run ignores the table.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// Games a worker plays per shard, the unit it publishes: larger
    /// shards mean fewer objects, smaller ones fresher games.
    pub shard_games: usize,
    /// The learner drops shards played by a network more than this many
    /// generations older than its newest (and counts them).
    pub max_generation_lag: u64,
    /// Seconds between looks at the shared storage: the learner for new
    /// shards, a worker for a newer network or the run's end.
    pub poll_seconds: f64,
    /// Seconds the learner's lease lasts unless renewed (a third of it
    /// between renewals): how long a learner that died holds the run.
    pub lease_seconds: f64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig { shard_games: 32, max_generation_lag: 2, poll_seconds: 1.0, lease_seconds: 60.0 }
    }
}

/// Supervised phase before self-play (Thompson 2005): positions labelled by
/// a minimax teacher.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BootstrapConfig {
    /// The teacher, a baseline player spec (`alphabeta:depth=3`).
    pub teacher: PlayerSpec,
    /// Positions to label.
    pub positions: usize,
    /// Training steps on them.
    pub steps: u64,
    /// Share of moves played at random while generating positions, for
    /// variety (the teacher still labels every position).
    pub random_move_probability: f64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            teacher: "alphabeta:depth=3".parse().expect("a valid spec"),
            positions: 5_000,
            steps: 200,
            random_move_probability: 0.25,
        }
    }
}

/// The longest config file read (the commented reference is 8 KB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Largest `selfplay.eval_cache`: each slot is allocated up front and
/// holds a whole position (about 400 bytes with its value, more with its
/// priors), so 2^22 slots take about 2 GB a worker, and the most workers
/// a 2-core machine may run (eight) still fit in its memory.
pub const MAX_EVAL_CACHE: usize = 1 << 22;

/// Largest solver node budget a key may set (`selfplay.solver_nodes`,
/// `replay.solved_openings_nodes`): hours of solving per position.
pub const MAX_SOLVER_NODES: u64 = 10_000_000_000;

/// A config number with a range: whole numbers and floats say their
/// ranges in the words people use for each.
trait Bounded: PartialOrd + std::fmt::Display {
    const WHOLE: bool;
}
impl Bounded for u32 {
    const WHOLE: bool = true;
}
impl Bounded for u64 {
    const WHOLE: bool = true;
}
impl Bounded for usize {
    const WHOLE: bool = true;
}
impl Bounded for f32 {
    const WHOLE: bool = false;
}
impl Bounded for f64 {
    const WHOLE: bool = false;
}

/// `Ok` if `value` is in `range` (a NaN is in none).
fn check<T: Bounded>(key: &str, value: T, range: std::ops::RangeInclusive<T>) -> Result<(), InvalidKey> {
    if range.contains(&value) {
        return Ok(());
    }
    let (start, end) = (range.start(), range.end());
    let reason = if T::WHOLE {
        format!("{value}: must be a whole number of at least {start} and at most {end}")
    } else {
        format!("{value}: must be in [{start}, {end}]")
    };
    Err(InvalidKey::new(key, reason))
}

impl TrainConfig {
    /// Parses `text` (TOML) from `origin` and validates it.
    ///
    /// # Errors
    /// Syntax errors, unknown keys, wrong types and out-of-range values,
    /// each naming the key.
    pub fn parse(text: &str, origin: &str) -> Result<TrainConfig, ConfigError> {
        let syntax = |text: &str, e: toml::de::Error| {
            let key = e.span().map(|span| key_at(text, span.start)).unwrap_or_else(|| "(file)".into());
            let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
            let reason = match line {
                Some(line) => format!("{} (line {line})", e.message().trim()),
                None => e.message().trim().to_string(),
            };
            InvalidKey::new(key, reason).in_config(origin)
        };
        let mut table: toml::Table = toml::from_str(text).map_err(|e| syntax(text, e))?;
        let migrated = migrate_flat_keys(&mut table).map_err(|e| e.in_config(origin))?;
        let rewritten;
        let text = if migrated.is_empty() {
            text
        } else {
            tracing::info!(%origin, keys = ?migrated, "config in the flat layout of before [selfplay.search] and [training.learner]: read as moved there");
            rewritten = toml::to_string(&table).expect("a parsed table serialises");
            &rewritten
        };
        let config: TrainConfig = toml::from_str(text).map_err(|e| syntax(text, e))?;
        config.validate().map_err(|e| e.in_config(origin))?;
        Ok(config)
    }

    /// Reads and validates a config file.
    ///
    /// # Errors
    /// As [`TrainConfig::parse`], or the file is unreadable.
    pub fn load(path: &Path) -> Result<TrainConfig, ConfigError> {
        let bytes = konane_files::read_bounded(path, MAX_CONFIG_BYTES, "config")?;
        let origin = path.display().to_string();
        let text = String::from_utf8(bytes).map_err(|_| ConfigError::Invalid {
            origin: origin.clone(),
            key: "(file)".into(),
            reason: "not UTF-8 text".into(),
        })?;
        TrainConfig::parse(&text, &origin)
    }

    /// The boards whose openings the run solves
    /// (`replay.solved_openings_sizes`, or every size when that is empty).
    pub fn solved_openings_sizes(&self) -> &[Size] {
        match self.replay.solved_openings_sizes.as_slice() {
            [] => &self.sizes,
            named => named,
        }
    }

    /// The embedded quick config (`configs/6x6-quick.toml`).
    pub fn quick() -> TrainConfig {
        TrainConfig::parse(QUICK_CONFIG, "<embedded configs/6x6-quick.toml>").expect("the embedded config is valid")
    }

    /// The config as TOML (what a run directory stores).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("a config serialises")
    }

    /// Checks every key against its range (the table in `docs/training.md`:
    /// what the rules, a 24 GiB machine and the training loop allow); sizes
    /// and player specs were checked as the config was read.
    ///
    /// # Errors
    /// The first key out of its range.
    pub fn validate(&self) -> Result<(), InvalidKey> {
        let fail = |key: &str, reason: String| Err(InvalidKey::new(key, reason));
        if self.name.is_empty()
            || self.name.len() > 100
            || self.name.contains(['/', '\\', ',', '=', ';'])
            || self.name.chars().any(char::is_control)
            || self.name.starts_with('.')
        {
            return fail(
                "name",
                format!(
                    "{:?}: 1 to 100 characters, no slashes, ',', '=', ';' or control characters, not starting \
                     with '.' (it names the run directory, which `net:` specs and player lists must be able to name)",
                    self.name
                ),
            );
        }
        check("iterations", self.iterations, 1..=1_000_000)?;
        check("threads", self.threads, 0..=max_threads())?;
        if self.sizes.is_empty() || self.sizes.len() > 64 {
            return fail("sizes", "name at least one board size (at most 64), e.g. [\"6x6\"]".into());
        }
        if let Some(size) = self.sizes.iter().find(|size| size.cells() < 4) {
            return fail("sizes", format!("'{size}' is too small to play on"));
        }
        if !self.size_weights.is_empty() {
            if self.size_weights.len() != self.sizes.len() {
                return fail(
                    "size_weights",
                    format!(
                        "{} weights for {} sizes: give one per size, or none",
                        self.size_weights.len(),
                        self.sizes.len()
                    ),
                );
            }
            for &weight in &self.size_weights {
                check("size_weights", weight, 1..=1000)?;
            }
        }
        if let Err(e) = self.network.validate() {
            return fail(&format!("network.{}", e.field), format!("{}: must be in {}..={}", e.value, e.start, e.end));
        }
        let s = &self.selfplay;
        check("selfplay.games", s.games, 1..=1_000_000)?;
        check("selfplay.parallel_games", s.parallel_games, 1..=4096)?;
        check("selfplay.simulations", s.simulations, 1..=1_000_000)?;
        if let Err(e) = s.search.validate() {
            return fail(&format!("selfplay.search.{}", e.field), format!("{}: must be in {}", e.value, e.range));
        }
        // A game's tree needs room for a few moves' children.
        check("selfplay.search.max_nodes", s.search.max_nodes, 1000..=*SearchConfig::MAX_NODES.end())?;
        check("selfplay.temperature", s.temperature, 0.0..=100.0)?;
        check("selfplay.final_temperature", s.final_temperature, 0.0..=100.0)?;
        if !(s.full_search_probability > 0.0 && s.full_search_probability <= 1.0) {
            return fail(
                "selfplay.full_search_probability",
                format!("{}: must be in (0, 1] (1 turns playout-cap randomisation off)", s.full_search_probability),
            );
        }
        check("selfplay.fast_simulations", s.fast_simulations, 1..=1_000_000)?;
        check("selfplay.solver_max_stones", s.solver_max_stones, SearchConfig::SOLVE_MAX_STONES)?;
        check("selfplay.solver_nodes", s.solver_nodes, 1..=MAX_SOLVER_NODES)?;
        if !(0.0..1.0).contains(&s.random_move_probability) {
            return fail(
                "selfplay.random_move_probability",
                format!("{}: must be in [0, 1) (0 turns random moves off)", s.random_move_probability),
            );
        }
        check("selfplay.random_opening_plies", s.random_opening_plies, 0..=400)?;
        check("selfplay.root_value_weight", s.root_value_weight, 0.0..=1.0)?;
        check("selfplay.policy_surprise_weight", s.policy_surprise_weight, 0.0..=1.0)?;
        check("selfplay.eval_cache", s.eval_cache, 0..=MAX_EVAL_CACHE)?;
        let r = &self.replay;
        check("replay.window", r.window, 1..=10_000_000)?;
        if r.min_samples > r.window {
            return fail("replay.min_samples", format!("{} exceeds replay.window", r.min_samples));
        }
        if !(0.0..1.0).contains(&r.solved_openings_share) {
            return fail("replay.solved_openings_share", format!("{}: must be in [0, 1)", r.solved_openings_share));
        }
        if r.solved_openings_plies > 16 {
            return fail(
                "replay.solved_openings_plies",
                format!("{}: at most 16 (the opening tree grows tenfold per ply)", r.solved_openings_plies),
            );
        }
        check("replay.solved_openings_nodes", r.solved_openings_nodes, 1..=MAX_SOLVER_NODES)?;
        for (i, size) in r.solved_openings_sizes.iter().enumerate() {
            if !self.sizes.contains(size) {
                return fail("replay.solved_openings_sizes", format!("'{size}' is not one of the run's sizes"));
            }
            // Named twice, its openings would join the book twice.
            if r.solved_openings_sizes[..i].contains(size) {
                return fail("replay.solved_openings_sizes", format!("'{size}' is named twice"));
            }
        }
        let t = &self.training;
        check("training.batch_size", t.batch_size, 1..=8192)?;
        check("training.steps", t.steps, 0..=1_000_000)?;
        check("training.max_draws_per_sample", t.max_draws_per_sample, 0.0..=1000.0)?;
        for (key, value) in [("training.lr", t.lr), ("training.lr_final", t.lr_final)] {
            if !(value > 0.0 && value <= 10.0) {
                return fail(key, format!("{value}: must be > 0 and at most 10"));
            }
        }
        check("training.lr_step_every", t.lr_step_every, 1..=1_000_000_000)?;
        if !(t.lr_step_factor > 0.0 && t.lr_step_factor <= 1.0) {
            return fail("training.lr_step_factor", format!("{}: must be in (0, 1]", t.lr_step_factor));
        }
        check("training.learner.weight_decay", t.learner.weight_decay, 0.0..=1.0)?;
        check("training.learner.value_weight", t.learner.value_weight, 0.0..=100.0)?;
        check("training.learner.soft_policy_weight", t.learner.soft_policy_weight, 0.0..=100.0)?;
        check("training.learner.reply_policy_weight", t.learner.reply_policy_weight, 0.0..=100.0)?;
        let e = &self.evaluation;
        if e.opponents.len() > 16 {
            return fail("evaluation.opponents", format!("{} opponents: at most 16", e.opponents.len()));
        }
        if let Some(spec) = e.opponents.iter().find(|spec| spec.is_timed()) {
            return fail(
                "evaluation.opponents",
                format!("'{spec}': timed players make evaluation depend on machine load; use depth/nodes/sims"),
            );
        }
        check("evaluation.games", e.games, 0..=100_000)?;
        check("evaluation.previous_games", e.previous_games, 0..=100_000)?;
        check("evaluation.simulations", e.simulations, 1..=1_000_000)?;
        check("evaluation.every", e.every, 1..=1_000_000)?;
        check("evaluation.gating_threshold", e.gating_threshold, 0.0..=1.0)?;
        if e.gating && e.previous_games == 0 {
            return fail("evaluation.previous_games", "gating needs games against the previous network".into());
        }
        if self.checkpoint.keep_last < 2 {
            return fail(
                "checkpoint.keep_last",
                "must be at least 2 (a damaged latest checkpoint needs a predecessor)".into(),
            );
        }
        check("checkpoint.keep_last", self.checkpoint.keep_last, 2..=1000)?;
        check("checkpoint.keep_every", self.checkpoint.keep_every, 0..=1_000_000)?;
        let c = &self.cluster;
        check("cluster.shard_games", c.shard_games, 1..=100_000)?;
        check("cluster.max_generation_lag", c.max_generation_lag, 0..=1_000_000)?;
        check("cluster.poll_seconds", c.poll_seconds, 0.01..=3600.0)?;
        check("cluster.lease_seconds", c.lease_seconds, 1.0..=86_400.0)?;
        if let Some(b) = &self.bootstrap {
            if b.teacher.baseline().is_none() {
                return fail("bootstrap.teacher", "the teacher must be a baseline player (not net:)".into());
            }
            check("bootstrap.positions", b.positions, 1..=10_000_000)?;
            check("bootstrap.steps", b.steps, 0..=1_000_000)?;
            check("bootstrap.random_move_probability", b.random_move_probability, 0.0..=1.0)?;
        }
        Ok(())
    }

    /// One round of the size deal: each size as often as its weight, spread
    /// out (smooth weighted round-robin) so that every stretch of games
    /// mixes the sizes in about their proportions. Game `i` of a round-robin
    /// over this list gets its `i % len`-th size.
    pub fn size_deal(&self) -> Vec<Size> {
        let weights: Vec<i64> = if self.size_weights.is_empty() {
            vec![1; self.sizes.len()]
        } else {
            self.size_weights.iter().map(|&w| i64::from(w)).collect()
        };
        let total: i64 = weights.iter().sum();
        let mut credit = vec![0i64; weights.len()];
        (0..total)
            .map(|_| {
                for (c, w) in credit.iter_mut().zip(&weights) {
                    *c += w;
                }
                // The first of the largest credits: ties go to the earlier size.
                let best = (0..credit.len()).fold(0, |best, i| if credit[i] > credit[best] { i } else { best });
                credit[best] -= total;
                self.sizes[best]
            })
            .collect()
    }

    /// Worker threads: `threads`, or every core for 0.
    pub fn threads(&self) -> usize {
        if self.threads == 0 { konane_players::arena::cores() } else { self.threads }
    }

    /// The bootstrap teacher's factory, if the config has a bootstrap phase.
    ///
    /// # Panics
    /// On a config that [`TrainConfig::validate`] refuses (a `net:` teacher).
    pub fn teacher(&self) -> Option<BaselineFactory> {
        self.bootstrap.as_ref().map(|b| b.teacher.baseline().expect("a validated teacher is a baseline player"))
    }

    /// Dotted keys (`training.lr`) whose values differ between two configs.
    pub fn differing_keys(&self, other: &TrainConfig) -> Vec<String> {
        let (a, b) = (flatten(self), flatten(other));
        let mut keys: Vec<String> = a.keys().chain(b.keys()).filter(|k| a.get(*k) != b.get(*k)).cloned().collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// Keys that configs written before `[selfplay.search]` and
/// `[training.learner]` held in the table above, with where they live now.
const MOVED_KEYS: &[(&str, &str, &str, &str)] = &[
    ("selfplay", "leaves_per_game", "search", "batch_size"),
    ("selfplay", "c_puct", "search", "c_puct"),
    ("selfplay", "fpu_reduction", "search", "fpu_reduction"),
    ("selfplay", "dirichlet_alpha", "search", "dirichlet_alpha"),
    ("selfplay", "dirichlet_epsilon", "search", "dirichlet_epsilon"),
    ("selfplay", "max_nodes", "search", "max_nodes"),
    ("training", "optimizer", "learner", "optimizer"),
    ("training", "weight_decay", "learner", "weight_decay"),
    ("training", "value_weight", "learner", "value_weight"),
];

/// Moves the keys of the older flat layout to their tables, so run
/// directories and configs written before keep working; returns the keys
/// moved (old names).
///
/// # Errors
/// The key set in both places, or a table that is not one.
fn migrate_flat_keys(table: &mut toml::Table) -> Result<Vec<String>, InvalidKey> {
    let mut moved = Vec::new();
    for &(section, old, sub, new) in MOVED_KEYS {
        let Some(toml::Value::Table(section_table)) = table.get_mut(section) else { continue };
        // A table under an old key name is none of the old keys (an
        // unknown table, which the parse then refuses).
        if matches!(section_table.get(old), None | Some(toml::Value::Table(_))) {
            continue;
        }
        let value = section_table.remove(old).expect("present");
        let target = section_table.entry(sub).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(target) = target else {
            return Err(InvalidKey::new(format!("{section}.{sub}"), "must be a table"));
        };
        if target.contains_key(new) {
            return Err(InvalidKey::new(
                format!("{section}.{old}"),
                format!("set twice: here and as {section}.{sub}.{new}; keep the second"),
            ));
        }
        target.insert(new.to_string(), value);
        moved.push(format!("{section}.{old}"));
    }
    Ok(moved)
}

/// The config as dotted keys and their TOML values.
fn flatten(config: &TrainConfig) -> BTreeMap<String, String> {
    fn walk(prefix: &str, value: &toml::Value, out: &mut BTreeMap<String, String>) {
        match value {
            toml::Value::Table(table) => {
                for (k, v) in table {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&key, v, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let value = toml::Value::try_from(config).expect("a config converts to TOML");
    let mut out = BTreeMap::new();
    walk("", &value, &mut out);
    out
}

/// The dotted key being defined at byte `offset` of a TOML text: the last
/// `[table]` header before it and the key at the start of its line.
fn key_at(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = text[line_start..line_end].trim();
    let mut table = String::new();
    for l in before[..line_start].lines() {
        let l = l.trim();
        if l.starts_with('[') && !l.starts_with("[[") {
            table = l.trim_start_matches('[').split(']').next().unwrap_or("").trim().to_string();
        }
    }
    if line.starts_with('[') {
        return line.trim_start_matches('[').split(']').next().unwrap_or("").trim().to_string();
    }
    let key = line.split('=').next().unwrap_or("").trim().trim_matches('"');
    match (table.is_empty(), key.is_empty()) {
        (_, true) => {
            if table.is_empty() {
                "(file)".into()
            } else {
                table
            }
        }
        (true, false) => key.to_string(),
        (false, false) => format!("{table}.{key}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_deal_spreads_sizes_by_weight() {
        let size = |s: &str| s.parse::<Size>().unwrap();
        let mut config = TrainConfig { sizes: vec![size("6x6"), size("8x8"), size("10x10")], ..TrainConfig::default() };
        // No weights: the sizes in their order, as before weights existed.
        assert_eq!(config.size_deal(), config.sizes);
        config.size_weights = vec![1, 2, 3];
        let deal = config.size_deal();
        let count = |s: &str| deal.iter().filter(|&&d| d == size(s)).count();
        assert_eq!((deal.len(), count("6x6"), count("8x8"), count("10x10")), (6, 1, 2, 3));
        // Spread out: the heaviest size never comes three times in a row.
        assert!(deal.windows(2).all(|w| w[0] != w[1] || w[0] == size("10x10")));
        assert!(deal.windows(3).all(|w| !(w[0] == w[1] && w[1] == w[2])));
        assert!(config.validate().is_ok());
        config.size_weights = vec![1, 2];
        assert_eq!(config.validate().unwrap_err().key, "size_weights");
        config.size_weights = vec![1, 0, 3];
        assert_eq!(config.validate().unwrap_err().key, "size_weights");
        config.size_weights = vec![1, 1001, 3];
        assert_eq!(config.validate().unwrap_err().key, "size_weights");
    }

    #[test]
    fn key_at_finds_table_and_key() {
        let text = "name = \"x\"\n[selfplay]\n# c\ngames = \"many\"\n";
        let at = text.find("\"many\"").unwrap();
        assert_eq!(key_at(text, at), "selfplay.games");
        assert_eq!(key_at(text, 2), "name");
    }

    #[test]
    fn schedules() {
        let mut t =
            TrainingConfig { lr: 1.0, lr_final: 0.1, lr_step_every: 10, lr_step_factor: 0.5, ..Default::default() };
        assert_eq!(t.lr_at(55, 100), 1.0);
        t.lr_schedule = LrSchedule::Step;
        assert_eq!(t.lr_at(25, 100), 0.25);
        t.lr_schedule = LrSchedule::Cosine;
        assert!((t.lr_at(0, 100) - 1.0).abs() < 1e-12);
        assert!((t.lr_at(50, 100) - 0.55).abs() < 1e-12);
        assert!((t.lr_at(100, 100) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn the_draws_cap_cuts_steps_only_while_the_window_is_short() {
        let mut t = TrainingConfig { steps: 100, batch_size: 256, ..Default::default() };
        assert_eq!(t.steps_for_window(0), 100, "no cap by default");
        t.max_draws_per_sample = 0.5;
        // configs/all.toml's first iteration after a restart: 3,500 samples.
        assert_eq!(t.steps_for_window(3_500), 7);
        assert_eq!(t.steps_for_window(60_000), 100, "a full window is not capped");
        assert_eq!(t.steps_for_window(1), 1, "a run never stalls");
    }
}
