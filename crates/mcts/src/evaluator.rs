//! What the search asks of a network: values and move priors for a batch
//! of positions at once, so a CPU backend runs at useful batch sizes.

use konane_rules::{Move, MoveList, Position, Symmetry};
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Evaluates positions in batches.
///
/// For each position `i` of `positions` (none of them over), an evaluator
/// pushes onto `values` the expected result for the side to move in
/// [-1, 1], and onto `priors` one probability per legal move, in the order
/// [`Position::legal_moves`] lists them (summing to 1). The caller clears
/// and reuses both vectors, so steady-state evaluation does not allocate.
pub trait Evaluator: Send {
    /// Evaluates a batch; see the trait documentation for the output layout.
    fn evaluate(&mut self, positions: &[Position], values: &mut Vec<f32>, priors: &mut Vec<f32>);
}

/// Value 0 and equal priors: search guided by nothing but the rules (tests).
#[derive(Default)]
pub struct UniformEvaluator {
    moves: MoveList,
}

impl Evaluator for UniformEvaluator {
    fn evaluate(&mut self, positions: &[Position], values: &mut Vec<f32>, priors: &mut Vec<f32>) {
        for position in positions {
            position.legal_moves(&mut self.moves);
            values.push(0.0);
            let p = 1.0 / self.moves.len().max(1) as f32;
            priors.extend(std::iter::repeat_n(p, self.moves.len()));
        }
    }
}

/// Equal priors and the result of one uniformly random playout: the
/// classic Monte Carlo evaluation, for play without a network and tests.
pub struct RolloutEvaluator {
    rng: ChaCha8Rng,
    moves: MoveList,
}

impl RolloutEvaluator {
    /// A rollout evaluator whose playouts are drawn from `seed`.
    pub fn new(seed: u64) -> RolloutEvaluator {
        RolloutEvaluator { rng: ChaCha8Rng::seed_from_u64(seed), moves: MoveList::new() }
    }
}

impl Evaluator for RolloutEvaluator {
    fn evaluate(&mut self, positions: &[Position], values: &mut Vec<f32>, priors: &mut Vec<f32>) {
        for position in positions {
            position.legal_moves(&mut self.moves);
            let p = 1.0 / self.moves.len().max(1) as f32;
            priors.extend(std::iter::repeat_n(p, self.moves.len()));
            // Play to the end; whoever is to move then has lost.
            let mut game = *position;
            let mut plies = 0usize;
            loop {
                game.legal_moves(&mut self.moves);
                if self.moves.is_empty() {
                    break;
                }
                game.play_unchecked(self.moves[self.rng.random_range(0..self.moves.len())]);
                plies += 1;
            }
            values.push(if plies % 2 == 1 { 1.0 } else { -1.0 });
        }
    }
}

/// Evaluates each position through a random symmetry of its board (the
/// usual AlphaZero augmentation at inference): the inner evaluator sees the
/// transformed position, its value is passed on as is and its priors are
/// mapped back to the original position's legal-move order.
///
/// The prior of an original move `m` is the inner prior of
/// `sym.apply_move(size, m)` in the transformed position. Buffers are
/// reused, so steady-state evaluation does not allocate.
pub struct SymmetryEvaluator<E> {
    inner: E,
    rng: ChaCha8Rng,
    symmetries: Vec<Symmetry>,
    transformed: Vec<Position>,
    inner_priors: Vec<f32>,
    moves: MoveList,
    /// The transformed position's moves with their indices, sorted by move
    /// so each original move finds its image by binary search.
    index: Vec<(Move, u32)>,
}

impl<E: Evaluator> SymmetryEvaluator<E> {
    /// Wraps `inner`, drawing the symmetries from `seed`.
    pub fn new(inner: E, seed: u64) -> SymmetryEvaluator<E> {
        SymmetryEvaluator {
            inner,
            rng: ChaCha8Rng::seed_from_u64(seed),
            symmetries: Vec::new(),
            transformed: Vec::new(),
            inner_priors: Vec::new(),
            moves: MoveList::new(),
            index: Vec::new(),
        }
    }

    /// The wrapped evaluator.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// The wrapped evaluator, mutably.
    pub fn inner_mut(&mut self) -> &mut E {
        &mut self.inner
    }

    /// The symmetry applied to each position of the last batch (checks and
    /// debugging).
    pub fn last_symmetries(&self) -> &[Symmetry] {
        &self.symmetries
    }
}

impl<E: Evaluator> Evaluator for SymmetryEvaluator<E> {
    fn evaluate(&mut self, positions: &[Position], values: &mut Vec<f32>, priors: &mut Vec<f32>) {
        self.symmetries.clear();
        self.transformed.clear();
        for position in positions {
            let sym = *Symmetry::of(position.size()).choose(&mut self.rng).expect("every board has the identity");
            self.symmetries.push(sym);
            self.transformed.push(sym.apply(position));
        }
        self.inner_priors.clear();
        self.inner.evaluate(&self.transformed, values, &mut self.inner_priors);
        let mut offset = 0;
        for ((position, transformed), &sym) in positions.iter().zip(&self.transformed).zip(&self.symmetries) {
            let size = position.size();
            transformed.legal_moves(&mut self.moves);
            self.index.clear();
            self.index.extend(self.moves.iter().enumerate().map(|(i, &mv)| (mv, i as u32)));
            self.index.sort_unstable_by_key(|&(mv, _)| mv);
            let inner = &self.inner_priors[offset..offset + self.moves.len()];
            offset += self.moves.len();
            position.legal_moves(&mut self.moves);
            for &mv in &self.moves {
                let image = sym.apply_move(size, mv);
                let at = self
                    .index
                    .binary_search_by_key(&image, |&(m, _)| m)
                    .expect("a symmetry maps legal moves to legal moves");
                priors.push(inner[self.index[at].1 as usize]);
            }
        }
        debug_assert_eq!(offset, self.inner_priors.len());
    }
}
