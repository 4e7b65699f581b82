//! Evaluation matches and Elo.
//!
//! The baseline opponents are rated once, by a round robin among
//! themselves at the start of the run (Bradley–Terry, the first opponent at
//! 0). Each evaluation then rates the network by maximum likelihood against
//! those fixed anchors, so Elo is comparable across iterations.

use konane_mcts::SearchConfig;
use konane_nn::player::NetFactory;
use konane_nn::spec::PlayerSpec;
use konane_nn::{Backend, Net};
use konane_players::Limits;
use konane_players::arena::{self, GameResult, MatchConfig, MatchSummary, PlayerFactory};
use konane_rules::Size;

use crate::TrainError;
use crate::metrics::MatchResult;

/// A factory of PUCT players over `net` without noise: the network as it
/// plays in evaluation.
pub fn net_factory(net: &Net, backend: Backend, simulations: u64, search: SearchConfig, label: String) -> NetFactory {
    let search = SearchConfig { dirichlet_epsilon: 0.0, ..search };
    NetFactory::new(net.clone(), backend, Limits { nodes: Some(simulations), ..Limits::default() }, search, label)
}

/// Plays a match and scores it for `a`.
///
/// # Errors
/// The arena's thread pool could not be built, or a player's search failed.
pub fn play(
    a: &dyn PlayerFactory,
    b: &dyn PlayerFactory,
    size: Size,
    games: usize,
    threads: usize,
    seed: u64,
    on_game: &(dyn Fn(&GameResult) + Sync),
) -> Result<MatchResult, TrainError> {
    let config = MatchConfig { size, games, threads, seed };
    let results =
        arena::play_match(a, b, &config, on_game).map_err(|error| TrainError::Match { opponent: b.label(), error })?;
    let summary = MatchSummary::new(a.label(), b.label(), size, &results);
    if let Some((_, fault)) = summary.faults.first() {
        tracing::warn!(a = %summary.a, b = %summary.b, faults = summary.faults.len(), first = %fault.reason, "unscored games");
    }
    Ok(MatchResult {
        opponent: summary.b,
        games: summary.games,
        wins: summary.a_wins,
        score: summary.score,
        elo_diff: summary.elo,
    })
}

/// Ratings of the opponents from a round robin of `games` per pair; the
/// first is 0. A single opponent is simply 0.
///
/// # Errors
/// As [`arena::round_robin`].
pub fn rate_anchors(
    opponents: &[PlayerSpec],
    factories: &[Box<dyn PlayerFactory>],
    size: Size,
    games: usize,
    threads: usize,
    seed: u64,
) -> Result<Vec<(String, f64)>, TrainError> {
    let players: Vec<&dyn PlayerFactory> = factories.iter().map(|f| f.as_ref()).collect();
    let config = MatchConfig { size, games, threads, seed };
    let table = arena::round_robin(&players, &config, &|_, _, _| {})
        .map_err(|error| TrainError::Match { opponent: "the anchor round robin".into(), error })?;
    Ok(opponents.iter().map(|s| s.to_string()).zip(table.elo).collect())
}

/// The maximum-likelihood rating of a player with `results` against anchors
/// of known `ratings` (one virtual draw against each keeps it finite).
pub fn rating_against(results: &[(f64, usize, usize)]) -> Option<f64> {
    if results.is_empty() {
        return None;
    }
    // d/dR of the log-likelihood is sum(wins + 0.5 - (games + 1) * E(R)),
    // decreasing in R: bisect for its zero.
    let slope = |r: f64| -> f64 {
        results
            .iter()
            .map(|&(anchor, wins, games)| {
                let expected = 1.0 / (1.0 + 10f64.powf((anchor - r) / 400.0));
                wins as f64 + 0.5 - (games as f64 + 1.0) * expected
            })
            .sum()
    };
    let (mut low, mut high) = (-5000.0, 5000.0);
    for _ in 0..100 {
        let mid = 0.5 * (low + high);
        if slope(mid) > 0.0 { low = mid } else { high = mid }
    }
    Some(0.5 * (low + high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rating_matches_the_score() {
        // 75% against an anchor at 0: about +191 with the virtual draw pulling in.
        let r = rating_against(&[(0.0, 75, 100)]).unwrap();
        assert!(r > 170.0 && r < 191.0, "{r}");
        let r = rating_against(&[(0.0, 50, 100), (200.0, 50, 100)]).unwrap();
        assert!((r - 100.0).abs() < 1.0, "{r}");
        assert!(rating_against(&[]).is_none());
    }
}
