//! What the network sees and says: input planes built from a position, and
//! the bijection between moves and policy logits.
//!
//! Both live on the board's own grid (`rows x cols`), so one set of
//! convolutional weights reads and writes every board size.

use konane_rules::{Cell, Color, Move, Phase, Position, Size};

/// Input planes per cell:
/// 0. stones of the side to move;
/// 1. stones of the opponent;
/// 2. empty cells;
/// 3. on-board mask (all ones here; zero in padding, and the value head's
///    pooling weights by it);
/// 4. black's opening (full board): removals, not jumps, are legal;
/// 5. white's opening (one hole, white to move).
pub const INPUT_PLANES: usize = 6;

/// Longest jump in hops on a 20-wide board (from column a to column s).
pub const MAX_HOPS: usize = 9;

/// Policy planes: removal, then each direction (east, west, north, south)
/// times each hop count 1..=MAX_HOPS. A move is indexed at its start cell.
pub const MOVE_KINDS: usize = 1 + 4 * MAX_HOPS;

/// Policy logits for a board of `size`.
pub fn policy_len(size: Size) -> usize {
    MOVE_KINDS * size.cells()
}

/// Direction index (0 east, 1 west, 2 north, 3 south) and hops of a jump.
fn direction_and_hops(size: Size, from: Cell, to: Cell) -> (usize, usize) {
    let (fc, fr) = (size.col(from), size.row(from));
    let (tc, tr) = (size.col(to), size.row(to));
    if fr == tr {
        if tc > fc { (0, (tc - fc) / 2) } else { (1, (fc - tc) / 2) }
    } else if tr > fr {
        (2, (tr - fr) / 2)
    } else {
        (3, (fr - tr) / 2)
    }
}

/// The policy index of `mv` on a board of `size`: `kind * cells + start cell`.
pub fn move_index(size: Size, mv: Move) -> usize {
    match mv {
        Move::Remove(cell) => cell.index(),
        Move::Jump { from, to } => {
            let (direction, hops) = direction_and_hops(size, from, to);
            debug_assert!((1..=MAX_HOPS).contains(&hops), "hops {hops}");
            (1 + direction * MAX_HOPS + hops - 1) * size.cells() + from.index()
        }
    }
}

/// The move a policy index stands for, or `None` when it would leave the board.
pub fn index_move(size: Size, index: usize) -> Option<Move> {
    if index >= policy_len(size) {
        return None;
    }
    let (kind, cell) = (index / size.cells(), Cell((index % size.cells()) as u16));
    if kind == 0 {
        return Some(Move::Remove(cell));
    }
    let direction = (kind - 1) / MAX_HOPS;
    let distance = 2 * ((kind - 1) % MAX_HOPS + 1) as isize;
    let (col, row) = (size.col(cell) as isize, size.row(cell) as isize);
    let (dc, dr) = [(1, 0), (-1, 0), (0, 1), (0, -1)][direction];
    let (tc, tr) = (col + dc * distance, row + dr * distance);
    if tc < 0 || tr < 0 || tc >= size.cols() as isize || tr >= size.rows() as isize {
        return None;
    }
    Some(Move::Jump { from: cell, to: size.cell(tc as usize, tr as usize) })
}

/// Writes the input planes of `position` into `out` (`INPUT_PLANES * cells`
/// floats, plane-major, row `r` at offset `r * cols`, row 0 = row `1`).
pub fn write_planes(position: &Position, out: &mut [f32]) {
    let size = position.size();
    let cells = size.cells();
    assert_eq!(out.len(), INPUT_PLANES * cells, "plane buffer for {size}");
    out.fill(0.0);
    let own = position.side_to_move();
    let phase = position.phase();
    for cell in size.all_cells() {
        let i = cell.index();
        match position.stone_at(cell) {
            Some(c) if c == own => out[i] = 1.0,
            Some(_) => out[cells + i] = 1.0,
            None => out[2 * cells + i] = 1.0,
        }
        out[3 * cells + i] = 1.0;
        if phase == Phase::BlackOpening && own == Color::Black {
            out[4 * cells + i] = 1.0;
        }
        if phase == Phase::WhiteOpening {
            out[5 * cells + i] = 1.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use konane_rules::{MAX_SIDE, Symmetry};

    use super::*;

    #[test]
    fn move_index_is_a_bijection_on_every_size() {
        for cols in 1..=MAX_SIDE as usize {
            for rows in 1..=MAX_SIDE as usize {
                let size = Size::new(cols, rows).unwrap();
                let mut on_board = 0;
                for index in 0..policy_len(size) {
                    if let Some(mv) = index_move(size, index) {
                        assert_eq!(move_index(size, mv), index, "{size} {}", mv.to_text(size));
                        on_board += 1;
                    }
                }
                // Removals: every cell. Jumps: per row, sum over hops of
                // (cols - 2h) starting cells each way; likewise per column.
                let line = |n: usize| (1..=MAX_HOPS).map(|h| n.saturating_sub(2 * h)).sum::<usize>();
                let expected = size.cells() + 2 * rows * line(cols) + 2 * cols * line(rows);
                assert_eq!(on_board, expected, "{size}");
            }
        }
    }

    #[test]
    fn legal_moves_of_random_games_have_distinct_indices() {
        for size in ["4x4", "6x6", "8x8", "13x20", "20x20"].map(|s| s.parse::<Size>().unwrap()) {
            let mut position = Position::start(size);
            let mut ply = 0;
            while !position.is_over() {
                let moves = position.moves();
                let mut indices: Vec<usize> = moves.iter().map(|&m| move_index(size, m)).collect();
                for (&m, &i) in moves.iter().zip(&indices) {
                    assert_eq!(index_move(size, i), Some(m));
                }
                indices.sort();
                indices.dedup();
                assert_eq!(indices.len(), moves.len());
                position.play_unchecked(moves[ply % moves.len()]);
                ply += 7;
            }
        }
    }

    #[test]
    fn planes_transform_with_the_board() {
        // Encoding a transformed position equals transforming the planes of the
        // original: the network's inputs are equivariant.
        let size: Size = "5x5".parse().unwrap();
        let position: Position = "BWBWB/W.W.W/BWB.B/WBWBW/BWBWB w".parse().unwrap();
        let mut original = vec![0.0; INPUT_PLANES * size.cells()];
        write_planes(&position, &mut original);
        for &sym in Symmetry::of(size) {
            let mut transformed = vec![0.0; INPUT_PLANES * size.cells()];
            write_planes(&sym.apply(&position), &mut transformed);
            for plane in 0..INPUT_PLANES {
                for cell in size.all_cells() {
                    let image = sym.cell(size, cell);
                    assert_eq!(
                        original[plane * size.cells() + cell.index()],
                        transformed[plane * size.cells() + image.index()]
                    );
                }
            }
        }
    }
}
