//! Perft: the number of positions exactly `depth` plies from a position, the
//! standard check that move generation is exact.

use crate::bits::Bits;
use crate::board::Board;
use crate::moves::{Move, MoveList};
use crate::position::{BoardVisitor, Position};

/// Leaves exactly `depth` plies below `position` (games that end earlier add
/// nothing). The last ply is counted without playing it ("bulk counting").
pub fn perft(position: &Position, depth: u32) -> u64 {
    struct Perft(u32);
    impl BoardVisitor for Perft {
        type Output = u64;
        fn visit<B: Bits>(self, board: &Board<B>) -> u64 {
            perft_board(board, self.0)
        }
    }
    position.visit(Perft(depth))
}

/// Perft on a concrete board: the monomorphic inner loop.
pub fn perft_board<B: Bits>(board: &Board<B>, depth: u32) -> u64 {
    match depth {
        0 => 1,
        1 => board.count_moves() as u64,
        _ => {
            let mut moves = MoveList::new();
            board.generate(&mut moves);
            let mut leaves = 0;
            for &mv in &moves {
                let mut child = *board;
                child.play_unchecked(mv);
                leaves += perft_board(&child, depth - 1);
            }
            leaves
        }
    }
}

/// Perft below each legal move of `position`, for finding where two move
/// generators disagree.
pub fn divide(position: &Position, depth: u32) -> Vec<(Move, u64)> {
    assert!(depth >= 1, "divide needs depth >= 1");
    position
        .moves()
        .into_iter()
        .map(|mv| {
            let mut child = *position;
            child.play_unchecked(mv);
            (mv, perft(&child, depth - 1))
        })
        .collect()
}
