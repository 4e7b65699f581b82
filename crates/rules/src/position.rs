//! [`Position`]: any board size behind one type, with the notation's
//! position strings, checked moves and a readable drawing.
//!
//! The position picks the narrowest bit set that holds its board, so small
//! boards run on one machine word; algorithms that want a monomorphic inner
//! loop (perft, the solver) dispatch once through [`BoardVisitor`].

use std::fmt;
use std::str::FromStr;

use crate::bits::{Bits, Wide};
use crate::board::{Board, Phase};
use crate::error::{IllegalMove, ParseError};
use crate::geometry::{Cell, Color, MAX_SIDE, Size};
use crate::moves::{Move, MoveList};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Repr {
    /// Up to 64 cells (8x8).
    Word(Board<u64>),
    /// Up to 128 cells (11x11, 8x16).
    Double(Board<u128>),
    /// Up to 256 cells (16x16, 14x17).
    Quad(Board<Wide<4>>),
    /// Up to 448 cells (20x20, 13x20).
    Septa(Board<Wide<7>>),
}

macro_rules! dispatch {
    ($repr:expr, $board:ident => $body:expr) => {
        match $repr {
            Repr::Word($board) => $body,
            Repr::Double($board) => $body,
            Repr::Quad($board) => $body,
            Repr::Septa($board) => $body,
        }
    };
}

/// A generic algorithm run on the concrete board inside a [`Position`].
pub trait BoardVisitor {
    /// What the algorithm returns.
    type Output;
    /// Runs on the board.
    fn visit<B: Bits>(self, board: &Board<B>) -> Self::Output;
}

/// A Kōnane position of any size from 1x1 to 20x20: stones and side to move.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Position(Repr);

impl Position {
    /// A position of `size` with stones from `stone_at`, `side` to move.
    /// Any arrangement is accepted (symmetry transforms and puzzles need them).
    pub fn from_fn(size: Size, side: Color, stone_at: impl FnMut(Cell) -> Option<Color>) -> Position {
        let cells = size.cells();
        Position(if cells <= 64 {
            Repr::Word(Board::from_fn(size, side, stone_at))
        } else if cells <= 128 {
            Repr::Double(Board::from_fn(size, side, stone_at))
        } else if cells <= 256 {
            Repr::Quad(Board::from_fn(size, side, stone_at))
        } else {
            Repr::Septa(Board::from_fn(size, side, stone_at))
        })
    }

    /// The starting position: full board, black to move.
    pub fn start(size: Size) -> Position {
        Position::from_fn(size, Color::Black, |cell| Some(size.start_color(cell)))
    }

    /// Runs a generic algorithm on the concrete board.
    pub fn visit<V: BoardVisitor>(&self, visitor: V) -> V::Output {
        dispatch!(&self.0, b => visitor.visit(b))
    }

    /// The board size.
    pub fn size(&self) -> Size {
        dispatch!(&self.0, b => b.size())
    }

    /// Who moves next.
    pub fn side_to_move(&self) -> Color {
        dispatch!(&self.0, b => b.side_to_move())
    }

    /// Zobrist hash of stones and side to move.
    pub fn hash(&self) -> u64 {
        dispatch!(&self.0, b => b.hash())
    }

    /// Opening or capturing phase.
    pub fn phase(&self) -> Phase {
        dispatch!(&self.0, b => b.phase())
    }

    /// What stands on `cell`.
    pub fn stone_at(&self, cell: Cell) -> Option<Color> {
        dispatch!(&self.0, b => b.stone_at(cell))
    }

    /// Number of stones of `color`.
    pub fn stone_count(&self, color: Color) -> u32 {
        dispatch!(&self.0, b => b.stones(color).count())
    }

    /// Number of stones of both colours: how far into the endgame a
    /// position is (the solver's reach is measured in it).
    pub fn stones(&self) -> u32 {
        dispatch!(&self.0, b => (b.stones(Color::Black) | b.stones(Color::White)).count())
    }

    /// Fills `moves` with every legal move.
    pub fn legal_moves(&self, moves: &mut MoveList) {
        dispatch!(&self.0, b => b.generate(moves))
    }

    /// Every legal move, in a new list (convenience for non-hot paths).
    pub fn moves(&self) -> MoveList {
        let mut moves = MoveList::new();
        self.legal_moves(&mut moves);
        moves
    }

    /// Number of legal moves.
    pub fn count_moves(&self) -> u32 {
        dispatch!(&self.0, b => b.count_moves())
    }

    /// Jumps `color` would have if it were to move (mobility; 0 on a full board).
    pub fn jumps_for(&self, color: Color) -> u32 {
        dispatch!(&self.0, b => b.jumps_for(color))
    }

    /// Whether the side to move has no legal move, and so has lost.
    pub fn is_over(&self) -> bool {
        !dispatch!(&self.0, b => b.has_moves())
    }

    /// The winner, once the game is over.
    pub fn winner(&self) -> Option<Color> {
        self.is_over().then(|| self.side_to_move().opposite())
    }

    /// Plays a legal move (from [`Position::legal_moves`]) without checking it.
    pub fn play_unchecked(&mut self, mv: Move) {
        dispatch!(&mut self.0, b => b.play_unchecked(mv))
    }

    /// Takes back `mv`, which must be the last move played.
    pub fn undo_unchecked(&mut self, mv: Move) {
        dispatch!(&mut self.0, b => b.undo_unchecked(mv))
    }

    /// Whether `mv` is legal here.
    pub fn is_legal(&self, mv: Move) -> bool {
        self.moves().contains(&mv)
    }

    /// Plays `mv` if it is legal.
    ///
    /// # Errors
    /// The move is not legal here; the position is unchanged.
    pub fn play(&mut self, mv: Move) -> Result<(), IllegalMove> {
        if !self.is_legal(mv) {
            return Err(self.illegal(mv));
        }
        self.play_unchecked(mv);
        Ok(())
    }

    /// Reads a move in notation, checking only that it names cells of this
    /// board (see [`Position::parse_legal_move`] for legality too).
    ///
    /// # Errors
    /// Malformed text or cells off the board.
    pub fn parse_move(&self, text: &str) -> Result<Move, ParseError> {
        let size = self.size();
        let wrap = |e: ParseError| ParseError::Move(format!("'{text}': {e}"));
        match text.split_once('-') {
            None => Ok(Move::Remove(size.parse_cell(text).map_err(wrap)?)),
            Some((from, to)) => {
                let from = size.parse_cell(from).map_err(wrap)?;
                let to = size.parse_cell(to).map_err(wrap)?;
                Ok(Move::Jump { from, to })
            }
        }
    }

    /// Reads a move in notation and checks that it is legal here.
    ///
    /// # Errors
    /// Malformed text, or a move the rules do not allow, with the reason.
    pub fn parse_legal_move(&self, text: &str) -> Result<Move, MoveError> {
        let mv = self.parse_move(text)?;
        if self.is_legal(mv) { Ok(mv) } else { Err(MoveError::Illegal(self.illegal(mv))) }
    }

    /// Explains why `mv` is illegal here.
    fn illegal(&self, mv: Move) -> IllegalMove {
        let size = self.size();
        let side = self.side_to_move();
        let name = |c: Cell| size.cell_name(c).to_string();
        let reason = if self.is_over() {
            format!("{side} has no legal move: the game is over")
        } else {
            match (self.phase(), mv) {
                (Phase::Capturing, Move::Remove(_)) => {
                    "removals are only played in the opening; jumps are FROM-TO".into()
                }
                (Phase::BlackOpening, Move::Jump { .. }) => {
                    "black opens by removing a stone from a middle or corner cell".into()
                }
                (Phase::WhiteOpening, Move::Jump { .. }) => {
                    "white opens by removing a stone next to the empty cell".into()
                }
                (_, Move::Remove(cell)) if self.stone_at(cell) != Some(side) => {
                    format!("no {side} stone on {}", name(cell))
                }
                (Phase::BlackOpening, Move::Remove(cell)) => {
                    format!("{} is neither a middle nor a corner cell", name(cell))
                }
                (_, Move::Remove(cell)) => format!("{} is not next to the empty cell", name(cell)),
                (_, Move::Jump { from, .. }) if self.stone_at(from) != Some(side) => {
                    format!("no {side} stone on {}", name(from))
                }
                (_, Move::Jump { from, to }) => format!(
                    "{}-{} is not a jump over {} stones along one row or column into empty cells",
                    name(from),
                    name(to),
                    side.opposite()
                ),
            }
        };
        IllegalMove { mv: mv.to_text(size), position: self.to_string(), reason }
    }

    /// A drawing for people: rows top-down with numbers, columns lettered,
    /// `x`/`o` for black/white stones, `.` for empty cells; `marked` cells
    /// (say, the last move) are bracketed.
    pub fn pretty(&self, marked: &[Cell]) -> String {
        let size = self.size();
        let mut out = String::new();
        let letters: String = (0..size.cols()).map(|c| format!(" {} ", (b'a' + c as u8) as char)).collect();
        for row in (0..size.rows()).rev() {
            out += &format!("{:>2} ", row + 1);
            for col in 0..size.cols() {
                let cell = size.cell(col, row);
                let stone = match self.stone_at(cell) {
                    Some(Color::Black) => 'x',
                    Some(Color::White) => 'o',
                    None => '.',
                };
                if marked.contains(&cell) {
                    out += &format!("[{stone}]");
                } else {
                    out += &format!(" {stone} ");
                }
            }
            out.push('\n');
        }
        out += &format!("   {letters}\n");
        out += &format!("{} to move (x = black, o = white)\n", self.side_to_move());
        out
    }
}

/// A move that could not be read or is not legal.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum MoveError {
    /// Not a move in notation on this board.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A move the rules do not allow here.
    #[error(transparent)]
    Illegal(#[from] IllegalMove),
}

impl fmt::Display for Position {
    /// The notation's position string: `WBWB/BWBW/WBWB/BWBW b`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = self.size();
        for row in (0..size.rows()).rev() {
            for col in 0..size.cols() {
                let c = match self.stone_at(size.cell(col, row)) {
                    Some(Color::Black) => 'B',
                    Some(Color::White) => 'W',
                    None => '.',
                };
                write!(f, "{c}")?;
            }
            if row > 0 {
                write!(f, "/")?;
            }
        }
        write!(f, " {}", self.side_to_move().letter())
    }
}

impl FromStr for Position {
    type Err = ParseError;

    /// Reads a position string; the error names what is wrong and where.
    fn from_str(text: &str) -> Result<Position, ParseError> {
        let bad = |why: String| ParseError::Position(format!("'{text}': {why}"));
        let (board, side) =
            text.split_once(' ').ok_or_else(|| bad("missing side to move: the rows, one space, then b or w".into()))?;
        let side = match side {
            "b" => Color::Black,
            "w" => Color::White,
            other => return Err(bad(format!("side to move must be b or w, found '{other}'"))),
        };
        let rows: Vec<&str> = board.split('/').collect();
        let cols = rows[0].chars().count();
        if rows.len() > MAX_SIDE as usize {
            return Err(bad(format!("{} rows; at most {MAX_SIDE}", rows.len())));
        }
        if cols == 0 || cols > MAX_SIDE as usize {
            return Err(bad(format!("the top row has {cols} cells; rows have 1 to {MAX_SIDE}")));
        }
        let mut stones = Vec::with_capacity(rows.len() * cols);
        for (i, row) in rows.iter().enumerate().rev() {
            let number = rows.len() - i;
            let row_stones: Vec<char> = row.chars().collect();
            if row_stones.len() != cols {
                return Err(bad(format!("row {number} has {} cells but the top row has {cols}", row_stones.len())));
            }
            for (col, c) in row_stones.into_iter().enumerate() {
                stones.push(match c {
                    'B' => Some(Color::Black),
                    'W' => Some(Color::White),
                    '.' => None,
                    other => {
                        let cell = format!("{}{}", (b'a' + col as u8) as char, number);
                        return Err(bad(format!("'{other}' at {cell}; cells are B, W or .")));
                    }
                });
            }
        }
        let size = Size::new(cols, rows.len())?;
        Ok(Position::from_fn(size, side, |cell| stones[cell.index()]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_string_matches_the_spec() {
        let size: Size = "4x4".parse().unwrap();
        assert_eq!(Position::start(size).to_string(), "WBWB/BWBW/WBWB/BWBW b");
    }

    #[test]
    fn position_errors_name_the_problem() {
        let cases = [
            ("WBWB/BWBW", "missing side"),
            ("WBWB/BWB b", "row 1 has 3 cells"),
            ("WBXB/BWBW b", "'X' at c2"),
            ("WBWB/BWBW x", "b or w"),
            (" b", "top row has 0"),
            ("WBWB/BWBW  b", "b or w"),
        ];
        for (text, expected) in cases {
            let err = text.parse::<Position>().unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
        let wide = format!("{} b", "B".repeat(21));
        assert!(wide.parse::<Position>().unwrap_err().to_string().contains("1 to 20"));
        let tall = format!("{} b", vec!["B"; 21].join("/"));
        assert!(tall.parse::<Position>().unwrap_err().to_string().contains("21 rows"));
    }

    #[test]
    fn illegal_moves_say_why() {
        let mut pos = Position::start("4x4".parse().unwrap());
        let err = pos.parse_legal_move("b1").unwrap_err().to_string();
        assert!(err.contains("no black stone on b1"), "{err}");
        let err = pos.parse_legal_move("a3").unwrap_err().to_string();
        assert!(err.contains("neither a middle nor a corner"), "{err}");
        let err = pos.parse_legal_move("a1-a3").unwrap_err().to_string();
        assert!(err.contains("removing"), "{err}");
        let err = pos.parse_legal_move("z9").unwrap_err().to_string();
        assert!(err.contains("bad move"), "{err}");
        let before = pos;
        assert!(pos.play(pos.parse_move("b2").unwrap()).is_ok());
        assert_ne!(pos, before);
    }

    #[test]
    fn phases_follow_the_settled_edge_cases() {
        let full_white: Position = "WB/BW w".parse().unwrap();
        assert_eq!(full_white.phase(), Phase::BlackOpening);
        assert!(full_white.is_over());
        let one_hole_black: Position = "W./BW b".parse().unwrap();
        assert_eq!(one_hole_black.phase(), Phase::Capturing);
        let one_hole_white: Position = "W./BW w".parse().unwrap();
        assert_eq!(one_hole_white.phase(), Phase::WhiteOpening);
        assert_eq!(one_hole_white.count_moves(), 2); // a2 and b1
    }
}
