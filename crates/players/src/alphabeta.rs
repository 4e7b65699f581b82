//! Iterative-deepening alpha-beta on the classic Kōnane evaluation: own
//! mobility minus the opponent's, with exact wins and losses.
//!
//! Principal-variation search with a transposition table, and moves ordered
//! by the table's move, two killers per ply and a history table. The root
//! moves are shuffled with the player's seed before the first iteration, so
//! equal-valued moves vary between seeds but never between runs.

use std::time::Instant;

use konane_rules::{Bits, Board, BoardVisitor, Cell, MAX_SIDE, Move, MoveList, Position};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::{Choice, Limits, Player, PlayerError};

/// Score of a won position, less the plies to the win.
const WIN: i32 = 1_000_000;
/// Scores beyond this are proven wins or losses.
const PROVEN: i32 = WIN - 10_000;
/// Iterations stop here even without a depth limit.
const MAX_DEPTH: u32 = 200;
const CELLS: usize = MAX_SIDE as usize * MAX_SIDE as usize;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    Exact,
    Lower,
    Upper,
}

#[derive(Clone, Copy)]
struct Entry {
    key: u64,
    best: Option<Move>,
    score: i32,
    depth: u8,
    bound: Bound,
}

const EMPTY_ENTRY: Entry = Entry { key: 0, best: None, score: 0, depth: 0, bound: Bound::Exact };

/// The search was stopped by its node or time budget.
struct Aborted;

/// Alpha-beta player; see the module documentation.
pub struct AlphaBetaPlayer {
    limits: Limits,
    seed: u64,
    rng: ChaCha8Rng,
    table: Vec<Entry>,
    killers: Vec<[Option<Move>; 2]>,
    history: Vec<u32>,
    nodes: u64,
    node_limit: u64,
    deadline: Option<Instant>,
}

impl AlphaBetaPlayer {
    /// An alpha-beta player with default limits (`depth`, `nodes`, `movetime`)
    /// and a seed for ordering equal moves.
    pub fn new(limits: Limits, seed: u64) -> AlphaBetaPlayer {
        AlphaBetaPlayer {
            limits,
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            table: vec![EMPTY_ENTRY; 1 << 18],
            killers: vec![[None; 2]; MAX_DEPTH as usize + 2],
            history: vec![0; CELLS * CELLS],
            nodes: 0,
            node_limit: u64::MAX,
            deadline: None,
        }
    }

    /// Searches `position` and returns the best move with its score, depth
    /// reached and nodes; `None` when the side to move has no move.
    pub fn search(&mut self, position: &Position, limits: &Limits) -> Option<Choice> {
        struct Visit<'a>(&'a mut AlphaBetaPlayer, Limits);
        impl BoardVisitor for Visit<'_> {
            type Output = Option<Choice>;
            fn visit<B: Bits>(self, board: &Board<B>) -> Option<Choice> {
                self.0.search_board(board, &self.1)
            }
        }
        position.visit(Visit(self, *limits))
    }

    fn search_board<B: Bits>(&mut self, board: &Board<B>, limits: &Limits) -> Option<Choice> {
        let start = Instant::now();
        self.nodes = 0;
        self.node_limit = limits.nodes.unwrap_or(u64::MAX);
        self.deadline = limits.deadline(start);
        for h in self.history.iter_mut() {
            *h /= 8;
        }
        let mut moves = MoveList::new();
        board.generate(&mut moves);
        if moves.is_empty() {
            return None;
        }
        let mut root: Vec<(i32, Move)> = moves.iter().map(|&m| (0, m)).collect();
        root.shuffle(&mut self.rng);
        let mut best = Choice { mv: root[0].1, nodes: 0, depth: 0, value: None };
        if root.len() == 1 {
            return Some(best);
        }
        let max_depth = limits.depth.unwrap_or(MAX_DEPTH).min(MAX_DEPTH);
        for depth in 1..=max_depth {
            match self.search_root(board, &mut root, depth) {
                Ok(score) => {
                    best = Choice { mv: root[0].1, nodes: self.nodes, depth, value: Some(squash(score)) };
                    if score.abs() >= PROVEN {
                        break;
                    }
                }
                Err(Aborted) => break,
            }
        }
        best.nodes = self.nodes;
        Some(best)
    }

    /// One iteration at the root: scores every move (the best exactly, the
    /// rest against its bound) and sorts the list best first.
    fn search_root<B: Bits>(&mut self, board: &Board<B>, root: &mut [(i32, Move)], depth: u32) -> Result<i32, Aborted> {
        let mut alpha = -WIN - 1;
        for (i, entry) in root.iter_mut().enumerate() {
            let mv = entry.1;
            let mut child = *board;
            child.play_unchecked(mv);
            let score = if i == 0 {
                -self.negamax(&child, depth - 1, 1, -WIN - 1, -alpha)?
            } else {
                let probe = -self.negamax(&child, depth - 1, 1, -alpha - 1, -alpha)?;
                if probe > alpha { -self.negamax(&child, depth - 1, 1, -WIN - 1, -alpha)? } else { probe }
            };
            entry.0 = score;
            alpha = alpha.max(score);
        }
        // Stable: among equal scores the earlier (shuffled or previous-best) order stays.
        root.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
        Ok(root[0].0)
    }

    fn check_budget(&mut self) -> Result<(), Aborted> {
        self.nodes += 1;
        if self.nodes > self.node_limit {
            return Err(Aborted);
        }
        if self.nodes.is_multiple_of(1024) && self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Aborted);
        }
        Ok(())
    }

    fn negamax<B: Bits>(
        &mut self,
        board: &Board<B>,
        depth: u32,
        ply: usize,
        mut alpha: i32,
        beta: i32,
    ) -> Result<i32, Aborted> {
        self.check_budget()?;
        let side = board.side_to_move();
        if depth == 0 {
            let own = board.count_moves() as i32;
            if own == 0 {
                return Ok(-WIN + ply as i32);
            }
            return Ok(own - board.jumps_for(side.opposite()) as i32);
        }
        let hash = board.hash();
        let slot = hash as usize & (self.table.len() - 1);
        let entry = self.table[slot];
        let mut table_move = None;
        if entry.key == hash {
            table_move = entry.best;
            if entry.depth as u32 >= depth {
                let score = from_table(entry.score, ply);
                let usable = match entry.bound {
                    Bound::Exact => true,
                    Bound::Lower => score >= beta,
                    Bound::Upper => score <= alpha,
                };
                if usable {
                    return Ok(score);
                }
            }
        }
        let mut moves = MoveList::new();
        board.generate(&mut moves);
        if moves.is_empty() {
            return Ok(-WIN + ply as i32);
        }
        self.order(&mut moves, table_move, ply);
        let alpha_in = alpha;
        let mut best_score = -WIN - 1;
        let mut best_move = moves[0];
        for (i, &mv) in moves.iter().enumerate() {
            let mut child = *board;
            child.play_unchecked(mv);
            let score = if i == 0 {
                -self.negamax(&child, depth - 1, ply + 1, -beta, -alpha)?
            } else {
                let probe = -self.negamax(&child, depth - 1, ply + 1, -alpha - 1, -alpha)?;
                if probe > alpha && probe < beta {
                    -self.negamax(&child, depth - 1, ply + 1, -beta, -alpha)?
                } else {
                    probe
                }
            };
            if score > best_score {
                best_score = score;
                best_move = mv;
            }
            if score > alpha {
                alpha = score;
            }
            if alpha >= beta {
                let killers = &mut self.killers[ply];
                if killers[0] != Some(mv) {
                    killers[1] = killers[0];
                    killers[0] = Some(mv);
                }
                // Saturating: an hour's search on a big board could
                // otherwise wrap a move's count (it is only an ordering).
                let entry = &mut self.history[history_index(mv)];
                *entry = entry.saturating_add(depth * depth);
                break;
            }
        }
        let bound = if best_score <= alpha_in {
            Bound::Upper
        } else if best_score >= beta {
            Bound::Lower
        } else {
            Bound::Exact
        };
        self.table[slot] = Entry {
            key: hash,
            best: Some(best_move),
            score: to_table(best_score, ply),
            depth: depth.min(255) as u8,
            bound,
        };
        Ok(best_score)
    }

    /// Table move first, then killers, then by history score.
    fn order(&self, moves: &mut MoveList, table_move: Option<Move>, ply: usize) {
        let killers = self.killers[ply];
        let key = |mv: &Move| -> u64 {
            if Some(*mv) == table_move {
                u64::MAX
            } else if Some(*mv) == killers[0] {
                u64::MAX - 1
            } else if Some(*mv) == killers[1] {
                u64::MAX - 2
            } else {
                self.history[history_index(*mv)] as u64
            }
        };
        moves.sort_by_cached_key(|mv| std::cmp::Reverse(key(mv)));
    }
}

fn history_index(mv: Move) -> usize {
    let (from, to): (Cell, Cell) = match mv {
        Move::Remove(cell) => (cell, cell),
        Move::Jump { from, to } => (from, to),
    };
    from.index() * CELLS + to.index()
}

/// Proven scores are stored relative to the node, not the root.
fn to_table(score: i32, ply: usize) -> i32 {
    if score >= PROVEN {
        score + ply as i32
    } else if score <= -PROVEN {
        score - ply as i32
    } else {
        score
    }
}

fn from_table(score: i32, ply: usize) -> i32 {
    if score >= PROVEN {
        score - ply as i32
    } else if score <= -PROVEN {
        score + ply as i32
    } else {
        score
    }
}

/// Maps a score to an expected result in [-1, 1].
fn squash(score: i32) -> f32 {
    if score >= PROVEN {
        1.0
    } else if score <= -PROVEN {
        -1.0
    } else {
        (score as f32 / 8.0).tanh()
    }
}

impl Player for AlphaBetaPlayer {
    fn name(&self) -> String {
        format!("alphabeta(seed={})", self.seed)
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn choose(&mut self, position: &Position, limits: &Limits) -> Result<Option<Choice>, PlayerError> {
        Ok(self.search(position, limits))
    }

    fn new_game(&mut self) {
        self.table.fill(EMPTY_ENTRY);
        self.killers.fill([None; 2]);
        self.history.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use konane_rules::{Size, Solver};

    use super::*;
    use crate::random::RandomPlayer;

    fn depth(d: u32) -> Limits {
        Limits { depth: Some(d), ..Limits::default() }
    }

    /// Plays one game from the start; returns the winner's index (0 = `first`).
    fn play<'a>(size: Size, first: &'a mut dyn Player, second: &'a mut dyn Player) -> usize {
        let mut position = Position::start(size);
        let mut players = [first, second];
        for ply in 0.. {
            let player = &mut players[ply % 2];
            let limits = player.limits();
            match player.choose(&position, &limits).unwrap() {
                Some(choice) => position.play(choice.mv).expect("players play legal moves"),
                None => return 1 - ply % 2,
            }
        }
        unreachable!()
    }

    #[test]
    fn depth_three_beats_random_on_6x6() {
        let size: Size = "6x6".parse().unwrap();
        let mut score = 0;
        for game in 0..100u64 {
            let mut ab = AlphaBetaPlayer::new(depth(3), game);
            let mut random = RandomPlayer::new(1000 + game);
            score += if game % 2 == 0 {
                (play(size, &mut ab, &mut random) == 0) as u32
            } else {
                (play(size, &mut random, &mut ab) == 1) as u32
            };
        }
        assert!(score >= 95, "alpha-beta depth 3 scored {score}/100 against random");
    }

    #[test]
    fn plays_the_solvers_winning_move_in_solved_endgames() {
        // Endgames from alpha-beta self-play on 5x5 and 6x6: wherever the
        // solver finds a win, a deep enough search must play a winning move.
        let mut solver = Solver::new(16);
        let mut checked = 0;
        for (size, seed) in [("5x5", 1u64), ("5x5", 2), ("6x6", 3), ("6x6", 4), ("6x6", 5), ("6x7", 6)] {
            let size: Size = size.parse().unwrap();
            let mut a = AlphaBetaPlayer::new(depth(2), seed);
            let mut position = Position::start(size);
            while !position.is_over() {
                if position.stones() <= 20 {
                    let solution = solver.solve(&position);
                    if solution.win {
                        let mut deep = AlphaBetaPlayer::new(depth(30), seed);
                        let choice = deep.choose(&position, &depth(30)).unwrap().unwrap();
                        assert!(
                            solution.winning_moves.contains(&choice.mv),
                            "{position}: played {} but the winning moves are {:?}",
                            choice.mv.to_text(size),
                            solution.winning_moves.iter().map(|m| m.to_text(size)).collect::<Vec<_>>()
                        );
                        assert_eq!(choice.value, Some(1.0), "{position}: a solved win reads as proven");
                        checked += 1;
                    }
                }
                let mv = a.choose(&position, &depth(2)).unwrap().unwrap().mv;
                position.play_unchecked(mv);
            }
        }
        assert!(checked >= 10, "only {checked} won endgames checked");
    }

    #[test]
    fn same_seed_same_game_and_node_limits_hold() {
        let size: Size = "6x6".parse().unwrap();
        let limits = Limits { nodes: Some(500), ..Limits::default() };
        let mut games = Vec::new();
        for _ in 0..2 {
            let mut a = AlphaBetaPlayer::new(limits, 5);
            let mut position = Position::start(size);
            let mut moves = Vec::new();
            while let Some(choice) = a.choose(&position, &limits).unwrap() {
                assert!(choice.nodes <= 501, "searched {} nodes", choice.nodes);
                moves.push(choice.mv);
                position.play_unchecked(choice.mv);
            }
            games.push(moves);
        }
        assert_eq!(games[0], games[1]);
    }
}
