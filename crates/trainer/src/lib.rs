//! AlphaZero-style self-play training for Kōnane.
//!
//! One iteration of the loop (`docs/training.md`, "How the loop works"):
//!
//! 1. **Self-play** ([`selfplay`]): worker threads, one network evaluator
//!    each, play many games at once with batched PUCT search, Dirichlet root
//!    noise and a temperature schedule; every searched position becomes a
//!    sample (position, root visit distribution, game result).
//! 2. **Replay** ([`replay`]): the newest `replay.window` samples, packed
//!    two bits per cell.
//!    With `replay.solved_openings_plies`, exactly solved opening positions
//!    ([`openings`]) join every batch.
//! 3. **Training** ([`training`], [`konane_nn::train::Learner`]): batches of one board size
//!    sampled from the window through random symmetries, policy
//!    cross-entropy + value MSE + weight decay, the configured schedule.
//! 4. **Evaluation** ([`evaluation`]): the new network against the previous
//!    one and the baseline players, Elo against the anchors.
//! 5. **Checkpoint** ([`run`]): network, optimizer state, replay window and
//!    loop state in `checkpoints/iter-NNNNNN/`, then `LATEST` points at it.
//!
//! With `--role learner` ([`cluster`]) the self-play runs in separate
//! worker processes that share the run's storage: the learner reads their
//! shards instead of playing, and publishes each new network for them.
//!
//! [`trainer::train`] runs the loop; [`config::TrainConfig`] holds every knob.
#![deny(missing_docs)]

pub mod bootstrap;
pub mod cluster;
pub mod config;
pub mod evaluation;
pub mod memory;
pub mod metrics;
pub mod observer;
pub mod openings;
pub mod replay;
pub mod run;
pub mod selfplay;
pub mod strength;
pub mod trainer;
pub mod training;

use std::path::{Path, PathBuf};

use thiserror::Error;

pub use config::{ConfigError, InvalidKey, TrainConfig};
pub use metrics::IterationMetrics;
pub use observer::{Phase, RunObserver};
pub use trainer::{TrainOptions, TrainOutcome, train};

/// What can stop a training run.
#[derive(Debug, Error)]
pub enum TrainError {
    /// The config is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A file or directory could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A network or optimizer file could not be read or written.
    #[error(transparent)]
    Checkpoint(#[from] konane_nn::CheckpointError),
    /// An evaluation opponent or teacher could not be built.
    #[error(transparent)]
    Player(#[from] konane_nn::player::FactoryError),
    /// A run file could not be read.
    #[error(transparent)]
    Read(#[from] konane_files::ReadError),
    /// A run file could not be written.
    #[error(transparent)]
    Write(#[from] konane_files::WriteError),
    /// A run file is damaged or foreign.
    #[error("{path}: {reason}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A new run in a directory that already holds one.
    #[error("{} already holds a run: continue it with --resume {0}, or choose another --run-dir", dir.display())]
    RunExists {
        /// The run directory.
        dir: PathBuf,
    },
    /// `--init-from` a network of another shape than the config's.
    #[error(
        "{}: the network is {found} but the config's [network] asks for {wanted}; set [network] to the file's shape \
         (more blocks are allowed: the new ones start as identities)",
        file.display()
    )]
    InitShape {
        /// The network file.
        file: PathBuf,
        /// Its shape.
        found: String,
        /// The config's.
        wanted: String,
    },
    /// `--override` of a key whose change a resumed run cannot honour.
    #[error("{key} cannot change when a run resumes: {reason}")]
    FixedKey {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
    /// `--resume` with a config that differs from the run's.
    #[error(
        "the config differs from the run's in: {}; resume with --override {} to accept the change",
        keys.join(", "),
        keys.join(",")
    )]
    ConfigChanged {
        /// The differing dotted keys.
        keys: Vec<String>,
    },
    /// No checkpoint of a run could be loaded.
    #[error("no usable checkpoint in {dir}:\n{reasons}")]
    NoCheckpoint {
        /// The run directory.
        dir: PathBuf,
        /// Why each candidate was rejected, one per line.
        reasons: String,
    },
    /// A loss or a weight stopped being a finite number; the run stopped
    /// before writing anything of the step, so its last checkpoint is the
    /// last good network.
    #[error(
        "training diverged {at}: {what}; nothing of it was saved, the run's LATEST checkpoint is the last good \
         one (lower training.lr and resume with --override training.lr)"
    )]
    Diverged {
        /// Where (`in iteration 3, step 17`).
        at: String,
        /// What (`policy loss NaN`).
        what: String,
    },
    /// A run file would hold a number that is not finite (NaN or an
    /// infinity, which JSON cannot hold); it was not written.
    #[error("{}: {field} is not a finite number; the file was not written", path.display())]
    NonFinite {
        /// The file.
        path: PathBuf,
        /// The field (`metrics[3].policy_loss`).
        field: String,
    },
    /// A network evaluation failed in self-play.
    #[error("self-play: {0}")]
    Evaluation(konane_mcts::EvalError),
    /// An evaluation match could not be played.
    #[error("evaluation against {opponent}: {error}")]
    Match {
        /// The opponent.
        opponent: String,
        /// What stopped the match.
        error: konane_players::arena::MatchError,
    },
    /// The training threads could not be started.
    #[error("starting {threads} training threads: {reason}")]
    Threads {
        /// Threads asked for.
        threads: usize,
        /// What the system said.
        reason: String,
    },
    /// The openings to solve are more than the solver is asked to take.
    #[error(
        "replay.solved_openings_plies: over {limit} positions within that many plies of the {size} start; \
         choose fewer plies"
    )]
    TooManyOpenings {
        /// The board.
        size: konane_rules::Size,
        /// The most positions solved.
        limit: usize,
    },
    /// The storage a learner shares with its workers failed or refused.
    #[error(transparent)]
    Exchange(#[from] konane_exchange::ExchangeError),
    /// A learner or worker cannot go on with what it found in the shared
    /// storage (another worker of the same name, a network of another shape).
    #[error("{0}")]
    Cluster(String),
    /// The bootstrap teacher found no position (boards with no move).
    #[error("bootstrap: the teacher {teacher} found no position to label")]
    NothingToLabel {
        /// The teacher.
        teacher: String,
    },
}

impl TrainError {
    /// An I/O error about `path`.
    pub fn io(path: &Path, error: std::io::Error) -> TrainError {
        TrainError::Io { path: path.to_path_buf(), error }
    }
}

impl From<konane_mcts::EvalError> for TrainError {
    fn from(error: konane_mcts::EvalError) -> TrainError {
        TrainError::Evaluation(error)
    }
}
