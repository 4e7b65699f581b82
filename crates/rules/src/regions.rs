//! Positions that fall apart into regions that can never interact, decided
//! by combinatorial game theory instead of search.
//!
//! Stones move only by capturing, so late in a game they stand in groups
//! with empty space between. When no stone of one group can ever come next
//! to a stone of another, the position is the disjunctive sum of the
//! groups' games (a move is a move in one group), and the side to move
//! wins or loses by the sum's value (see `konane_cgt`). The search of the
//! whole board walks every interleaving of the groups' moves; the values
//! walk each group once, and a group met again in another position (the
//! other groups having changed) costs a table lookup.
//!
//! When are two groups independent? A group's *reach* is every cell that
//! one of its stones stands on in any position its own moves can lead to
//! (either side moving, in any order), and it comes out of the same walk
//! as the group's value. If no cell of one group's reach is in or next to
//! another's, then in the whole board every jump of a stone of the group
//! passes over stones of its own group and lands on cells its own walk
//! reached (no other group's stone can be there or next to it), and every
//! jump of the group alone is legal on the whole board: by induction over
//! the moves played, the whole board's game is exactly the sum. Groups
//! whose reaches touch are merged and walked as one.
//!
//! Black is Left and white is Right; a position's value does not depend
//! on who is to move, only its outcome does.

use std::any::Any;

use konane_cgt::{Game, Games};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::bits::Bits;
use crate::board::{Board, Phase};
use crate::geometry::{Color, Size};
use crate::moves::MoveList;

/// How much a [`Regions`] may walk and keep.
#[derive(Clone, Copy, Debug)]
pub struct RegionLimits {
    /// Stones in a group, at most: a position with a bigger group (after
    /// merging the groups that can meet) is left to the search.
    pub stones: u32,
    /// New positions a single question may walk before it gives up (the
    /// group being too big to pay).
    pub walk: u32,
    /// Group positions kept with their values before the tables are
    /// dropped and start again; the games' store may hold eight times as
    /// many entries (with its memos).
    pub keep: usize,
}

impl Default for RegionLimits {
    fn default() -> RegionLimits {
        RegionLimits { stones: 4, walk: 1_000, keep: 1 << 20 }
    }
}

/// Counts of what [`Regions::wins`] was asked and answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionStats {
    /// Positions asked about.
    pub asked: u64,
    /// Positions of two or more stone groups, each small enough to walk
    /// (the rest were one group, or had a group too big).
    pub split: u64,
    /// Positions answered from the sum of independent regions.
    pub decided: u64,
    /// Positions of the groups walked, in all.
    pub walked: u64,
}

/// Decides positions made of independent regions; one per thread, for one
/// board size at a time (a new size starts its tables afresh).
pub struct Regions {
    limits: RegionLimits,
    /// A `Walker<B>` for the bit width of the boards asked about.
    walker: Option<Box<dyn Any + Send>>,
    stats: RegionStats,
}

impl Regions {
    /// Regions within `limits`.
    pub fn new(limits: RegionLimits) -> Regions {
        Regions { limits, walker: None, stats: RegionStats::default() }
    }

    /// Fresh tables within the same limits, for another thread of a solve.
    pub fn fork(&self) -> Regions {
        Regions::new(self.limits)
    }

    /// What it has been asked and answered so far.
    pub fn stats(&self) -> RegionStats {
        self.stats
    }

    /// Whether the side to move wins `board`, if the board is two or more
    /// independent regions each small enough to walk; `None` otherwise.
    pub fn wins<B: Bits>(&mut self, board: &Board<B>) -> Option<bool> {
        self.stats.asked += 1;
        if board.phase() != Phase::Capturing {
            return None;
        }
        let occupied = board.stones(Color::Black) | board.stones(Color::White);
        let size = board.size();
        // A new walker when the width or the size changes.
        if self.walker.as_ref().is_none_or(|w| w.downcast_ref::<Walker<B>>().is_none_or(|w| w.size != size)) {
            self.walker = Some(Box::new(Walker::<B>::new(size)));
        }
        let walker = self.walker.as_mut().and_then(|w| w.downcast_mut::<Walker<B>>()).expect("made above");
        // The common cases first: one group, or a group too big to walk,
        // found without flooding the whole group.
        let mut seed = occupied;
        let first = walker.group(occupied, B::single(seed.pop_lowest()?), self.limits.stones)?;
        if first == occupied {
            return None;
        }
        walker.decide(board, first, occupied, &self.limits, &mut self.stats)
    }
}

/// A group's value and reach.
#[derive(Clone, Copy)]
struct Value<B> {
    game: Game,
    reach: B,
}

/// The tables of one board size and bit width.
struct Walker<B: Bits> {
    size: Size,
    on_board: B,
    /// Cells with a cell east of them, and with one west of them.
    has_east: B,
    has_west: B,
    games: Games,
    /// By black and white stones of a group alone on the board.
    values: HashMap<(B, B), Value<B>>,
    /// Groups whose walk ran out of its budget.
    too_big: HashSet<(B, B)>,
    /// The groups of the position being decided, and their values.
    groups: Vec<B>,
    group_values: Vec<Value<B>>,
    budget: u32,
}

impl<B: Bits> Walker<B> {
    fn new(size: Size) -> Walker<B> {
        let (mut on_board, mut has_east, mut has_west) = (B::EMPTY, B::EMPTY, B::EMPTY);
        for cell in size.all_cells() {
            let bit = B::single(cell.index());
            on_board |= bit;
            let col = size.col(cell);
            if col + 1 < size.cols() {
                has_east |= bit;
            }
            if col > 0 {
                has_west |= bit;
            }
        }
        Walker {
            size,
            on_board,
            has_east,
            has_west,
            games: Games::new(),
            values: HashMap::default(),
            too_big: HashSet::default(),
            groups: Vec::new(),
            group_values: Vec::new(),
            budget: 0,
        }
    }

    /// `set` and the cells next to it.
    #[inline]
    fn grow(&self, set: B) -> B {
        let cols = self.size.cols() as u32;
        (set | (set & self.has_east).shift_up(1)
            | (set & self.has_west).shift_down(1)
            | set.shift_up(cols)
            | set.shift_down(cols))
            & self.on_board
    }

    /// The stones of `occupied` connected to `seed` through neighbours;
    /// `None` as soon as they are more than `most`, so that a big group
    /// (most positions of a search) costs a few steps, not a flood of it.
    #[inline]
    fn group(&self, occupied: B, seed: B, most: u32) -> Option<B> {
        let mut group = seed;
        loop {
            let grown = self.grow(group) & occupied;
            if grown == group {
                return Some(group);
            }
            if grown.count() > most {
                return None;
            }
            group = grown;
        }
    }

    fn decide(
        &mut self,
        board: &Board<B>,
        first: B,
        occupied: B,
        limits: &RegionLimits,
        stats: &mut RegionStats,
    ) -> Option<bool> {
        if self.values.len() + self.too_big.len() > limits.keep || self.games.len() > 8 * limits.keep {
            self.values.clear();
            self.too_big.clear();
            self.games.clear();
        }
        let mut groups = std::mem::take(&mut self.groups);
        groups.clear();
        groups.push(first);
        let mut rest = occupied & !first;
        let mut small = true;
        while let Some(cell) = rest.pop_lowest() {
            let Some(group) = self.group(occupied, B::single(cell), limits.stones) else {
                small = false;
                break;
            };
            rest &= !group;
            groups.push(group);
        }
        let answer = if small {
            stats.split += 1;
            let mut values = std::mem::take(&mut self.group_values);
            let answer = self.sum_of(board, &mut groups, &mut values, limits, stats);
            self.group_values = values;
            answer
        } else {
            None
        };
        self.groups = groups;
        stats.decided += u64::from(answer.is_some());
        answer
    }

    /// The outcome of `board` from its two or more `groups`, each within
    /// the limit, merging the groups whose reaches touch; `None` if one
    /// group remains or a merged one is too big.
    fn sum_of(
        &mut self,
        board: &Board<B>,
        groups: &mut Vec<B>,
        values: &mut Vec<Value<B>>,
        limits: &RegionLimits,
        stats: &mut RegionStats,
    ) -> Option<bool> {
        'merged: loop {
            values.clear();
            for &group in groups.iter() {
                let key = (board.stones(Color::Black) & group, board.stones(Color::White) & group);
                if let Some(&value) = self.values.get(&key) {
                    values.push(value);
                    continue;
                }
                if self.too_big.contains(&key) {
                    return None;
                }
                self.budget = limits.walk;
                let walked = self.budget;
                let value = self.value(&board.keep_only(group));
                stats.walked += u64::from(walked - self.budget);
                let Some(value) = value else {
                    self.too_big.insert(key);
                    return None;
                };
                values.push(value);
            }
            for i in 0..groups.len() {
                let near = self.grow(values[i].reach);
                if let Some(j) = (i + 1..groups.len()).find(|&j| !(near & values[j].reach).is_empty()) {
                    let other = groups[j];
                    groups[i] |= other;
                    groups.swap_remove(j);
                    if groups.len() < 2 || groups[i].count() > limits.stones {
                        return None;
                    }
                    continue 'merged;
                }
            }
            break;
        }
        let mut sum = self.games.zero();
        for value in values.iter() {
            sum = self.games.add(sum, value.game);
        }
        Some(match board.side_to_move() {
            Color::Black => self.games.left_wins_moving_first(sum),
            Color::White => self.games.right_wins_moving_first(sum),
        })
    }

    /// The value and reach of `board`'s stones as a game of their own;
    /// `None` when the walk's budget runs out.
    fn value(&mut self, board: &Board<B>) -> Option<Value<B>> {
        let key = (board.stones(Color::Black), board.stones(Color::White));
        if let Some(&value) = self.values.get(&key) {
            return Some(value);
        }
        self.budget = self.budget.checked_sub(1)?;
        let mut reach = key.0 | key.1;
        let mut options: [Vec<Game>; 2] = [Vec::new(), Vec::new()];
        let mut moves = MoveList::new();
        for (side, color) in [Color::Black, Color::White].into_iter().enumerate() {
            let mover = board.with_side(color);
            mover.generate(&mut moves);
            for &mv in &moves {
                let mut child = mover;
                child.play_unchecked(mv);
                let value = self.value(&child)?;
                reach |= value.reach;
                options[side].push(value.game);
            }
        }
        let [left, right] = options;
        let value = Value { game: self.games.form(left, right), reach };
        self.values.insert(key, value);
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dfpn::DfpnSolver;
    use crate::position::Position;
    use crate::solver::{Solver, minimax_wins};

    fn decide(regions: &mut Regions, position: &Position) -> Option<bool> {
        struct Ask<'a>(&'a mut Regions);
        impl crate::position::BoardVisitor for Ask<'_> {
            type Output = Option<bool>;
            fn visit<B: Bits>(self, board: &Board<B>) -> Option<bool> {
                self.0.wins(board)
            }
        }
        position.visit(Ask(regions))
    }

    #[test]
    fn far_apart_groups_add_up() {
        // A black-white pair at each end: black's jump at the top left and
        // white's at the bottom right cancel (1 + -1 = 0), so the side to
        // move loses.
        let position: Position = "BW..../....../....../....BW b".parse().unwrap();
        let mut regions = Regions::new(RegionLimits::default());
        assert_eq!(decide(&mut regions, &position), Some(false));
        assert!(!minimax_wins(&position));
        // One pair alone is one group: not for the regions to answer.
        let one: Position = "BW..../....../....../...... b".parse().unwrap();
        assert_eq!(decide(&mut regions, &one), None);
        // Pairs whose jumps land next to each other are one region.
        let near: Position = "BW.WB. b".parse().unwrap();
        assert_eq!(decide(&mut regions, &near), None);
        assert_eq!(regions.stats().decided, 1);
        // A group of five stones is past the default limit of four: no
        // answer, and the position is not counted among those split into
        // groups small enough to walk.
        let split = regions.stats().split;
        let big: Position = "BWBWB./....../....../....BW b".parse().unwrap();
        assert_eq!(decide(&mut regions, &big), None);
        let four: Position = "BWBW../....../....../....BW b".parse().unwrap();
        assert_eq!(decide(&mut regions, &four), Some(minimax_wins(&four)));
        assert_eq!(regions.stats().split, split + 1);
    }

    /// Every position of random games: whenever the regions answer, the
    /// solver (searching every interleaving) agrees; and solvers that use
    /// the regions solve whole boards as the plain ones do.
    #[test]
    fn regions_agree_with_search() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut regions = Regions::new(RegionLimits::default());
        let mut plain = Solver::new(16);
        let mut decided = 0;
        for size in ["5x5", "6x4", "6x6", "4x7", "3x8", "7x3", "1x12"] {
            let size: Size = size.parse().unwrap();
            for _ in 0..60 {
                let mut position = Position::start(size);
                loop {
                    if let Some(win) = decide(&mut regions, &position) {
                        decided += 1;
                        assert_eq!(Ok(win), plain.wins(&position), "{position}");
                    }
                    let moves = position.moves();
                    if moves.is_empty() {
                        break;
                    }
                    position.play_unchecked(moves[rng.random_range(0..moves.len())]);
                }
            }
        }
        assert!(decided > 300, "only {decided} positions split into regions");
        let stats = regions.stats();
        assert!(stats.split >= stats.decided && stats.asked > stats.split, "{stats:?}");

        let mut with_regions = Solver::new(16);
        with_regions.set_regions(Some(RegionLimits::default()));
        let mut dfpn = DfpnSolver::new(14);
        dfpn.set_regions(Some(RegionLimits::default()));
        let mut plain = Solver::new(16);
        let (mut nodes, mut plain_nodes) = (0, 0);
        for size in ["5x5", "6x5", "4x8", "7x4"] {
            let start = Position::start(size.parse().unwrap());
            let theirs = plain.solve(&start);
            let (ours, by_numbers) = (with_regions.solve(&start), dfpn.solve(&start));
            assert_eq!((ours.win, &ours.winning_moves), (theirs.win, &theirs.winning_moves), "{size}");
            assert_eq!((by_numbers.win, &by_numbers.winning_moves), (theirs.win, &theirs.winning_moves), "{size}");
            (nodes, plain_nodes) = (nodes + ours.nodes, plain_nodes + theirs.nodes);
        }
        assert!(nodes < plain_nodes, "{nodes} nodes with regions, {plain_nodes} without");
        assert!(with_regions.region_stats().unwrap().decided > 0);
        assert!(dfpn.region_stats().unwrap().decided > 0);
    }
}
