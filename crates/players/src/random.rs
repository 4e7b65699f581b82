//! The uniformly random player: the floor every other player must beat.

use konane_rules::{MoveList, Position};
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;

use crate::{Choice, Limits, Player, PlayerError};

/// Plays a uniformly random legal move.
pub struct RandomPlayer {
    rng: ChaCha8Rng,
    moves: MoveList,
}

impl RandomPlayer {
    /// A random player with its own seed.
    pub fn new(seed: u64) -> RandomPlayer {
        RandomPlayer { rng: ChaCha8Rng::seed_from_u64(seed), moves: MoveList::new() }
    }
}

impl Player for RandomPlayer {
    fn name(&self) -> String {
        "random".into()
    }

    fn limits(&self) -> Limits {
        Limits::default()
    }

    fn choose(&mut self, position: &Position, _limits: &Limits) -> Result<Option<Choice>, PlayerError> {
        position.legal_moves(&mut self.moves);
        Ok(self.moves.choose(&mut self.rng).map(|&mv| Choice::plain(mv)))
    }
}
