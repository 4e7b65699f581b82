//! PUCT search (AlphaZero style) guided by a batched [`Evaluator`].
//!
//! * [`Search`]: the tree search, driven stepwise (`gather` leaves, evaluate
//!   them, `apply` the results) so that many searches can share one
//!   evaluator call, or all at once with [`Search::run`].
//! * [`evaluator`]: the [`Evaluator`] trait and network-free evaluators,
//!   plus the random-symmetry wrapper [`SymmetryEvaluator`].
//! * [`CachedEvaluator`]: network outputs remembered by position.
//! * [`MctsPlayer`]: a [`konane_players::Player`] on top of the search.
#![deny(missing_docs)]

pub mod cache;
pub mod evaluator;
pub mod parallel;
pub mod player;
pub mod search;
mod tree;

pub use cache::CachedEvaluator;
pub use evaluator::{Batch, EvalError, Evaluator, RolloutEvaluator, SymmetryEvaluator, UniformEvaluator};
pub use parallel::ParallelEvaluator;
pub use player::MctsPlayer;
pub use search::{RootChild, Search, SearchConfig, SearchPatch, prune_forced_visits};
pub use tree::NODE_BYTES;
