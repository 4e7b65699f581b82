//! Players of Kōnane behind one interface: the baselines (random, greedy,
//! alpha-beta, UCT) as [`Baseline`]s with their [`Limits`], the KTP engine
//! loop and the arena that matches any two [`PlayerFactory`]s. The player
//! spec grammar (`alphabeta:depth=4`, `net:PATH,sims=800`) and the registry
//! that builds every kind, networks included, are `konane_nn::spec` and
//! `konane_nn::player`.
#![deny(missing_docs)]

pub mod accuracy;
pub mod alphabeta;
pub mod arena;
pub mod game;
pub mod greedy;
pub mod ktp;
pub mod random;
pub mod uct;

use std::time::{Duration, Instant};

use konane_rules::{Move, Position};

pub use arena::PlayerFactory;

/// How much a player may search for one move. Unset fields do not bound.
/// For alpha-beta `nodes` counts positions searched; for MCTS, simulations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Deepest iteration of a depth-first search.
    pub depth: Option<u32>,
    /// Search size: positions (alpha-beta) or simulations (MCTS).
    pub nodes: Option<u64>,
    /// Wall time per move.
    pub movetime: Option<Duration>,
}

impl Limits {
    /// Deepest `depth` a user may ask for (`depth=N`, `limit depth N`).
    pub const MAX_DEPTH: u32 = 200;
    /// Largest `nodes` a user may ask for (`sims=N`, `limit nodes N`).
    pub const MAX_NODES: u64 = 1_000_000_000_000;
    /// Longest `movetime` a user may ask for, in milliseconds: an hour a move.
    pub const MAX_MOVETIME_MS: u64 = 3_600_000;

    /// Overrides the fields set in `other`.
    pub fn merged(self, other: Limits) -> Limits {
        Limits {
            depth: other.depth.or(self.depth),
            nodes: other.nodes.or(self.nodes),
            movetime: other.movetime.or(self.movetime),
        }
    }

    /// The instant a search started at `start` must stop, if time-limited.
    pub fn deadline(&self, start: Instant) -> Option<Instant> {
        self.movetime.map(|t| start + t)
    }
}

/// What a player chose, with what its search saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// The move.
    pub mv: Move,
    /// Positions or simulations searched.
    pub nodes: u64,
    /// Depth reached (alpha-beta) or 0.
    pub depth: u32,
    /// Expected result for the mover in [-1, 1], if the player estimates one.
    pub value: Option<f32>,
}

impl Choice {
    /// A choice with no search behind it.
    pub fn plain(mv: Move) -> Choice {
        Choice { mv, nodes: 0, depth: 0, value: None }
    }
}

/// A player that could not choose a move: its search failed (a network
/// whose outputs are not numbers, an evaluator thread that ended). Not a
/// lost game: the caller stops, or reports it and carries on.
#[derive(Debug, thiserror::Error)]
#[error("{player}: {cause}")]
pub struct PlayerError {
    /// The player's name.
    pub player: String,
    /// Why it failed.
    pub cause: Box<dyn std::error::Error + Send + Sync>,
}

impl PlayerError {
    /// `player` failed because of `cause`.
    pub fn new(player: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) -> PlayerError {
        PlayerError { player: player.into(), cause: Box::new(cause) }
    }
}

/// Something that picks moves. Players are seeded and, for limits by depth,
/// nodes or simulations, deterministic for a given seed.
pub trait Player: Send {
    /// A short name for logs and the arena (`alphabeta:depth=4`).
    fn name(&self) -> String;

    /// The limits the player was configured with.
    fn limits(&self) -> Limits;

    /// Chooses a move for the side to move under `limits`; `Ok(None)` when
    /// the side to move has no legal move (it has lost).
    ///
    /// # Errors
    /// The player's search failed; see [`PlayerError`].
    fn choose(&mut self, position: &Position, limits: &Limits) -> Result<Option<Choice>, PlayerError>;

    /// Forgets anything carried between moves (a new game starts).
    fn new_game(&mut self) {}
}

/// A baseline player, without a network: what it is and its settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Baseline {
    /// Uniformly random moves.
    Random,
    /// One-ply: fewest replies for the opponent.
    Greedy,
    /// Iterative-deepening alpha-beta on mobility.
    AlphaBeta,
    /// UCT with random playouts.
    Uct {
        /// The exploration constant ([`uct::UctPlayer::EXPLORATION`]).
        exploration: f64,
    },
}

/// Builds a baseline player for each game: the arena's [`PlayerFactory`]
/// for every kind of player this crate knows.
#[derive(Clone, Debug)]
pub struct BaselineFactory {
    /// The player.
    pub baseline: Baseline,
    /// Its limits per move.
    pub limits: Limits,
    /// A seed that replaces the one each game passes (players with a fixed
    /// seed play the same in every game).
    pub seed: Option<u64>,
    /// Its name in reports (the spec it was built from).
    pub label: String,
}

impl PlayerFactory for BaselineFactory {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn build(&self, seed: u64) -> Box<dyn Player> {
        let seed = self.seed.unwrap_or(seed);
        match self.baseline {
            Baseline::Random => Box::new(random::RandomPlayer::new(seed)),
            Baseline::Greedy => Box::new(greedy::GreedyPlayer::new(seed)),
            Baseline::AlphaBeta => Box::new(alphabeta::AlphaBetaPlayer::new(self.limits, seed)),
            Baseline::Uct { exploration } => Box::new(uct::UctPlayer::new(self.limits, exploration, seed)),
        }
    }
}

impl BaselineFactory {
    /// A factory of `baseline` under `limits`, named `label`.
    pub fn new(baseline: Baseline, limits: Limits, label: impl Into<String>) -> BaselineFactory {
        BaselineFactory { baseline, limits, seed: None, label: label.into() }
    }
}
