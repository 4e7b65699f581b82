//! The bitboard position, generic over the bit-set width.
//!
//! A jump is a shift: with `s` the index step of a direction, the stones that
//! can jump one enemy stone are `own & (opp >> s) & (empty >> 2s)`, and the
//! landings are that set shifted by `2s`. A multi-jump keeps shifting the
//! landings while they still find an enemy stone and an empty cell beyond.
//! Column masks stop horizontal jumps from wrapping into the next row.

use crate::bits::Bits;
use crate::geometry::{Cell, Color, Size};
use crate::moves::{Move, MoveList};
use crate::zobrist;

/// Which part of the game a position is in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// Full board: black removes a stone from a middle or corner cell (a full
    /// board with white to move is here too; white has no move and has lost).
    BlackOpening,
    /// One empty cell, white to move: white removes a stone next to it.
    WhiteOpening,
    /// Every other position: jumps.
    Capturing,
}

/// One of the four jump directions, as an index step and the mask of cells
/// a jump in that direction may start from.
#[derive(Clone, Copy, Debug)]
struct Direction<B> {
    step: u32,
    /// True when the step goes towards higher indices (east, north).
    up: bool,
    /// Cells from which a one-stone jump stays on the board (for multi-jumps
    /// the mask is applied again at every landing).
    start_mask: B,
}

impl<B: Bits> Direction<B> {
    #[inline(always)]
    fn forward(&self, set: B, times: u32) -> B {
        if self.up { set.shift_up(self.step * times) } else { set.shift_down(self.step * times) }
    }

    #[inline(always)]
    fn backward(&self, set: B, times: u32) -> B {
        if self.up { set.shift_down(self.step * times) } else { set.shift_up(self.step * times) }
    }

    /// Cells from which a stone of the mover can capture one step in this
    /// direction (ignoring whose stone stands there).
    #[inline(always)]
    fn jump_sources(&self, opp: B, empty: B) -> B {
        self.start_mask & self.backward(opp, 1) & self.backward(empty, 2)
    }
}

/// A position on a board whose cells fit in `B`.
///
/// Plain data, cheap to copy: search can copy-make or make/unmake.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Board<B: Bits> {
    black: B,
    white: B,
    on_board: B,
    east_start: B,
    west_start: B,
    /// Middle and corner cells: where black's opening removal may be.
    opening_cells: B,
    size: Size,
    side: Color,
    hash: u64,
}

impl<B: Bits> Board<B> {
    /// A board of `size` with the stones given by `stone_at`, `side` to move.
    ///
    /// # Panics
    /// If `size` does not fit in `B` (callers pick `B` from the size).
    pub fn from_fn(size: Size, side: Color, mut stone_at: impl FnMut(Cell) -> Option<Color>) -> Self {
        assert!(size.cells() <= B::CAPACITY, "{size} does not fit {} bits", B::CAPACITY);
        let mut board = Board {
            black: B::EMPTY,
            white: B::EMPTY,
            on_board: B::EMPTY,
            east_start: B::EMPTY,
            west_start: B::EMPTY,
            opening_cells: B::EMPTY,
            size,
            side,
            hash: zobrist::size(size) ^ if side == Color::White { zobrist::WHITE_TO_MOVE } else { 0 },
        };
        for cell in size.opening_cells() {
            board.opening_cells |= B::single(cell.index());
        }
        for cell in size.all_cells() {
            let bit = B::single(cell.index());
            board.on_board |= bit;
            let col = size.col(cell);
            if col + 2 < size.cols() {
                board.east_start |= bit;
            }
            if col >= 2 {
                board.west_start |= bit;
            }
            match stone_at(cell) {
                Some(Color::Black) => board.black |= bit,
                Some(Color::White) => board.white |= bit,
                None => continue,
            }
            board.hash ^= zobrist::stone(stone_at(cell).unwrap(), cell.index());
        }
        board
    }

    /// The starting position of `size`: full board, black to move.
    pub fn start(size: Size) -> Self {
        Board::from_fn(size, Color::Black, |cell| Some(size.start_color(cell)))
    }

    /// The board size.
    #[inline]
    pub fn size(&self) -> Size {
        self.size
    }

    /// Who moves next.
    #[inline]
    pub fn side_to_move(&self) -> Color {
        self.side
    }

    /// Zobrist hash of stones and side to move, kept incrementally.
    #[inline]
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The stones of `color`.
    #[inline]
    pub fn stones(&self, color: Color) -> B {
        match color {
            Color::Black => self.black,
            Color::White => self.white,
        }
    }

    /// The empty cells.
    #[inline]
    pub fn empty(&self) -> B {
        self.on_board & !(self.black | self.white)
    }

    /// What stands on `cell`.
    #[inline]
    pub fn stone_at(&self, cell: Cell) -> Option<Color> {
        if self.black.contains(cell.index()) {
            Some(Color::Black)
        } else if self.white.contains(cell.index()) {
            Some(Color::White)
        } else {
            None
        }
    }

    /// The phase of the game, from the number of empty cells and the side to move.
    #[inline]
    pub fn phase(&self) -> Phase {
        let empty = self.empty();
        if empty.is_empty() {
            Phase::BlackOpening
        } else if self.side == Color::White && empty.count() == 1 {
            Phase::WhiteOpening
        } else {
            Phase::Capturing
        }
    }

    #[inline(always)]
    fn own_opp(&self) -> (B, B) {
        match self.side {
            Color::Black => (self.black, self.white),
            Color::White => (self.white, self.black),
        }
    }

    #[inline(always)]
    fn directions(&self) -> [Direction<B>; 4] {
        let cols = self.size.cols() as u32;
        [
            Direction { step: 1, up: true, start_mask: self.east_start },
            Direction { step: 1, up: false, start_mask: self.west_start },
            Direction { step: cols, up: true, start_mask: self.on_board },
            Direction { step: cols, up: false, start_mask: self.on_board },
        ]
    }

    /// The opening removals available, as a set of cells.
    fn removals(&self) -> B {
        match self.phase() {
            Phase::BlackOpening if self.side == Color::Black => self.opening_cells & self.black,
            Phase::WhiteOpening => {
                let mut hole = self.empty();
                let hole = hole.pop_lowest().expect("one empty cell");
                let (cols, col) = (self.size.cols(), hole % self.size.cols());
                let mut next_to = B::EMPTY;
                if col > 0 {
                    next_to |= B::single(hole - 1);
                }
                if col + 1 < cols {
                    next_to |= B::single(hole + 1);
                }
                if hole >= cols {
                    next_to |= B::single(hole - cols);
                }
                if hole + cols < self.size.cells() {
                    next_to |= B::single(hole + cols);
                }
                next_to & self.white
            }
            _ => B::EMPTY,
        }
    }

    /// Appends every legal move to `moves` (which it clears first).
    #[inline]
    pub fn generate(&self, moves: &mut MoveList) {
        moves.clear();
        if self.phase() != Phase::Capturing {
            let mut cells = self.removals();
            while let Some(cell) = cells.pop_lowest() {
                moves.push(Move::Remove(Cell(cell as u16)));
            }
            return;
        }
        let (own, opp) = self.own_opp();
        let empty = self.empty();
        for dir in self.directions() {
            let sources = dir.jump_sources(opp, empty);
            let mut landings = dir.forward(own & sources, 2);
            let mut hops = 1;
            while !landings.is_empty() {
                let mut each = landings;
                while let Some(to) = each.pop_lowest() {
                    let back = (2 * hops * dir.step) as usize;
                    let from = if dir.up { to - back } else { to + back };
                    // SAFETY of capacity: see MAX_MOVES; push panics rather than overflow.
                    moves.push(Move::Jump { from: Cell(from as u16), to: Cell(to as u16) });
                }
                landings = dir.forward(landings & sources, 2);
                hops += 1;
            }
        }
    }

    /// Number of legal moves, counted without listing them (perft's last ply).
    #[inline]
    pub fn count_moves(&self) -> u32 {
        if self.phase() != Phase::Capturing {
            return self.removals().count();
        }
        let (own, opp) = self.own_opp();
        self.count_jumps(own, opp)
    }

    /// Number of jumps `color` would have if it were to move: the mobility
    /// term of the classic evaluation (0 on a full board).
    #[inline]
    pub fn jumps_for(&self, color: Color) -> u32 {
        self.count_jumps(self.stones(color), self.stones(color.opposite()))
    }

    #[inline(always)]
    fn count_jumps(&self, own: B, opp: B) -> u32 {
        let empty = self.empty();
        let mut total = 0;
        for dir in self.directions() {
            let sources = dir.jump_sources(opp, empty);
            let mut landings = dir.forward(own & sources, 2);
            while !landings.is_empty() {
                total += landings.count();
                landings = dir.forward(landings & sources, 2);
            }
        }
        total
    }

    /// Whether the side to move has any legal move (it has lost otherwise).
    #[inline]
    pub fn has_moves(&self) -> bool {
        if self.phase() != Phase::Capturing {
            return !self.removals().is_empty();
        }
        let (own, opp) = self.own_opp();
        let empty = self.empty();
        self.directions().iter().any(|dir| !(own & dir.jump_sources(opp, empty)).is_empty())
    }

    /// The same board with only the stones on `cells` (the rest taken off):
    /// one region of a position, to play out alone.
    pub(crate) fn keep_only(&self, cells: B) -> Board<B> {
        let mut board = *self;
        for color in [Color::Black, Color::White] {
            let mut gone = board.stones(color) & !cells;
            while let Some(cell) = gone.pop_lowest() {
                board.toggle(color, cell);
            }
        }
        board
    }

    /// The same stones with `side` to move.
    pub(crate) fn with_side(&self, side: Color) -> Board<B> {
        let mut board = *self;
        if side != board.side {
            board.side = side;
            board.hash ^= zobrist::WHITE_TO_MOVE;
        }
        board
    }

    #[inline(always)]
    fn toggle(&mut self, color: Color, cell: usize) {
        let bit = B::single(cell);
        match color {
            Color::Black => self.black ^= bit,
            Color::White => self.white ^= bit,
        }
        self.hash ^= zobrist::stone(color, cell);
    }

    /// Plays a move known to be legal (from [`Board::generate`]); anything
    /// else leaves the board in an unspecified but memory-safe state.
    #[inline]
    pub fn play_unchecked(&mut self, mv: Move) {
        let mover = self.side;
        self.apply(mover, mv);
        self.side = mover.opposite();
        self.hash ^= zobrist::WHITE_TO_MOVE;
    }

    /// Takes back `mv`, the last move played: stones, side and hash return exactly.
    #[inline]
    pub fn undo_unchecked(&mut self, mv: Move) {
        let mover = self.side.opposite();
        // Every change of a move is a toggle, so applying it again undoes it.
        self.apply(mover, mv);
        self.side = mover;
        self.hash ^= zobrist::WHITE_TO_MOVE;
    }

    #[inline(always)]
    fn apply(&mut self, mover: Color, mv: Move) {
        let size = self.size;
        mv.toggles(size, mover, |color, cell| self.toggle(color, cell));
    }
}
