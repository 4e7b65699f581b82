//! Positions for tests and benchmarks: reproducible spreads of openings,
//! midgames and endgames without a random-number crate in the rules.

use crate::geometry::Size;
use crate::position::Position;

/// `count` positions met along games whose `n`-th move is legal move
/// `(7n + 3) mod legal`, a new game starting whenever one ends: openings,
/// midgames and endgames in a fixed order.
pub fn cycled_positions(size: Size, count: usize) -> Vec<Position> {
    let mut out = Vec::with_capacity(count);
    let mut position = Position::start(size);
    let mut ply = 0usize;
    while out.len() < count {
        if position.is_over() {
            position = Position::start(size);
        }
        out.push(position);
        let moves = position.moves();
        position.play_unchecked(moves[(ply * 7 + 3) % moves.len()]);
        ply += 1;
    }
    out
}

/// The position `plies` moves into a game on `size` whose moves `pick`
/// chooses (given the number of legal moves, an index below it); a game
/// that ends sooner is replayed with `pick`'s next choices.
///
/// # Panics
/// If 10,000 games in a row end before `plies` moves.
pub fn midgame(size: Size, plies: usize, mut pick: impl FnMut(usize) -> usize) -> Position {
    for _ in 0..10_000 {
        let mut position = Position::start(size);
        for _ in 0..plies {
            let moves = position.moves();
            if moves.is_empty() {
                break;
            }
            position.play_unchecked(moves[pick(moves.len())]);
        }
        if !position.is_over() {
            return position;
        }
    }
    panic!("no game on {size} lasted {plies} moves in 10,000 tries");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycled_positions_restart_games_and_cover_phases() {
        let size = Size::new_const(4, 4);
        let positions = cycled_positions(size, 40);
        assert_eq!(positions.len(), 40);
        assert!(positions.iter().filter(|p| **p == Position::start(size)).count() >= 2, "games restart");
        assert!(positions.iter().all(|p| !p.is_over()));
    }

    #[test]
    fn midgame_plays_the_picked_moves() {
        let size = Size::new_const(6, 6);
        let position = midgame(size, 6, |_| 0);
        let mut expected = Position::start(size);
        for _ in 0..6 {
            expected.play_unchecked(expected.moves()[0]);
        }
        assert_eq!(position, expected);
    }
}
