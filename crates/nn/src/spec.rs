//! Player-spec strings, `kind[:key=value,...]`: one grammar for every
//! command (`eval`, `ktp`, `tournament`, `accuracy`) and the trainer's
//! evaluation opponents. It lives here, beside the registry that builds
//! every kind ([`crate::player::player_factory`]), because a `net:` spec's
//! options are a [`SearchPatch`] on the search's own settings.
//!
//! Every number has a range, checked as the spec is parsed: limits by
//! [`Limits`]' bounds, search options by [`SearchConfig`]'s.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use konane_mcts::{SearchConfig, SearchPatch};
use konane_players::uct::UctPlayer;
use konane_players::{Baseline, BaselineFactory, Limits};
use konane_rules::Symmetry;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

/// The forms a spec may take, for error messages.
pub const VALID_FORMS: &str = "random | greedy | alphabeta:depth=N | alphabeta:ms=N | alphabeta:nodes=N | \
     mcts:sims=N | mcts:ms=N | net:PATH,sims=N | net:init,sims=N (options combine with commas, e.g. \
     alphabeta:depth=6,ms=500; any player takes seed=N; mcts takes c=X, the exploration constant; \
     net sims=0 plays the raw policy, net solve=N solves search leaves of at most N stones exactly, \
     net c=X, fpu=X and batch=N tune the search, net sym=N averages N board symmetries)";

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
    /// A player without a network.
    Baseline(Baseline),
    /// PUCT guided by a network. `limits.nodes == Some(0)` means the raw
    /// policy, without search.
    Net {
        /// A network file, a directory with a `LATEST` pointer, or `init`
        /// (fresh seeded weights of the default network).
        path: String,
        /// The search settings the spec sets (`c=`, `fpu=`, `batch=`,
        /// `solve=`), on top of [`SearchConfig::default`].
        search: SearchPatch,
        /// Symmetries each evaluation averages over (`sym=`, 1 to 8; unset:
        /// one random symmetry).
        symmetries: Option<usize>,
    },
}

/// A parsed player spec: a kind, its limits, and an optional fixed seed.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerSpec {
    /// The player.
    pub kind: PlayerKind,
    /// Default limits per move.
    pub limits: Limits,
    /// A seed that overrides the one each game passes.
    pub seed: Option<u64>,
    text: String,
}

impl PlayerSpec {
    /// The factory of a baseline player; `None` for a `net:` spec, which
    /// needs its network loaded ([`crate::player::player_factory`]).
    pub fn baseline(&self) -> Option<BaselineFactory> {
        match self.kind {
            PlayerKind::Baseline(baseline) => {
                Some(BaselineFactory { baseline, limits: self.limits, seed: self.seed, label: self.text.clone() })
            }
            PlayerKind::Net { .. } => None,
        }
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

/// As its text, so a config holds specs as strings.
impl Serialize for PlayerSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

/// From its text; a bad spec is an error naming the bad part.
impl<'de> Deserialize<'de> for PlayerSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PlayerSpec, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(|e: SpecError| serde::de::Error::custom(format!("'{text}': {}", e.reason)))
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
        let mut search = SearchPatch::default();
        let mut symmetries = None;
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
            let number =
                |range: std::ops::RangeInclusive<f64>| -> Result<f64, SpecError> {
                    value.parse::<f64>().ok().filter(|x| range.contains(x)).ok_or_else(|| {
                        fail(format!("{key}={value}: a number from {} to {}", range.start(), range.end()))
                    })
                };
            let float_range =
                |range: &std::ops::RangeInclusive<f32>| f64::from(*range.start())..=f64::from(*range.end());
            match key {
                "depth" => limits.depth = Some(at_most(u64::from(Limits::MAX_DEPTH), "")? as u32),
                "ms" => limits.movetime = Some(Duration::from_millis(at_most(Limits::MAX_MOVETIME_MS, "")?)),
                "sims" if kind == "net" && value == "0" => limits.nodes = Some(0),
                "nodes" | "sims" => limits.nodes = Some(at_most(Limits::MAX_NODES, "")?),
                "fpu" => search.fpu_reduction = Some(number(float_range(&SearchConfig::FPU_REDUCTION))? as f32),
                "batch" => search.batch_size = Some(at_most(*SearchConfig::BATCH_SIZE.end() as u64, "")? as usize),
                "sym" => symmetries = Some(at_most(Symmetry::ALL.len() as u64, "a board has ")? as usize),
                "c" if kind == "net" => search.c_puct = Some(number(float_range(&SearchConfig::C_PUCT))? as f32),
                "c" => exploration = number(UctPlayer::EXPLORATION)?,
                "seed" => seed = Some(value.parse().map_err(|_| fail(format!("seed={value}: a whole number")))?),
                "solve" => {
                    let stones = value
                        .parse::<u32>()
                        .ok()
                        .filter(|n| SearchConfig::SOLVE_MAX_STONES.contains(n))
                        .ok_or_else(|| fail(format!("solve={value}: a number of stones from 0 to 400")))?;
                    search.solve_max_stones = Some(stones);
                }
                _ => unreachable!("checked against the allowed keys"),
            }
        }
        let kind = match kind {
            "random" => PlayerKind::Baseline(Baseline::Random),
            "greedy" => PlayerKind::Baseline(Baseline::Greedy),
            "alphabeta" => {
                if limits == Limits::default() {
                    limits.depth = Some(4);
                }
                PlayerKind::Baseline(Baseline::AlphaBeta)
            }
            "net" => {
                if limits.nodes.is_none() && limits.movetime.is_none() {
                    limits.nodes = Some(800);
                }
                PlayerKind::Net { path: net_path.expect("set for net above"), search, symmetries }
            }
            _ => {
                if limits.nodes.is_none() && limits.movetime.is_none() {
                    limits.nodes = Some(1000);
                }
                PlayerKind::Baseline(Baseline::Uct { exploration })
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
        assert_eq!(spec.kind, PlayerKind::Baseline(Baseline::AlphaBeta));
        assert_eq!(spec.limits.depth, Some(6));
        assert_eq!(spec.limits.movetime, Some(Duration::from_millis(500)));
        let spec: PlayerSpec = "mcts:sims=2000,c=1.4,seed=9".parse().unwrap();
        assert_eq!(spec.limits.nodes, Some(2000));
        assert_eq!(spec.seed, Some(9));
        assert_eq!(spec.kind, PlayerKind::Baseline(Baseline::Uct { exploration: 1.4 }));
        assert_eq!("alphabeta".parse::<PlayerSpec>().unwrap().limits.depth, Some(4));
        let spec: PlayerSpec = "net:checkpoints/6x6,sims=0".parse().unwrap();
        let search = SearchPatch::default();
        assert_eq!(spec.kind, PlayerKind::Net { path: "checkpoints/6x6".into(), search, symmetries: None });
        assert_eq!(spec.limits.nodes, Some(0));
        assert!(spec.baseline().is_none());
        assert!("greedy".parse::<PlayerSpec>().unwrap().baseline().is_some());
        assert_eq!("net:init".parse::<PlayerSpec>().unwrap().limits.nodes, Some(800));
        let spec: PlayerSpec = "net:checkpoints/8x8,sims=800,solve=14".parse().unwrap();
        let search = SearchPatch { solve_max_stones: Some(14), ..SearchPatch::default() };
        assert_eq!(spec.kind, PlayerKind::Net { path: "checkpoints/8x8".into(), search, symmetries: None });
        let spec: PlayerSpec = "net:n.knet,c=2.5,fpu=0,batch=4,sym=8".parse().unwrap();
        let search =
            SearchPatch { c_puct: Some(2.5), fpu_reduction: Some(0.0), batch_size: Some(4), ..SearchPatch::default() };
        assert_eq!(spec.kind, PlayerKind::Net { path: "n.knet".into(), search, symmetries: Some(8) });
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
