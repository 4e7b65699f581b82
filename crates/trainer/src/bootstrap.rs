//! The optional supervised phase before self-play (Darby Thompson, 2005):
//! a minimax teacher labels positions with its move (the policy target) and
//! its squashed search value (the value target), and the network is trained
//! on them before the first self-play game.
//!
//! Positions come from games the teacher plays against itself with a share
//! of random moves for variety; every position is labelled by the teacher
//! whoever moves from it.

use std::sync::atomic::AtomicBool;

use konane_nn::train::Learner;
use konane_players::{BaselineFactory, PlayerFactory};
use konane_rules::{Position, Size};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::config::{BootstrapConfig, TrainingConfig};
use crate::replay::{PackedSample, ReplayBuffer};
use crate::selfplay::{Stream, derive_seed};
use crate::training::{StepPlan, train_steps};

/// What the bootstrap phase did.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct BootstrapReport {
    /// Positions labelled.
    pub positions: usize,
    /// Training steps.
    pub steps: u64,
    /// Mean policy loss over the first tenth of the steps.
    pub first_policy_loss: f64,
    /// Mean policy loss over the last tenth.
    pub last_policy_loss: f64,
    /// Mean value loss over the last tenth.
    pub last_value_loss: f64,
    /// Seconds spent labelling.
    pub label_seconds: f64,
    /// Seconds spent training.
    pub train_seconds: f64,
}

/// Labels `config.positions` positions with `teacher`.
pub fn label_positions(
    teacher: &BaselineFactory,
    config: &BootstrapConfig,
    sizes: &[Size],
    seed: u64,
) -> Vec<PackedSample> {
    let mut out = Vec::with_capacity(config.positions);
    let mut game = 0u64;
    let mut round_start = 0;
    while out.len() < config.positions {
        let size = sizes[game as usize % sizes.len()];
        let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, 0, game, Stream::BootstrapMoves));
        let mut player = teacher.build(derive_seed(seed, 0, game, Stream::BootstrapTeacher));
        let limits = player.limits();
        let mut position = Position::start(size);
        while !position.is_over() && out.len() < config.positions {
            let Ok(Some(choice)) = player.choose(&position, &limits) else { break };
            let value = choice.value.unwrap_or(0.0).clamp(-1.0, 1.0);
            out.push(PackedSample::new(&position, [(choice.mv, 1)], value));
            let mv = if rng.random::<f64>() < config.random_move_probability {
                let moves = position.moves();
                moves[rng.random_range(0..moves.len())]
            } else {
                choice.mv
            };
            position.play_unchecked(mv);
        }
        game += 1;
        // A round of games, one per size, that labels nothing means the
        // boards have no move at all: more games would not either.
        if (game as usize).is_multiple_of(sizes.len()) {
            if out.len() == round_start {
                break;
            }
            round_start = out.len();
        }
    }
    out
}

/// Trains `learner` on teacher-labelled positions; `None` if stopped.
///
/// # Errors
/// The training diverged, or the teacher labelled no position.
#[allow(clippy::too_many_arguments)]
pub fn run(
    learner: &mut Learner,
    teacher: &BaselineFactory,
    config: &BootstrapConfig,
    training: &TrainingConfig,
    sizes: &[Size],
    seed: u64,
    stop: &AtomicBool,
    on_step: &dyn Fn(u64),
) -> Result<Option<BootstrapReport>, TrainError> {
    let start = std::time::Instant::now();
    let samples = label_positions(teacher, config, sizes, seed);
    if samples.is_empty() {
        return Err(TrainError::NothingToLabel { teacher: teacher.label() });
    }
    let label_seconds = start.elapsed().as_secs_f64();
    let mut window = ReplayBuffer::new(samples.len());
    let positions = samples.len();
    window.extend(samples);
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, 0, 0, Stream::BootstrapBatches));
    let tenth = (config.steps / 10).max(1);
    let (mut first, mut last, mut last_value) = (0.0, 0.0, 0.0);
    let train_start = std::time::Instant::now();
    let plan = StepPlan {
        steps: config.steps,
        batch_size: training.batch_size,
        augment: true,
        size_mix: training.size_mix,
        stop,
        book: None,
    };
    let finished = train_steps(
        &window,
        learner,
        &plan,
        &mut rng,
        |_| training.lr,
        |step, _, losses| {
            if step < tenth {
                first += losses.policy as f64 / tenth as f64;
            }
            if step >= config.steps.saturating_sub(tenth) {
                last += losses.policy as f64 / tenth as f64;
                last_value += losses.value as f64 / tenth as f64;
            }
            on_step(step + 1);
        },
    );
    if !finished? {
        return Ok(None);
    }
    Ok(Some(BootstrapReport {
        positions,
        steps: config.steps,
        first_policy_loss: first,
        last_policy_loss: last,
        last_value_loss: last_value,
        label_seconds,
        train_seconds: train_start.elapsed().as_secs_f64(),
    }))
}
