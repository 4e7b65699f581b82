//! What the search asks of a network: values and move priors for a batch
//! of positions at once, so a CPU backend runs at useful batch sizes.

use konane_rules::{Move, MoveList, Position, Size, Symmetry};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

/// Evaluates positions in batches.
///
/// For each position `i` of `positions` (none of them over), an evaluator
/// pushes onto `values` the expected result for the side to move in
/// [-1, 1], and onto `priors` one probability per legal move, in the order
/// [`Position::legal_moves`] lists them (summing to 1). The caller clears
/// and reuses both vectors, so steady-state evaluation does not allocate.
pub trait Evaluator: Send {
    /// Evaluates a batch; see the trait documentation for the output layout.
    ///
    /// # Errors
    /// The evaluator cannot give usable outputs: a network whose outputs are
    /// not finite (damaged weights, a diverged training run), or one that
    /// stopped working. The search treats this as fatal, never as a score.
    fn evaluate(
        &mut self,
        positions: &[Position],
        values: &mut Vec<f32>,
        priors: &mut Vec<f32>,
    ) -> Result<(), EvalError>;
}

/// An evaluator that gave no usable values and priors.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum EvalError {
    /// A value or prior is NaN or infinite.
    #[error(
        "{evaluator}: the {what} of position {position} is {value}, not a finite number \
         (the network's weights are damaged, or the training that made them diverged)"
    )]
    NonFinite {
        /// The evaluator (for a network: its file).
        evaluator: String,
        /// `value` or `prior`.
        what: &'static str,
        /// The offending number.
        value: f32,
        /// The position, in notation.
        position: String,
    },
    /// The outputs do not have the layout of the trait documentation.
    #[error("{evaluator}: returned {got} {what} for a batch that needs {expected}")]
    Layout {
        /// The evaluator.
        evaluator: String,
        /// `values` or `priors`.
        what: &'static str,
        /// How many the batch needs.
        expected: usize,
        /// How many came back.
        got: usize,
    },
    /// The evaluator stopped working (a worker thread ended).
    #[error("{evaluator}: {reason}")]
    Failed {
        /// The evaluator.
        evaluator: String,
        /// What happened.
        reason: String,
    },
}

impl EvalError {
    /// The same error, naming `evaluator` (a network file) instead of the
    /// name it had.
    pub fn named(self, name: &str) -> EvalError {
        match self {
            EvalError::NonFinite { what, value, position, .. } => {
                EvalError::NonFinite { evaluator: name.into(), what, value, position }
            }
            EvalError::Layout { what, expected, got, .. } => {
                EvalError::Layout { evaluator: name.into(), what, expected, got }
            }
            EvalError::Failed { reason, .. } => EvalError::Failed { evaluator: name.into(), reason },
        }
    }
}

/// Checks one position's outputs: a finite value and finite, non-negative
/// priors (the search renormalises them; all zero means uniform).
///
/// # Errors
/// [`EvalError::NonFinite`] naming `evaluator` and the position.
pub fn check_outputs(evaluator: &str, position: &Position, value: f32, priors: &[f32]) -> Result<(), EvalError> {
    let bad =
        |what, value| EvalError::NonFinite { evaluator: evaluator.into(), what, value, position: position.to_string() };
    if !value.is_finite() {
        return Err(bad("value", value));
    }
    match priors.iter().find(|p| !p.is_finite()) {
        Some(&p) => Err(bad("prior", p)),
        None => Ok(()),
    }
}

/// Value 0 and equal priors: search guided by nothing but the rules (tests).
#[derive(Default)]
pub struct UniformEvaluator {
    moves: MoveList,
}

impl Evaluator for UniformEvaluator {
    fn evaluate(
        &mut self,
        positions: &[Position],
        values: &mut Vec<f32>,
        priors: &mut Vec<f32>,
    ) -> Result<(), EvalError> {
        for position in positions {
            position.legal_moves(&mut self.moves);
            values.push(0.0);
            let p = 1.0 / self.moves.len().max(1) as f32;
            priors.extend(std::iter::repeat_n(p, self.moves.len()));
        }
        Ok(())
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
    fn evaluate(
        &mut self,
        positions: &[Position],
        values: &mut Vec<f32>,
        priors: &mut Vec<f32>,
    ) -> Result<(), EvalError> {
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
        Ok(())
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
///
/// With [`SymmetryEvaluator::with_ensemble`] each position is evaluated
/// through several distinct symmetries and their values and priors are
/// averaged (AlphaGo's 8-fold averaging): a less noisy network at that
/// many times the cost of an evaluation.
pub struct SymmetryEvaluator<E> {
    inner: E,
    ensemble: usize,
    rng: ChaCha8Rng,
    inner_values: Vec<f32>,
    symmetries: Vec<Symmetry>,
    transformed: Vec<Position>,
    inner_priors: Vec<f32>,
    moves: MoveList,
    image_moves: MoveList,
    /// The transformed position's moves with their indices, sorted by move
    /// so each original move finds its image by binary search.
    index: Vec<(Move, u32)>,
}

impl<E: Evaluator> SymmetryEvaluator<E> {
    /// Wraps `inner`, drawing the symmetries from `seed`.
    pub fn new(inner: E, seed: u64) -> SymmetryEvaluator<E> {
        SymmetryEvaluator {
            inner,
            ensemble: 1,
            rng: ChaCha8Rng::seed_from_u64(seed),
            inner_values: Vec::new(),
            symmetries: Vec::new(),
            transformed: Vec::new(),
            inner_priors: Vec::new(),
            moves: MoveList::new(),
            image_moves: MoveList::new(),
            index: Vec::new(),
        }
    }

    /// Averages each evaluation over `count` distinct symmetries drawn at
    /// random (all of the board's, in a fixed order and so independent of
    /// the seed, when `count` is at least their number; 1, the default, is
    /// one random symmetry).
    pub fn with_ensemble(mut self, count: usize) -> SymmetryEvaluator<E> {
        self.ensemble = count.max(1);
        self
    }

    /// The wrapped evaluator.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// The wrapped evaluator, mutably.
    pub fn inner_mut(&mut self) -> &mut E {
        &mut self.inner
    }

    /// The symmetries applied to each position of the last batch, the
    /// ensemble's in a row per position (checks and debugging).
    pub fn last_symmetries(&self) -> &[Symmetry] {
        &self.symmetries
    }
}

impl<E: Evaluator> SymmetryEvaluator<E> {
    /// How many symmetries a position of `size` is evaluated through.
    fn ensemble_of(&self, size: Size) -> usize {
        self.ensemble.min(Symmetry::of(size).len())
    }
}

impl<E: Evaluator> Evaluator for SymmetryEvaluator<E> {
    fn evaluate(
        &mut self,
        positions: &[Position],
        values: &mut Vec<f32>,
        priors: &mut Vec<f32>,
    ) -> Result<(), EvalError> {
        self.symmetries.clear();
        self.transformed.clear();
        for position in positions {
            let all = Symmetry::of(position.size());
            let mut choices = Symmetry::ALL;
            let chosen: &[Symmetry] = match self.ensemble_of(position.size()) {
                // One draw, as before ensembles: seeded games stay as they were.
                1 => std::slice::from_ref(all.choose(&mut self.rng).expect("every board has the identity")),
                // All of them in a fixed order: the averages are summed the
                // same way every time, so the search no longer depends on
                // the seed, not even through rounding at exact ties.
                count if count == all.len() => all,
                count => choices[..all.len()].partial_shuffle(&mut self.rng, count).0,
            };
            for &sym in chosen {
                self.symmetries.push(sym);
                self.transformed.push(sym.apply(position));
            }
        }
        self.inner_values.clear();
        self.inner_priors.clear();
        self.inner.evaluate(&self.transformed, &mut self.inner_values, &mut self.inner_priors)?;
        let short = |what, expected, got| EvalError::Layout { evaluator: "the evaluator".into(), what, expected, got };
        if self.inner_values.len() != self.transformed.len() {
            return Err(short("values", self.transformed.len(), self.inner_values.len()));
        }
        let (mut first, mut offset) = (0, 0);
        for position in positions {
            let size = position.size();
            let count = self.ensemble_of(size);
            let weight = 1.0 / count as f32;
            values.push(self.inner_values[first..first + count].iter().sum::<f32>() * weight);
            let start = priors.len();
            position.legal_moves(&mut self.moves);
            priors.resize(start + self.moves.len(), 0.0);
            for (&sym, transformed) in self.symmetries[first..first + count].iter().zip(&self.transformed[first..]) {
                transformed.legal_moves(&mut self.image_moves);
                self.index.clear();
                self.index.extend(self.image_moves.iter().enumerate().map(|(k, &mv)| (mv, k as u32)));
                self.index.sort_unstable_by_key(|&(mv, _)| mv);
                let inner = self
                    .inner_priors
                    .get(offset..offset + self.image_moves.len())
                    .ok_or_else(|| short("priors", offset + self.image_moves.len(), self.inner_priors.len()))?;
                offset += self.image_moves.len();
                for (prior, &mv) in priors[start..].iter_mut().zip(&self.moves) {
                    let image = sym.apply_move(size, mv);
                    let at = self
                        .index
                        .binary_search_by_key(&image, |&(m, _)| m)
                        .expect("a symmetry maps legal moves to legal moves");
                    *prior += inner[self.index[at].1 as usize] * weight;
                }
            }
            first += count;
        }
        debug_assert_eq!(offset, self.inner_priors.len());
        Ok(())
    }
}
