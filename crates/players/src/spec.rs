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
     mcts:sims=N | mcts:ms=N | net:PATH,sims=N | net:init,sims=N (options combine with commas, e.g. \
     alphabeta:depth=6,ms=500; any player takes seed=N; mcts takes c=X, the exploration constant; \
     net sims=0 plays the raw policy, net solve=N solves search leaves of at most N stones exactly)";

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
    /// PUCT guided by a network; built by `konane-nn`, which knows networks.
    /// `limits.nodes == Some(0)` means the raw policy, without search.
    Net {
        /// A network file, a directory with a `LATEST` pointer, or `init`
        /// (fresh seeded weights of the default network).
        path: String,
        /// Search leaves with at most this many stones are solved exactly
        /// (`solve=N`; 0, the default, = off).
        solve_max_stones: u32,
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
    /// Builds a baseline player, seeded with the spec's own seed if it has
    /// one, else with `seed`; `None` for `net:` specs, which `konane-nn`'s
    /// player factory builds.
    pub fn build(&self, seed: u64) -> Option<Box<dyn Player>> {
        let seed = self.seed.unwrap_or(seed);
        Some(match self.kind {
            PlayerKind::Random => Box::new(RandomPlayer::new(seed)),
            PlayerKind::Greedy => Box::new(GreedyPlayer::new(seed)),
            PlayerKind::AlphaBeta => Box::new(AlphaBetaPlayer::new(self.limits, seed)),
            PlayerKind::Mcts { exploration } => Box::new(UctPlayer::new(self.limits, exploration, seed)),
            PlayerKind::Net { .. } => return None,
        })
    }

    /// The seed to build with: the spec's own, else `seed`.
    pub fn seed_or(&self, seed: u64) -> u64 {
        self.seed.unwrap_or(seed)
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
        let (kind, mut options) = match text.split_once(':') {
            Some((kind, options)) => (kind, Some(options)),
            None => (text, None),
        };
        let mut net_path = None;
        if kind == "net" {
            // The path comes first: net:PATH,sims=N.
            let rest = options.ok_or_else(|| fail("net needs a path: net:PATH,sims=N or net:init,sims=N".into()))?;
            let (path, tail) = match rest.split_once(',') {
                Some((path, tail)) => (path, Some(tail)),
                None => (rest, None),
            };
            if path.is_empty() || path.contains('=') {
                return Err(fail("net needs a path first: net:PATH,sims=N or net:init,sims=N".into()));
            }
            net_path = Some(path.to_string());
            options = tail;
        }
        let allowed: &[&str] = match kind {
            "random" | "greedy" => &["seed"],
            "alphabeta" => &["depth", "ms", "nodes", "seed"],
            "mcts" => &["sims", "ms", "c", "seed"],
            "net" => &["sims", "ms", "seed", "solve"],
            "" => return Err(fail("empty player name".into())),
            other => return Err(fail(format!("unknown player '{other}'"))),
        };
        let mut limits = Limits::default();
        let mut seed = None;
        let mut exploration = 1.0;
        let mut solve_max_stones = 0;
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
                "sims" if kind == "net" && value == "0" => limits.nodes = Some(0),
                "nodes" | "sims" => limits.nodes = Some(positive(key)?),
                "c" => {
                    exploration = value
                        .parse::<f64>()
                        .ok()
                        .filter(|c| c.is_finite() && *c >= 0.0)
                        .ok_or_else(|| fail(format!("c={value}: the exploration constant is a number >= 0")))?
                }
                "seed" => seed = Some(value.parse().map_err(|_| fail(format!("seed={value}: a whole number")))?),
                "solve" => {
                    solve_max_stones = value
                        .parse::<u32>()
                        .ok()
                        .filter(|&n| n <= 400)
                        .ok_or_else(|| fail(format!("solve={value}: a number of stones from 0 to 400")))?
                }
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
            "net" => {
                if limits.nodes.is_none() && limits.movetime.is_none() {
                    limits.nodes = Some(800);
                }
                PlayerKind::Net { path: net_path.expect("set for net above"), solve_max_stones }
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
        let spec: PlayerSpec = "net:checkpoints/6x6,sims=0".parse().unwrap();
        assert_eq!(spec.kind, PlayerKind::Net { path: "checkpoints/6x6".into(), solve_max_stones: 0 });
        assert_eq!(spec.limits.nodes, Some(0));
        assert!(spec.build(1).is_none());
        assert_eq!("net:init".parse::<PlayerSpec>().unwrap().limits.nodes, Some(800));
        let spec: PlayerSpec = "net:checkpoints/8x8,sims=800,solve=14".parse().unwrap();
        assert_eq!(spec.kind, PlayerKind::Net { path: "checkpoints/8x8".into(), solve_max_stones: 14 });
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
            ("net:sims=5", "path first"),
            ("net", "needs a path"),
            ("net:x,depth=3", "no option 'depth'"),
            ("net:x,solve=-1", "solve=-1"),
            ("alphabeta:solve=3", "no option 'solve'"),
            ("", "empty"),
        ] {
            let err = spec.parse::<PlayerSpec>().unwrap_err().to_string();
            assert!(err.contains(part), "{spec}: {err}");
            assert!(err.contains("valid forms"), "{spec}: {err}");
        }
    }
}
