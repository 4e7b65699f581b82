//! The one-ply greedy player: leave the opponent as few replies as possible.

use konane_rules::{MoveList, Position};
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;

use crate::{Choice, Limits, Player, PlayerError};

/// Plays the move that leaves the opponent the fewest replies (a move that
/// leaves none wins at once), ties broken at random.
pub struct GreedyPlayer {
    rng: ChaCha8Rng,
    moves: MoveList,
    best: Vec<konane_rules::Move>,
}

impl GreedyPlayer {
    /// A greedy player with its own seed for tie-breaks.
    pub fn new(seed: u64) -> GreedyPlayer {
        GreedyPlayer { rng: ChaCha8Rng::seed_from_u64(seed), moves: MoveList::new(), best: Vec::new() }
    }
}

impl Player for GreedyPlayer {
    fn name(&self) -> String {
        "greedy".into()
    }

    fn limits(&self) -> Limits {
        Limits::default()
    }

    fn choose(&mut self, position: &Position, _limits: &Limits) -> Result<Option<Choice>, PlayerError> {
        position.legal_moves(&mut self.moves);
        let mut fewest = u32::MAX;
        self.best.clear();
        for &mv in &self.moves {
            let mut child = *position;
            child.play_unchecked(mv);
            let replies = child.count_moves();
            if replies < fewest {
                fewest = replies;
                self.best.clear();
            }
            if replies == fewest {
                self.best.push(mv);
            }
        }
        let Some(&mv) = self.best.choose(&mut self.rng) else { return Ok(None) };
        let value = (fewest == 0).then_some(1.0);
        Ok(Some(Choice { mv, nodes: self.moves.len() as u64, depth: 1, value }))
    }
}
