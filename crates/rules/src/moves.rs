//! Moves and the fixed-capacity move list that move generation fills.

use std::fmt;

use arrayvec::ArrayVec;

use crate::geometry::{Cell, Color, Size};

/// A Kōnane move, in board-local cells (see [`Cell`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Move {
    /// An opening removal of the mover's own stone: `d4`.
    Remove(Cell),
    /// A capture along one row or column, over one or more enemy stones:
    /// `d4-d8` jumps the stones on `d5` and `d7`.
    Jump {
        /// Where the capturing stone starts.
        from: Cell,
        /// Where it lands.
        to: Cell,
    },
}

impl Move {
    /// The move in notation on a board of `size`: `d4`, `d4-d6`.
    pub fn display(self, size: Size) -> MoveText {
        MoveText { mv: self, size }
    }

    /// The move as a string in notation on a board of `size`.
    pub fn to_text(self, size: Size) -> String {
        self.display(size).to_string()
    }

    /// Number of stones this move captures (0 for a removal).
    pub fn captures(self, size: Size) -> usize {
        match self {
            Move::Remove(_) => 0,
            Move::Jump { from, to } => {
                let distance = (size.col(from).abs_diff(size.col(to))) + (size.row(from).abs_diff(size.row(to)));
                distance / 2
            }
        }
    }

    /// Calls `toggle(colour, cell index)` for every stone the move adds or
    /// takes away when `mover` plays it: the removed stone; or the jumping
    /// stone's start and landing cells and each stone it captures. The one
    /// description of a move's effect, for the board and for the hashes
    /// kept beside it.
    #[inline(always)]
    pub(crate) fn toggles(self, size: Size, mover: Color, mut toggle: impl FnMut(Color, usize)) {
        match self {
            Move::Remove(cell) => toggle(mover, cell.index()),
            Move::Jump { from, to } => {
                let (from, to) = (from.index(), to.index());
                toggle(mover, from);
                toggle(mover, to);
                let cols = size.cols();
                let step = if from / cols == to / cols { 1 } else { cols };
                let (low, high) = (from.min(to), from.max(to));
                let mut jumped = low + step;
                while jumped < high {
                    toggle(mover.opposite(), jumped);
                    jumped += 2 * step;
                }
            }
        }
    }
}

/// A move with the board size needed to name its cells.
#[derive(Clone, Copy, Debug)]
pub struct MoveText {
    mv: Move,
    size: Size,
}

impl fmt::Display for MoveText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mv {
            Move::Remove(cell) => write!(f, "{}", self.size.cell_name(cell)),
            Move::Jump { from, to } => {
                write!(f, "{}-{}", self.size.cell_name(from), self.size.cell_name(to))
            }
        }
    }
}

/// Upper bound on the legal moves of any position up to 20x20.
///
/// A jump is fixed by its landing cell and direction (two moves landing on
/// the same cell from the same direction would need the nearer start cell to
/// be both a stone and empty), and the cell it lands next to must hold an
/// enemy stone. So moves <= adjacent (empty, enemy) cell pairs <= edges of
/// the 20x20 grid = 2 * 20 * 19 = 760. Openings have at most 8 removals.
pub const MAX_MOVES: usize = 760;

/// The moves of one position, filled without allocating.
pub type MoveList = ArrayVec<Move, MAX_MOVES>;
