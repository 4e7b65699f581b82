//! What the search asks of a network: values and move priors for a batch
//! of positions at once, so a CPU backend runs at useful batch sizes.

use konane_rules::{Move, MoveList, Position, Size, Symmetry};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

/// Evaluates positions in batches.
///
/// For each position of [`Batch::positions`] (none of them over), in order,
/// an evaluator pushes that position's priors (one probability per legal
/// move, in the order [`Position::legal_moves`] lists them, summing to 1)
/// onto [`Batch::priors_mut`] and then calls [`Batch::finish_output`] with
/// its value, the expected result for the side to move in [-1, 1]. The
/// batch records where each position's priors are, so the searches that
/// filled it find their outputs without counting moves.
pub trait Evaluator: Send {
    /// Evaluates the batch's positions; see the trait documentation.
    ///
    /// # Errors
    /// The evaluator cannot give usable outputs: a network whose outputs are
    /// not finite (damaged weights, a diverged training run), or one that
    /// stopped working. The search treats this as fatal, never as a score.
    fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError>;
}

/// Positions to evaluate and, once evaluated, their outputs: a value and a
/// run of priors each. Searches gather into one batch (each notes where its
/// positions start), one evaluator call fills it, and each search applies
/// its own outputs. Buffers are kept across [`Batch::clear`], so a batch in
/// steady state allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    positions: Vec<Position>,
    values: Vec<f32>,
    priors: Vec<f32>,
    /// `ends[i]`: where position `i`'s priors end in `priors`.
    ends: Vec<usize>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Empties the batch, positions and outputs.
    pub fn clear(&mut self) {
        self.positions.clear();
        self.clear_outputs();
    }

    /// Drops the outputs, keeping the positions (to evaluate them again).
    pub fn clear_outputs(&mut self) {
        self.values.clear();
        self.priors.clear();
        self.ends.clear();
    }

    /// Adds a position to evaluate.
    pub fn push(&mut self, position: Position) {
        self.positions.push(position);
    }

    /// The positions to evaluate.
    pub fn positions(&self) -> &[Position] {
        &self.positions
    }

    /// Positions in the batch.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether the batch holds no position.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Where an evaluator pushes the priors of the next position.
    pub fn priors_mut(&mut self) -> &mut Vec<f32> {
        &mut self.priors
    }

    /// Ends the next position's output: its priors are those pushed since
    /// the previous output ended, its value `value`.
    pub fn finish_output(&mut self, value: f32) {
        self.values.push(value);
        self.ends.push(self.priors.len());
    }

    /// Adds an output whole: `value` and `priors`.
    pub fn push_output(&mut self, value: f32, priors: &[f32]) {
        self.priors.extend_from_slice(priors);
        self.finish_output(value);
    }

    /// Outputs finished so far.
    pub fn outputs(&self) -> usize {
        self.values.len()
    }

    /// The value and priors of position `i`, once evaluated.
    ///
    /// # Panics
    /// If position `i` has no output.
    pub fn output(&self, i: usize) -> (f32, &[f32]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        (self.values[i], &self.priors[start..self.ends[i]])
    }

    /// Checks that every position has an output.
    ///
    /// # Errors
    /// [`EvalError::Layout`] naming `evaluator`.
    pub fn check_complete(&self, evaluator: &str) -> Result<(), EvalError> {
        if self.outputs() == self.len() {
            Ok(())
        } else {
            Err(EvalError::Layout {
                evaluator: evaluator.into(),
                what: "outputs",
                expected: self.len(),
                got: self.outputs(),
            })
        }
    }
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
    fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
        for i in 0..batch.len() {
            batch.positions[i].legal_moves(&mut self.moves);
            let p = 1.0 / self.moves.len().max(1) as f32;
            batch.priors.extend(std::iter::repeat_n(p, self.moves.len()));
            batch.finish_output(0.0);
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
    fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
        for i in 0..batch.len() {
            let position = batch.positions[i];
            position.legal_moves(&mut self.moves);
            let p = 1.0 / self.moves.len().max(1) as f32;
            batch.priors.extend(std::iter::repeat_n(p, self.moves.len()));
            // Play to the end; whoever is to move then has lost.
            let mut game = position;
            let mut plies = 0usize;
            loop {
                game.legal_moves(&mut self.moves);
                if self.moves.is_empty() {
                    break;
                }
                game.play_unchecked(self.moves[self.rng.random_range(0..self.moves.len())]);
                plies += 1;
            }
            batch.finish_output(if plies % 2 == 1 { 1.0 } else { -1.0 });
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
    symmetries: Vec<Symmetry>,
    /// The transformed positions, the ensemble's in a row per position.
    transformed: Batch,
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
            symmetries: Vec::new(),
            transformed: Batch::new(),
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
    fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
        self.symmetries.clear();
        self.transformed.clear();
        for position in &batch.positions {
            let all = Symmetry::of(position.size());
            let mut choices = Symmetry::ALL;
            let chosen: &[Symmetry] = match self.ensemble_of(position.size()) {
                // One draw from the seeded stream.
                1 => std::slice::from_ref(all.choose(&mut self.rng).expect("every board has the identity")),
                // All of them in a fixed order: the averages are summed the
                // same way every time, so the search does not depend on the
                // seed, not even through rounding at exact ties.
                count if count == all.len() => all,
                count => choices[..all.len()].partial_shuffle(&mut self.rng, count).0,
            };
            for &sym in chosen {
                self.symmetries.push(sym);
                self.transformed.push(sym.apply(position));
            }
        }
        self.inner.evaluate(&mut self.transformed)?;
        self.transformed.check_complete("the evaluator")?;
        let mut first = 0;
        for i in 0..batch.len() {
            let position = batch.positions[i];
            let size = position.size();
            let count = self.ensemble_of(size);
            let weight = 1.0 / count as f32;
            let value = (first..first + count).map(|j| self.transformed.output(j).0).sum::<f32>() * weight;
            position.legal_moves(&mut self.moves);
            let start = batch.priors.len();
            batch.priors.resize(start + self.moves.len(), 0.0);
            for j in first..first + count {
                let sym = self.symmetries[j];
                let (_, inner) = self.transformed.output(j);
                self.transformed.positions[j].legal_moves(&mut self.image_moves);
                if inner.len() != self.image_moves.len() {
                    return Err(EvalError::Layout {
                        evaluator: "the evaluator".into(),
                        what: "priors",
                        expected: self.image_moves.len(),
                        got: inner.len(),
                    });
                }
                self.index.clear();
                self.index.extend(self.image_moves.iter().enumerate().map(|(k, &mv)| (mv, k as u32)));
                self.index.sort_unstable_by_key(|&(mv, _)| mv);
                for (prior, &mv) in batch.priors[start..].iter_mut().zip(&self.moves) {
                    let image = sym.apply_move(size, mv);
                    let at = self
                        .index
                        .binary_search_by_key(&image, |&(m, _)| m)
                        .expect("a symmetry maps legal moves to legal moves");
                    *prior += inner[self.index[at].1 as usize] * weight;
                }
            }
            batch.finish_output(value);
            first += count;
        }
        Ok(())
    }
}
