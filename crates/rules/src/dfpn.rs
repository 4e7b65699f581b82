//! Depth-first proof-number search (df-pn, Nagai 2002), the best-first
//! proof search the solve issue asked to measure beside the alpha-beta
//! [`Solver`](crate::Solver).
//!
//! Every node carries two numbers from its mover's point of view: `phi`,
//! an estimate of the nodes still needed to prove that the mover wins,
//! and `delta`, to prove that it loses. A win needs one child the
//! opponent loses (`phi = min delta(child)`), a loss needs every child
//! won by the opponent (`delta = sum phi(child)`). The search always
//! descends into the child that is cheapest to finish the proof with, and
//! only as long as the numbers stay under thresholds handed down from the
//! parent, so it runs in a depth-first recursion with a transposition table
//! instead of keeping the best-first tree in memory. Kōnane's games only
//! ever remove stones, so the game graph has no cycles, and the classic
//! graph-history troubles of df-pn cannot arise.
//!
//! A new node's numbers come from its number of moves (`phi = 1`,
//! `delta = moves`): a position with few replies is quick to refute, which
//! is the order the alpha-beta solver tries moves in. The child's
//! threshold uses the 1 + epsilon trick (Pawlewicz and Lew 2007), which
//! cuts the re-expansions of plain df-pn.
//!
//! The table is keyed by the same symmetry-folded 96-bit keys as the
//! alpha-beta solver's and replaces the entry with the smallest subtree.
//!
//! Several threads search one table (Kaneko 2010's shared-table parallel
//! df-pn, as the alpha-beta solver's threads do): they take the root's
//! distinct moves in turn, then join the unsolved one the fewest threads
//! search. Threads in one subtree see each other's numbers through the
//! table; where one is already under a node's best child, another takes
//! the runner-up instead, so they split the work rather than repeat it. A
//! thread whose line holds a node another thread has settled unwinds to it.
//!
//! A long solve is kept by checkpoints of the table's expensive entries,
//! unsettled numbers included: in df-pn most of the work of a hard
//! subtree is in positions that stay unproven until the last moment, so
//! the settled results alone (what the alpha-beta solver journals) would
//! let a resumed search redo nearly all of it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::bits::Bits;
use crate::board::Board;
use crate::geometry::Size;
use crate::moves::{Move, MoveList};
use crate::position::{BoardVisitor, Position};
use crate::regions::{RegionLimits, RegionStats, Regions};
use crate::solver::{
    Busy, JournalEntry, Keys, LineProgress, MoveOrder, Progress, RootWork, SHARED_PLIES, Solution, Symmetries,
    TableError, Team, Unsolved, huge_page_table, run_team,
};

/// An infinite proof or disproof number: the question is settled.
const INF: u64 = u64::MAX;

/// The largest finite number; sums stop there (no Kōnane proof comes near
/// it, and a number that did would only slow the search, not mislead it).
const BIG: u64 = INF / 4;

/// Entries per set of the table: a set is one cache line.
const WAYS: usize = 2;

/// A table entry: a position's symmetry class, its numbers and the nodes
/// its search took (to keep expensive entries). `hash == 0` is empty.
#[derive(Clone, Copy, Default)]
struct Entry {
    hash: u64,
    check: u32,
    work: u32,
    phi: u64,
    delta: u64,
}

/// One entry in a slot that the threads of a parallel solve read and
/// write without locks: `lock` holds the hash XOR the other three words,
/// so an entry torn by two writers at once never matches a probe (Hyatt
/// and Mann's lockless hashing, as in the alpha-beta solver's table).
#[derive(Default)]
struct Slot {
    lock: AtomicU64,
    /// The check hash (high half) and the work (low half).
    data: AtomicU64,
    phi: AtomicU64,
    delta: AtomicU64,
}

impl Slot {
    /// The entry, with the hash of an empty slot 0 and that of a torn one
    /// garbage (which no position's key matches).
    #[inline(always)]
    fn read(&self) -> Entry {
        let data = self.data.load(Ordering::Relaxed);
        let phi = self.phi.load(Ordering::Relaxed);
        let delta = self.delta.load(Ordering::Relaxed);
        let hash = self.lock.load(Ordering::Relaxed) ^ data ^ phi ^ delta;
        Entry { hash, check: (data >> 32) as u32, work: data as u32, phi, delta }
    }

    /// The numbers of position `(hash, check)` if the slot holds it: the
    /// check hash first, which rules out nearly every other position with
    /// one load.
    #[inline(always)]
    fn numbers(&self, hash: u64, check: u32) -> Option<(u64, u64)> {
        let data = self.data.load(Ordering::Relaxed);
        if (data >> 32) as u32 != check {
            return None;
        }
        let phi = self.phi.load(Ordering::Relaxed);
        let delta = self.delta.load(Ordering::Relaxed);
        (self.lock.load(Ordering::Relaxed) ^ data ^ phi ^ delta == hash).then_some((phi, delta))
    }

    /// How much the slot is worth keeping when a new position needs one:
    /// 0 when empty (every word 0, so its lock too), else the nodes its
    /// search took plus one.
    #[inline(always)]
    fn keep_rank(&self) -> u64 {
        if self.lock.load(Ordering::Relaxed) == 0 { 0 } else { u64::from(self.data.load(Ordering::Relaxed) as u32) + 1 }
    }

    #[inline(always)]
    fn write(&self, entry: Entry) {
        let data = u64::from(entry.check) << 32 | u64::from(entry.work);
        self.data.store(data, Ordering::Relaxed);
        self.phi.store(entry.phi, Ordering::Relaxed);
        self.delta.store(entry.delta, Ordering::Relaxed);
        self.lock.store(entry.hash ^ data ^ entry.phi ^ entry.delta, Ordering::Relaxed);
    }
}

/// The entries a position may be filed in, one cache line: a probe costs
/// one miss.
#[derive(Default)]
#[repr(align(64))]
struct Set([Slot; WAYS]);

/// A table entry as a checkpoint keeps it ([`DfpnSolver::set_checkpoints`])
/// and [`DfpnSolver::restore`] puts it back: a position's symmetry class,
/// its proof and disproof numbers (0 and `u64::MAX` for a settled one), and
/// the nodes its last search took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableEntry {
    /// The table hash (never 0).
    pub hash: u64,
    /// The check hash.
    pub check: u32,
    /// Nodes its last search took (saturated).
    pub work: u32,
    /// The proof number: 0 when the side to move is proven to win.
    pub phi: u64,
    /// The disproof number: 0 when the side to move is proven to lose.
    pub delta: u64,
}

/// What [`DfpnSolver::set_checkpoints`] hands the table's entries to: it
/// reads them (or not, when no checkpoint is due) and returns false to
/// stop the solve (its storage failed).
type CheckpointSink = Box<dyn FnMut(&mut dyn Iterator<Item = TableEntry>) -> bool + Send>;

/// A move of the node being searched and its child's current numbers.
#[derive(Clone, Copy)]
struct Child {
    mv: Move,
    /// The table key of the position after `mv`.
    key: (u64, u32),
    phi: u64,
    delta: u64,
    /// What choosing this move costs on top of its `delta`, from a move
    /// order's priors (0 without one, and for the likeliest move).
    cost: u64,
}

/// What every node of one search reads: the board size's symmetry keys,
/// and in a parallel solve the nodes the threads are searching.
#[derive(Clone, Copy)]
struct Context<'a> {
    symmetries: &'a Symmetries,
    busy: Option<&'a Busy>,
}

/// A df-pn solver: its table and per-ply scratch, reusable across solves of
/// one board size.
pub struct DfpnSolver {
    /// Shared with the other threads of a parallel solve.
    table: Arc<Vec<Set>>,
    scratch: Vec<Vec<Child>>,
    symmetries: Option<Symmetries>,
    nodes: u64,
    node_limit: u64,
    progress: Arc<Progress>,
    /// How much of the root move being searched is resolved.
    line_progress: LineProgress,
    /// The plies below the searched position whose moves a move order
    /// prices, and the order.
    move_order: Option<(usize, Box<dyn MoveOrder>)>,
    /// A move's cost per unit of log-prior below the likeliest move's.
    cost_scale: f32,
    /// The moves' costs at the positions priced so far, by the exact (not
    /// symmetry-folded) hashes of the position, in move generation order:
    /// a node is expanded again and again as its thresholds rise, and the
    /// order's network is far slower than the search.
    costs: HashMap<(u64, u32), Box<[u32]>>,
    /// Scratch for the move order's calls.
    order_moves: Vec<Move>,
    order_scores: Vec<f32>,
    /// The child threshold's factor over the second-best sibling, in
    /// 1/1024ths above one (256: 1.25).
    epsilon: u64,
    /// Where the table is offered every so many nodes (a multiple of
    /// 4,096, counted from a solve's start).
    checkpoints: Option<(u64, CheckpointSink)>,
    /// A checkpoint's sink failed: every search stops as [`Unsolved`].
    checkpoint_failed: bool,
    /// The other threads, during a parallel solve.
    team: Option<Team>,
    /// In a parallel solve, the nodes all its threads may search.
    team_node_limit: u64,
    /// In a parallel solve, the table keys of the current line's nodes at
    /// the shared plies, to notice when another thread has settled one.
    line: [(u64, u32); SHARED_PLIES],
    /// The ply of the current line's node that another thread has settled:
    /// the search unwinds to it and takes its numbers from the table.
    settled: Option<usize>,
    /// Decides positions made of independent regions without search.
    regions: Option<Regions>,
}

impl DfpnSolver {
    /// The largest table: 2^28 sets of 64 bytes, 16 GiB.
    pub const MAX_TABLE_BITS: u32 = 28;

    /// A solver with a table of `2^table_bits` sets of two 32-byte
    /// entries (64 bytes a set).
    ///
    /// # Panics
    /// If the table cannot be had (see [`DfpnSolver::try_new`], for sizes
    /// users choose).
    pub fn new(table_bits: u32) -> DfpnSolver {
        DfpnSolver::try_new(table_bits).unwrap_or_else(|e| panic!("DfpnSolver::new: {e}"))
    }

    /// A solver with `2^table_bits` sets of 64 bytes, if that is within
    /// [`DfpnSolver::MAX_TABLE_BITS`] and the system grants the memory.
    ///
    /// # Errors
    /// [`TableError`]: too many bits, or no memory.
    pub fn try_new(table_bits: u32) -> Result<DfpnSolver, TableError> {
        if table_bits > Self::MAX_TABLE_BITS {
            return Err(TableError::TooLarge(table_bits));
        }
        let table: Vec<Set> = huge_page_table(1 << table_bits)?;
        Ok(DfpnSolver::on_table(Arc::new(table), Arc::default()))
    }

    /// A solver with no move order or checkpoints on `table`, counting its
    /// nodes into `progress`.
    fn on_table(table: Arc<Vec<Set>>, progress: Arc<Progress>) -> DfpnSolver {
        DfpnSolver {
            table,
            scratch: Vec::new(),
            symmetries: None,
            nodes: 0,
            node_limit: u64::MAX,
            progress,
            line_progress: LineProgress::default(),
            move_order: None,
            cost_scale: 16.0,
            costs: HashMap::new(),
            order_moves: Vec::new(),
            order_scores: Vec::new(),
            epsilon: 512,
            checkpoints: None,
            checkpoint_failed: false,
            team: None,
            team_node_limit: u64::MAX,
            line: [(0, 0); SHARED_PLIES],
            settled: None,
            regions: None,
        }
    }

    /// Another solver on the same table, progress counter and move order
    /// (a fork of it), for another thread of a parallel solve.
    fn sharing(&self) -> DfpnSolver {
        DfpnSolver {
            move_order: self.move_order.as_ref().map(|(plies, order)| (*plies, order.fork())),
            cost_scale: self.cost_scale,
            epsilon: self.epsilon,
            regions: self.regions.as_ref().map(Regions::fork),
            ..DfpnSolver::on_table(Arc::clone(&self.table), Arc::clone(&self.progress))
        }
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

    /// The table's size in bytes.
    pub fn table_bytes(&self) -> u64 {
        (self.table.len() * size_of::<Set>()) as u64
    }

    /// The solve's progress (nodes, and the share of root moves done), to
    /// read from another thread while it runs.
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// Prices the moves of the first `plies` plies by `order`'s scores,
    /// taken as probabilities (a network's policy): a move costs
    /// `scale * ln(p_best / p)` on top of its own `delta`, so the search
    /// tries the likeliest moves first and returns to them while their
    /// proofs look no more than that much harder (Kishimoto and others'
    /// df-pn with heuristic edge costs).
    pub fn set_move_order(&mut self, plies: usize, order: Box<dyn MoveOrder>, scale: f32) {
        self.move_order = Some((plies, order));
        self.cost_scale = scale;
        self.costs.clear();
    }

    /// Sets the 1 + epsilon factor of the child thresholds, in 1/1024ths
    /// above one (0: plain df-pn's `second best + 1`; the default 512,
    /// 1.5, searched 6x6 in the fewest nodes of 0, 256, 512, 1024 and 2048).
    pub fn set_epsilon(&mut self, epsilon_1024ths: u64) {
        self.epsilon = epsilon_1024ths;
    }

    /// Offers the table's entries to `sink` every `every_nodes` nodes of
    /// search (counted from a solve's start, rounded up to a multiple of
    /// 4,096), for it to keep those worth keeping
    /// when a checkpoint is due: a later solver given them by
    /// [`DfpnSolver::restore`] goes on from there. The table is consistent
    /// whenever it is offered (settled entries are exact; unsettled numbers
    /// are estimates, whatever their age). The sink returns false to stop
    /// the solve, which then ends as [`Unsolved`].
    pub fn set_checkpoints(
        &mut self,
        every_nodes: u64,
        sink: impl FnMut(&mut dyn Iterator<Item = TableEntry>) -> bool + Send + 'static,
    ) {
        let every_nodes = every_nodes.max(1).next_multiple_of(0x1000);
        self.checkpoints = Some((every_nodes, Box::new(sink)));
        self.checkpoint_failed = false;
    }

    /// Whether a checkpoint's sink has stopped the search (its storage
    /// failed): an [`Unsolved`] then does not mean the node budget ran out.
    pub fn checkpoint_failed(&self) -> bool {
        self.checkpoint_failed
    }

    /// Puts an entry of an earlier solve's table (of this size, from
    /// [`DfpnSolver::set_checkpoints`]) back, over what its slot held.
    pub fn restore(&mut self, entry: TableEntry) {
        if entry.hash != 0 {
            self.store((entry.hash, entry.check), entry.phi, entry.delta, u64::from(entry.work));
        }
    }

    /// The table's entries, as [`DfpnSolver::set_checkpoints`] offers them:
    /// for a last checkpoint when a solve ends or runs out of nodes.
    pub fn entries(&self) -> impl Iterator<Item = TableEntry> + '_ {
        // Every key has its lowest bit set: that drops half the entries torn
        // by a parallel solve's other threads, which no probe ever matches.
        self.table.iter().flat_map(|set| set.0.iter()).map(Slot::read).filter(|e| e.hash & 1 == 1).map(|e| TableEntry {
            hash: e.hash,
            check: e.check,
            work: e.work,
            phi: e.phi,
            delta: e.delta,
        })
    }

    /// Offers the table to the checkpoint sink, which reads it if a
    /// checkpoint is due.
    fn offer_checkpoint(&mut self) {
        let Some((every_nodes, mut sink)) = self.checkpoints.take() else { return };
        if !sink(&mut self.entries()) {
            self.checkpoint_failed = true;
            self.node_limit = 0;
        }
        self.checkpoints = Some((every_nodes, sink));
    }

    /// Whether the side to move wins `position`, within about `node_limit`
    /// nodes (counted from the last solve's start).
    ///
    /// # Errors
    /// The node budget ran out; what was learnt stays in the table.
    pub fn wins_within(&mut self, position: &Position, node_limit: u64) -> Result<bool, Unsolved> {
        struct Visit<'a>(&'a mut DfpnSolver);
        impl BoardVisitor for Visit<'_> {
            type Output = Result<bool, Unsolved>;
            fn visit<B: Bits>(self, board: &Board<B>) -> Self::Output {
                self.0.root(board)
            }
        }
        self.node_limit = if self.checkpoint_failed { 0 } else { node_limit };
        position.visit(Visit(self))
    }

    /// The value of `position` and all its winning moves: each move's
    /// position proven or disproven in turn, the table shared (so a move
    /// that a symmetry maps onto one already solved costs a probe), and
    /// `on_move(move, lost)` told each one's value as it is found.
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
        let moves = position.moves();
        self.progress.start(moves.len());
        let mut winning_moves = Vec::new();
        for (i, &mv) in moves.iter().enumerate() {
            let mut child = *position;
            child.play_unchecked(mv);
            self.line_progress.begin(Progress::share(i, moves.len()));
            let result = self.wins_within(&child, node_limit);
            self.line_progress.end(&self.progress, result.is_ok());
            let lost = !result?;
            if lost {
                winning_moves.push(mv);
            }
            on_move(mv, lost);
        }
        Ok(Solution { win: !winning_moves.is_empty(), winning_moves, nodes: self.nodes, threads: 1 })
    }

    /// As [`DfpnSolver::solve_each`], on `threads` threads that share the
    /// table (see the module's notes; `node_limit` counts all their nodes).
    /// Root moves that a symmetry of the position maps onto each other are
    /// solved once; `on_move` hears of each move as its class is solved.
    /// One thread is exactly [`DfpnSolver::solve_each`]; with more, the node
    /// count varies from run to run, the values do not.
    ///
    /// # Errors
    /// The budget ran out or a checkpoint could not be written; what was
    /// learnt stays in the table.
    pub fn solve_each_parallel(
        &mut self,
        position: &Position,
        threads: usize,
        node_limit: u64,
        on_move: impl Fn(Move, bool) + Sync,
    ) -> Result<Solution, Unsolved> {
        if threads <= 1 {
            return self.solve_each(position, node_limit, on_move);
        }
        self.nodes = 0;
        // A new size clears the table before the threads share it.
        self.symmetries_for(position.size());
        let moves = position.moves();
        let work_list = RootWork::new(position, &moves, true);
        self.progress.start(moves.len());
        let failed = Arc::new(AtomicBool::new(false));
        let team = Team { busy: Arc::new(Busy::new()), failed: Arc::clone(&failed) };
        let work = |solver: &mut DfpnSolver| -> Result<u64, Unsolved> {
            let first = solver.nodes;
            solver.team_node_limit = node_limit;
            loop {
                if failed.load(Ordering::Relaxed) {
                    return Err(Unsolved(solver.nodes));
                }
                let Some((index, own)) = work_list.take() else { break };
                let child = work_list.child(position, index);
                solver.team = Some(team.clone());
                solver.settled = None;
                // The thread that took the class counts its progress.
                solver.line_progress.begin(if own { work_list.share(index) } else { 0 });
                let result = solver.wins_within(&child, u64::MAX);
                solver.team = None;
                work_list.leave(index);
                // Stopped because another thread settled the root move, or
                // because the solve failed.
                let result = result.or_else(|unsolved| {
                    solver.known(&child).filter(|_| !failed.load(Ordering::Relaxed)).ok_or(unsolved)
                });
                solver.line_progress.end(&solver.progress, result.is_ok());
                let wins = result.inspect_err(|_| failed.store(true, Ordering::Relaxed))?;
                work_list.finish(index, wins, &on_move);
            }
            Ok(solver.nodes - first)
        };
        let mut helpers: Vec<DfpnSolver> = (1..threads).map(|_| self.sharing()).collect();
        let (nodes, searching_threads) = run_team(self, &mut helpers, work)?;
        self.nodes = nodes;
        let winning_moves = work_list.winning_moves(&moves);
        Ok(Solution { win: !winning_moves.is_empty(), winning_moves, nodes, threads: searching_threads })
    }

    /// The value of `position` and all its winning moves.
    pub fn solve(&mut self, position: &Position) -> Solution {
        self.solve_each(position, u64::MAX, |_, _| {}).expect("no node limit")
    }

    /// Puts a result of an alpha-beta solve of this size (with symmetry
    /// folding, as [`crate::Solver`] journals them) into the table as
    /// proven, marked as the most expensive kind so that it stays.
    pub fn pin(&mut self, entry: JournalEntry) {
        let (phi, delta) = if entry.win { (0, INF) } else { (INF, 0) };
        self.store((entry.hash | 1, entry.check), phi, delta, u64::MAX);
    }

    /// Whether the side to move wins `position`, within the node budget of
    /// the last solve (what the prover asks, [`crate::proof::prove`]).
    ///
    /// # Errors
    /// The node budget ran out.
    pub fn wins(&mut self, position: &Position) -> Result<bool, Unsolved> {
        self.wins_within(position, self.node_limit)
    }

    /// The value of `position` if the table holds it proven or disproven,
    /// without searching.
    pub fn known(&mut self, position: &Position) -> Option<bool> {
        self.symmetries_for(position.size());
        let (hash, check) = self.symmetries.as_ref().expect("just set").key_of(position);
        match self.probe((hash | 1, check))? {
            (0, _) => Some(true),
            (_, 0) => Some(false),
            _ => None,
        }
    }

    /// Nodes searched since the last solve started.
    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    fn symmetries_for(&mut self, size: Size) {
        match &self.symmetries {
            Some(symmetries) if symmetries.size == size => {}
            // The table stays: it is empty, or holds pinned results.
            None => self.symmetries = Some(Symmetries::of(size, true)),
            // A new size: the old one's entries would only take room (the
            // keys tell the sizes apart).
            Some(_) => {
                self.symmetries = Some(Symmetries::of(size, true));
                for slot in self.table.iter().flat_map(|set| set.0.iter()) {
                    slot.write(Entry::default());
                }
            }
        }
    }

    fn root<B: Bits>(&mut self, board: &Board<B>) -> Result<bool, Unsolved> {
        self.symmetries_for(board.size());
        let symmetries = self.symmetries.take().expect("just set");
        let busy = self.team.as_ref().map(|team| Arc::clone(&team.busy));
        let context = Context { symmetries: &symmetries, busy: busy.as_deref() };
        let result = match symmetries.count {
            1 => self.mid::<B, 1>(board, &symmetries.keys(board), (INF, INF), 0, context),
            4 => self.mid::<B, 4>(board, &symmetries.keys(board), (INF, INF), 0, context),
            8 => self.mid::<B, 8>(board, &symmetries.keys(board), (INF, INF), 0, context),
            count => unreachable!("{count} symmetries"),
        };
        self.symmetries = Some(symmetries);
        let (phi, delta) = result?;
        debug_assert!(phi == 0 || delta == 0, "the root search ends settled");
        Ok(phi == 0)
    }

    /// The set `hash` is filed in.
    fn set(&self, hash: u64) -> &Set {
        &self.table[hash as usize & (self.table.len() - 1)]
    }

    /// Asks the memory system for the set of `hash` without waiting.
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let set = self.set(hash);
            // SAFETY: a prefetch is a hint that never faults, and the pointer
            // is to a live entry of the table.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(std::ptr::from_ref(set).cast());
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }

    fn probe(&self, (hash, check): (u64, u32)) -> Option<(u64, u64)> {
        self.set(hash).0.iter().find_map(|slot| slot.numbers(hash, check))
    }

    /// Files a node's numbers: over its own entry, else over an empty one,
    /// else over the one whose search took the fewest nodes. A settled
    /// entry is never overwritten by unsettled numbers of the same position
    /// (a parallel solve's thread that searched it from older numbers than
    /// another's proof).
    fn store(&self, (hash, check): (u64, u32), phi: u64, delta: u64, work: u64) {
        let ways = &self.set(hash).0;
        let own = ways.iter().enumerate().find_map(|(i, slot)| Some((i, slot.numbers(hash, check)?)));
        let slot = match own {
            Some((_, (old_phi, old_delta))) if (old_phi == 0 || old_delta == 0) && phi != 0 && delta != 0 => return,
            Some((own, _)) => own,
            None => (0..WAYS).min_by_key(|&i| ways[i].keep_rank()).expect("ways"),
        };
        ways[slot].write(Entry { hash, check, work: u32::try_from(work).unwrap_or(u32::MAX), phi, delta });
    }

    /// The table key of a position: the smallest image hash with its lowest
    /// bit set (never the empty marker 0) and that image's check hash.
    #[inline]
    fn key<const N: usize>(keys: &Keys<N>) -> (u64, u32) {
        let (hash, check) = Symmetries::canonical(keys);
        (hash | 1, check)
    }

    /// Gives `children` their costs, if a move order prices `ply`.
    fn price<B: Bits, const N: usize>(&mut self, board: &Board<B>, keys: &Keys<N>, ply: usize, children: &mut [Child]) {
        let Some((plies, order)) = &mut self.move_order else { return };
        if ply >= *plies || children.len() < 2 {
            return;
        }
        let exact = (keys.hash[0], keys.check[0]);
        if !self.costs.contains_key(&exact) {
            let position = Position::from_fn(board.size(), board.side_to_move(), |cell| board.stone_at(cell));
            self.order_moves.clear();
            self.order_moves.extend(children.iter().map(|child| child.mv));
            self.order_scores.clear();
            let costs: Box<[u32]> = if order.score(&position, &self.order_moves, &mut self.order_scores)
                && self.order_scores.len() == children.len()
            {
                // Scores that are no probabilities (none above 0, or not
                // finite) price nothing.
                let best = self.order_scores.iter().copied().fold(0.0, f32::max);
                self.order_scores
                    .iter()
                    .map(|&p| {
                        let cost = self.cost_scale * (best / p.max(best * 1e-6)).ln();
                        if best > 0.0 && cost.is_finite() { cost.clamp(0.0, 1e6) as u32 } else { 0 }
                    })
                    .collect()
            } else {
                vec![0; children.len()].into()
            };
            self.costs.insert(exact, costs);
        }
        for (child, &cost) in children.iter_mut().zip(self.costs[&exact].iter()) {
            child.cost = u64::from(cost);
        }
    }

    /// The multiple-iterative-deepening search of one node: searches until
    /// its `phi` reaches `th_phi` or its `delta` reaches `th_delta`, and
    /// returns both.
    fn mid<B: Bits, const N: usize>(
        &mut self,
        board: &Board<B>,
        keys: &Keys<N>,
        (th_phi, th_delta): (u64, u64),
        ply: usize,
        context: Context<'_>,
    ) -> Result<(u64, u64), Unsolved> {
        self.nodes += 1;
        if self.nodes > self.node_limit {
            return Err(Unsolved(self.nodes));
        }
        if self.nodes & 0xFFF == 0 {
            self.progress.nodes.fetch_add(0x1000, Ordering::Relaxed);
            self.line_progress.publish(&self.progress);
            if let Some((every_nodes, _)) = &self.checkpoints
                && self.nodes.is_multiple_of(*every_nodes)
            {
                self.offer_checkpoint();
                if self.checkpoint_failed {
                    return Err(Unsolved(self.nodes));
                }
            }
            if let Some(team) = &self.team {
                if team.failed.load(Ordering::Relaxed) || self.progress.nodes() > self.team_node_limit {
                    return Err(Unsolved(self.nodes));
                }
                // Another thread has settled a node of the line (the root move
                // itself, say): unwind to it.
                let settled = (0..ply.min(SHARED_PLIES))
                    .find(|&p| self.probe(self.line[p]).is_some_and(|(phi, delta)| phi == 0 || delta == 0));
                if settled.is_some() {
                    self.settled = settled;
                    return Err(Unsolved(self.nodes));
                }
            }
        }
        let key = Self::key(keys);
        let known = self.probe(key);
        if let Some((phi, delta)) = known
            && (phi >= th_phi || delta >= th_delta)
        {
            return Ok((phi, delta));
        }
        // A position seen for the first time may be a sum of regions.
        if known.is_none()
            && let Some(regions) = &mut self.regions
            && let Some(win) = regions.wins(board)
        {
            let numbers = if win { (0, INF) } else { (INF, 0) };
            self.store(key, numbers.0, numbers.1, 1);
            return Ok(numbers);
        }
        let shared = context.busy.filter(|_| ply < SHARED_PLIES);
        if let Some(shared) = shared {
            self.line[ply] = key;
            shared.counter(key.0).fetch_add(1, Ordering::Relaxed);
        }
        let result = self.expand(board, keys, key, (th_phi, th_delta), ply, context);
        if let Some(shared) = shared {
            shared.counter(key.0).fetch_sub(1, Ordering::Relaxed);
        }
        result
    }

    /// [`DfpnSolver::mid`] past the table: generates the children of the
    /// node filed under `key` and searches the best until a threshold is
    /// reached.
    fn expand<B: Bits, const N: usize>(
        &mut self,
        board: &Board<B>,
        keys: &Keys<N>,
        key: (u64, u32),
        (th_phi, th_delta): (u64, u64),
        ply: usize,
        context: Context<'_>,
    ) -> Result<(u64, u64), Unsolved> {
        let symmetries = context.symmetries;
        let start = self.nodes;
        if self.scratch.len() <= ply {
            self.scratch.resize_with(ply + 1, Vec::new);
        }
        let mut children = std::mem::take(&mut self.scratch[ply]);
        children.clear();
        let mut moves = MoveList::new();
        board.generate(&mut moves);
        let mover = board.side_to_move();
        // Every child's key first, its set fetched from memory without
        // waiting, then the probes (mostly cache hits by then).
        for &mv in &moves {
            let child_key = Self::key(&symmetries.after(keys, mover, mv));
            self.prefetch(child_key.0);
            children.push(Child { mv, key: child_key, phi: 1, delta: 1, cost: 0 });
        }
        self.price(board, keys, ply, &mut children);
        for child_entry in &mut children {
            (child_entry.phi, child_entry.delta) = self.probe(child_entry.key).unwrap_or_else(|| {
                let mut child = *board;
                child.play_unchecked(child_entry.mv);
                match child.count_moves() {
                    0 => (INF, 0),
                    replies => (1, u64::from(replies)),
                }
            });
        }
        // The threads mark the nodes of the shared plies they search.
        let busy = context.busy.filter(|_| ply + 1 < SHARED_PLIES);
        let tracked = self.line_progress.tracks(ply);
        let result = loop {
            // phi = min delta(child), delta = sum phi(child); the best child
            // has the least delta, `second` the next least (the child
            // `runner_up`'s), `third` the one after.
            let mut phi = INF;
            let mut delta = 0u64;
            let (mut best, mut second, mut runner_up, mut third) = (0, INF, 0, INF);
            // Moves proven to lose (the child's mover wins): the children the
            // progress estimate counts as resolved.
            let mut lost = 0;
            for (i, child) in children.iter().enumerate() {
                let priced = child.priced();
                if priced < phi {
                    (third, second, runner_up) = (second, phi, best);
                    (phi, best) = (priced, i);
                } else if priced < second {
                    (third, second, runner_up) = (second, priced, i);
                } else if priced < third {
                    third = priced;
                }
                delta = if child.phi == INF { INF } else { delta.saturating_add(child.phi) };
                lost += usize::from(child.phi == 0);
            }
            if delta != INF {
                delta = delta.min(BIG);
            }
            if phi >= th_phi || delta >= th_delta {
                break (phi, delta);
            }
            // Another thread is under the best child: the runner-up instead,
            // unless it reaches the threshold, its rival the child after it.
            // (Taking it only when it cost at most 2 or 4 times the best
            // searched 7x6 and the 7x7 centre in more nodes.)
            if let Some(busy) = busy
                && second < th_phi
                && busy.is_busy(children[best].key.0)
            {
                best = runner_up;
                second = third;
            }
            if tracked {
                self.line_progress.at(ply, lost, children.len());
            }
            let chosen = children[best];
            // The child may grow its phi until the parent's delta reaches
            // its threshold, and its delta until it passes the second best
            // sibling's (by a factor 1 + epsilon) or the parent's phi threshold.
            let child_th_phi = if th_delta == INF { INF } else { th_delta - (delta - chosen.phi) };
            let grown = second.saturating_add(1).max(second.saturating_add(second.saturating_mul(self.epsilon) >> 10));
            // Above the move's cost, which the child does not see.
            let child_th_delta = th_phi.min(grown).saturating_sub(chosen.cost);
            let mut child = *board;
            child.play_unchecked(chosen.mv);
            let after = symmetries.after(keys, mover, chosen.mv);
            let numbers = self.mid(&child, &after, (child_th_phi, child_th_delta), ply + 1, context);
            let (child_phi, child_delta) = match numbers {
                Ok(numbers) => numbers,
                // Another thread settled the child: its numbers are in the
                // table (unless replaced since, and then searched again).
                Err(_) if self.settled == Some(ply + 1) => {
                    self.settled = None;
                    self.probe(chosen.key).unwrap_or((chosen.phi, chosen.delta))
                }
                Err(e) => {
                    self.scratch[ply] = children;
                    return Err(e);
                }
            };
            children[best].phi = child_phi;
            children[best].delta = child_delta;
        };
        self.scratch[ply] = children;
        self.store(key, result.0, result.1, self.nodes - start);
        Ok(result)
    }
}

impl Child {
    /// What choosing the move costs: its `delta` and its price, except that
    /// a proven move is free, whatever the order thought of it.
    #[inline(always)]
    fn priced(&self) -> u64 {
        if self.delta == 0 { 0 } else { self.delta.saturating_add(self.cost) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::{Solver, minimax_wins};

    /// df-pn agrees with plain minimax on every position of random games
    /// on the small boards, and with the alpha-beta solver on bigger ones.
    #[test]
    fn dfpn_agrees_with_minimax_and_the_solver() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut dfpn = DfpnSolver::new(12); // small, so entries get replaced
        let mut checked = 0;
        for (cols, rows) in [(3, 3), (4, 4), (4, 5), (5, 4), (3, 6), (5, 5)] {
            for _ in 0..20 {
                let mut position = Position::start(Size::new(cols, rows).unwrap());
                loop {
                    assert_eq!(dfpn.wins_within(&position, u64::MAX), Ok(minimax_wins(&position)), "{position}");
                    checked += 1;
                    let moves = position.moves();
                    if moves.is_empty() {
                        break;
                    }
                    position.play_unchecked(moves[rng.random_range(0..moves.len())]);
                }
            }
        }
        assert!(checked > 500, "{checked} positions");
        // Every opening's value, not only the root's.
        let mut solver = Solver::new(16);
        for (cols, rows) in [(6, 5), (5, 6), (7, 4), (4, 7), (5, 5)] {
            let start = Position::start(Size::new(cols, rows).unwrap());
            let (ours, theirs) = (dfpn.solve(&start), solver.solve(&start));
            assert_eq!((ours.win, &ours.winning_moves), (theirs.win, &theirs.winning_moves), "{cols}x{rows}");
        }
    }

    /// The progress moves while a root move is searched, not only as each
    /// is solved (a board whose start has two classes of openings showed 0%
    /// for most of its solve): a budget that runs out halfway into the
    /// first root move leaves part of it resolved, less than its share.
    #[test]
    fn progress_grows_inside_a_root_move() {
        let start = Position::start(Size::new(6, 6).unwrap());
        let moves = start.moves();
        let mut first = start;
        first.play_unchecked(moves[0]);
        let mut alone = DfpnSolver::new(16);
        alone.wins_within(&first, u64::MAX).unwrap();
        let cost = alone.nodes();
        assert!(cost > 1 << 16, "the first move takes {cost} nodes");
        let mut solver = DfpnSolver::new(16);
        let progress = solver.progress();
        assert!(solver.solve_each(&start, cost / 2, |_, _| {}).is_err());
        let resolved = progress.resolved();
        assert!(resolved > 0.0 && resolved < 1.0 / moves.len() as f64, "{resolved} resolved");
        // Two threads count each class's progress once: part of the solve,
        // never more than all of it.
        let mut solver = DfpnSolver::new(16);
        let progress = solver.progress();
        assert!(solver.solve_each_parallel(&start, 2, cost / 2, |_, _| {}).is_err());
        let resolved = progress.resolved();
        assert!(resolved > 0.0 && resolved < 1.0, "{resolved} resolved on two threads");
    }

    /// Threads sharing the table find the values and winning moves one
    /// thread finds: on a start (several classes of root moves), on an
    /// opening whose root moves are one class (the threads in one tree),
    /// and with a table small enough that they overwrite each other's
    /// entries. A node budget stops them all.
    #[test]
    fn threads_sharing_the_table_find_what_one_finds() {
        let mut corner = Position::start(Size::new(6, 6).unwrap());
        corner.play_unchecked(corner.moves()[0]);
        let mut positions: Vec<Position> =
            [(6, 5), (5, 6), (7, 4), (5, 5)].map(|(c, r)| Position::start(Size::new(c, r).unwrap())).into();
        positions.push(corner);
        for position in &positions {
            let one = DfpnSolver::new(16).solve(position);
            for (threads, bits) in [(2, 16), (3, 8)] {
                let mut solver = DfpnSolver::new(bits);
                let heard = std::sync::Mutex::new(Vec::new());
                let many = solver
                    .solve_each_parallel(position, threads, u64::MAX, |mv, lost| heard.lock().unwrap().push((mv, lost)))
                    .expect("no node limit");
                assert_eq!((many.win, &many.winning_moves), (one.win, &one.winning_moves), "{position}, {threads}");
                let mut heard = heard.into_inner().unwrap();
                heard.sort_unstable();
                let mut expected: Vec<(Move, bool)> =
                    position.moves().iter().map(|&mv| (mv, one.winning_moves.contains(&mv))).collect();
                expected.sort_unstable();
                assert_eq!(heard, expected, "every root move told once: {position}");
                let resolved = solver.progress().resolved();
                assert!((resolved - 1.0).abs() < 1e-6, "progress {resolved} at the end");
                assert!(many.threads >= 1 && many.nodes > 0);
            }
        }
        let start = Position::start(Size::new(6, 5).unwrap());
        let mut solver = DfpnSolver::new(16);
        assert!(solver.solve_each_parallel(&start, 2, 10_000, |_, _| {}).is_err(), "6x5 in 10,000 nodes");
        // What the threads learnt stays, and one thread finishes from it.
        let rest = solver.solve(&start);
        assert!(!rest.win);
    }

    /// The results an alpha-beta solve journals, pinned, answer df-pn's
    /// search: the same values in far fewer nodes.
    #[test]
    fn pinned_alpha_beta_results_answer_the_search() {
        let start = Position::start(Size::new(6, 5).unwrap());
        let journal = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut solver = Solver::new(16);
        let sink = Arc::clone(&journal);
        solver.set_journal(1_000, move |entry| {
            sink.lock().unwrap().push(entry);
            true
        });
        let expected = solver.solve(&start);
        let entries = journal.lock().unwrap().clone();
        assert!(entries.len() > 10, "{} results journalled", entries.len());
        let plain = DfpnSolver::new(16).solve(&start);
        let mut pinned = DfpnSolver::new(16);
        for &entry in &entries {
            pinned.pin(entry);
        }
        let answer = pinned.solve(&start);
        assert_eq!((answer.win, &answer.winning_moves), (expected.win, &expected.winning_moves));
        assert!(answer.nodes * 10 < plain.nodes, "pinned: {} nodes, plain {}", answer.nodes, plain.nodes);
    }

    /// A checkpoint resumes the search: a solve stopped half-way, its last
    /// checkpoint's expensive entries restored into a new solver, finishes
    /// with the same values in about the nodes it had left; a sink that
    /// fails stops the solve.
    #[test]
    fn a_checkpoint_resumes_the_search_where_it_stopped() {
        let start = Position::start(Size::new(6, 5).unwrap());
        let whole = DfpnSolver::new(16).solve(&start);
        let saved = Arc::new(std::sync::Mutex::new((0, Vec::new())));
        let mut first = DfpnSolver::new(16);
        let sink = Arc::clone(&saved);
        let offers = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = Arc::clone(&offers);
        first.set_checkpoints(4096, move |entries| {
            // Every fourth offer is taken, as a sink with a clock would.
            if counted.fetch_add(1, Ordering::Relaxed) % 4 == 3 {
                let kept: Vec<TableEntry> = entries.filter(|e| e.work >= 16).collect();
                *sink.lock().unwrap() = (counted.load(Ordering::Relaxed), kept);
            }
            true
        });
        // Killed half-way: only the last checkpoint survives.
        let stop = whole.nodes / 2;
        assert!(first.solve_each(&start, stop, |_, _| {}).is_err());
        let (offer, kept) = saved.lock().unwrap().clone();
        let checkpoint_nodes = offer * 4096;
        assert!(checkpoint_nodes > stop / 2 && !kept.is_empty(), "checkpoint at {checkpoint_nodes} nodes");
        assert!(kept.iter().all(|e| e.hash & 1 == 1 && e.work >= 16));

        let mut resumed = DfpnSolver::new(16);
        for &entry in &kept {
            resumed.restore(entry);
        }
        let answer = resumed.solve(&start);
        assert_eq!((answer.win, &answer.winning_moves), (whole.win, &whole.winning_moves));
        assert!(
            answer.nodes < whole.nodes - checkpoint_nodes / 2,
            "resumed: {} nodes after a checkpoint at {checkpoint_nodes}; {} in one go",
            answer.nodes,
            whole.nodes
        );

        let mut failing = DfpnSolver::new(16);
        failing.set_checkpoints(4096, |_| false);
        assert!(failing.solve_each(&start, u64::MAX, |_, _| {}).is_err(), "a failed checkpoint stops the solve");
        assert!(failing.wins(&start).is_err(), "and every search after it");
    }

    /// A node budget stops the search with an error, and a second call with
    /// the table kept finishes with the right value.
    #[test]
    fn a_budget_stops_the_search_and_the_table_keeps_the_work() {
        let start = Position::start(Size::new(6, 5).unwrap());
        let mut dfpn = DfpnSolver::new(18);
        let Err(Unsolved(nodes)) = dfpn.solve_each(&start, 1_000, |_, _| {}) else { panic!("6x5 in 1,000 nodes") };
        assert!(nodes > 1_000);
        let whole = DfpnSolver::new(18).solve(&start);
        let rest = dfpn.solve(&start);
        assert_eq!(rest.win, whole.win);
        assert!(!whole.win, "6x5 is a white win");
        assert!(
            rest.nodes < whole.nodes,
            "the table kept the first call's work: {} against {}",
            rest.nodes,
            whole.nodes
        );
        assert_eq!(dfpn.progress().resolved(), 1.0);
    }
}
