//! Player-spec strings: `kind[:key=value,...]`, shared by `eval`, `ktp` and
//! the trainer's evaluation opponents.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use thiserror::Error;

use crate::alphabeta::AlphaBetaPlayer;
use crate::greedy::GreedyPlayer;
use crate::random::RandomPlayer;
use crate::uct::UctPlayer;
use crate::{Limits, Player};

/// The forms a spec may take, for error messages.
pub const VALID_FORMS: &str = "random | greedy | alphabeta:depth=N | alphabeta:ms=N | alphabeta:nodes=N | \
     mcts:sims=N | mcts:ms=N (options combine with commas, e.g. alphabeta:depth=6,ms=500; \
     any player takes seed=N; mcts takes c=X, the exploration constant)";

/// A spec string that names no valid player.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("bad player spec '{spec}': {reason}\nvalid forms: {VALID_FORMS}")]
pub struct SpecError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Which player, and its settings.
#[derive(Clone, Debug, PartialEq)]
pub enum PlayerKind {
    /// Uniformly random moves.
    Random,
    /// One-ply: fewest replies for the opponent.
    Greedy,
    /// Iterative-deepening alpha-beta on mobility.
    AlphaBeta,
    /// UCT with random playouts.
    Mcts {
        /// UCT exploration constant.
        exploration: f64,
    },
}

/// A parsed player spec: a kind, its limits, and an optional fixed seed.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerSpec {
    /// The player.
    pub kind: PlayerKind,
    /// Default limits per move.
    pub limits: Limits,
    /// A seed that overrides the one the caller passes to [`PlayerSpec::build`].
    pub seed: Option<u64>,
    text: String,
}

impl PlayerSpec {
    /// Builds the player, seeded with the spec's own seed if it has one,
    /// else with `seed`.
    pub fn build(&self, seed: u64) -> Box<dyn Player> {
        let seed = self.seed.unwrap_or(seed);
        match self.kind {
            PlayerKind::Random => Box::new(RandomPlayer::new(seed)),
            PlayerKind::Greedy => Box::new(GreedyPlayer::new(seed)),
            PlayerKind::AlphaBeta => Box::new(AlphaBetaPlayer::new(self.limits, seed)),
            PlayerKind::Mcts { exploration } => Box::new(UctPlayer::new(self.limits, exploration, seed)),
        }
    }

    /// Whether the player's limits depend on the clock (results then vary
    /// with machine load).
    pub fn is_timed(&self) -> bool {
        self.limits.movetime.is_some()
    }
}

impl fmt::Display for PlayerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for PlayerSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<PlayerSpec, SpecError> {
        let fail = |reason: String| SpecError { spec: text.to_string(), reason };
        let (kind, options) = match text.split_once(':') {
            Some((kind, options)) => (kind, Some(options)),
            None => (text, None),
        };
        let allowed: &[&str] = match kind {
            "random" | "greedy" => &["seed"],
            "alphabeta" => &["depth", "ms", "nodes", "seed"],
            "mcts" => &["sims", "ms", "c", "seed"],
            "" => return Err(fail("empty player name".into())),
            other => return Err(fail(format!("unknown player '{other}'"))),
        };
        let mut limits = Limits::default();
        let mut seed = None;
        let mut exploration = 1.0;
        for option in options.into_iter().flat_map(|o| o.split(',')) {
            let (key, value) =
                option.split_once('=').ok_or_else(|| fail(format!("option '{option}' is not key=value")))?;
            if !allowed.contains(&key) {
                return Err(fail(format!("{kind} takes no option '{key}' (it takes {})", allowed.join(", "))));
            }
            let positive = |what: &str| -> Result<u64, SpecError> {
                match value.parse::<u64>() {
                    Ok(n) if n >= 1 => Ok(n),
                    _ => Err(fail(format!("{key}={value}: {what} must be a whole number of at least 1"))),
                }
            };
            match key {
                "depth" => {
                    let depth = positive("depth")?;
                    if depth > 200 {
                        return Err(fail(format!("depth={value}: at most 200")));
                    }
                    limits.depth = Some(depth as u32);
                }
                "ms" => limits.movetime = Some(Duration::from_millis(positive("ms")?)),
                "nodes" | "sims" => limits.nodes = Some(positive(key)?),
                "c" => {
                    exploration = value
                        .parse::<f64>()
                        .ok()
                        .filter(|c| c.is_finite() && *c >= 0.0)
                        .ok_or_else(|| fail(format!("c={value}: the exploration constant is a number >= 0")))?
                }
                "seed" => seed = Some(value.parse().map_err(|_| fail(format!("seed={value}: a whole number")))?),
                _ => unreachable!("checked against the allowed keys"),
            }
        }
        let kind = match kind {
            "random" => PlayerKind::Random,
            "greedy" => PlayerKind::Greedy,
            "alphabeta" => {
                if limits == Limits::default() {
                    limits.depth = Some(4);
                }
                PlayerKind::AlphaBeta
            }
            _ => {
                if limits.nodes.is_none() && limits.movetime.is_none() {
                    limits.nodes = Some(1000);
                }
                PlayerKind::Mcts { exploration }
            }
        };
        Ok(PlayerSpec { kind, limits, seed, text: text.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_specs_parse() {
        let spec: PlayerSpec = "alphabeta:depth=6,ms=500".parse().unwrap();
        assert_eq!(spec.kind, PlayerKind::AlphaBeta);
        assert_eq!(spec.limits.depth, Some(6));
        assert_eq!(spec.limits.movetime, Some(Duration::from_millis(500)));
        let spec: PlayerSpec = "mcts:sims=2000,c=1.4,seed=9".parse().unwrap();
        assert_eq!(spec.limits.nodes, Some(2000));
        assert_eq!(spec.seed, Some(9));
        assert_eq!(spec.kind, PlayerKind::Mcts { exploration: 1.4 });
        assert_eq!("alphabeta".parse::<PlayerSpec>().unwrap().limits.depth, Some(4));
    }

    #[test]
    fn bad_specs_name_the_bad_part_and_show_valid_forms() {
        for (spec, part) in [
            ("alphabeta:depth=x", "depth=x"),
            ("mcts:sims=-1", "sims=-1"),
            ("mcts:sims=0", "sims=0"),
            ("minimax", "unknown player 'minimax'"),
            ("random:depth=3", "no option 'depth'"),
            ("alphabeta:depth", "not key=value"),
            ("mcts:c=-2", "c=-2"),
            ("", "empty"),
        ] {
            let err = spec.parse::<PlayerSpec>().unwrap_err().to_string();
            assert!(err.contains(part), "{spec}: {err}");
            assert!(err.contains("valid forms"), "{spec}: {err}");
        }
    }
}
