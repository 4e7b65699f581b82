//! Player-spec strings: `kind[:key=value,...]`, shared by `eval`, `ktp` and
//! the trainer's evaluation opponents.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use konane_rules::Symmetry;
use thiserror::Error;

use crate::alphabeta::AlphaBetaPlayer;
use crate::arena::PlayerFactory;
use crate::greedy::GreedyPlayer;
use crate::random::RandomPlayer;
use crate::uct::UctPlayer;
use crate::{Limits, Player};

/// Deepest `depth=N`.
pub const MAX_DEPTH: u32 = 200;
/// Longest `ms=N`: an hour a move.
pub const MAX_MOVETIME_MS: u64 = 3_600_000;
/// Largest `sims=N` / `nodes=N`.
pub const MAX_NODES: u64 = 1_000_000_000_000;
/// Largest `c=X` (the exploration constant of UCT and PUCT).
pub const MAX_EXPLORATION: f32 = 100.0;
/// Largest `fpu=X`.
pub const MAX_FPU_REDUCTION: f32 = 10.0;
/// Largest `batch=N`.
pub const MAX_BATCH: usize = 4096;

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
        /// Search settings the spec overrides (`c=`, `fpu=`, `batch=`,
        /// `sym=`); `None` keeps the search's defaults.
        tuning: SearchTuning,
    },
}

/// Search settings a `net:` spec may override, for tuning matches
/// (`net:PATH,c=2,fpu=0.3,batch=4,sym=4`); unset fields keep the search defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SearchTuning {
    /// PUCT exploration constant (`c=`).
    pub c_puct: Option<f32>,
    /// First-play-urgency reduction (`fpu=`).
    pub fpu_reduction: Option<f32>,
    /// Leaves evaluated together (`batch=`): smaller batches search more
    /// exactly (fewer virtual-loss detours); larger ones pay only where a
    /// position costs less in a batch (burn's backends) or a search is
    /// split over threads. Unset: the network player's default.
    pub batch_size: Option<usize>,
    /// Symmetries each evaluation averages over (`sym=`, 1 to 8): a less
    /// noisy network at that many times the cost.
    pub symmetries: Option<usize>,
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

/// Builds a baseline player (every kind but `net:`) for each game: the
/// arena's [`PlayerFactory`] for specs this crate can build. `konane-nn`'s
/// player registry builds every kind, networks included.
#[derive(Clone, Debug)]
pub struct BaselineFactory(PlayerSpec);

impl PlayerFactory for BaselineFactory {
    fn label(&self) -> String {
        self.0.to_string()
    }

    /// The player, seeded with the spec's own seed if it has one, else
    /// with `seed`.
    fn build(&self, seed: u64) -> Box<dyn Player> {
        let spec = &self.0;
        let seed = spec.seed.unwrap_or(seed);
        match spec.kind {
            PlayerKind::Random => Box::new(RandomPlayer::new(seed)),
            PlayerKind::Greedy => Box::new(GreedyPlayer::new(seed)),
            PlayerKind::AlphaBeta => Box::new(AlphaBetaPlayer::new(spec.limits, seed)),
            PlayerKind::Mcts { exploration } => Box::new(UctPlayer::new(spec.limits, exploration, seed)),
            PlayerKind::Net { .. } => unreachable!("BaselineFactory holds no net: spec"),
        }
    }
}

impl PlayerSpec {
    /// The factory of a baseline player; `None` for a `net:` spec, which
    /// needs a network (`konane_nn::player::player_factory`).
    pub fn baseline(&self) -> Option<BaselineFactory> {
        (!matches!(self.kind, PlayerKind::Net { .. })).then(|| BaselineFactory(self.clone()))
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
            "net" => &["sims", "ms", "seed", "solve", "c", "fpu", "batch", "sym"],
            "" => return Err(fail("empty player name".into())),
            other => return Err(fail(format!("unknown player '{other}'"))),
        };
        let mut limits = Limits::default();
        let mut seed = None;
        let mut exploration = 1.0;
        let mut solve_max_stones = 0;
        let mut tuning = SearchTuning::default();
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
            let at_most = |max: u64, why: &str| -> Result<u64, SpecError> {
                let n = positive(key)?;
                if n > max { Err(fail(format!("{key}={value}: {why}at most {max}"))) } else { Ok(n) }
            };
            // Bounded well inside f32's range, the type the searches use,
            // so no number finite as f64 but infinite as f32 (1e39) passes.
            let non_negative = |max: f32| -> Result<f64, SpecError> {
                value
                    .parse::<f64>()
                    .ok()
                    .filter(|x| (0.0..=f64::from(max)).contains(x))
                    .ok_or_else(|| fail(format!("{key}={value}: a number from 0 to {max}")))
            };
            match key {
                "depth" => limits.depth = Some(at_most(MAX_DEPTH as u64, "")? as u32),
                "ms" => limits.movetime = Some(Duration::from_millis(at_most(MAX_MOVETIME_MS, "")?)),
                "sims" if kind == "net" && value == "0" => limits.nodes = Some(0),
                "nodes" | "sims" => limits.nodes = Some(at_most(MAX_NODES, "")?),
                "fpu" => tuning.fpu_reduction = Some(non_negative(MAX_FPU_REDUCTION)? as f32),
                "batch" => tuning.batch_size = Some(at_most(MAX_BATCH as u64, "")? as usize),
                "sym" => tuning.symmetries = Some(at_most(Symmetry::ALL.len() as u64, "a board has ")? as usize),
                "c" if kind == "net" => tuning.c_puct = Some(non_negative(MAX_EXPLORATION)? as f32),
                "c" => exploration = non_negative(MAX_EXPLORATION)?,
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
                PlayerKind::Net { path: net_path.expect("set for net above"), solve_max_stones, tuning }
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
        let tuning = SearchTuning::default();
        assert_eq!(spec.kind, PlayerKind::Net { path: "checkpoints/6x6".into(), solve_max_stones: 0, tuning });
        assert_eq!(spec.limits.nodes, Some(0));
        assert!(spec.baseline().is_none());
        assert!("greedy".parse::<PlayerSpec>().unwrap().baseline().is_some());
        assert_eq!("net:init".parse::<PlayerSpec>().unwrap().limits.nodes, Some(800));
        let spec: PlayerSpec = "net:checkpoints/8x8,sims=800,solve=14".parse().unwrap();
        assert_eq!(spec.kind, PlayerKind::Net { path: "checkpoints/8x8".into(), solve_max_stones: 14, tuning });
        let spec: PlayerSpec = "net:n.knet,c=2.5,fpu=0,batch=4,sym=8".parse().unwrap();
        let tuning =
            SearchTuning { c_puct: Some(2.5), fpu_reduction: Some(0.0), batch_size: Some(4), symmetries: Some(8) };
        assert_eq!(spec.kind, PlayerKind::Net { path: "n.knet".into(), solve_max_stones: 0, tuning });
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
            ("net:x,c=-1", "c=-1"),
            ("net:x,fpu=nan", "fpu=nan"),
            ("net:x,fpu=1e39", "fpu=1e39"),
            ("net:x,fpu=inf", "fpu=inf"),
            ("net:x,fpu=11", "from 0 to 10"),
            ("net:x,c=1e39", "c=1e39"),
            ("mcts:c=101", "from 0 to 100"),
            ("net:x,sims=1000000000001", "at most 1000000000000"),
            ("alphabeta:ms=3600001", "at most 3600000"),
            ("alphabeta:depth=201", "at most 200"),
            ("net:x,batch=0", "batch=0"),
            ("net:x,batch=5000", "at most 4096"),
            ("mcts:fpu=1", "no option 'fpu'"),
            ("net:x,sym=9", "at most 8"),
            ("net:x,sym=0", "sym=0"),
            ("alphabeta:solve=3", "no option 'solve'"),
            ("", "empty"),
        ] {
            let err = spec.parse::<PlayerSpec>().unwrap_err().to_string();
            assert!(err.contains(part), "{spec}: {err}");
            assert!(err.contains("valid forms"), "{spec}: {err}");
        }
    }
}
