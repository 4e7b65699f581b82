//! How often a player finds a winning move, checked against the solver.
//!
//! On boards small enough to solve, strength can be measured exactly rather
//! than by matches: take positions from games of varied strength, solve
//! them, and count how often a player picks one of the winning moves in the
//! positions that are won. Lost positions say nothing (every move loses) and
//! are left out; so are positions the solver cannot finish within its node
//! budget (the earliest ones on bigger boards), which the report counts.

use konane_rules::{Move, MoveList, Position, Size, Solver};
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::alphabeta::AlphaBetaPlayer;
use crate::arena::PlayerFactory;
use crate::{Limits, Player};

/// A solved, won position and every move that keeps the win.
#[derive(Clone, Debug)]
pub struct WonPosition {
    /// The position (capturing phase, side to move wins).
    pub position: Position,
    /// The moves that keep the win.
    pub winning_moves: Vec<Move>,
    /// The position's legal moves.
    pub legal_moves: usize,
}

/// Positions sampled and solved for [`score`].
#[derive(Clone, Debug, Default)]
pub struct PositionSet {
    /// The won positions, the ones that are scored.
    pub won: Vec<WonPosition>,
    /// Sampled positions that are lost for the side to move.
    pub lost: usize,
    /// Sampled positions the solver gave up on.
    pub unsolved: usize,
}

/// The share of random moves in a sampled game, by game index: from
/// strong play (a shallow alpha-beta) to uniformly random, so the positions
/// cover the balanced games good players reach and the lopsided ones weak
/// players do.
const RANDOM_SHARES: [f64; 4] = [0.0, 0.15, 0.4, 1.0];

/// Samples `count` solved positions of `size`: one position per game, at a
/// uniformly drawn ply of the capturing phase, each game seeded from
/// `seed` and its index. Positions the solver cannot finish within
/// `solver_nodes` are skipped (and counted); sampling stops after
/// `20 * count` games in any case. Runs on the current rayon pool.
pub fn sample_positions(size: Size, count: usize, seed: u64, solver_nodes: u64) -> PositionSet {
    /// What one sampled game gave (short-lived, so not boxed).
    #[allow(clippy::large_enum_variant)]
    enum Outcome {
        Won(WonPosition),
        Lost,
        Unsolved,
    }
    let mut set = PositionSet::default();
    let mut next_game = 0u64;
    while set.won.len() + set.lost < count && next_game < 20 * count as u64 {
        // Only as many games as positions still missing (a few more than
        // that would often be wasted solves).
        let chunk = ((count - set.won.len() - set.lost) as u64).max(8);
        let games: Vec<u64> = (next_game..next_game + chunk).collect();
        next_game += chunk;
        let outcomes: Vec<Outcome> = games
            .par_iter()
            .map_init(
                || Solver::new(18),
                |solver, &game| {
                    let position = sample_one(size, seed, game)?;
                    Some(match solver.solve_within(&position, solver_nodes) {
                        Err(_) => Outcome::Unsolved,
                        Ok(s) if s.win => Outcome::Won(WonPosition {
                            position,
                            legal_moves: position.count_moves() as usize,
                            winning_moves: s.winning_moves,
                        }),
                        Ok(_) => Outcome::Lost,
                    })
                },
            )
            .flatten()
            .collect();
        for outcome in outcomes {
            if set.won.len() + set.lost >= count {
                break;
            }
            match outcome {
                Outcome::Unsolved => set.unsolved += 1,
                Outcome::Won(won) => set.won.push(won),
                Outcome::Lost => set.lost += 1,
            }
        }
    }
    set
}

/// Plays game `game` of the sample and returns its position at a random
/// capturing-phase ply, if the game reached one.
fn sample_one(size: Size, seed: u64, game: u64) -> Option<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ game.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let random_share = RANDOM_SHARES[game as usize % RANDOM_SHARES.len()];
    let limits = Limits { depth: Some(2), ..Limits::default() };
    let mut strong = AlphaBetaPlayer::new(limits, rng.random());
    let mut positions = Vec::new();
    let mut position = Position::start(size);
    let mut moves = MoveList::new();
    loop {
        position.legal_moves(&mut moves);
        if moves.is_empty() {
            break;
        }
        if position.phase() == konane_rules::Phase::Capturing {
            positions.push(position);
        }
        let mv = if rng.random_bool(random_share) {
            *moves.choose(&mut rng).expect("moves is not empty")
        } else {
            let choice = strong.choose(&position, &limits).expect("alpha-beta cannot fail");
            choice.expect("a legal move exists").mv
        };
        position.play_unchecked(mv);
    }
    positions.choose(&mut rng).copied()
}

/// How one player did on a [`PositionSet`].
#[derive(Clone, Debug, Serialize)]
pub struct Accuracy {
    /// The player.
    pub player: String,
    /// Won positions in which it chose a winning move.
    pub correct: usize,
    /// Won positions it was shown.
    pub positions: usize,
    /// The share of won positions with a winning choice.
    pub share: f64,
    /// The same share expected from a uniformly random choice, for scale.
    pub random_share: f64,
    /// The won positions where it chose a losing move, for study.
    pub misses: Vec<Miss>,
}

/// A won position in which a player chose a losing move.
#[derive(Clone, Debug, Serialize)]
pub struct Miss {
    /// The position in notation.md form.
    pub position: String,
    /// Stones on the board (the solver's work grows with them).
    pub stones: u32,
    /// The losing move chosen.
    pub chosen: String,
    /// The moves that would have kept the win.
    pub winning_moves: Vec<String>,
}

/// Shows every won position of `set` to a fresh player from `factory`
/// (seeded by the position's index) and counts its winning choices.
///
/// # Errors
/// The player's search failed on some position.
pub fn score(factory: &dyn PlayerFactory, set: &PositionSet, seed: u64) -> Result<Accuracy, crate::PlayerError> {
    let misses: Vec<Option<Miss>> = set
        .won
        .par_iter()
        .enumerate()
        .map(|(i, won)| {
            let mut player = factory.build(seed.wrapping_add(i as u64));
            let limits = player.limits();
            let chosen = player.choose(&won.position, &limits)?.map(|c| c.mv);
            if chosen.is_some_and(|mv| won.winning_moves.contains(&mv)) {
                return Ok(None);
            }
            let size = won.position.size();
            Ok(Some(Miss {
                position: won.position.to_string(),
                stones: won.position.stones(),
                chosen: chosen.map_or_else(|| "none".to_string(), |mv| mv.to_text(size)),
                winning_moves: won.winning_moves.iter().map(|mv| mv.to_text(size)).collect(),
            }))
        })
        .collect::<Result<_, crate::PlayerError>>()?;
    let misses: Vec<Miss> = misses.into_iter().flatten().collect();
    let positions = set.won.len();
    let correct = positions - misses.len();
    let random: f64 = set.won.iter().map(|w| w.winning_moves.len() as f64 / w.legal_moves as f64).sum();
    Ok(Accuracy {
        player: factory.label(),
        correct,
        positions,
        share: correct as f64 / positions.max(1) as f64,
        random_share: random / positions.max(1) as f64,
        misses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Baseline, BaselineFactory};

    #[test]
    fn sampled_positions_are_solved_correctly_and_deterministic() {
        let size = Size::new_const(5, 4);
        let set = sample_positions(size, 40, 3, u64::MAX);
        assert_eq!(set.won.len() + set.lost, 40);
        assert_eq!(set.unsolved, 0);
        assert!(set.won.len() >= 5 && set.lost >= 5, "a mix of won and lost: {} / {}", set.won.len(), set.lost);
        for won in &set.won {
            for mv in won.position.moves() {
                let mut child = won.position;
                child.play_unchecked(mv);
                assert_eq!(won.winning_moves.contains(&mv), !konane_rules::solver::minimax_wins(&child));
            }
        }
        let again = sample_positions(size, 40, 3, u64::MAX);
        let key = |s: &PositionSet| s.won.iter().map(|w| w.position.to_string()).collect::<Vec<_>>();
        assert_eq!(key(&set), key(&again));
    }

    #[test]
    fn a_deep_search_is_perfect_and_random_play_is_not() {
        let set = sample_positions(Size::new_const(5, 5), 60, 1, u64::MAX);
        let deep_limits = Limits { depth: Some(30), ..Limits::default() };
        let deep = BaselineFactory::new(Baseline::AlphaBeta, deep_limits, "alphabeta:depth=30");
        let random = BaselineFactory::new(Baseline::Random, Limits::default(), "random");
        let deep = score(&deep, &set, 1).unwrap();
        assert_eq!(deep.correct, deep.positions, "depth 30 solves 5x5 endgames");
        assert!(deep.misses.is_empty());
        let random = score(&random, &set, 1).unwrap();
        assert_eq!(random.misses.len(), random.positions - random.correct);
        for miss in &random.misses {
            let won = set.won.iter().find(|w| w.position.to_string() == miss.position).expect("a scored position");
            assert!(!miss.winning_moves.contains(&miss.chosen), "{miss:?}");
            assert!(won.position.parse_legal_move(&miss.chosen).is_ok(), "{miss:?}");
            assert_eq!(miss.stones, won.position.stones());
        }
        assert!(random.share < 1.0 && random.share < deep.share, "{random:?}");
        assert!((random.share - random.random_share).abs() < 0.3, "{random:?}");
        assert!(random.random_share > 0.0 && random.random_share < 1.0);
    }

    #[test]
    fn budget_exhaustion_is_counted_not_scored() {
        let set = sample_positions(Size::new_const(8, 8), 4, 1, 10);
        assert!(set.unsolved > 0, "10 nodes cannot solve 8x8 midgames");
        assert!(set.won.len() + set.lost <= 4);
    }
}
