//! What one iteration measured: one JSON object per line of `metrics.jsonl`.
//!
//! Everything that depends on the clock sits under `timing`, so two runs of
//! the same config and seed can be compared field by field without it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::TrainError;

/// One evaluation match.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MatchResult {
    /// The opponent (a player spec, or `previous` for the network of the
    /// previous iteration).
    pub opponent: String,
    /// Games scored.
    pub games: usize,
    /// Games the network won.
    pub wins: usize,
    /// Win rate of the network.
    pub score: f64,
    /// Elo difference implied by the score (network minus opponent).
    pub elo_diff: f64,
}

/// Wall-clock measurements of an iteration.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Timing {
    /// Seconds of self-play.
    pub selfplay_seconds: f64,
    /// Seconds of training.
    pub train_seconds: f64,
    /// Seconds of evaluation.
    pub eval_seconds: f64,
    /// Seconds writing the checkpoint.
    pub checkpoint_seconds: f64,
    /// Seconds of the whole iteration.
    pub total_seconds: f64,
    /// Self-play moves (positions searched) per second.
    pub selfplay_positions_per_second: f64,
    /// Self-play games per second.
    pub selfplay_games_per_second: f64,
    /// Network evaluations per second during self-play.
    pub selfplay_evaluations_per_second: f64,
    /// Training samples (batch size x steps) per second.
    pub train_samples_per_second: f64,
    /// Shares of the iteration's wall time.
    pub selfplay_share: f64,
    /// Share of training.
    pub train_share: f64,
    /// Share of evaluation.
    pub eval_share: f64,
    /// Seconds since the run started (resumed runs: since the resume).
    pub elapsed_seconds: f64,
    /// Resident memory of the process at the end of the iteration, in MiB
    /// (Linux; 0 where `/proc/self/status` is unavailable).
    #[serde(default)]
    pub rss_mib: f64,
    /// Peak resident memory of the process so far, in MiB (Linux; else 0).
    #[serde(default)]
    pub peak_rss_mib: f64,
}

/// `(current, peak)` resident memory of this process in MiB, from
/// `/proc/self/status` (`VmRSS`, `VmHWM`); zeros elsewhere.
pub fn memory_mib() -> (f64, f64) {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return (0.0, 0.0) };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The record of one iteration.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct IterationMetrics {
    /// Iteration number (1-based).
    pub iteration: u64,
    /// Self-play games played.
    pub games: usize,
    /// Samples added to the replay window.
    pub samples: u64,
    /// Samples in the window after adding them.
    pub replay_size: usize,
    /// Mean plies per game.
    pub mean_game_length: f64,
    /// Share of self-play games won by black.
    pub black_win_rate: f64,
    /// Mean positions per network call in self-play.
    pub mean_batch: f64,
    /// Samples whose value target came from the solver.
    pub solved_samples: u64,
    /// Of those, the share that disagreed with the game result.
    pub solver_disagreement: f64,
    /// Training steps this iteration.
    pub train_steps: u64,
    /// Training steps since the run started.
    pub total_steps: u64,
    /// Learning rate of the last step.
    pub lr: f64,
    /// Mean policy cross-entropy over the iteration's steps.
    pub policy_loss: f64,
    /// Mean value MSE over the iteration's steps (the value error).
    pub value_loss: f64,
    /// Mean entropy of the network's policy.
    pub policy_entropy: f64,
    /// Mean entropy of the policy targets (visit distributions): the floor
    /// of `policy_loss`, which exceeds it by the KL divergence still to learn.
    #[serde(default)]
    pub target_entropy: f64,
    /// Evaluation matches (empty when not evaluated this iteration).
    pub evaluation: Vec<MatchResult>,
    /// Elo against the anchors (the first opponent is 0).
    pub elo: Option<f64>,
    /// Cumulative Elo from the scores against each previous network.
    pub elo_chain: f64,
    /// Under gating: whether the new network became the self-play network.
    pub accepted: Option<bool>,
    /// Wall-clock measurements.
    pub timing: Timing,
}

/// Appends one line to `metrics.jsonl`.
///
/// # Errors
/// I/O failure.
pub fn append(path: &Path, metrics: &IterationMetrics) -> Result<(), TrainError> {
    use std::io::Write;
    let mut line = serde_json::to_string(metrics).expect("metrics serialise");
    line.push('\n');
    let mut file =
        std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| TrainError::io(path, e))?;
    file.write_all(line.as_bytes()).map_err(|e| TrainError::io(path, e))
}

/// Rewrites `metrics.jsonl` with `all` (on resume: the history of the
/// checkpoint resumed from, dropping lines of lost iterations).
///
/// # Errors
/// I/O failure.
pub fn rewrite(path: &Path, all: &[IterationMetrics]) -> Result<(), TrainError> {
    let mut text = String::new();
    for m in all {
        text.push_str(&serde_json::to_string(m).expect("metrics serialise"));
        text.push('\n');
    }
    konane_nn::checkpoint::write_atomically(path, text.as_bytes())?;
    Ok(())
}

/// Reads `metrics.jsonl`, skipping lines that do not parse (a line cut by
/// a kill).
///
/// # Errors
/// The file cannot be read.
pub fn read(path: &Path) -> Result<Vec<IterationMetrics>, TrainError> {
    let text = std::fs::read_to_string(path).map_err(|e| TrainError::io(path, e))?;
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}
