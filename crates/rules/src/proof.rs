//! Proofs of solved positions that anyone can check without trusting the
//! solver.
//!
//! A proof names a position, a number of plies `depth` (0 to 2) below it
//! that are shown in full, and a stream of small numbers. The checker
//! ([`verify`]) walks the game with the naive rules ([`crate::naive`]):
//!
//! - down to `depth`, it visits every move, so the value of every move and
//!   of every reply to it comes out of the check (how a solve reports each
//!   opening and each winning reply);
//! - below, each position comes with its claimed value: for a win, the
//!   stream names a winning move (its index among the legal moves in sorted
//!   order), which must lead to a lost position; for a loss, every move must
//!   lead to a won one;
//! - a position met a second time (a transposition) is answered from the
//!   positions already checked, and needs nothing from the stream.
//!
//! The prover ([`prove`]) walks the same way with the fast engine and the
//! solver, so the stream holds one number per won position of the proof.
//! Whatever the stream says, a proof that passes the check is right: a bad
//! stream can only fail.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::dfpn::DfpnSolver;
use crate::geometry::Color;
use crate::moves::Move;
use crate::naive::Naive;
use crate::position::Position;
use crate::solver::{ClassKeys, Solver, Unsolved};

/// The first bytes of a proof file: a name and the format version.
const MAGIC: &[u8; 16] = b"konane-proof\0\0\0\x01";

/// The plies below the root a proof shows in full, at most.
pub const MAX_DEPTH: u8 = 2;

/// A proof of the value of a position, in its file form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    /// The proven position.
    pub position: Position,
    /// Plies below it shown in full (0 to [`MAX_DEPTH`]).
    pub depth: u8,
    /// The claims and winning moves, as LEB128 numbers.
    stream: Vec<u8>,
}

/// The values a proof establishes: of the position, of each move in it and,
/// at depth 2, of each reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Whether the side to move wins.
    pub win: bool,
    /// Each move (sorted) and what follows it; empty at depth 0.
    pub moves: Vec<MoveValue>,
    /// Distinct positions whose value the proof shows.
    pub positions: u64,
}

/// One move of the proven position and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveValue {
    /// The move.
    pub mv: Move,
    /// Whether it wins for the side that plays it.
    pub wins: bool,
    /// The opponent's replies that win for the opponent (depth 2 only).
    pub winning_replies: Vec<Move>,
}

impl MoveValue {
    /// `mv`'s value from what the position after it showed: whether the
    /// opponent wins there, and the value of each of the opponent's moves.
    fn after(mv: Move, (opponent_wins, replies): (bool, Vec<MoveValue>)) -> MoveValue {
        let winning_replies = replies.iter().filter(|r| r.wins).map(|r| r.mv).collect();
        MoveValue { mv, wins: !opponent_wins, winning_replies }
    }
}

/// Why no proof could be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProveError {
    /// The solver's node budget ran out.
    #[error(transparent)]
    Unsolved(#[from] Unsolved),
    /// The solver called a position won but found no winning move in it.
    #[error("the solver calls {0} won but finds no winning move (a false hit in its table?)")]
    Inconsistent(String),
}

/// Why a proof was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// The file does not start like a proof of this format.
    #[error("not a konane proof (or of another format version)")]
    Header,
    /// The position string in the file does not parse.
    #[error("the proof's position: {0}")]
    Position(String),
    /// A depth beyond [`MAX_DEPTH`].
    #[error("depth {0}: at most {MAX_DEPTH}")]
    Depth(u8),
    /// The stream ended while the check still needed numbers.
    #[error("the proof ends too early")]
    Truncated,
    /// Bytes left over after the check.
    #[error("{0} bytes after the end of the proof")]
    Trailing(usize),
    /// A claimed value is neither 0 (loss) nor 1 (win).
    #[error("a claimed value of {0}")]
    Value(u64),
    /// A winning move's index is not that of a legal move.
    #[error("move {index} of {moves} in {position}")]
    MoveIndex {
        /// The index in the stream.
        index: u64,
        /// The number of legal moves.
        moves: usize,
        /// The position, in notation.
        position: String,
    },
    /// A position claimed won has no move at all.
    #[error("{0} is claimed won, but the side to move has no move")]
    NoMove(String),
    /// A position was shown with both values.
    #[error("{0} is claimed both won and lost")]
    Contradiction(String),
}

impl Proof {
    /// The proof as a file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let position = self.position.to_string();
        let mut out = Vec::with_capacity(MAGIC.len() + 5 + position.len() + self.stream.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(position.len() as u32).to_le_bytes());
        out.extend_from_slice(position.as_bytes());
        out.push(self.depth);
        out.extend_from_slice(&self.stream);
        out
    }

    /// Reads a proof file's bytes (the claims are checked by [`verify`]).
    ///
    /// # Errors
    /// A wrong header, position or depth.
    pub fn from_bytes(bytes: &[u8]) -> Result<Proof, ProofError> {
        let rest = bytes.strip_prefix(MAGIC).ok_or(ProofError::Header)?;
        let (length, rest) = rest.split_first_chunk::<4>().ok_or(ProofError::Header)?;
        let length = u32::from_le_bytes(*length) as usize;
        let text = rest.get(..length).ok_or(ProofError::Truncated)?;
        let text = std::str::from_utf8(text).map_err(|e| ProofError::Position(e.to_string()))?;
        let position: Position = text.parse().map_err(|e| ProofError::Position(format!("{e}")))?;
        let (&depth, stream) = rest[length..].split_first().ok_or(ProofError::Truncated)?;
        if depth > MAX_DEPTH {
            return Err(ProofError::Depth(depth));
        }
        Ok(Proof { position, depth, stream: stream.to_vec() })
    }

    /// Bytes of the claims and moves (the bulk of the file).
    pub fn stream_len(&self) -> usize {
        self.stream.len()
    }
}

/// Positions the checker has seen and their values, keyed exactly by the
/// smallest of their symmetric images (Kōnane's rules do not change under
/// a reflection or rotation that maps the board onto itself): on boards of
/// up to 63 cells, where proofs are big, two bits a cell, the side to move
/// and the value in one `u128` (16 bytes a position); in bytes above.
struct Memo {
    /// For each symmetry of the board, the image of each cell (by index).
    images: Vec<Vec<usize>>,
    small: HashSet<u128>,
    large: HashMap<Vec<u8>, bool>,
}

/// The value's bit in a small key.
const SMALL_WON: u128 = 1 << 127;

impl Memo {
    fn new(cols: usize, rows: usize) -> Memo {
        let count = if cols == rows { 8 } else { 4 };
        let images = IMAGES[..count]
            .iter()
            .map(|image| {
                (0..rows * cols)
                    .map(|cell| {
                        let (c, r) = image(cell % cols, cell / cols, cols, rows);
                        r * cols + c
                    })
                    .collect()
            })
            .collect();
        Memo { images, small: HashSet::new(), large: HashMap::new() }
    }

    fn len(&self) -> usize {
        self.small.len() + self.large.len()
    }

    /// The value recorded for the position of `cells` (row by row) and
    /// `side` to move, after recording `win` for it if it was new.
    fn get_or_insert(&mut self, cells: &[Option<Color>], side: Color, win: bool) -> Option<bool> {
        if cells.len() <= 63 {
            let key = self.small_key(cells, side);
            if self.small.contains(&key) {
                return Some(false);
            }
            if self.small.contains(&(key | SMALL_WON)) {
                return Some(true);
            }
            self.small.insert(if win { key | SMALL_WON } else { key });
            return None;
        }
        match self.large.entry(self.large_key(cells, side)) {
            Entry::Occupied(known) => Some(*known.get()),
            Entry::Vacant(slot) => {
                slot.insert(win);
                None
            }
        }
    }

    /// A position of at most 63 cells as one number: for its smallest
    /// image, two bits a cell (0 empty, 1 black, 2 white), the side to move
    /// in bit 126.
    fn small_key(&self, cells: &[Option<Color>], side: Color) -> u128 {
        let mut best = u128::MAX;
        for image in &self.images {
            let mut key = (side.index() as u128) << 126;
            for (cell, stone) in cells.iter().enumerate() {
                key |= code(*stone) << (2 * image[cell]);
            }
            best = best.min(key);
        }
        best
    }

    /// The smallest image of a bigger position, two bits a cell (little end
    /// first), then the side to move in the last byte's top bit when the
    /// cells leave it free, else in a byte of its own.
    fn large_key(&self, cells: &[Option<Color>], side: Color) -> Vec<u8> {
        let mut best: Option<Vec<u8>> = None;
        let mut codes = vec![0u8; cells.len()];
        for image in &self.images {
            for (cell, stone) in cells.iter().enumerate() {
                codes[image[cell]] = code(*stone) as u8;
            }
            let mut key: Vec<u8> =
                codes.chunks(4).map(|q| q.iter().rev().fold(0, |byte, &code| byte << 2 | code)).collect();
            if cells.len().is_multiple_of(4) {
                key.push(0);
            }
            *key.last_mut().expect("one byte at least") |= (side.index() as u8) << 7;
            if best.as_ref().is_none_or(|b| key < *b) {
                best = Some(key);
            }
        }
        best.expect("at least the identity")
    }
}

/// A cell's two bits in a key.
fn code(stone: Option<Color>) -> u128 {
    match stone {
        None => 0,
        Some(Color::Black) => 1,
        Some(Color::White) => 2,
    }
}

/// The positions the prover has shown and their values, by the solver's
/// 96-bit symmetry-folded keys, which are much faster to make than the
/// checker's exact ones. The checker does not trust them: had two
/// positions shared a key, the proof would fail its check.
struct Shown {
    keys: ClassKeys,
    /// Keys, with [`SHOWN_WON`] set for the won positions.
    set: HashSet<u128>,
}

/// The value's bit in a prover's key (above the 96 of the key).
const SHOWN_WON: u128 = 1 << 96;

impl Shown {
    fn key(&self, position: &Position) -> u128 {
        self.keys.key(position)
    }

    /// The value `key`'s position was shown with, if it was.
    fn value(&self, key: u128) -> Option<bool> {
        if self.set.contains(&key) {
            Some(false)
        } else if self.set.contains(&(key | SHOWN_WON)) {
            Some(true)
        } else {
            None
        }
    }

    /// Records `key`'s position as shown with value `win`; false if it
    /// already was.
    fn insert(&mut self, key: u128, win: bool) -> bool {
        self.value(key).is_none() && self.set.insert(if win { key | SHOWN_WON } else { key })
    }
}

/// Where a symmetry sends `(col, row)` of a `cols` x `rows` board.
type Image = fn(usize, usize, usize, usize) -> (usize, usize);

/// The symmetries of a board, the rectangle's four first.
const IMAGES: [Image; 8] = [
    |c, r, _, _| (c, r),
    |c, r, w, _| (w - 1 - c, r),
    |c, r, _, h| (c, h - 1 - r),
    |c, r, w, h| (w - 1 - c, h - 1 - r),
    // Only a square maps onto itself by these.
    |c, r, _, _| (r, c),
    |c, r, w, h| (h - 1 - r, w - 1 - c),
    |c, r, _, h| (h - 1 - r, c),
    |c, r, w, _| (r, w - 1 - c),
];

fn push_number(stream: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            stream.push(byte);
            return;
        }
        stream.push(byte | 0x80);
    }
}

/// The legal moves of `position`, sorted as the naive rules list them.
fn sorted_moves(position: &Position) -> Vec<Move> {
    let mut moves: Vec<Move> = position.moves().into_iter().collect();
    moves.sort_unstable();
    moves
}

/// What the prover asks a solver: the values its table already holds, and
/// the values of the positions it must solve. The alpha-beta [`Solver`]
/// and the proof-number [`DfpnSolver`] both answer; whatever they answer,
/// the checker trusts only the naive rules.
pub trait Oracle {
    /// Whether the side to move wins `position`, searching if need be.
    ///
    /// # Errors
    /// The solver's node budget ran out.
    fn wins(&mut self, position: &Position) -> Result<bool, Unsolved>;

    /// The value of `position` if the table holds it, without searching.
    fn known(&mut self, position: &Position) -> Option<bool>;
}

impl Oracle for Solver {
    /// Without the solver's move order: the prover's solves are many and
    /// small, and each would otherwise ask the move order (a network) about
    /// its first plies again.
    fn wins(&mut self, position: &Position) -> Result<bool, Unsolved> {
        self.without_move_order(|solver| Solver::wins(solver, position))
    }

    fn known(&mut self, position: &Position) -> Option<bool> {
        Solver::known(self, position)
    }
}

impl Oracle for DfpnSolver {
    fn wins(&mut self, position: &Position) -> Result<bool, Unsolved> {
        DfpnSolver::wins(self, position)
    }

    fn known(&mut self, position: &Position) -> Option<bool> {
        DfpnSolver::known(self, position)
    }
}

/// Proves the value of `position`, every move's value and (at `depth` 2)
/// every reply's, with `oracle` answering which positions are won.
///
/// A solver that has just solved the position answers from its table; a
/// fresh one solves as it goes. A df-pn solver's table holds the small
/// proof its search found, so its proofs are far smaller than the
/// alpha-beta solver's (whose table holds every position it searched).
///
/// # Errors
/// The solver's node budget (as set by its last solve) ran out, or its
/// answers contradict each other (a hash collision in its table).
///
/// # Panics
/// If `depth` is above [`MAX_DEPTH`].
pub fn prove(oracle: &mut impl Oracle, position: &Position, depth: u8) -> Result<(Proof, Report), ProveError> {
    prove_counting(oracle, position, depth, &AtomicU64::new(0))
}

/// As [`prove`], adding each position it shows to `progress` as it
/// goes, so that another thread can report on a long proof.
///
/// # Errors
/// As [`prove`].
///
/// # Panics
/// If `depth` is above [`MAX_DEPTH`].
pub fn prove_counting(
    oracle: &mut impl Oracle,
    position: &Position,
    depth: u8,
    progress: &AtomicU64,
) -> Result<(Proof, Report), ProveError> {
    assert!(depth <= MAX_DEPTH, "proof depth {depth}");
    let shown = Shown { keys: ClassKeys::new(position.size()), set: HashSet::new() };
    let mut prover = Prover { solver: oracle, shown, progress, stream: Vec::new() };
    let (win, moves) = prover.expand(position, depth)?;
    let report = Report { win, moves, positions: prover.shown.set.len() as u64 };
    Ok((Proof { position: *position, depth, stream: prover.stream }, report))
}

struct Prover<'a, O> {
    solver: &'a mut O,
    shown: Shown,
    /// The size of `shown`, readable by another thread.
    progress: &'a AtomicU64,
    stream: Vec<u8>,
}

impl<O: Oracle> Prover<'_, O> {
    /// The value of `position` shown `depth` plies in full: whether the side
    /// to move wins, and each move's value and winning replies.
    fn expand(&mut self, position: &Position, depth: u8) -> Result<(bool, Vec<MoveValue>), ProveError> {
        if depth == 0 {
            let win = self.solver.wins(position)?;
            push_number(&mut self.stream, u64::from(win));
            self.show(position, win)?;
            return Ok((win, Vec::new()));
        }
        let mut values = Vec::new();
        for mv in sorted_moves(position) {
            let mut child = *position;
            child.play_unchecked(mv);
            values.push(MoveValue::after(mv, self.expand(&child, depth - 1)?));
        }
        Ok((values.iter().any(|v| v.wins), values))
    }

    /// Writes what shows that `position` has value `win`.
    fn show(&mut self, position: &Position, win: bool) -> Result<(), ProveError> {
        if !self.shown.insert(self.shown.key(position), win) {
            return Ok(());
        }
        self.progress.fetch_add(1, Ordering::Relaxed);
        let moves = sorted_moves(position);
        if win {
            let mut candidates = self.winning_candidates(position, &moves);
            if candidates.first().is_none_or(|&(tier, ..)| tier == Tier::Unknown) {
                // The table no longer knows a losing child (a bigger search
                // took its slot): solving the position itself finds one at
                // the cost of its proof, where trying the children in turn
                // would pay a whole disproof for every move that loses.
                if self.solver.wins(position)? {
                    candidates = self.winning_candidates(position, &moves);
                }
            }
            for (_, _, index, child) in candidates {
                if !self.solver.wins(&child)? {
                    push_number(&mut self.stream, index as u64);
                    return self.show(&child, false);
                }
            }
            return Err(ProveError::Inconsistent(position.to_string()));
        }
        for mv in moves {
            let mut child = *position;
            child.play_unchecked(mv);
            self.show(&child, true)?;
        }
        Ok(())
    }

    /// The children of `position` (whose `moves` are given) that may be
    /// shown lost, best first: a move into a position already shown lost
    /// costs nothing more; then the moves the solve found lost (its table
    /// knows them), then the others; within each, the move into the
    /// position with the fewest replies, the fewest branches to show below.
    /// Moves the table knows won cannot be shown lost and are left out.
    fn winning_candidates(&mut self, position: &Position, moves: &[Move]) -> Vec<(Tier, u32, usize, Position)> {
        let mut candidates = Vec::with_capacity(moves.len());
        for (i, &mv) in moves.iter().enumerate() {
            let mut child = *position;
            child.play_unchecked(mv);
            let tier = if self.shown.value(self.shown.key(&child)) == Some(false) {
                Tier::Shown
            } else {
                match self.solver.known(&child) {
                    Some(true) => continue,
                    Some(false) => Tier::Known,
                    None => Tier::Unknown,
                }
            };
            let replies = if tier == Tier::Shown { 0 } else { child.count_moves() };
            candidates.push((tier, replies, i, child));
        }
        candidates.sort_unstable_by_key(|&(tier, replies, i, _)| (tier, replies, i));
        candidates
    }
}

/// How much the prover knows of a child it may show lost, best first:
/// already shown lost, lost in the solver's table, not known.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    Shown,
    Known,
    Unknown,
}

/// Checks `proof` with the naive rules and gives the values it shows.
///
/// # Errors
/// The first claim that does not hold, or a malformed stream.
pub fn verify(proof: &Proof) -> Result<Report, ProofError> {
    let size = proof.position.size();
    let memo = Memo::new(size.cols(), size.rows());
    let mut checker = Checker { stream: &proof.stream, at: 0, memo };
    let root = Naive::from_position(&proof.position);
    let (win, moves) = checker.expand(&root, proof.depth)?;
    if checker.at != proof.stream.len() {
        return Err(ProofError::Trailing(proof.stream.len() - checker.at));
    }
    Ok(Report { win, moves, positions: checker.memo.len() as u64 })
}

struct Checker<'a> {
    stream: &'a [u8],
    at: usize,
    memo: Memo,
}

impl Checker<'_> {
    fn number(&mut self) -> Result<u64, ProofError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let &byte = self.stream.get(self.at).ok_or(ProofError::Truncated)?;
            self.at += 1;
            n |= u64::from(byte & 0x7F) << shift;
            if byte & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(ProofError::Truncated)
    }

    fn expand(&mut self, position: &Naive, depth: u8) -> Result<(bool, Vec<MoveValue>), ProofError> {
        if depth == 0 {
            let win = match self.number()? {
                0 => false,
                1 => true,
                other => return Err(ProofError::Value(other)),
            };
            self.check(position, win)?;
            return Ok((win, Vec::new()));
        }
        let mut values = Vec::new();
        for mv in position.moves() {
            let mut child = position.clone();
            child.play(mv);
            values.push(MoveValue::after(mv, self.expand(&child, depth - 1)?));
        }
        Ok((values.iter().any(|v| v.wins), values))
    }

    /// Checks that `position` has value `win`, reading what shows it.
    fn check(&mut self, position: &Naive, win: bool) -> Result<(), ProofError> {
        match self.memo.get_or_insert(&position.cells, position.side, win) {
            Some(known) if known == win => return Ok(()),
            Some(_) => return Err(ProofError::Contradiction(position.to_notation())),
            None => {}
        }
        let moves = position.moves();
        if win {
            if moves.is_empty() {
                return Err(ProofError::NoMove(position.to_notation()));
            }
            let index = self.number()?;
            let &mv = usize::try_from(index).ok().and_then(|i| moves.get(i)).ok_or_else(|| ProofError::MoveIndex {
                index,
                moves: moves.len(),
                position: position.to_notation(),
            })?;
            let mut child = position.clone();
            child.play(mv);
            return self.check(&child, false);
        }
        for mv in moves {
            let mut child = position.clone();
            child.play(mv);
            self.check(&child, true)?;
        }
        Ok(())
    }
}
