//! The games the server holds: each a [`Game`] with its opponent, the
//! engine's estimates by ply, and a lock that lets one search run at a time.
//! Beyond the configured number of games, the one idle longest is evicted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use konane_players::game::Game;
use konane_rules::Color;
use serde::Serialize;

use crate::engine::{Engines, Opponent};
use crate::error::ApiError;

/// One game and what the server keeps with it.
pub struct GameState {
    /// The moves and the position.
    pub game: Game,
    /// The colour the person plays (both, against [`Opponent::Human`]).
    pub human: Color,
    /// Who answers `genmove`.
    pub opponent: Opponent,
    /// Black's winning chance at each ply, where the engine looked.
    pub estimates: Vec<Option<f32>>,
    /// Bumped by every change, so that a search can tell whether the game
    /// it searched is still the game.
    pub version: u64,
    /// When a request last touched the game.
    pub last_used: Instant,
}

impl GameState {
    /// A game with nothing played yet beyond `game`'s moves.
    pub fn new(game: Game, human: Color, opponent: Opponent) -> GameState {
        let estimates = vec![None; game.moves().len() + 1];
        GameState { game, human, opponent, estimates, version: 0, last_used: Instant::now() }
    }

    /// Keeps black's winning chance as the engine's estimate of the
    /// position now.
    pub fn set_estimate(&mut self, black_win_chance: f32) {
        let ply = self.game.moves().len();
        self.estimates[ply] = Some(black_win_chance);
    }

    /// Records a change: the estimates follow the moves.
    pub fn changed(&mut self) {
        self.version += 1;
        self.estimates.resize(self.game.moves().len() + 1, None);
    }
}

/// A game held by the server: its state, and the lock a search holds.
pub struct Entry {
    state: Mutex<GameState>,
    /// Held by the one search this game may run.
    pub search: Arc<tokio::sync::Mutex<()>>,
}

impl Entry {
    /// The state, marked as used now. A poisoned lock still holds a
    /// consistent game: every change is made in one step under it.
    pub fn lock(&self) -> MutexGuard<'_, GameState> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.last_used = Instant::now();
        state
    }
}

/// All games, by id.
pub struct Games {
    games: Mutex<HashMap<String, Arc<Entry>>>,
    max: usize,
}

impl Games {
    /// At most `max` games (at least 1).
    pub fn new(max: usize) -> Games {
        Games { games: Mutex::new(HashMap::new()), max: max.max(1) }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        self.games.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a game under a new random id, evicting the game idle longest
    /// when full; returns the id.
    pub fn insert(&self, state: GameState) -> (String, Arc<Entry>) {
        let entry = Arc::new(Entry { state: Mutex::new(state), search: Arc::new(tokio::sync::Mutex::new(())) });
        let mut games = self.map();
        while games.len() >= self.max {
            let oldest = games
                .iter()
                .min_by_key(|(_, e)| e.state.lock().unwrap_or_else(PoisonError::into_inner).last_used)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => {
                    tracing::debug!(game = %id, "evicted, idle longest");
                    games.remove(&id);
                }
                None => break,
            }
        }
        let id = loop {
            let id = format!("{:016x}", rand::random::<u64>());
            if !games.contains_key(&id) {
                break id;
            }
        };
        games.insert(id.clone(), Arc::clone(&entry));
        (id, entry)
    }

    /// The game `id`.
    ///
    /// # Errors
    /// No such game (404): never created, deleted or evicted.
    pub fn get(&self, id: &str) -> Result<Arc<Entry>, ApiError> {
        self.map()
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("no game '{id}' (it may have been evicted)")))
    }

    /// Removes the game `id`.
    ///
    /// # Errors
    /// No such game (404).
    pub fn remove(&self, id: &str) -> Result<(), ApiError> {
        self.map().remove(id).map(|_| ()).ok_or_else(|| ApiError::not_found(format!("no game '{id}'")))
    }

    /// Games held now.
    pub fn len(&self) -> usize {
        self.map().len()
    }

    /// Whether no game is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A game as the API answers it; see docs/api.md.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GameView {
    /// The game's id.
    pub id: String,
    /// `COLSxROWS`.
    pub size: String,
    /// The position now (notation).
    pub position: String,
    /// `black` or `white`.
    pub to_move: String,
    /// The moves played (notation).
    pub moves: Vec<String>,
    /// The legal moves now.
    pub legal: Vec<String>,
    /// The last move, if any.
    pub last_move: Option<String>,
    /// Whether the side to move has no move.
    pub over: bool,
    /// The winner once over.
    pub winner: Option<String>,
    /// The person's colour.
    pub human: String,
    /// The opponent, as created.
    pub opponent: serde_json::Value,
    /// Black's winning chance by ply, where the engine looked.
    pub estimates: Vec<Option<f32>>,
    /// The game record.
    pub record: String,
    /// Whether a search runs on the game now.
    pub searching: bool,
}

impl GameView {
    /// The view of `state` under `id`.
    pub fn new(id: &str, state: &GameState, searching: bool, engines: &Engines) -> GameView {
        let position = state.game.position();
        let size = position.size();
        let text = |mv: &konane_rules::Move| mv.to_text(size);
        GameView {
            id: id.to_string(),
            size: size.to_string(),
            position: position.to_string(),
            to_move: position.side_to_move().to_string(),
            moves: state.game.moves().iter().map(text).collect(),
            legal: position.moves().iter().map(text).collect(),
            last_move: state.game.last_move().as_ref().map(text),
            over: position.is_over(),
            winner: position.winner().map(|c| c.to_string()),
            human: state.human.to_string(),
            opponent: opponent_json(&state.opponent, engines),
            estimates: state.estimates.clone(),
            record: state.game.record().map(|r| r.to_string()).unwrap_or_default(),
            searching,
        }
    }
}

/// An opponent as the API names it.
pub fn opponent_json(opponent: &Opponent, engines: &Engines) -> serde_json::Value {
    match opponent {
        Opponent::Network { model, sims } => {
            serde_json::json!({ "kind": "network", "sims": sims, "model": engines.models()[*model].name })
        }
        Opponent::AlphaBeta { ms } => serde_json::json!({ "kind": "alphabeta", "ms": ms }),
        Opponent::Greedy => serde_json::json!({ "kind": "greedy" }),
        Opponent::Random => serde_json::json!({ "kind": "random" }),
        Opponent::Human => serde_json::json!({ "kind": "human" }),
    }
}
