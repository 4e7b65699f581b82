//! What one iteration measured: one JSON object per line of `metrics.jsonl`.
//!
//! Everything that depends on the clock sits under `timing`, so two runs of
//! the same config and seed can be compared field by field without it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::TrainError;

/// `value` as one line of JSON for the file `path`, checked to read back:
/// serde_json writes a NaN or an infinity as `null`, which would make the
/// file unreadable as `T`, so such a value is refused naming its field.
///
/// # Errors
/// [`TrainError::NonFinite`] naming the first such field.
pub fn to_json_checked<T: Serialize + DeserializeOwned>(value: &T, path: &Path) -> Result<String, TrainError> {
    let json = serde_json::to_string(value).expect("run records serialise");
    let mut reader = serde_json::Deserializer::from_str(&json);
    match serde_path_to_error::deserialize::<_, T>(&mut reader) {
        Ok(_) => Ok(json),
        Err(e) => Err(TrainError::NonFinite { path: path.to_path_buf(), field: e.path().to_string() }),
    }
}

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
    /// Peak resident memory of the process during the iteration, in MiB
    /// (Linux; else 0): the host resets the high-water mark as each
    /// iteration starts, so each reports its own peak.
    #[serde(default)]
    pub peak_rss_mib: f64,
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
    /// Self-play positions answered by the cache of network outputs
    /// (`selfplay.eval_cache`) instead of the network.
    #[serde(default)]
    pub cache_hits: u64,
    /// Samples whose value target came from the solver.
    pub solved_samples: u64,
    /// Of those, the share that disagreed with the game result.
    pub solver_disagreement: f64,
    /// Solved won samples whose search had visited a losing move (their
    /// policy target was corrected when `solver_policy` is on).
    #[serde(default)]
    pub solver_policy_corrected: u64,
    /// Self-play moves played at random (`random_move_probability`).
    #[serde(default)]
    pub random_moves: u64,
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
    /// Mean soft policy cross-entropy over the iteration's steps, for a
    /// network with that output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_policy_loss: Option<f64>,
    /// Mean reply policy cross-entropy over the iteration's steps (samples
    /// without a reply counting 0), for a network with that output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_policy_loss: Option<f64>,
    /// Evaluation matches (empty when not evaluated this iteration).
    pub evaluation: Vec<MatchResult>,
    /// Elo against the anchors (the first opponent is 0).
    pub elo: Option<f64>,
    /// Cumulative Elo from the scores against each previous network.
    pub elo_chain: f64,
    /// Under gating: whether the new network became the self-play network.
    pub accepted: Option<bool>,
    /// Games, moves and samples of each board size, in a run of several.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sizes: BTreeMap<String, crate::selfplay::SizeTotals>,
    /// A learner's reading of its workers' shards (`--role learner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest: Option<crate::cluster::IngestReport>,
    /// Wall-clock measurements.
    pub timing: Timing,
}

/// Appends one line to `metrics.jsonl`.
///
/// # Errors
/// I/O failure.
pub fn append(path: &Path, metrics: &IterationMetrics) -> Result<(), TrainError> {
    use std::io::Write;
    let mut line = to_json_checked(metrics, path)?;
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
        text.push_str(&to_json_checked(m, path)?);
        text.push('\n');
    }
    konane_files::write_atomically(path, text.as_bytes())?;
    Ok(())
}

/// The history a resume writes back to `metrics.jsonl`: the checkpoint's
/// records, each replaced by the file's line for the same iteration when that
/// line is complete. The checkpoint is written before an iteration's total
/// time, shares and memory are known, so its copy of the last iteration lacks
/// them; the line appended after it has them. A line matches only if
/// everything but the timing (and the self-play seconds measured before the
/// checkpoint) is equal, so lines of another history are never taken.
pub fn resume_history(checkpoint: &[IterationMetrics], on_disk: &[IterationMetrics]) -> Vec<IterationMetrics> {
    let untimed = |m: &IterationMetrics| IterationMetrics { timing: Timing::default(), ..m.clone() };
    checkpoint
        .iter()
        .map(|m| {
            on_disk
                .iter()
                .find(|d| {
                    d.timing.total_seconds > 0.0
                        && d.timing.selfplay_seconds == m.timing.selfplay_seconds
                        && untimed(d) == untimed(m)
                })
                .unwrap_or(m)
                .clone()
        })
        .collect()
}

/// Reads `metrics.jsonl`, skipping lines that do not parse (a line cut by
/// a kill).
///
/// # Errors
/// The file cannot be read.
pub fn read(path: &Path) -> Result<Vec<IterationMetrics>, TrainError> {
    let bytes = konane_files::read_bounded(path, MAX_METRICS_BYTES, "metrics file")?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// The longest `metrics.jsonl` (or `state.json`, which holds the same
/// records) read: a line is about 1.5 KB, so a run of 100,000 iterations.
pub const MAX_METRICS_BYTES: u64 = 256 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    fn record(iteration: u64, samples: u64, total_seconds: f64) -> IterationMetrics {
        IterationMetrics {
            iteration,
            samples,
            timing: Timing {
                selfplay_seconds: 1.5,
                total_seconds,
                peak_rss_mib: total_seconds * 10.0,
                ..Timing::default()
            },
            ..IterationMetrics::default()
        }
    }

    #[test]
    fn a_number_json_cannot_hold_is_refused_naming_its_field() {
        let path = Path::new("run/metrics.jsonl");
        let mut m = record(3, 10, 4.0);
        assert!(to_json_checked(&m, path).is_ok());
        m.timing.train_samples_per_second = f64::INFINITY;
        let error = to_json_checked(&m, path).unwrap_err().to_string();
        assert!(error.contains("timing.train_samples_per_second") && error.contains("metrics.jsonl"), "{error}");
        m.timing.train_samples_per_second = 1.0;
        m.value_loss = f64::NAN;
        let error = to_json_checked(&m, path).unwrap_err().to_string();
        assert!(error.contains("value_loss"), "{error}");
    }

    #[test]
    fn resume_keeps_the_finished_lines_of_the_same_history() {
        // The checkpoint's copy of iteration 2 lacks its totals; the file has
        // them, plus a line of the lost iteration 3.
        let checkpoint = [record(1, 10, 4.0), record(2, 20, 0.0)];
        let on_disk = [record(1, 10, 4.0), record(2, 20, 5.0), record(3, 30, 6.0)];
        assert_eq!(resume_history(&checkpoint, &on_disk), vec![record(1, 10, 4.0), record(2, 20, 5.0)]);
    }

    #[test]
    fn resume_ignores_lines_of_another_history_or_unfinished_ones() {
        let checkpoint = [record(1, 10, 4.0), record(2, 20, 0.0)];
        // Iteration 2 on disk played other games; nothing on disk for 1.
        assert_eq!(resume_history(&checkpoint, &[record(2, 21, 5.0)]), checkpoint.to_vec());
        let mut other_clock = record(2, 20, 5.0);
        other_clock.timing.selfplay_seconds = 9.0;
        assert_eq!(resume_history(&checkpoint, &[other_clock]), checkpoint.to_vec());
        assert_eq!(resume_history(&checkpoint, &[]), checkpoint.to_vec());
    }
}
