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
//! A long solve is kept by checkpoints of the table's expensive entries,
//! unsettled numbers included: in df-pn most of the work of a hard
//! subtree is in positions that stay unproven until the last moment, so
//! the settled results alone (what the alpha-beta solver journals) would
//! let a resumed search redo nearly all of it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::bits::Bits;
use crate::board::Board;
use crate::geometry::Size;
use crate::moves::{Move, MoveList};
use crate::position::{BoardVisitor, Position};
use crate::solver::{
    JournalEntry, Keys, MoveOrder, Progress, Solution, Symmetries, TableError, Unsolved, advise_huge_pages,
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

/// The entries a position may be filed in, one cache line: a probe costs
/// one miss.
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct Set([Entry; WAYS]);

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

/// A df-pn solver: its table and per-ply scratch, reusable across solves of
/// one board size.
pub struct DfpnSolver {
    table: Vec<Set>,
    scratch: Vec<Vec<Child>>,
    symmetries: Option<Symmetries>,
    nodes: u64,
    node_limit: u64,
    progress: Arc<Progress>,
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
        let sets = 1usize << table_bits;
        let mut table: Vec<Set> = Vec::new();
        table.try_reserve_exact(sets).map_err(|_| TableError::OutOfMemory((sets * size_of::<Set>()) as u64 >> 20))?;
        advise_huge_pages(table.as_ptr().cast(), sets * size_of::<Set>());
        table.resize(sets, Set::default());
        Ok(DfpnSolver {
            table,
            scratch: Vec::new(),
            symmetries: None,
            nodes: 0,
            node_limit: u64::MAX,
            progress: Arc::default(),
            move_order: None,
            cost_scale: 16.0,
            costs: HashMap::new(),
            order_moves: Vec::new(),
            order_scores: Vec::new(),
            epsilon: 512,
            checkpoints: None,
            checkpoint_failed: false,
        })
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
        self.table.iter().flat_map(|set| set.0.iter()).filter(|e| e.hash != 0).map(|e| TableEntry {
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
            let lost = !self.wins_within(&child, node_limit)?;
            if lost {
                winning_moves.push(mv);
            }
            on_move(mv, lost);
            let share =
                Progress::ONE * (i as u64 + 1) / moves.len() as u64 - Progress::ONE * i as u64 / moves.len() as u64;
            self.progress.resolved.fetch_add(share, Ordering::Relaxed);
        }
        Ok(Solution { win: !winning_moves.is_empty(), winning_moves, nodes: self.nodes, threads: 1 })
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
                self.table.fill(Set::default());
            }
        }
    }

    fn root<B: Bits>(&mut self, board: &Board<B>) -> Result<bool, Unsolved> {
        self.symmetries_for(board.size());
        let symmetries = self.symmetries.take().expect("just set");
        let result = match symmetries.count {
            1 => self.mid::<B, 1>(board, &symmetries.keys(board), INF, INF, 0, &symmetries),
            4 => self.mid::<B, 4>(board, &symmetries.keys(board), INF, INF, 0, &symmetries),
            8 => self.mid::<B, 8>(board, &symmetries.keys(board), INF, INF, 0, &symmetries),
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
        self.set(hash).0.iter().find(|e| e.hash == hash && e.check == check).map(|e| (e.phi, e.delta))
    }

    /// Files a node's numbers: over its own entry, else over an empty one,
    /// else over the one whose search took the fewest nodes.
    fn store(&mut self, (hash, check): (u64, u32), phi: u64, delta: u64, work: u64) {
        let index = hash as usize & (self.table.len() - 1);
        let ways = &mut self.table[index].0;
        let slot = ways.iter().position(|e| e.hash == hash && e.check == check).unwrap_or_else(|| {
            (0..WAYS).min_by_key(|&i| if ways[i].hash == 0 { 0 } else { u64::from(ways[i].work) + 1 }).expect("ways")
        });
        ways[slot] = Entry { hash, check, work: u32::try_from(work).unwrap_or(u32::MAX), phi, delta };
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
        th_phi: u64,
        th_delta: u64,
        ply: usize,
        symmetries: &Symmetries,
    ) -> Result<(u64, u64), Unsolved> {
        self.nodes += 1;
        if self.nodes > self.node_limit {
            return Err(Unsolved(self.nodes));
        }
        if self.nodes & 0xFFF == 0 {
            self.progress.nodes.fetch_add(0x1000, Ordering::Relaxed);
            if let Some((every_nodes, _)) = &self.checkpoints
                && self.nodes.is_multiple_of(*every_nodes)
            {
                self.offer_checkpoint();
                if self.checkpoint_failed {
                    return Err(Unsolved(self.nodes));
                }
            }
        }
        let key = Self::key(keys);
        if let Some((phi, delta)) = self.probe(key)
            && (phi >= th_phi || delta >= th_delta)
        {
            return Ok((phi, delta));
        }
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
        let result = loop {
            // phi = min delta(child), delta = sum phi(child); the best child
            // has the least delta, `second` the next least.
            let mut phi = INF;
            let mut delta = 0u64;
            let (mut best, mut second) = (0, INF);
            for (i, child) in children.iter().enumerate() {
                // A proven move is free, whatever the order thought of it.
                let priced = if child.delta == 0 { 0 } else { child.delta.saturating_add(child.cost) };
                if priced < phi {
                    second = phi;
                    phi = priced;
                    best = i;
                } else if priced < second {
                    second = priced;
                }
                delta = if child.phi == INF { INF } else { delta.saturating_add(child.phi) };
            }
            if delta != INF {
                delta = delta.min(BIG);
            }
            if phi >= th_phi || delta >= th_delta {
                break (phi, delta);
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
            let (child_phi, child_delta) = match self.mid(
                &child,
                &symmetries.after(keys, mover, chosen.mv),
                child_th_phi,
                child_th_delta,
                ply + 1,
                symmetries,
            ) {
                Ok(numbers) => numbers,
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
