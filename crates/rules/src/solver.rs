//! An exact solver for small boards and endgames.
//!
//! Kōnane has no draws, so a position is simply won or lost for the side to
//! move: the search is a boolean negamax (alpha-beta with a null window)
//! that stops at the first winning move. A transposition table with a
//! two-slot bucket (keep the bigger subtree, always replace the other)
//! remembers solved positions; children are tried in order of fewest
//! replies, and any child already known lost cuts the search at once.

use crate::bits::Bits;
use crate::board::Board;
use crate::moves::{Move, MoveList};
use crate::position::{BoardVisitor, Position};

/// The exact value of a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solution {
    /// Whether the side to move wins with perfect play.
    pub win: bool,
    /// Every move that keeps the win (empty when the position is lost).
    pub winning_moves: Vec<Move>,
    /// Positions searched.
    pub nodes: u64,
}

#[derive(Clone, Copy, Default)]
struct Entry {
    /// Hash with its lowest bit replaced by the value (1 = win); 0 = empty.
    key: u64,
    /// Nodes the solve took, to keep expensive results.
    work: u64,
}

/// Reusable solver state: the transposition table and per-ply scratch.
pub struct Solver {
    table: Vec<[Entry; 2]>,
    scratch: Vec<Vec<(u32, Move)>>,
    nodes: u64,
    node_limit: u64,
}

/// The transposition table could not be had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// More bits than [`Solver::MAX_TABLE_BITS`].
    #[error("a table of 2^{0} buckets: at most 2^{max} (16 GiB)", max = Solver::MAX_TABLE_BITS)]
    TooLarge(u32),
    /// The system refused the memory.
    #[error("the system has no {0} MiB for the solver's table")]
    OutOfMemory(u64),
}

/// The search ran out of its node budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the solver gave up after {0} nodes")]
pub struct Unsolved(pub u64);

impl Solver {
    /// The largest table: 2^29 buckets of 32 bytes, 16 GiB.
    pub const MAX_TABLE_BITS: u32 = 29;

    /// A solver with `2^table_bits` two-entry buckets (32 bytes each).
    ///
    /// # Panics
    /// If the table cannot be had (see [`Solver::try_new`], for sizes users
    /// choose).
    pub fn new(table_bits: u32) -> Solver {
        Solver::try_new(table_bits).unwrap_or_else(|e| panic!("Solver::new: {e}"))
    }

    /// A solver with `2^table_bits` two-entry buckets (32 bytes each), if
    /// the table is within [`Solver::MAX_TABLE_BITS`] and the system grants
    /// the memory.
    ///
    /// # Errors
    /// [`TableError`]: too many bits, or no memory.
    pub fn try_new(table_bits: u32) -> Result<Solver, TableError> {
        if table_bits > Self::MAX_TABLE_BITS {
            return Err(TableError::TooLarge(table_bits));
        }
        let buckets = 1usize << table_bits;
        let mut table = Vec::new();
        table
            .try_reserve_exact(buckets)
            .map_err(|_| TableError::OutOfMemory((buckets * std::mem::size_of::<[Entry; 2]>()) as u64 >> 20))?;
        table.resize(buckets, [Entry::default(); 2]);
        Ok(Solver { table, scratch: Vec::new(), nodes: 0, node_limit: u64::MAX })
    }

    /// The value of `position` and all its winning moves.
    pub fn solve(&mut self, position: &Position) -> Solution {
        self.solve_within(position, u64::MAX).expect("no node limit")
    }

    /// As [`Solver::solve`], giving up after about `node_limit` nodes.
    ///
    /// # Errors
    /// The budget ran out; what was learnt stays in the table.
    pub fn solve_within(&mut self, position: &Position, node_limit: u64) -> Result<Solution, Unsolved> {
        self.nodes = 0;
        self.node_limit = node_limit;
        let mut winning_moves = Vec::new();
        for mv in position.moves() {
            let mut child = *position;
            child.play_unchecked(mv);
            if !self.wins(&child)? {
                winning_moves.push(mv);
            }
        }
        Ok(Solution { win: !winning_moves.is_empty(), winning_moves, nodes: self.nodes })
    }

    /// As [`Solver::wins`], giving up after about `node_limit` nodes: the
    /// probe a search makes at its leaves, without listing winning moves.
    ///
    /// # Errors
    /// The budget ran out; what was learnt stays in the table.
    pub fn wins_within(&mut self, position: &Position, node_limit: u64) -> Result<bool, Unsolved> {
        self.nodes = 0;
        self.node_limit = node_limit;
        self.wins(position)
    }

    /// Whether the side to move wins `position`.
    ///
    /// # Errors
    /// The node budget set by [`Solver::solve_within`] ran out (unlimited otherwise).
    pub fn wins(&mut self, position: &Position) -> Result<bool, Unsolved> {
        struct Visit<'a>(&'a mut Solver);
        impl BoardVisitor for Visit<'_> {
            type Output = Result<bool, Unsolved>;
            fn visit<B: Bits>(self, board: &Board<B>) -> Self::Output {
                self.0.wins_board(board, 0)
            }
        }
        position.visit(Visit(self))
    }

    fn probe(&self, hash: u64) -> Option<bool> {
        let bucket = &self.table[hash as usize & (self.table.len() - 1)];
        bucket.iter().find(|e| e.key != 0 && (e.key ^ hash) & !1 == 0).map(|e| e.key & 1 == 1)
    }

    fn store(&mut self, hash: u64, win: bool, work: u64) {
        let len = self.table.len();
        let bucket = &mut self.table[hash as usize & (len - 1)];
        let entry = Entry { key: (hash & !1) | win as u64, work };
        if work >= bucket[0].work || (bucket[0].key ^ hash) & !1 == 0 {
            bucket[0] = entry;
        } else {
            bucket[1] = entry;
        }
    }

    fn wins_board<B: Bits>(&mut self, board: &Board<B>, ply: usize) -> Result<bool, Unsolved> {
        self.nodes += 1;
        if self.nodes > self.node_limit {
            return Err(Unsolved(self.nodes));
        }
        if let Some(win) = self.probe(board.hash()) {
            return Ok(win);
        }
        let start_nodes = self.nodes;
        if self.scratch.len() <= ply {
            self.scratch.resize_with(ply + 1, Vec::new);
        }
        let mut moves = MoveList::new();
        board.generate(&mut moves);
        // Order by the opponent's number of replies; a child with none, or a
        // child already known lost, wins at once.
        let mut ordered = std::mem::take(&mut self.scratch[ply]);
        ordered.clear();
        let mut win = false;
        for &mv in &moves {
            let mut child = *board;
            child.play_unchecked(mv);
            let replies = child.count_moves();
            if replies == 0 || self.probe(child.hash()) == Some(false) {
                win = true;
                break;
            }
            ordered.push((replies, mv));
        }
        if !win {
            ordered.sort_unstable_by_key(|&(replies, _)| replies);
            for &(_, mv) in &ordered {
                let mut child = *board;
                child.play_unchecked(mv);
                match self.wins_board(&child, ply + 1) {
                    Ok(false) => {
                        win = true;
                        break;
                    }
                    Ok(true) => {}
                    Err(e) => {
                        self.scratch[ply] = ordered;
                        return Err(e);
                    }
                }
            }
        }
        self.scratch[ply] = ordered;
        self.store(board.hash(), win, self.nodes - start_nodes);
        Ok(win)
    }
}

/// Plain minimax without table or ordering: the reference the solver is
/// tested against on tiny boards.
pub fn minimax_wins(position: &Position) -> bool {
    position.moves().into_iter().any(|mv| {
        let mut child = *position;
        child.play_unchecked(mv);
        !minimax_wins(&child)
    })
}
