//! Board sizes, cells, colours and the cell names of the notation
//! (`docs/spec/notation.md`).

use std::fmt;
use std::str::FromStr;

use crate::error::ParseError;

/// The largest number of columns or rows a board may have.
pub const MAX_SIDE: u8 = 20;

/// A board size, `COLSxROWS` in the notation: `8x8`, `6x7` (6 columns, 7 rows).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Size {
    cols: u8,
    rows: u8,
}

impl Size {
    /// A board of `cols` columns and `rows` rows.
    ///
    /// # Errors
    /// Either side is 0 or more than [`MAX_SIDE`].
    pub fn new(cols: usize, rows: usize) -> Result<Size, ParseError> {
        let ok = |n: usize| (1..=MAX_SIDE as usize).contains(&n);
        if !ok(cols) || !ok(rows) {
            return Err(ParseError::Size(format!("{cols}x{rows} is outside 1x1..{MAX_SIDE}x{MAX_SIDE}")));
        }
        Ok(Size { cols: cols as u8, rows: rows as u8 })
    }

    /// Const constructor for sizes known to be valid (tests, defaults).
    ///
    /// # Panics
    /// At compile time (or run time) when a side is outside 1..=20.
    pub const fn new_const(cols: u8, rows: u8) -> Size {
        assert!(cols >= 1 && cols <= MAX_SIDE && rows >= 1 && rows <= MAX_SIDE);
        Size { cols, rows }
    }

    /// Number of columns.
    #[inline]
    pub const fn cols(self) -> usize {
        self.cols as usize
    }

    /// Number of rows.
    #[inline]
    pub const fn rows(self) -> usize {
        self.rows as usize
    }

    /// Number of cells.
    #[inline]
    pub const fn cells(self) -> usize {
        self.cols as usize * self.rows as usize
    }

    /// Whether the board is square (8 symmetries rather than 4).
    pub const fn is_square(self) -> bool {
        self.cols == self.rows
    }

    /// The cell at column `col` and row `row` (both from 0, `a1` is `(0, 0)`).
    #[inline]
    pub const fn cell(self, col: usize, row: usize) -> Cell {
        debug_assert!(col < self.cols as usize && row < self.rows as usize);
        Cell((row * self.cols as usize + col) as u16)
    }

    /// Column index of `cell` (0 = `a`).
    #[inline]
    pub const fn col(self, cell: Cell) -> usize {
        cell.0 as usize % self.cols as usize
    }

    /// Row index of `cell` (0 = row `1`).
    #[inline]
    pub const fn row(self, cell: Cell) -> usize {
        cell.0 as usize / self.cols as usize
    }

    /// Colour of the stone that stands on `cell` in the starting position.
    pub const fn start_color(self, cell: Cell) -> Color {
        if (self.col(cell) + self.row(cell)).is_multiple_of(2) { Color::Black } else { Color::White }
    }

    /// Every cell, `a1` first, row by row.
    pub fn all_cells(self) -> impl Iterator<Item = Cell> {
        (0..self.cells() as u16).map(Cell)
    }

    /// The cells from which black may make its opening removal: the 1, 2 or
    /// 4 middle cells and the corners, each once, whatever stands on them.
    pub fn opening_cells(self) -> Vec<Cell> {
        let middle = |n: usize| {
            if !n.is_multiple_of(2) { vec![(n - 1) / 2] } else { vec![n / 2 - 1, n / 2] }
        };
        let mut cells = Vec::new();
        for c in middle(self.cols()) {
            for r in middle(self.rows()) {
                cells.push(self.cell(c, r));
            }
        }
        for c in [0, self.cols() - 1] {
            for r in [0, self.rows() - 1] {
                cells.push(self.cell(c, r));
            }
        }
        cells.sort();
        cells.dedup();
        cells
    }

    /// The notation name of `cell`: `a1`, `m20`.
    pub fn cell_name(self, cell: Cell) -> CellName {
        CellName { col: self.col(cell) as u8, row: self.row(cell) as u8 }
    }

    /// Parses a cell name strictly: lowercase column letter, row without
    /// leading zeros, on this board.
    ///
    /// # Errors
    /// Malformed names and cells off the board.
    pub fn parse_cell(self, text: &str) -> Result<Cell, ParseError> {
        let bad = |why: &str| ParseError::Cell(format!("'{text}': {why}"));
        let mut chars = text.chars();
        let letter = chars.next().ok_or_else(|| bad("empty cell name"))?;
        if !letter.is_ascii_lowercase() {
            return Err(bad("a cell starts with a lowercase column letter a..t"));
        }
        let digits = chars.as_str();
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("a cell is a column letter followed by a row number"));
        }
        if digits.starts_with('0') {
            return Err(bad("row numbers start at 1 and have no leading zeros"));
        }
        let col = (letter as u8 - b'a') as usize;
        let row: usize = digits.parse().map_err(|_| bad("row number too large"))?;
        if col >= self.cols() || row > self.rows() {
            return Err(bad(&format!("not on the {self} board")));
        }
        Ok(self.cell(col, row - 1))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.cols, self.rows)
    }
}

/// As its text (`8x8`), so configs hold sizes as strings.
impl serde::Serialize for Size {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// From its text; a bad size is an error naming it.
impl<'de> serde::Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Size, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(|e| serde::de::Error::custom(format!("'{text}': {e}")))
    }
}

impl FromStr for Size {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Size, ParseError> {
        let bad = || ParseError::Size(format!("'{text}' is not a size like 8x8 or 6x7 (COLSxROWS)"));
        let (c, r) = text.split_once('x').ok_or_else(bad)?;
        let number = |s: &str| -> Result<usize, ParseError> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0')) {
                return Err(bad());
            }
            s.parse().map_err(|_| bad())
        };
        Size::new(number(c)?, number(r)?)
    }
}

/// One cell of a board: its index `row * cols + col` on that board.
///
/// A cell only means something together with its board's [`Size`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Cell(pub u16);

impl Cell {
    /// The index `row * cols + col`.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A cell name for printing, from [`Size::cell_name`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CellName {
    col: u8,
    row: u8,
}

impl fmt::Display for CellName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", (b'a' + self.col) as char, self.row as usize + 1)
    }
}

/// A player, and the colour of its stones.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Color {
    /// Moves first.
    Black,
    /// Moves second.
    White,
}

impl Color {
    /// The other player.
    #[inline]
    pub const fn opposite(self) -> Color {
        match self {
            Color::Black => Color::White,
            Color::White => Color::Black,
        }
    }

    /// The notation letter: `b` or `w` (side to move), upper case for stones.
    pub const fn letter(self) -> char {
        match self {
            Color::Black => 'b',
            Color::White => 'w',
        }
    }

    /// 0 for black, 1 for white.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Color::Black => "black",
            Color::White => "white",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_strictly() {
        assert_eq!("8x8".parse::<Size>().unwrap(), Size::new(8, 8).unwrap());
        assert_eq!("13x20".parse::<Size>().unwrap().cells(), 260);
        for bad in ["", "8", "8x", "x8", "08x8", "8X8", "0x5", "21x3", "9x99", "-1x4", "8x8 "] {
            assert!(bad.parse::<Size>().is_err(), "{bad}");
        }
    }

    #[test]
    fn cells_parse_strictly_and_print_back() {
        let size = Size::new(13, 20).unwrap();
        for name in ["a1", "m20", "e5", "a10"] {
            let cell = size.parse_cell(name).unwrap();
            assert_eq!(size.cell_name(cell).to_string(), name);
        }
        for bad in ["", "a", "1", "A1", "a01", "a0", "n1", "a21", "a1b", "a-1"] {
            assert!(size.parse_cell(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn opening_cells_cover_middles_and_corners_once() {
        assert_eq!(Size::new(1, 1).unwrap().opening_cells().len(), 1);
        assert_eq!(Size::new(8, 8).unwrap().opening_cells().len(), 8);
        assert_eq!(Size::new(5, 5).unwrap().opening_cells().len(), 5);
        assert_eq!(Size::new(6, 7).unwrap().opening_cells().len(), 6);
        assert_eq!(Size::new(1, 4).unwrap().opening_cells().len(), 4); // 2 middles + 2 ends
        assert_eq!(Size::new(2, 2).unwrap().opening_cells().len(), 4);
    }
}
