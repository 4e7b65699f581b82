//! The symmetries of a board: 8 for a square, 4 for a rectangle.
//!
//! A transform may put stones on cells of the other starting colour; after
//! the opening the rules never look at cell colours, so the result is still
//! a legal game position with the same moves (transformed).

use crate::geometry::{Cell, Size};
use crate::moves::Move;
use crate::position::Position;

/// One symmetry of the board, as a map of (column, row).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Symmetry {
    /// Nothing moves.
    Identity,
    /// Left-right mirror.
    FlipColumns,
    /// Top-bottom mirror.
    FlipRows,
    /// Half turn.
    Rotate180,
    /// Mirror in the a1 diagonal (square boards only).
    Transpose,
    /// Mirror in the other diagonal (square boards only).
    AntiTranspose,
    /// Quarter turn (square boards only).
    Rotate90,
    /// Three quarter turns (square boards only).
    Rotate270,
}

impl Symmetry {
    /// Every symmetry, those valid on rectangles first.
    pub const ALL: [Symmetry; 8] = [
        Symmetry::Identity,
        Symmetry::FlipColumns,
        Symmetry::FlipRows,
        Symmetry::Rotate180,
        Symmetry::Transpose,
        Symmetry::AntiTranspose,
        Symmetry::Rotate90,
        Symmetry::Rotate270,
    ];

    /// The symmetries of a board of `size`: 8 if square, else the 4 that
    /// keep columns and rows apart.
    pub fn of(size: Size) -> &'static [Symmetry] {
        if size.is_square() { &Symmetry::ALL } else { &Symmetry::ALL[..4] }
    }

    /// The transform that undoes this one.
    pub fn inverse(self) -> Symmetry {
        match self {
            Symmetry::Rotate90 => Symmetry::Rotate270,
            Symmetry::Rotate270 => Symmetry::Rotate90,
            other => other,
        }
    }

    /// Where `cell` goes. `size` must be one this symmetry applies to.
    pub fn cell(self, size: Size, cell: Cell) -> Cell {
        debug_assert!(Symmetry::of(size).contains(&self), "{self:?} on {size}");
        let (c, r) = (size.col(cell), size.row(cell));
        let (w, h) = (size.cols() - 1, size.rows() - 1);
        let (c2, r2) = match self {
            Symmetry::Identity => (c, r),
            Symmetry::FlipColumns => (w - c, r),
            Symmetry::FlipRows => (c, h - r),
            Symmetry::Rotate180 => (w - c, h - r),
            Symmetry::Transpose => (r, c),
            Symmetry::AntiTranspose => (h - r, w - c),
            Symmetry::Rotate90 => (r, w - c),
            Symmetry::Rotate270 => (h - r, c),
        };
        size.cell(c2, r2)
    }

    /// The image of `mv`.
    pub fn apply_move(self, size: Size, mv: Move) -> Move {
        match mv {
            Move::Remove(cell) => Move::Remove(self.cell(size, cell)),
            Move::Jump { from, to } => Move::Jump { from: self.cell(size, from), to: self.cell(size, to) },
        }
    }

    /// The image of `position` (same side to move).
    pub fn apply(self, position: &Position) -> Position {
        let size = position.size();
        let inverse = self.inverse();
        Position::from_fn(size, position.side_to_move(), |cell| position.stone_at(inverse.cell(size, cell)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_undoes_every_symmetry() {
        for size in ["5x5", "4x7", "1x3"].map(|s| s.parse::<Size>().unwrap()) {
            for &sym in Symmetry::of(size) {
                for cell in size.all_cells() {
                    assert_eq!(sym.inverse().cell(size, sym.cell(size, cell)), cell, "{sym:?} {size}");
                }
            }
        }
    }

    #[test]
    fn symmetries_are_distinct_permutations_on_square_boards() {
        let size: Size = "4x4".parse().unwrap();
        let images: std::collections::HashSet<Vec<Cell>> =
            Symmetry::ALL.iter().map(|&s| size.all_cells().map(|c| s.cell(size, c)).collect()).collect();
        assert_eq!(images.len(), 8);
    }
}
