//! What several of the rules crate's test files need.

use konane_rules::{Position, Size};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A position reached by `plies` random moves on `size` (or the end of the
/// game, if sooner).
pub fn played(size: Size, plies: usize, seed: u64) -> Position {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut position = Position::start(size);
    for _ in 0..plies {
        let moves = position.moves();
        if moves.is_empty() {
            break;
        }
        position.play_unchecked(moves[rng.random_range(0..moves.len())]);
    }
    position
}
