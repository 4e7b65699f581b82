//! An exact solver for small boards and endgames.
//!
//! Kōnane has no draws, so a position is simply won or lost for the side to
//! move: the search is a boolean negamax (alpha-beta with a null window)
//! that stops at the first winning move. A transposition table with a
//! two-slot bucket (keep the bigger subtree, always replace the other)
//! remembers solved positions; children are tried in order of fewest
//! replies, and any child already known lost cuts the search at once.
//!
//! The table is keyed by a position's symmetry class: the solver keeps the
//! Zobrist hash of every symmetric image of the board (8 on a square, 4 on
//! a rectangle), updated move by move, and files the position under the
//! smallest. Mirrored lines of play (the four corner openings, say) then
//! share one entry. A second, independent 32-bit hash of the same image
//! must match too, so a false hit needs 96 bits to collide.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::bits::Bits;
use crate::board::Board;
use crate::geometry::{Color, Size};
use crate::moves::{Move, MoveList};
use crate::position::{BoardVisitor, Position};
use crate::regions::{RegionLimits, RegionStats, Regions};
use crate::symmetry::Symmetry;
use crate::zobrist;

/// The plies below a root move whose nodes the progress estimate follows.
const PROGRESS_PLIES: usize = 24;

/// The plies below a root move whose nodes the threads of a parallel
/// solve tell each other they are searching (see [`Busy`]). Deeper
/// subtrees are too small to be worth a shared counter's traffic.
pub(crate) const SHARED_PLIES: usize = 20;

/// The nodes the threads of a parallel solve are searching, counted per
/// table hash (at most [`SHARED_PLIES`] per thread at a time in 2^16
/// counters, so a false "busy" is rare and only reorders a search). A
/// thread defers a child that another is searching to after its other
/// children, except a node's first (ABDADA, Weill 1996): two threads on
/// one root move then follow the same line down to where the first is
/// searching a later child, and there split the siblings between them,
/// the table passing each one's results to the other.
pub(crate) struct Busy(Box<[AtomicU32]>);

impl Busy {
    const BITS: u32 = 16;

    pub(crate) fn new() -> Busy {
        Busy((0..1 << Self::BITS).map(|_| AtomicU32::new(0)).collect())
    }

    /// The counter of a table hash, by its middle bits: the table uses the
    /// low ones, and the high ones lean to 0 (the hash is the least of the
    /// board's image hashes).
    pub(crate) fn counter(&self, hash: u64) -> &AtomicU32 {
        &self.0[(hash >> 24) as usize & ((1 << Self::BITS) - 1)]
    }

    pub(crate) fn is_busy(&self, hash: u64) -> bool {
        self.counter(hash).load(Ordering::Relaxed) != 0
    }
}

/// What ties a thread of a parallel solve to the others: the nodes being
/// searched, and whether the solve has failed. (A root move another thread
/// has solved needs nothing of its own: the thread finds it in the table
/// and unwinds, as from any node of its line; see `Solver::settled`.)
#[derive(Clone)]
pub(crate) struct Team {
    pub(crate) busy: Arc<Busy>,
    /// Set when a thread's search failed (its journal or checkpoint could
    /// not be written, or the node budget ran out): the solve stops.
    pub(crate) failed: Arc<AtomicBool>,
}

/// The root moves of a parallel solve as work for its threads: the moves
/// that a symmetry of the position maps onto each other form a class,
/// solved once; each thread takes a class of its own while there are any,
/// then joins the unsolved class that the fewest threads are searching.
pub(crate) struct RootWork {
    /// The classes, each the images of its first move.
    classes: Vec<Vec<Move>>,
    /// The class of each root move, by the move's index.
    class_of: Vec<usize>,
    /// The root moves there are (a class's share of the progress).
    moves: usize,
    /// The next class no thread has taken yet.
    next: AtomicUsize,
    /// Per class: 0 not yet solved, 1 the child wins, 2 it is lost.
    solved: Vec<AtomicU8>,
    /// The threads searching each class.
    searching: Vec<AtomicUsize>,
}

impl RootWork {
    /// The classes of `moves` (the moves of `position`), under the
    /// symmetries that keep `position` if `use_symmetry`.
    pub(crate) fn new(position: &Position, moves: &[Move], use_symmetry: bool) -> RootWork {
        let size = position.size();
        let keeping: Vec<Symmetry> = if use_symmetry {
            Symmetry::of(size).iter().copied().filter(|s| s.apply(position) == *position).collect()
        } else {
            vec![Symmetry::Identity]
        };
        let mut classes: Vec<Vec<Move>> = Vec::new();
        let mut class_of: Vec<usize> = Vec::with_capacity(moves.len());
        for &mv in moves {
            let index = classes.iter().position(|class| class.contains(&mv)).unwrap_or_else(|| {
                let mut class: Vec<Move> = keeping.iter().map(|s| s.apply_move(size, mv)).collect();
                class.sort_unstable();
                class.dedup();
                classes.push(class);
                classes.len() - 1
            });
            class_of.push(index);
        }
        let count = classes.len();
        RootWork {
            classes,
            class_of,
            moves: moves.len(),
            next: AtomicUsize::new(0),
            solved: (0..count).map(|_| AtomicU8::new(0)).collect(),
            searching: (0..count).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// A class for a thread to search, and whether it is the thread's own
    /// (no other took it); `None` when every class is solved. The thread
    /// calls [`RootWork::leave`] when it stops searching it.
    pub(crate) fn take(&self) -> Option<(usize, bool)> {
        let (index, own) = match self.next.fetch_add(1, Ordering::Relaxed) {
            index if index < self.classes.len() => (index, true),
            _ => {
                let open = (0..self.classes.len())
                    .filter(|&i| self.solved[i].load(Ordering::Relaxed) == 0)
                    .min_by_key(|&i| self.searching[i].load(Ordering::Relaxed))?;
                (open, false)
            }
        };
        self.searching[index].fetch_add(1, Ordering::Relaxed);
        Some((index, own))
    }

    /// The thread that took class `index` stops searching it.
    pub(crate) fn leave(&self, index: usize) {
        self.searching[index].fetch_sub(1, Ordering::Relaxed);
    }

    /// The position after class `index`'s first move.
    pub(crate) fn child(&self, position: &Position, index: usize) -> Position {
        let mut child = *position;
        child.play_unchecked(self.classes[index][0]);
        child
    }

    /// Class `index`'s share of the solve, in units of [`Progress::ONE`].
    pub(crate) fn share(&self, index: usize) -> u64 {
        Progress::ONE * self.classes[index].len() as u64 / self.moves as u64
    }

    /// Files class `index`'s value (`wins`: the side to move after it
    /// wins); the first thread to finish a class tells `on_move` each of
    /// its moves' values.
    pub(crate) fn finish(&self, index: usize, wins: bool, on_move: &impl Fn(Move, bool)) {
        let first =
            self.solved[index].compare_exchange(0, 1 + u8::from(!wins), Ordering::Relaxed, Ordering::Relaxed).is_ok();
        if first {
            for &mv in &self.classes[index] {
                on_move(mv, !wins);
            }
        }
    }

    /// The winning moves among `moves` (the moves given to
    /// [`RootWork::new`]), once every class is solved.
    pub(crate) fn winning_moves(&self, moves: &[Move]) -> Vec<Move> {
        moves
            .iter()
            .zip(&self.class_of)
            .filter(|&(_, &class)| self.solved[class].load(Ordering::Relaxed) == 2)
            .map(|(&mv, _)| mv)
            .collect()
    }
}

/// Runs `work` on `main` and on each of `helpers` in threads of their own,
/// and adds up the nodes they return: the nodes, and how many of the
/// threads searched any. The first error is returned once all have ended.
pub(crate) fn run_team<S: Send>(
    main: &mut S,
    helpers: &mut [S],
    work: impl Fn(&mut S) -> Result<u64, Unsolved> + Sync,
) -> Result<(u64, usize), Unsolved> {
    let counts: Vec<Result<u64, Unsolved>> = std::thread::scope(|scope| {
        let handles: Vec<_> = helpers.iter_mut().map(|helper| scope.spawn(|| work(helper))).collect();
        let mut counts = vec![work(main)];
        counts.extend(handles.into_iter().map(|h| h.join().expect("a solver thread panicked")));
        counts
    });
    let (mut nodes, mut searching_threads) = (0, 0);
    for count in counts {
        let count = count?;
        nodes += count;
        searching_threads += usize::from(count > 0);
    }
    Ok((nodes, searching_threads))
}

/// The exact value of a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solution {
    /// Whether the side to move wins with perfect play.
    pub win: bool,
    /// Every move that keeps the win (empty when the position is lost).
    pub winning_moves: Vec<Move>,
    /// Positions searched.
    pub nodes: u64,
    /// The threads that took part in the search: 1 for a serial solve;
    /// in a parallel one, those that searched at least a node.
    pub threads: usize,
}

/// One filed result, in a slot that several threads read and write
/// without locks: `lock` holds the key XOR the data, so a slot torn by two
/// writers at once never matches a probe (Hyatt and Mann's lockless
/// hashing). The key is the hash with its lowest bit replaced by the value
/// (1 = win), 0 for an empty slot; the data is the check hash (high half)
/// and the nodes the solve took (low half, saturating), to keep expensive
/// results.
#[derive(Default)]
struct Slot {
    lock: AtomicU64,
    data: AtomicU64,
}

/// Two slots in one cache line's half: a probe costs one miss.
#[derive(Default)]
#[repr(align(32))]
struct Bucket([Slot; 2]);

impl Slot {
    /// The key and data, or `None` when empty or torn.
    #[inline(always)]
    fn read(&self) -> (u64, u64) {
        let data = self.data.load(Ordering::Relaxed);
        (self.lock.load(Ordering::Relaxed) ^ data, data)
    }

    #[inline(always)]
    fn write(&self, key: u64, data: u64) {
        self.data.store(data, Ordering::Relaxed);
        self.lock.store(key ^ data, Ordering::Relaxed);
    }
}

/// Whether a slot's key and data are the position `(hash, check)`.
#[inline(always)]
fn holds((key, data): (u64, u64), (hash, check): (u64, u32)) -> bool {
    key != 0 && (key ^ hash) & !1 == 0 && (data >> 32) as u32 == check
}

/// The hashes of the `N` symmetric images of a board that the table
/// folds ([`Symmetries::count`]: 1, 4 or 8). A constant, so that the
/// per-move updates unroll.
#[derive(Clone, Copy)]
pub(crate) struct Keys<const N: usize> {
    pub(crate) hash: [u64; N],
    pub(crate) check: [u32; N],
}

/// The Zobrist keys of a stone on each cell under each symmetry of one
/// board size, laid out so that a move updates all `N` image hashes with
/// a few vector XORs instead of `N` table lookups per cell.
pub(crate) struct Symmetries {
    pub(crate) size: Size,
    pub(crate) count: usize,
    /// `hashes[color * cells + cell][s]`: the key of a `color` stone on the
    /// image of `cell` under symmetry `s`.
    hashes: Vec<[u64; 8]>,
    /// The same for the check hash.
    checks: Vec<[u32; 8]>,
}

impl Symmetries {
    pub(crate) fn of(size: Size, enabled: bool) -> Symmetries {
        let symmetries = if enabled { Symmetry::of(size) } else { &Symmetry::ALL[..1] };
        let cells = size.cells();
        let mut hashes = vec![[0u64; 8]; 2 * cells];
        let mut checks = vec![[0u32; 8]; 2 * cells];
        for color in [Color::Black, Color::White] {
            for cell in size.all_cells() {
                let row = color.index() * cells + cell.index();
                for (s, symmetry) in symmetries.iter().enumerate() {
                    let image = symmetry.cell(size, cell).index();
                    hashes[row][s] = zobrist::stone(color, image);
                    checks[row][s] = zobrist::check_stone(color, image);
                }
            }
        }
        Symmetries { size, count: symmetries.len(), hashes, checks }
    }

    /// The keys of `board` from scratch.
    pub(crate) fn keys<B: Bits, const N: usize>(&self, board: &Board<B>) -> Keys<N> {
        debug_assert_eq!(N, self.count);
        let side = board.side_to_move() == Color::White;
        let base = zobrist::size(self.size) ^ if side { zobrist::WHITE_TO_MOVE } else { 0 };
        let check = if side { zobrist::CHECK_WHITE_TO_MOVE } else { 0 };
        let mut keys = Keys { hash: [base; N], check: [check; N] };
        for cell in self.size.all_cells() {
            if let Some(color) = board.stone_at(cell) {
                self.toggle(&mut keys, color, cell.index());
            }
        }
        keys
    }

    #[inline(always)]
    fn toggle<const N: usize>(&self, keys: &mut Keys<N>, color: Color, cell: usize) {
        let row = color.index() * self.size.cells() + cell;
        let (hashes, checks) = (&self.hashes[row], &self.checks[row]);
        for s in 0..N {
            keys.hash[s] ^= hashes[s];
            keys.check[s] ^= checks[s];
        }
    }

    /// The keys after `mover` plays `mv`.
    #[inline]
    pub(crate) fn after<const N: usize>(&self, keys: &Keys<N>, mover: Color, mv: Move) -> Keys<N> {
        let mut next = *keys;
        mv.toggles(self.size, mover, |color, cell| self.toggle(&mut next, color, cell));
        for (hash, check) in next.hash.iter_mut().zip(&mut next.check) {
            *hash ^= zobrist::WHITE_TO_MOVE;
            *check ^= zobrist::CHECK_WHITE_TO_MOVE;
        }
        next
    }

    /// The table key of the position: the smallest image hash and that
    /// image's check hash.
    #[inline]
    pub(crate) fn canonical<const N: usize>(keys: &Keys<N>) -> (u64, u32) {
        let mut best = 0;
        for s in 1..N {
            if keys.hash[s] < keys.hash[best] {
                best = s;
            }
        }
        (keys.hash[best], keys.check[best])
    }

    /// The table key of `position`, from scratch.
    pub(crate) fn key_of(&self, position: &Position) -> (u64, u32) {
        struct Visit<'a>(&'a Symmetries);
        impl BoardVisitor for Visit<'_> {
            type Output = (u64, u32);
            fn visit<B: Bits>(self, board: &Board<B>) -> (u64, u32) {
                let symmetries = self.0;
                match symmetries.count {
                    1 => Symmetries::canonical(&symmetries.keys::<B, 1>(board)),
                    4 => Symmetries::canonical(&symmetries.keys::<B, 4>(board)),
                    8 => Symmetries::canonical(&symmetries.keys::<B, 8>(board)),
                    count => unreachable!("{count} symmetries"),
                }
            }
        }
        position.visit(Visit(self))
    }
}

/// The solver's symmetry-folded key of any position of one size, from
/// scratch: what the prover ([`crate::proof::prove`]) remembers the
/// positions it has shown by. 96 bits (the table's hash and check of the
/// smallest image), so two positions share one by accident about once in
/// 2^96 pairs, and a proof that did would fail its check, never pass a
/// wrong one.
pub(crate) struct ClassKeys(Symmetries);

impl ClassKeys {
    pub(crate) fn new(size: Size) -> ClassKeys {
        ClassKeys(Symmetries::of(size, true))
    }

    pub(crate) fn key(&self, position: &Position) -> u128 {
        let (hash, check) = self.0.key_of(position);
        u128::from(hash) | u128::from(check) << 64
    }
}

/// A solved position as the table files it (its symmetry class's hashes),
/// with its value and the nodes its solve took: what a long solve writes
/// to its journal, and reads back with [`Solver::pin`] to resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalEntry {
    /// The table hash (lowest bit ignored).
    pub hash: u64,
    /// The check hash.
    pub check: u32,
    /// Whether the side to move wins.
    pub win: bool,
    /// Nodes the solve of this position took.
    pub work: u64,
}

/// A second opinion on which moves to try first, for the nodes near the
/// root, where a winning move found first saves the most work: a trained
/// network's policy (`konane solve --policy`). The rules crate knows no
/// networks, so the caller brings the scores.
pub trait MoveOrder: Send {
    /// Scores each of `moves` into `scores` (one each, in order; higher is
    /// tried sooner). `moves` are the moves of `position` in the order
    /// [`Position::legal_moves`] lists them. False keeps the solver's own
    /// order (fewest replies first).
    fn score(&mut self, position: &Position, moves: &[Move], scores: &mut Vec<f32>) -> bool;

    /// The same order for another thread of a parallel solve. Each thread
    /// scores with its own, so that the threads never wait for each
    /// other's network calls (they cost far more than the search).
    fn fork(&self) -> Box<dyn MoveOrder>;
}

/// Where [`Solver`] sends the results that cost at least `min_work`
/// nodes; the sink returns false to stop the solve (its storage failed).
type JournalSink = Box<dyn FnMut(JournalEntry) -> bool + Send>;

/// A move of a node being searched, with what orders it.
#[derive(Clone, Copy)]
struct Child {
    /// The opponent's number of replies after the move.
    replies: u32,
    /// Its [`MoveOrder`] score, where one orders the node.
    score: f32,
    /// Put off until the node's other children are searched, because
    /// another thread is searching it.
    deferred: bool,
    mv: Move,
    /// The table key of the position after it.
    key: (u64, u32),
}

/// Reusable solver state: the transposition table and per-ply scratch.
pub struct Solver {
    /// Shared by the solvers of a parallel solve ([`Solver::solve_each_parallel`]).
    table: Arc<Vec<Bucket>>,
    scratch: Vec<Vec<Child>>,
    symmetries: Option<Symmetries>,
    use_symmetry: bool,
    nodes: u64,
    node_limit: u64,
    progress: Arc<Progress>,
    /// How much of the root move being searched is resolved.
    line_progress: LineProgress,
    journal: Option<(u64, Arc<Mutex<JournalSink>>)>,
    /// The plies below the searched position whose moves `order` sorts.
    move_order: Option<(usize, Box<dyn MoveOrder>)>,
    /// Scratch for the move order's calls.
    order_moves: Vec<Move>,
    order_scores: Vec<f32>,
    /// The other threads, during a parallel solve.
    team: Option<Team>,
    /// In a parallel solve, the table keys of the current line's nodes at
    /// the shared plies, to notice when another thread has solved one.
    line: [(u64, u32); SHARED_PLIES],
    /// The ply of the current line's node that another thread has solved,
    /// and its value: the search unwinds to it and takes that value.
    settled: Option<(usize, bool)>,
    /// The journal's sink failed: the solve ends as [`Unsolved`].
    journal_failed: bool,
    /// Decides positions made of independent regions without search.
    regions: Option<Regions>,
}

/// How far a solve has got, read by another thread while it runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// Nodes searched, in steps of 4,096.
    pub(crate) nodes: AtomicU64,
    /// The root's moves resolved, in units of [`Progress::ONE`] for all of
    /// them: a finished move counts whole, the move being searched by the
    /// share of its tree its search has resolved (see `publish_progress`).
    pub(crate) resolved: AtomicU64,
}

impl Progress {
    /// The whole solve, in the units of `resolved`.
    pub(crate) const ONE: u64 = 1 << 32;

    /// Nodes the solver and its threads have searched (in steps of 4,096).
    pub fn nodes(&self) -> u64 {
        self.nodes.load(Ordering::Relaxed)
    }

    /// Root move `index`'s share of a solve of `moves` moves taken one
    /// after another: shares that add up to exactly [`Progress::ONE`].
    pub(crate) fn share(index: usize, moves: usize) -> u64 {
        let (index, moves) = (index as u64, moves as u64);
        Progress::ONE * (index + 1) / moves - Progress::ONE * index / moves
    }

    /// A new solve of a position with `moves` root moves: nothing resolved
    /// yet, unless there is nothing to resolve.
    pub(crate) fn start(&self, moves: usize) {
        self.resolved.store(if moves == 0 { Progress::ONE } else { 0 }, Ordering::Relaxed);
    }

    /// The share of the current solve resolved so far, 0 to 1: the root's
    /// moves, each move in progress counted by an estimate along the line
    /// being searched. A rough measure of the work done, that can run low
    /// or high: good for an order of magnitude of the time left at best.
    pub fn resolved(&self) -> f64 {
        self.resolved.load(Ordering::Relaxed) as f64 / Progress::ONE as f64
    }
}

/// One thread's share of a solve's [`Progress`]: the root move it searches
/// and how much of that move's tree the current line shows resolved.
///
/// Knuth's estimate of a tree's progress: at each node of the line, the
/// children already resolved, plus the share of the one being searched,
/// every child taken as the same work. Subtrees differ in cost and a won
/// node may need only one child, so it can be far off either way: df-pn
/// on the 7x6 start showed 1.5% after a third of its nodes and 4.5% after
/// two thirds, on the 7x7 centre 66.7% after a tenth. (Counting a node
/// that looks won as ending with the child being searched ran high
/// everywhere: 99.8% after a third of the 7x7 centre's nodes.) It is only
/// ever raised, so a search that leaves a subtree for a cheaper one (df-pn
/// does, all the time) does not take back what it showed.
#[derive(Clone, Debug, Default)]
pub(crate) struct LineProgress {
    /// The share of the whole solve ([`Progress::ONE`]) the root move being
    /// searched stands for; 0 outside a solve's root moves, or when another
    /// thread counts the move.
    share: u64,
    /// How much of `share` has been added to the progress so far.
    added: u64,
    /// For the first [`PROGRESS_PLIES`] plies of the current line: how
    /// many of each node's children are resolved, of how many.
    path: [(u32, u32); PROGRESS_PLIES],
    /// The plies of `path` that belong to the current line.
    len: usize,
}

impl LineProgress {
    /// A root move standing for `share` of the solve starts (0: not counted).
    pub(crate) fn begin(&mut self, share: u64) {
        (self.share, self.added, self.len) = (share, 0, 0);
    }

    /// Whether the node at `ply` below the root move is followed.
    #[inline]
    pub(crate) fn tracks(&self, ply: usize) -> bool {
        ply < PROGRESS_PLIES && self.share != 0
    }

    /// The line's node at `ply` (one [`LineProgress::tracks`]) has `done`
    /// of its `of` children resolved; the line ends there.
    #[inline]
    pub(crate) fn at(&mut self, ply: usize, done: usize, of: usize) {
        self.path[ply] = (done as u32, of as u32);
        self.len = ply + 1;
    }

    /// Adds to `progress` what the line shows resolved beyond what was
    /// added before.
    pub(crate) fn publish(&mut self, progress: &Progress) {
        if self.share == 0 {
            return;
        }
        let (mut total, mut scale) = (0.0, self.share as f64);
        for &(done, of) in &self.path[..self.len] {
            total += scale * f64::from(done) / f64::from(of.max(1));
            scale /= f64::from(of.max(1));
        }
        let target = (total as u64).clamp(self.added, self.share);
        progress.resolved.fetch_add(target - self.added, Ordering::Relaxed);
        self.added = target;
    }

    /// The root move's search ended: `resolved`, its whole share counts.
    pub(crate) fn end(&mut self, progress: &Progress, resolved: bool) {
        if resolved {
            progress.resolved.fetch_add(self.share - self.added, Ordering::Relaxed);
        }
        self.share = 0;
    }
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

    /// A solver with `2^table_bits` two-slot buckets (32 bytes each).
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
        let table: Vec<Bucket> = huge_page_table(1 << table_bits)?;
        Ok(Solver {
            table: Arc::new(table),
            scratch: Vec::new(),
            symmetries: None,
            use_symmetry: true,
            nodes: 0,
            node_limit: u64::MAX,
            progress: Arc::default(),
            line_progress: LineProgress::default(),
            journal: None,
            move_order: None,
            order_moves: Vec::new(),
            order_scores: Vec::new(),
            team: None,
            line: [(0, 0); SHARED_PLIES],
            settled: None,
            journal_failed: false,
            regions: None,
        })
    }

    /// Sends every result that took at least `min_work` nodes to `sink` as
    /// it is found, so a long solve can be resumed from them; the sink
    /// returns false to stop the solve (which then ends as
    /// [`Unsolved`]).
    pub fn set_journal(&mut self, min_work: u64, sink: impl FnMut(JournalEntry) -> bool + Send + 'static) {
        self.journal = Some((min_work, Arc::new(Mutex::new(Box::new(sink)))));
    }

    /// Orders the moves of the positions fewer than `plies` below the one
    /// searched (the root's moves' children are ply 0) by `order` instead of
    /// by their replies. Each further thread of a parallel solve orders
    /// with a [`MoveOrder::fork`] of it.
    pub fn set_move_order(&mut self, plies: usize, order: Box<dyn MoveOrder>) {
        self.move_order = Some((plies, order));
    }

    /// Runs `f` with the solver ordering every move by its replies: the
    /// prover's many small solves, each of which would otherwise ask the
    /// move order (a network) about its first plies again.
    pub(crate) fn without_move_order<R>(&mut self, f: impl FnOnce(&mut Solver) -> R) -> R {
        let order = self.move_order.take();
        let result = f(self);
        self.move_order = order;
        result
    }

    /// Decides the positions that fall apart into independent regions by
    /// the regions' values (see [`crate::regions`]) instead of searching
    /// them, each thread with its own tables within `limits`; `None`
    /// searches every position.
    pub fn set_regions(&mut self, limits: Option<RegionLimits>) {
        self.regions = limits.map(Regions::new);
    }

    /// What this solver's regions have decided (not the other threads' of
    /// a parallel solve), if it uses them.
    pub fn region_stats(&self) -> Option<RegionStats> {
        self.regions.as_ref().map(Regions::stats)
    }

    /// Puts a result of an earlier solve (with the same symmetry setting)
    /// into the table, marked as the most expensive kind so that it stays.
    pub fn pin(&self, entry: JournalEntry) {
        self.insert((entry.hash, entry.check), entry.win, u32::MAX);
    }

    /// The number of buckets whose table takes at most `bytes`: the
    /// largest power of two that fits, as `table_bits`.
    ///
    /// # Errors
    /// [`TableError::TooLarge`] above [`Solver::MAX_TABLE_BITS`] or below
    /// one bucket.
    pub fn table_bits_for(bytes: u64) -> Result<u32, TableError> {
        let buckets = bytes / std::mem::size_of::<Bucket>() as u64;
        if buckets == 0 {
            return Err(TableError::TooLarge(0));
        }
        let bits = 63 - buckets.leading_zeros();
        if bits > Self::MAX_TABLE_BITS {
            return Err(TableError::TooLarge(bits));
        }
        Ok(bits)
    }

    /// The table's size in bytes.
    pub fn table_bytes(&self) -> u64 {
        (self.table.len() * std::mem::size_of::<Bucket>()) as u64
    }

    /// Whether positions that are symmetric images of each other share a
    /// table entry (the default). Off, the table holds each position as
    /// it is: for measuring what the folding saves.
    pub fn set_symmetry(&mut self, on: bool) {
        if on != self.use_symmetry {
            self.use_symmetry = on;
            self.symmetries = None;
            self.clear();
        }
    }

    /// Forgets every solved position.
    pub fn clear(&mut self) {
        for bucket in self.table.iter() {
            for slot in &bucket.0 {
                slot.write(0, 0);
            }
        }
    }

    /// The progress of this solver's solves (with the threads of its
    /// parallel solves): another thread reads it to show how far they are.
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// Searches root move `child` as standing for `share` of the solve.
    fn wins_root_move(&mut self, child: &Position, share: u64) -> Result<bool, Unsolved> {
        self.line_progress.begin(share);
        let result = self.wins(child);
        self.line_progress.end(&self.progress, result.is_ok());
        result
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
        self.solve_each(position, node_limit, |_, _| {})
    }

    /// As [`Solver::solve_within`], telling `on_move(move, lost)` each
    /// root move's value as it is found (`lost`: the move wins).
    ///
    /// # Errors
    /// The budget ran out; what was learnt stays in the table.
    pub fn solve_each(
        &mut self,
        position: &Position,
        node_limit: u64,
        mut on_move: impl FnMut(Move, bool),
    ) -> Result<Solution, Unsolved> {
        self.nodes = 0;
        self.node_limit = node_limit;
        self.journal_failed = false;
        let mut winning_moves = Vec::new();
        let moves = position.moves();
        self.progress.start(moves.len());
        for (i, &mv) in moves.iter().enumerate() {
            let mut child = *position;
            child.play_unchecked(mv);
            let lost = !self.wins_root_move(&child, Progress::share(i, moves.len()))?;
            if lost {
                winning_moves.push(mv);
            }
            on_move(mv, lost);
        }
        if self.journal_failed {
            // The last result's record failed after the search had ended.
            return Err(Unsolved(self.nodes));
        }
        Ok(Solution { win: !winning_moves.is_empty(), winning_moves, nodes: self.nodes, threads: 1 })
    }

    /// As [`Solver::solve_each`] without a node limit, on `threads`
    /// threads that share the table: root moves that a symmetry of the
    /// position maps onto each other are solved once (with the table's
    /// symmetry folding on), and the threads take the distinct ones in turn.
    /// A thread with no class left to take joins one still being searched,
    /// the threads splitting its tree between them (see [`Busy`]), so that
    /// a root with fewer classes than threads (a corner opening of a square
    /// board has one) keeps every core at work. One thread is exactly
    /// [`Solver::solve_each`]; with more, the node count varies from run to
    /// run, the values do not.
    ///
    /// # Errors
    /// The journal's sink failed.
    pub fn solve_each_parallel(
        &mut self,
        position: &Position,
        threads: usize,
        on_move: impl Fn(Move, bool) + Sync,
    ) -> Result<Solution, Unsolved> {
        if threads <= 1 {
            return self.solve_each(position, u64::MAX, on_move);
        }
        let moves = position.moves();
        let work_list = RootWork::new(position, &moves, self.use_symmetry);
        self.progress.start(moves.len());
        let failed = Arc::new(AtomicBool::new(false));
        let team = Team { busy: Arc::new(Busy::new()), failed: Arc::clone(&failed) };
        let work = |solver: &mut Solver| -> Result<u64, Unsolved> {
            solver.nodes = 0;
            solver.node_limit = u64::MAX;
            loop {
                if failed.load(Ordering::Relaxed) {
                    return Err(Unsolved(solver.nodes));
                }
                let Some((index, own)) = work_list.take() else { break };
                let child = work_list.child(position, index);
                let share = work_list.share(index);
                solver.team = Some(team.clone());
                // The thread that took the class counts its progress.
                let result = solver.wins_root_move(&child, if own { share } else { 0 });
                solver.team = None;
                work_list.leave(index);
                // Only a journal's failure, this thread's or another's, ends a
                // search without a value.
                let wins = result.inspect_err(|_| failed.store(true, Ordering::Relaxed))?;
                work_list.finish(index, wins, &on_move);
            }
            Ok(solver.nodes)
        };
        let mut helpers: Vec<Solver> = (1..threads).map(|_| self.sharing()).collect();
        let (nodes, searching_threads) = run_team(self, &mut helpers, work)?;
        let winning_moves = work_list.winning_moves(&moves);
        Ok(Solution { win: !winning_moves.is_empty(), winning_moves, nodes, threads: searching_threads })
    }

    /// Another solver on the same table (and progress counter and journal),
    /// for another thread.
    fn sharing(&self) -> Solver {
        Solver {
            table: Arc::clone(&self.table),
            scratch: Vec::new(),
            symmetries: None,
            use_symmetry: self.use_symmetry,
            nodes: 0,
            node_limit: u64::MAX,
            progress: Arc::clone(&self.progress),
            line_progress: LineProgress::default(),
            journal: self.journal.clone(),
            move_order: self.move_order.as_ref().map(|(plies, order)| (*plies, order.fork())),
            order_moves: Vec::new(),
            order_scores: Vec::new(),
            team: self.team.clone(),
            line: [(0, 0); SHARED_PLIES],
            settled: None,
            journal_failed: false,
            regions: self.regions.as_ref().map(Regions::fork),
        }
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
                let solver = self.0;
                solver.symmetries_for(board.size());
                solver.wins_board(board)
            }
        }
        position.visit(Visit(self))
    }

    /// The value of `position` if the table holds it, without searching:
    /// what the prover asks first, to pick the winning moves the solve
    /// already found over ones it would have to search.
    pub(crate) fn known(&mut self, position: &Position) -> Option<bool> {
        let key = self.symmetries_for(position.size()).key_of(position);
        self.probe(key)
    }

    /// The symmetry maps of `size`, made when the size changes.
    fn symmetries_for(&mut self, size: Size) -> &Symmetries {
        if self.symmetries.as_ref().is_none_or(|s| s.size != size) {
            self.symmetries = Some(Symmetries::of(size, self.use_symmetry));
        }
        self.symmetries.as_ref().expect("just set")
    }

    /// Asks the memory system for the bucket of `hash` without waiting.
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let bucket = &self.table[hash as usize & (self.table.len() - 1)];
            // SAFETY: a prefetch is a hint that never faults, and the pointer
            // is to a live bucket of the table.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    std::ptr::from_ref(bucket).cast(),
                );
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }

    fn probe(&self, key: (u64, u32)) -> Option<bool> {
        let bucket = &self.table[key.0 as usize & (self.table.len() - 1)];
        bucket.0.iter().map(Slot::read).find(|&slot| holds(slot, key)).map(|(stored, _)| stored & 1 == 1)
    }

    /// Files a result found by the search, and sends it to the journal if
    /// it was expensive.
    fn store(&mut self, key: (u64, u32), win: bool, work: u64) {
        if let Some((min_work, sink)) = &self.journal
            && work >= *min_work
            && !sink.lock().unwrap_or_else(PoisonError::into_inner)(JournalEntry {
                hash: key.0 & !1,
                check: key.1,
                win,
                work,
            })
        {
            self.node_limit = 0;
            self.journal_failed = true;
            if let Some(team) = &self.team {
                team.failed.store(true, Ordering::Relaxed);
            }
        }
        self.insert(key, win, u32::try_from(work).unwrap_or(u32::MAX));
    }

    /// Puts a result in its bucket: into the first slot if it took at
    /// least the work of the one there (or is the same position), else
    /// into the second.
    fn insert(&self, (hash, check): (u64, u32), win: bool, work: u32) {
        let bucket = &self.table[hash as usize & (self.table.len() - 1)].0;
        let first = bucket[0].read();
        let (key, data) = ((hash & !1) | u64::from(win), u64::from(check) << 32 | u64::from(work));
        if work >= first.1 as u32 || holds(first, (hash, check)) {
            bucket[0].write(key, data);
        } else {
            bucket[1].write(key, data);
        }
    }

    /// Gives the children their [`MoveOrder`] scores, if one orders `ply`.
    fn scored<B: Bits>(&mut self, board: &Board<B>, ply: usize, children: &mut [Child]) -> bool {
        let Some((plies, order)) = &mut self.move_order else { return false };
        if ply >= *plies || children.len() < 2 {
            return false;
        }
        let position = Position::from_fn(board.size(), board.side_to_move(), |cell| board.stone_at(cell));
        self.order_moves.clear();
        self.order_moves.extend(children.iter().map(|child| child.mv));
        self.order_scores.clear();
        let scored = order.score(&position, &self.order_moves, &mut self.order_scores);
        if !scored || self.order_scores.len() != children.len() {
            return false;
        }
        for (child, &score) in children.iter_mut().zip(&self.order_scores) {
            child.score = score;
        }
        true
    }

    fn wins_board<B: Bits>(&mut self, board: &Board<B>) -> Result<bool, Unsolved> {
        // The search borrows the maps while it changes the table and scratch.
        let symmetries = self.symmetries.take().expect("set by wins");
        let busy = self.team.as_ref().map(|team| Arc::clone(&team.busy));
        let busy = busy.as_deref();
        let result = match symmetries.count {
            1 => self.search::<B, 1>(board, &symmetries.keys(board), 0, &symmetries, busy),
            4 => self.search::<B, 4>(board, &symmetries.keys(board), 0, &symmetries, busy),
            8 => self.search::<B, 8>(board, &symmetries.keys(board), 0, &symmetries, busy),
            count => unreachable!("{count} symmetries"),
        };
        self.symmetries = Some(symmetries);
        result
    }

    /// Whether the side to move wins `board`, counting it as one node.
    fn search<B: Bits, const N: usize>(
        &mut self,
        board: &Board<B>,
        keys: &Keys<N>,
        ply: usize,
        symmetries: &Symmetries,
        busy: Option<&Busy>,
    ) -> Result<bool, Unsolved> {
        self.nodes += 1;
        if self.nodes > self.node_limit {
            return Err(Unsolved(self.nodes));
        }
        if self.nodes & 0xFFF == 0 {
            self.progress.nodes.fetch_add(0x1000, Ordering::Relaxed);
            self.line_progress.publish(&self.progress);
            if let Some(team) = &self.team {
                if team.failed.load(Ordering::Relaxed) {
                    return Err(Unsolved(self.nodes));
                }
                // Another thread has solved a node of the line (the root move
                // itself, say): unwind to it.
                let settled = (0..ply.min(SHARED_PLIES)).find_map(|p| Some((p, self.probe(self.line[p])?)));
                if settled.is_some() {
                    self.settled = settled;
                    return Err(Unsolved(self.nodes));
                }
            }
        }
        let key = Symmetries::canonical(keys);
        if let Some(win) = self.probe(key) {
            return Ok(win);
        }
        if let Some(regions) = &mut self.regions
            && let Some(win) = regions.wins(board)
        {
            self.store(key, win, 1);
            return Ok(win);
        }
        let shared = busy.filter(|_| ply < SHARED_PLIES);
        if let Some(shared) = shared {
            self.line[ply] = key;
            shared.counter(key.0).fetch_add(1, Ordering::Relaxed);
        }
        let result = self.expand(board, keys, key, ply, symmetries, busy);
        if let Some(shared) = shared {
            shared.counter(key.0).fetch_sub(1, Ordering::Relaxed);
        }
        result
    }

    /// The search of a node not in the table: its children, and its result
    /// filed. `busy`: the nodes the other threads of a parallel solve are
    /// searching (the threads share out the work at the first
    /// [`SHARED_PLIES`] plies).
    #[inline(always)]
    fn expand<B: Bits, const N: usize>(
        &mut self,
        board: &Board<B>,
        keys: &Keys<N>,
        key: (u64, u32),
        ply: usize,
        symmetries: &Symmetries,
        busy: Option<&Busy>,
    ) -> Result<bool, Unsolved> {
        let start_nodes = self.nodes;
        if self.scratch.len() <= ply {
            self.scratch.resize_with(ply + 1, Vec::new);
        }
        let mut moves = MoveList::new();
        board.generate(&mut moves);
        let mover = board.side_to_move();
        // Order by the opponent's number of replies; a child with none, or a
        // child already known lost, wins at once.
        let mut ordered = std::mem::take(&mut self.scratch[ply]);
        ordered.clear();
        // The children's table keys first, their buckets fetched from memory
        // all at once: the probes below then mostly hit the cache instead
        // of waiting for one miss after another.
        for &mv in &moves {
            let child_key = Symmetries::canonical(&symmetries.after(keys, mover, mv));
            self.prefetch(child_key.0);
            ordered.push(Child { replies: 0, score: 0.0, deferred: false, mv, key: child_key });
        }
        let mut win = false;
        for child_entry in &mut ordered {
            let mut child = *board;
            child.play_unchecked(child_entry.mv);
            child_entry.replies = child.count_moves();
            if child_entry.replies == 0 || self.probe(child_entry.key) == Some(false) {
                win = true;
                break;
            }
        }
        if !win {
            // The full keys again for the children searched (few, before a
            // cut), rather than kept for every child.
            if self.scored(board, ply, &mut ordered) {
                ordered.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.replies.cmp(&b.replies)));
            } else {
                ordered.sort_unstable_by_key(|child| child.replies);
            }
            let tracked = self.line_progress.tracks(ply);
            if tracked {
                self.line_progress.at(ply, 0, ordered.len());
            }
            // With other threads: a first pass over the children that no
            // other thread is searching (and the first child regardless),
            // then a second over those put off.
            let mut done = 0;
            let busy_here = busy.filter(|_| ply < SHARED_PLIES);
            'passes: for pass in 0..1 + usize::from(busy_here.is_some()) {
                for i in 0..ordered.len() {
                    let Child { mv, key: child_key, deferred, .. } = ordered[i];
                    if let Some(busy) = busy_here {
                        if pass == 0 && i > 0 && busy.is_busy(child_key.0) {
                            ordered[i].deferred = true;
                            continue;
                        }
                        if pass == 1 && !deferred {
                            continue;
                        }
                    }
                    let mut child = *board;
                    child.play_unchecked(mv);
                    match self.search(&child, &symmetries.after(keys, mover, mv), ply + 1, symmetries, busy) {
                        Ok(false) => {
                            win = true;
                            break 'passes;
                        }
                        Ok(true) => {}
                        Err(e) => {
                            self.scratch[ply] = ordered;
                            return match self.settled {
                                // Another thread solved this node.
                                Some((settled, win)) if settled == ply => {
                                    self.settled = None;
                                    Ok(win)
                                }
                                _ => Err(e),
                            };
                        }
                    }
                    done += 1;
                    if tracked {
                        // The child's search moved the line deeper; it is back here.
                        self.line_progress.at(ply, done, ordered.len());
                        if ply == 0 {
                            self.line_progress.publish(&self.progress);
                        }
                    }
                }
            }
        }
        self.scratch[ply] = ordered;
        self.store(key, win, self.nodes - start_nodes);
        Ok(win)
    }
}

/// A transposition table of `count` empty entries, backed by huge pages
/// where Linux allows (see [`advise_huge_pages`]): the advice comes before
/// the entries are written, so that the pages are huge from their first
/// touch (a table the allocator has zeroed first is faulted in 4 KiB
/// pages).
///
/// # Errors
/// [`TableError::OutOfMemory`]: the system did not grant it.
pub(crate) fn huge_page_table<T: Default>(count: usize) -> Result<Vec<T>, TableError> {
    let mut table: Vec<T> = Vec::new();
    table.try_reserve_exact(count).map_err(|_| TableError::OutOfMemory((count * size_of::<T>()) as u64 >> 20))?;
    advise_huge_pages(table.as_ptr().cast(), count * size_of::<T>());
    table.extend((0..count).map(|_| T::default()));
    Ok(table)
}

/// Asks Linux to back the table with 2 MiB pages where it can (before the
/// memory is touched): every probe lands on a random page, and with 4 KiB
/// pages nearly every one also misses the TLB.
#[cfg(target_os = "linux")]
fn advise_huge_pages(start: *const u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let begin = (start as usize).next_multiple_of(HUGE);
    let end = (start as usize + len) & !(HUGE - 1);
    if end > begin {
        // SAFETY: the range lies inside the table's own allocation, and the
        // advice changes only how the kernel backs it, never its contents.
        // A refusal (no transparent huge pages) leaves the small pages.
        unsafe {
            libc::madvise(begin as *mut libc::c_void, end - begin, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: *const u8, _len: usize) {}

/// Plain minimax without table or ordering: the reference the solver is
/// tested against on tiny boards.
pub fn minimax_wins(position: &Position) -> bool {
    position.moves().into_iter().any(|mv| {
        let mut child = *position;
        child.play_unchecked(mv);
        !minimax_wins(&child)
    })
}
