//! A game in progress: where it started, the moves since and the position
//! they lead to. What `konane play`, the KTP engine and the coming web board
//! keep of a game, so that moves, undo and records work the same in each.

use konane_rules::{GameRecord, Move, MoveError, Position};

/// A game in progress; see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game {
    start: Position,
    moves: Vec<Move>,
    position: Position,
}

impl Game {
    /// A game from `start` (any position, not only a size's start).
    pub fn new(start: Position) -> Game {
        Game { start, moves: Vec::new(), position: start }
    }

    /// The position now.
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// Where the game started.
    pub fn start(&self) -> &Position {
        &self.start
    }

    /// The moves played since the start, in order.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// The last move played, if any.
    pub fn last_move(&self) -> Option<Move> {
        self.moves.last().copied()
    }

    /// Plays the move `text` names (notation), if it is legal now.
    ///
    /// # Errors
    /// The text names no move, or an illegal one; nothing changes.
    pub fn play_text(&mut self, text: &str) -> Result<Move, MoveError> {
        let mv = self.position.parse_legal_move(text)?;
        self.play_legal(mv);
        Ok(mv)
    }

    /// Plays `mv`, which the caller has checked is legal now.
    pub fn play_legal(&mut self, mv: Move) {
        debug_assert!(self.position.is_legal(mv), "play_legal with an illegal move");
        self.position.play_unchecked(mv);
        self.moves.push(mv);
    }

    /// Takes back the last move; `None` if there is none.
    pub fn undo(&mut self) -> Option<Move> {
        let mv = self.moves.pop()?;
        self.position.undo_unchecked(mv);
        Some(mv)
    }

    /// Takes back moves until `plies` remain; returns how many it took back.
    pub fn undo_to(&mut self, plies: usize) -> usize {
        let taken = self.moves.len().saturating_sub(plies);
        for _ in 0..taken {
            self.undo();
        }
        taken
    }

    /// The game's record (notation.md), with the winner once it is over;
    /// `None` for a game that did not begin at its size's start position,
    /// which a record cannot express.
    pub fn record(&self) -> Option<GameRecord> {
        let size = self.start.size();
        (self.start == Position::start(size)).then(|| GameRecord {
            size,
            moves: self.moves.clone(),
            result: self.position.winner(),
        })
    }
}

#[cfg(test)]
mod tests {
    use konane_rules::Size;

    use super::*;

    #[test]
    fn moves_undo_and_records() {
        let size = Size::new_const(4, 4);
        let mut game = Game::new(Position::start(size));
        assert!(game.play_text("b1").is_err(), "not a black removal cell");
        assert!(game.moves().is_empty());
        let first = game.play_text("b2").unwrap();
        game.play_text("b3").unwrap();
        assert_eq!(game.moves().len(), 2);
        assert_eq!(game.record().unwrap().to_string(), "4x4 b2 b3");
        assert_eq!(game.undo_to(1), 1);
        assert_eq!(game.last_move(), Some(first));
        assert_eq!(game.undo(), Some(first));
        assert_eq!(game.undo(), None);
        assert_eq!(*game.position(), Position::start(size));
        // A game from any other position has no record.
        let mut elsewhere = game.clone();
        elsewhere.play_text("b2").unwrap();
        let from_there = Game::new(*elsewhere.position());
        assert!(from_there.record().is_none());
        assert_eq!(from_there.start(), elsewhere.position());
    }
}
