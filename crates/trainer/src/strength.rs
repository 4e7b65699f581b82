//! A run's strength curve: its checkpoints rated by matches against one
//! fixed opponent (`konane rate`), one JSON object per line of
//! `strength.jsonl` in the run directory.
//!
//! The Elo of `metrics.jsonl` is measured during training against the
//! run's anchors, which a strong network outgrows (it wins every game and
//! the figure stops moving). A rating after the fact can afford the
//! opponent and the search a user cares about (`alphabeta:ms=1000` at 800
//! simulations), and plots against training hours beside other runs.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::metrics::{MAX_METRICS_BYTES, to_json_checked};

/// The file in a run directory.
pub const STRENGTH_FILE: &str = "strength.jsonl";

/// One checkpoint's match.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StrengthRecord {
    /// The checkpoint's iteration (0: the network before self-play).
    pub iteration: u64,
    /// The network's search options (`sims=800`), the same for every
    /// checkpoint of a curve.
    pub search: String,
    /// The opponent's player spec.
    pub opponent: String,
    /// The board.
    pub size: String,
    /// The match seed (openings and players' seeds).
    pub seed: u64,
    /// Games asked for.
    pub games: usize,
    /// Games scored (a game a player failed in is not).
    pub scored: usize,
    /// Games the network won.
    pub wins: usize,
    /// The network's score.
    pub score: f64,
    /// Wilson 95% interval of the score.
    pub score_low: f64,
    /// Its upper end.
    pub score_high: f64,
    /// Elo of the network minus the opponent's (±800 at perfect scores).
    pub elo: f64,
}

impl StrengthRecord {
    /// Whether `self` rates the same curve as `other` (same search,
    /// opponent, board, games and seed), so one checkpoint is rated once.
    pub fn same_curve(&self, other: &StrengthRecord) -> bool {
        (&self.search, &self.opponent, &self.size, self.games, self.seed)
            == (&other.search, &other.opponent, &other.size, other.games, other.seed)
    }

    /// The curve's name in a plot legend: a network rated on several
    /// boards (the all-size network) draws one curve per board.
    pub fn curve(&self) -> String {
        format!("{} vs {} on {}", self.search, self.opponent, self.size)
    }
}

/// The strength file of `run`.
pub fn path(run: &Path) -> PathBuf {
    run.join(STRENGTH_FILE)
}

/// The run's records; none if it has no strength file. Lines that do not
/// parse (cut by a kill) are skipped.
///
/// # Errors
/// The file exists but cannot be read.
pub fn read(run: &Path) -> Result<Vec<StrengthRecord>, TrainError> {
    let file = path(run);
    if !file.exists() {
        return Ok(Vec::new());
    }
    let bytes = konane_files::read_bounded(&file, MAX_METRICS_BYTES, "strength file")?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// Adds `record` to the run's file, replacing a record of the same curve
/// and iteration; the file is rewritten atomically, sorted by curve and
/// iteration.
///
/// # Errors
/// I/O failure, or a number JSON cannot hold.
pub fn record(run: &Path, record: StrengthRecord) -> Result<(), TrainError> {
    let file = path(run);
    let mut all = read(run)?;
    all.retain(|r| !(r.same_curve(&record) && r.iteration == record.iteration));
    all.push(record);
    all.sort_by_key(|a| (a.curve(), a.iteration));
    let mut text = String::new();
    for r in &all {
        text.push_str(&to_json_checked(r, &file)?);
        text.push('\n');
    }
    konane_files::write_atomically(&file, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rated(iteration: u64, opponent: &str, wins: usize) -> StrengthRecord {
        StrengthRecord {
            iteration,
            search: "sims=800".into(),
            opponent: opponent.into(),
            size: "8x8".into(),
            seed: 1,
            games: 10,
            scored: 10,
            wins,
            score: wins as f64 / 10.0,
            score_low: 0.0,
            score_high: 1.0,
            elo: 0.0,
        }
    }

    #[test]
    fn records_replace_their_own_iteration_and_keep_other_curves() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty(), "no file: no records");
        record(dir.path(), rated(4, "greedy", 7)).unwrap();
        record(dir.path(), rated(2, "greedy", 5)).unwrap();
        record(dir.path(), rated(2, "random", 9)).unwrap();
        record(dir.path(), rated(4, "greedy", 8)).unwrap();
        let all = read(dir.path()).unwrap();
        let summary: Vec<(u64, &str, usize)> = all.iter().map(|r| (r.iteration, r.opponent.as_str(), r.wins)).collect();
        assert_eq!(summary, vec![(2, "greedy", 5), (4, "greedy", 8), (2, "random", 9)]);
        assert!(all[0].same_curve(&all[1]) && !all[0].same_curve(&all[2]));
    }

    #[test]
    fn a_cut_line_is_skipped_and_a_non_finite_score_refused() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), rated(1, "greedy", 3)).unwrap();
        let mut text = std::fs::read_to_string(path(dir.path())).unwrap();
        text.push_str("{\"iteration\": 2, \"sea");
        std::fs::write(path(dir.path()), text).unwrap();
        assert_eq!(read(dir.path()).unwrap().len(), 1);
        let error = record(dir.path(), StrengthRecord { elo: f64::NAN, ..rated(3, "greedy", 3) }).unwrap_err();
        assert!(error.to_string().contains("elo"), "{error}");
        assert_eq!(read(dir.path()).unwrap().len(), 1, "a refused record changes nothing");
    }
}
