//! A second, deliberately naive implementation of the Kōnane rules, written
//! straight from `docs/spec/notation.md` and sharing no code with the
//! bitboard engine except the plain data types used to name moves
//! ([`Move`], [`Cell`], [`Color`]).
//!
//! The board is a `Vec<Option<Color>>` indexed `row * cols + col`; every
//! question is answered by looking at cells one at a time, so it is slow and
//! obviously right. The tests compare it against [`Position`], and the
//! solver's proofs are checked with it ([`crate::proof`]), so that a bug in
//! the fast engine cannot vouch for itself.

use crate::{Cell, Color, Move, Position, Size};

/// Which part of the game a naive position is in (mirrors the spec's words).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NaivePhase {
    /// No empty cell (whoever is to move).
    BlackOpening,
    /// Exactly one empty cell and white to move.
    WhiteOpening,
    /// Everything else.
    Capturing,
}

/// A position: a grid of cells and the side to move.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Naive {
    /// Columns (the board's width).
    pub cols: usize,
    /// Rows (its height).
    pub rows: usize,
    /// `cells[row * cols + col]`, row 0 is row `1` (the bottom).
    pub cells: Vec<Option<Color>>,
    /// The side to move.
    pub side: Color,
}

impl Naive {
    /// The starting board: black where `col + row` is even, white elsewhere,
    /// black to move.
    pub fn start(cols: usize, rows: usize) -> Naive {
        let mut cells = Vec::new();
        for row in 0..rows {
            for col in 0..cols {
                cells.push(Some(if (col + row) % 2 == 0 { Color::Black } else { Color::White }));
            }
        }
        Naive { cols, rows, cells, side: Color::Black }
    }

    /// Copies the stones and side of a fast position.
    pub fn from_position(position: &Position) -> Naive {
        let size = position.size();
        let (cols, rows) = (size.cols(), size.rows());
        let mut cells = Vec::new();
        for row in 0..rows {
            for col in 0..cols {
                cells.push(position.stone_at(Cell((row * cols + col) as u16)));
            }
        }
        Naive { cols, rows, cells, side: position.side_to_move() }
    }

    /// The same position in the fast engine.
    pub fn to_position(&self) -> Position {
        let size = Size::new(self.cols, self.rows).unwrap();
        Position::from_fn(size, self.side, |cell| self.cells[cell.index()])
    }

    /// The board size.
    pub fn size(&self) -> Size {
        Size::new(self.cols, self.rows).unwrap()
    }

    /// The position string of the notation, built by hand.
    pub fn to_notation(&self) -> String {
        let mut rows = Vec::new();
        for row in (0..self.rows).rev() {
            let mut text = String::new();
            for col in 0..self.cols {
                text.push(match self.get(col as i64, row as i64) {
                    Some(Some(Color::Black)) => 'B',
                    Some(Some(Color::White)) => 'W',
                    _ => '.',
                });
            }
            rows.push(text);
        }
        let side = if self.side == Color::Black { "b" } else { "w" };
        format!("{} {}", rows.join("/"), side)
    }

    fn cell(&self, col: i64, row: i64) -> Cell {
        Cell((row as usize * self.cols + col as usize) as u16)
    }

    fn on_board(&self, col: i64, row: i64) -> bool {
        col >= 0 && row >= 0 && (col as usize) < self.cols && (row as usize) < self.rows
    }

    /// `None` off the board, `Some(stone)` on it.
    fn get(&self, col: i64, row: i64) -> Option<Option<Color>> {
        if self.on_board(col, row) { Some(self.cells[row as usize * self.cols + col as usize]) } else { None }
    }

    fn set(&mut self, col: i64, row: i64, stone: Option<Color>) {
        assert!(self.on_board(col, row));
        self.cells[row as usize * self.cols + col as usize] = stone;
    }

    fn col_row(&self, cell: Cell) -> (i64, i64) {
        ((cell.index() % self.cols) as i64, (cell.index() / self.cols) as i64)
    }

    /// Number of empty cells.
    pub fn empty_count(&self) -> usize {
        self.cells.iter().filter(|c| c.is_none()).count()
    }

    /// Number of stones of `color`.
    pub fn stones(&self, color: Color) -> usize {
        self.cells.iter().filter(|&&c| c == Some(color)).count()
    }

    /// The phase, from the spec's wording.
    pub fn phase(&self) -> NaivePhase {
        match self.empty_count() {
            0 => NaivePhase::BlackOpening,
            1 if self.side == Color::White => NaivePhase::WhiteOpening,
            _ => NaivePhase::Capturing,
        }
    }

    /// Whether index `i` of a line of `n` cells is a middle index.
    fn is_middle(i: usize, n: usize) -> bool {
        if n % 2 == 1 { i == (n - 1) / 2 } else { i == n / 2 - 1 || i == n / 2 }
    }

    /// Every legal move, sorted.
    pub fn moves(&self) -> Vec<Move> {
        let mut moves = Vec::new();
        let side = self.side;
        let enemy = side.opposite();
        match self.phase() {
            NaivePhase::BlackOpening => {
                // White to move on a full board has no move at all.
                if side == Color::Black {
                    for row in 0..self.rows {
                        for col in 0..self.cols {
                            let middle = Self::is_middle(col, self.cols) && Self::is_middle(row, self.rows);
                            let corner = (col == 0 || col == self.cols - 1) && (row == 0 || row == self.rows - 1);
                            let (c, r) = (col as i64, row as i64);
                            if (middle || corner) && self.get(c, r) == Some(Some(Color::Black)) {
                                moves.push(Move::Remove(self.cell(c, r)));
                            }
                        }
                    }
                }
            }
            NaivePhase::WhiteOpening => {
                let hole = self.cells.iter().position(|c| c.is_none()).unwrap();
                let (hc, hr) = self.col_row(Cell(hole as u16));
                for (dc, dr) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                    if self.get(hc + dc, hr + dr) == Some(Some(Color::White)) {
                        moves.push(Move::Remove(self.cell(hc + dc, hr + dr)));
                    }
                }
            }
            NaivePhase::Capturing => {
                for row in 0..self.rows as i64 {
                    for col in 0..self.cols as i64 {
                        if self.get(col, row) != Some(Some(side)) {
                            continue;
                        }
                        for (dc, dr) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                            let mut k = 1;
                            loop {
                                let over = (col + (2 * k - 1) * dc, row + (2 * k - 1) * dr);
                                let land = (col + 2 * k * dc, row + 2 * k * dr);
                                if self.get(over.0, over.1) == Some(Some(enemy))
                                    && self.get(land.0, land.1) == Some(None)
                                {
                                    moves.push(Move::Jump { from: self.cell(col, row), to: self.cell(land.0, land.1) });
                                    k += 1;
                                } else {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
        moves.sort();
        moves
    }

    /// Plays a move, checking everything the spec says about it (panics on
    /// an illegal move, so tests fail loudly if a generator emits one).
    pub fn play(&mut self, mv: Move) {
        let side = self.side;
        match mv {
            Move::Remove(cell) => {
                let (c, r) = self.col_row(cell);
                assert_eq!(self.get(c, r), Some(Some(side)), "removal {mv:?}");
                assert_ne!(self.phase(), NaivePhase::Capturing, "removal {mv:?}");
                self.set(c, r, None);
            }
            Move::Jump { from, to } => {
                assert_eq!(self.phase(), NaivePhase::Capturing, "jump {mv:?}");
                let (fc, fr) = self.col_row(from);
                let (tc, tr) = self.col_row(to);
                assert!(fc == tc || fr == tr, "jump {mv:?} not straight");
                let distance = (tc - fc).abs() + (tr - fr).abs();
                assert!(distance >= 2 && distance % 2 == 0, "jump {mv:?} bad distance");
                let (dc, dr) = ((tc - fc).signum(), (tr - fr).signum());
                assert_eq!(self.get(fc, fr), Some(Some(side)), "jump {mv:?} no stone");
                self.set(fc, fr, None);
                let (mut c, mut r) = (fc, fr);
                for _ in 0..distance / 2 {
                    assert_eq!(self.get(c + dc, r + dr), Some(Some(side.opposite())));
                    assert_eq!(self.get(c + 2 * dc, r + 2 * dr), Some(None));
                    self.set(c + dc, r + dr, None);
                    c += 2 * dc;
                    r += 2 * dr;
                }
                self.set(tc, tr, Some(side));
            }
        }
        self.side = side.opposite();
    }

    /// Leaves exactly `depth` plies below this position.
    pub fn perft(&self, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let moves = self.moves();
        if depth == 1 {
            return moves.len() as u64;
        }
        moves
            .into_iter()
            .map(|mv| {
                let mut child = self.clone();
                child.play(mv);
                child.perft(depth - 1)
            })
            .sum()
    }

    /// Perft below each move, sorted by move.
    pub fn divide(&self, depth: u32) -> Vec<(Move, u64)> {
        self.moves()
            .into_iter()
            .map(|mv| {
                let mut child = self.clone();
                child.play(mv);
                (mv, child.perft(depth - 1))
            })
            .collect()
    }
}
