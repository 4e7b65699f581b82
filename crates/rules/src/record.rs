//! Game records: `8x8 e5 e4 c5-e5 ... ; result B`, one game per line.

use std::fmt;
use std::str::FromStr;

use crate::error::ParseError;
use crate::geometry::{Color, Size};
use crate::moves::Move;
use crate::position::Position;

/// A game from the start position of its size: the moves and, if the game
/// is decided, the winner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameRecord {
    /// Board size; the game starts from its start position.
    pub size: Size,
    /// Moves in order.
    pub moves: Vec<Move>,
    /// The winner, if the record states one.
    pub result: Option<Color>,
}

impl GameRecord {
    /// An empty game on `size`.
    pub fn new(size: Size) -> GameRecord {
        GameRecord { size, moves: Vec::new(), result: None }
    }

    /// The position after all the moves (they were checked when read or played).
    pub fn final_position(&self) -> Position {
        let mut position = Position::start(self.size);
        for &mv in &self.moves {
            position.play_unchecked(mv);
        }
        position
    }
}

impl fmt::Display for GameRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.size)?;
        for mv in &self.moves {
            write!(f, " {}", mv.display(self.size))?;
        }
        if let Some(winner) = self.result {
            write!(f, " ; result {}", winner.letter().to_ascii_uppercase())?;
        }
        Ok(())
    }
}

impl FromStr for GameRecord {
    type Err = ParseError;

    /// Reads a record and replays it: every move must be legal, and a stated
    /// result must agree with a finished game.
    fn from_str(text: &str) -> Result<GameRecord, ParseError> {
        let bad = |why: String| ParseError::Record(why);
        let (game, result) = match text.split_once(';') {
            Some((game, tail)) => {
                let winner = match tail.trim() {
                    "result B" => Color::Black,
                    "result W" => Color::White,
                    other => {
                        return Err(bad(format!("'; {other}': the tail must be '; result B' or '; result W'")));
                    }
                };
                (game, Some(winner))
            }
            None => (text, None),
        };
        let mut tokens = game.split_whitespace();
        let size: Size = tokens.next().ok_or_else(|| bad("empty record".into()))?.parse()?;
        let mut position = Position::start(size);
        let mut record = GameRecord::new(size);
        for (ply, token) in tokens.enumerate() {
            let mv = position.parse_legal_move(token).map_err(|e| bad(format!("move {} ('{token}'): {e}", ply + 1)))?;
            position.play_unchecked(mv);
            record.moves.push(mv);
        }
        match (result, position.winner()) {
            (Some(stated), Some(actual)) if stated != actual => {
                return Err(bad(format!("the record says {stated} won but the moves end in a win for {actual}")));
            }
            // The notation gives results of finished games only.
            (Some(stated), None) => {
                return Err(bad(format!(
                    "the record says {stated} won but the game is not over ({} has {} legal moves)",
                    position.side_to_move(),
                    position.count_moves()
                )));
            }
            _ => {}
        }
        record.result = result;
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_replay() {
        let text = "4x4 b2 b3 d2-b2";
        let record: GameRecord = text.parse().unwrap();
        assert_eq!(record.to_string(), text);
        assert_eq!(record.moves.len(), 3);
    }

    #[test]
    fn bad_records_say_which_move() {
        let err = "4x4 b2 b3 a1-a5".parse::<GameRecord>().unwrap_err().to_string();
        assert!(err.contains("move 3"), "{err}");
        let err = "4x4 b2 ; result X".parse::<GameRecord>().unwrap_err().to_string();
        assert!(err.contains("result B"), "{err}");
        assert!("".parse::<GameRecord>().is_err());
        // A result belongs to a finished game only (found by the fuzz target).
        let err = "3x11 a1 b1 ; result W".parse::<GameRecord>().unwrap_err().to_string();
        assert!(err.contains("not over"), "{err}");
    }
}
