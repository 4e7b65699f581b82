//! The training step's loop: batches from the replay window (and the solved
//! openings), one gradient step each, every loss checked. The step itself is
//! [`konane_nn::train::Learner::step`]; this module decides what it trains on
//! and stops at the first loss that is not a number.

use std::sync::atomic::{AtomicBool, Ordering};

use konane_nn::train::{Learner, Losses, Sample};
use rand::Rng;

use crate::TrainError;
use crate::replay::{ReplayBuffer, SizeMix};

/// How many gradient steps [`train_steps`] takes, on what batches,
/// and the flag that stops it early (Ctrl-C).
pub struct StepPlan<'a> {
    /// Steps to take.
    pub steps: u64,
    /// Samples per batch.
    pub batch_size: usize,
    /// Whether each sample is seen through a random board symmetry.
    pub augment: bool,
    /// One board size per batch, or all sizes mixed.
    pub size_mix: SizeMix,
    /// Raised to stop between steps.
    pub stop: &'a AtomicBool,
    /// Solved openings and how many of each batch's samples come from them
    /// (see [`crate::openings`]).
    pub book: Option<(&'a ReplayBuffer, usize)>,
}

impl StepPlan<'_> {
    /// The next batch from `window` (and the book), as the plan says.
    pub fn batch<R: Rng + ?Sized>(&self, window: &ReplayBuffer, rng: &mut R) -> Vec<Sample> {
        window.sample_batch_with(self.batch_size, self.augment, self.book, self.size_mix, rng)
    }
}

/// Gradient steps on batches drawn from `window`: the loop the bootstrap
/// and every iteration share. `lr(k)` is the learning rate of
/// step `k` (0-based); `on_step(k, batch_len, losses)` sees each step.
/// `Ok(false)` if `plan.stop` was raised before all steps were done.
///
/// # Errors
/// [`TrainError::Diverged`] at the first step whose losses are not
/// finite (`on_step` does not see it).
pub fn train_steps<R: Rng + ?Sized>(
    window: &ReplayBuffer,
    learner: &mut Learner,
    plan: &StepPlan<'_>,
    rng: &mut R,
    lr: impl Fn(u64) -> f64,
    mut on_step: impl FnMut(u64, usize, &Losses),
) -> Result<bool, TrainError> {
    for k in 0..plan.steps {
        if plan.stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let batch = plan.batch(window, rng);
        let losses = learner.step(&batch, lr(k));
        let named = [
            ("policy loss", losses.policy),
            ("value loss", losses.value),
            ("policy entropy", losses.policy_entropy),
            ("target entropy", losses.target_entropy),
            ("soft policy loss", losses.soft_policy),
            ("reply policy loss", losses.reply_policy),
        ];
        if let Some((name, value)) = named.iter().find(|(_, v)| !v.is_finite()) {
            return Err(TrainError::Diverged {
                at: format!("at step {} of {}", k + 1, plan.steps),
                what: format!("{name} {value}"),
            });
        }
        on_step(k, batch.len(), &losses);
    }
    Ok(true)
}
