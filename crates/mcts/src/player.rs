//! A [`Player`] that searches with PUCT, or plays the evaluator's policy raw.
//!
//! * **Limits.** `nodes` is the number of new simulations per move and
//!   `movetime` a deadline checked between batches; with neither set a move
//!   gets [`DEFAULT_SIMULATIONS`].
//! * **Tree reuse.** The tree is kept between moves: if the new position is
//!   the previous root, one of its children or grandchildren (our move and
//!   the opponent's reply), the search continues in that subtree; otherwise
//!   it starts afresh. [`Player::new_game`] drops the tree.
//! * **Determinism.** Moves are the most visited (ties broken by value,
//!   prior, then legal-move order), so for a seed and a simulation limit
//!   the player is deterministic, provided its evaluator is.
//! * **Raw policy.** With `raw_policy` the player evaluates the position
//!   once and plays the move of highest prior (the earliest on ties): how
//!   strong the network is without search.

use std::time::Instant;

use konane_players::{Choice, Limits, Player, PlayerError};
use konane_rules::Position;

use crate::evaluator::{Batch, EvalError, Evaluator, check_outputs};
use crate::search::{Search, SearchConfig};

/// Simulations per move when neither `nodes` nor `movetime` is set.
pub const DEFAULT_SIMULATIONS: u64 = 800;

/// PUCT player over an [`Evaluator`]; see the module documentation.
pub struct MctsPlayer<E: Evaluator> {
    evaluator: E,
    search: Search,
    limits: Limits,
    seed: u64,
    raw_policy: bool,
    /// The one-position batch of the raw policy.
    batch: Batch,
}

impl<E: Evaluator> MctsPlayer<E> {
    /// A player searching with `config` under default `limits`, its noise
    /// (if any) drawn from `seed`; with `raw_policy` it plays the
    /// evaluator's favourite move without searching.
    pub fn new(evaluator: E, config: SearchConfig, limits: Limits, seed: u64, raw_policy: bool) -> MctsPlayer<E> {
        MctsPlayer { evaluator, search: Search::new(config, seed), limits, seed, raw_policy, batch: Batch::new() }
    }

    /// The search, with the tree of the last move (root statistics for
    /// analysis).
    pub fn search(&self) -> &Search {
        &self.search
    }

    /// The evaluator's value and priors for `position` (not over), checked
    /// for layout and finiteness: the raw policy's view of it.
    ///
    /// # Errors
    /// The evaluator failed or gave unusable outputs.
    pub fn evaluate_raw(&mut self, position: &Position) -> Result<(f32, &[f32]), EvalError> {
        self.batch.clear();
        self.batch.push(*position);
        self.evaluator.evaluate(&mut self.batch)?;
        self.batch.check_complete("the evaluator")?;
        let (value, priors) = self.batch.output(0);
        let moves = position.count_moves() as usize;
        if priors.len() != moves {
            return Err(EvalError::Layout {
                evaluator: "the evaluator".into(),
                what: "priors",
                expected: moves,
                got: priors.len(),
            });
        }
        check_outputs("the evaluator", position, value, priors)?;
        Ok((value, priors))
    }

    /// Plays the highest prior without search.
    fn choose_raw(&mut self, position: &Position) -> Result<Option<Choice>, PlayerError> {
        let moves = position.moves();
        if moves.is_empty() {
            return Ok(None);
        }
        let name = self.name();
        let (value, priors) = self.evaluate_raw(position).map_err(|e| PlayerError::new(name, e))?;
        let mut best = 0;
        for (i, &p) in priors.iter().enumerate() {
            if p > priors[best] {
                best = i;
            }
        }
        Ok(Some(Choice { mv: moves[best], nodes: 0, depth: 0, value: Some(value) }))
    }
}

impl<E: Evaluator> Player for MctsPlayer<E> {
    fn name(&self) -> String {
        let c = self.search.config();
        if self.raw_policy { "puct(raw policy)".into() } else { format!("puct(c={},seed={})", c.c_puct, self.seed) }
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn choose(&mut self, position: &Position, limits: &Limits) -> Result<Option<Choice>, PlayerError> {
        if self.raw_policy {
            return self.choose_raw(position);
        }
        let start = Instant::now();
        if position.is_over() {
            return Ok(None);
        }
        self.search.set_root_reusing(*position);
        let simulations =
            limits.nodes.unwrap_or(if limits.movetime.is_some() { u64::MAX } else { DEFAULT_SIMULATIONS });
        let run = match self.search.run(&mut self.evaluator, simulations, limits.deadline(start)) {
            Ok(run) => run,
            Err(e) => {
                // The tree may hold the failed evaluator's earlier outputs.
                self.search.clear();
                return Err(PlayerError::new(self.name(), e));
            }
        };
        let Some(mv) = self.search.best_move() else { return Ok(None) };
        Ok(Some(Choice { mv, nodes: run, depth: 0, value: Some(self.search.root_value()) }))
    }

    fn new_game(&mut self) {
        // Only the tree: the noise generator carries on, as other players' do.
        self.search.clear();
    }
}
