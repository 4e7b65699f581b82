//! PUCT search (AlphaZero, KataGo, Leela Zero) with a stepwise, batched
//! interface.
//!
//! A search is driven in steps so that one evaluator call can serve many
//! searches (a self-play driver batching many games):
//!
//! 1. [`Search::gather`] descends from the root up to `max_leaves` times and
//!    returns the leaves that need the network;
//! 2. the caller evaluates them, possibly together with other searches';
//! 3. [`Search::apply`] expands those leaves and backs their values up.
//!
//! [`Search::run`] is that loop for a single search and evaluator.
//!
//! * **Selection.** PUCT: `Q + c_puct * P * sqrt(N_parent) / (1 + N)`, where
//!   `N_parent` counts the parent's own evaluation (so the first choice under
//!   a fresh node follows the priors). An unvisited child gets the KataGo
//!   first-play urgency `Q_parent - fpu_reduction * sqrt(sum of the priors of
//!   visited children)`. Ties go to the earlier child (legal-move order), so
//!   the search is deterministic for a seed.
//! * **Batching.** Each descent adds a virtual loss to every node on its
//!   path (it counts as `virtual_loss` extra visits that lost) so the next
//!   descents of the same gather spread out. A descent that reaches a leaf
//!   already waiting for the evaluator (a collision) is dropped: it is not a
//!   simulation, but its virtual loss stays until the gather ends, steering
//!   the later descents of the gather elsewhere (Leela Zero's approach).
//! * **Exact values.** A leaf whose side to move has no move is scored -1
//!   for that side at once, without the evaluator. Proofs propagate up
//!   (MCTS-solver): a node with a child won for its mover is lost for its
//!   own mover, a node whose children are all lost for their mover is won.
//!   A descent that reaches a proven node (other than the root) backs its
//!   exact value up at once; at the root a proven-winning move is selected
//!   immediately, so once the root is solved further simulations only add
//!   visits to the winning move, cheaply.
//! * **Noise.** With `dirichlet_epsilon > 0` the root priors are mixed with
//!   Dirichlet noise (from the search's seeded generator) whenever a node
//!   becomes the root with children: at its expansion, or at
//!   [`Search::advance`] if the kept subtree's root is already expanded.
//! * **Tree reuse.** [`Search::advance`] keeps the played move's subtree by
//!   copying it into a second arena and swapping (see `Tree::reroot`), so
//!   nodes stay contiguous and a game of reuse never accumulates dead nodes.
//! * **Memory.** The arena stops growing at `max_nodes`; past it a leaf is
//!   evaluated and backed up but not expanded (the root always is).

use std::ops::RangeInclusive;
use std::time::Instant;

use konane_rules::{Move, MoveList, Position, Solver};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma};
use serde::{Deserialize, Serialize};

use crate::evaluator::{Batch, EvalError, Evaluator, check_outputs};
use crate::tree::{Node, Proof, ROOT, State, Tree};

/// Settings of a search: the one definition of them. A network player
/// starts from [`SearchConfig::default`], self-play from
/// [`SearchConfig::self_play`]; a player spec's options and a training
/// config's `[selfplay.search]` table are a [`SearchPatch`] on those.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SearchConfig {
    /// Exploration constant of PUCT.
    pub c_puct: f32,
    /// First-play urgency: an unvisited child is valued at the parent's
    /// value less `fpu_reduction * sqrt(sum of visited children's priors)`.
    pub fpu_reduction: f32,
    /// Concentration of the root Dirichlet noise; about 10 / average number
    /// of legal moves.
    pub dirichlet_alpha: f32,
    /// Weight of the root noise in the priors; 0 turns it off (self-play
    /// uses 0.25).
    pub dirichlet_epsilon: f32,
    /// Shaped noise (KataGo's shaped Dirichlet noise): the share of the
    /// noise's total concentration (`dirichlet_alpha` times the number of
    /// moves) given to the moves whose log prior stands above the mean log
    /// prior, in proportion to how far above; the rest is spread evenly.
    /// A blind spot is rarely a move the network rates as badly as the
    /// obviously bad ones, so noise aimed at the plausible moves finds it
    /// more often. 0 is the plain noise (KataGo uses about 0.5).
    pub dirichlet_shape: f32,
    /// Virtual visits, each a loss, that a descent in flight adds to the
    /// nodes on its path.
    pub virtual_loss: u32,
    /// Leaves gathered per evaluator call by [`Search::run`] (a self-play
    /// driver gathers this many from each game). Smaller batches search
    /// more exactly (fewer virtual-loss detours); larger ones pay only where
    /// a position costs less in a batch (burn's backends) or a batch is
    /// split over threads.
    pub batch_size: usize,
    /// The arena stops growing at this many nodes (40 bytes each; the
    /// default, 8M nodes, is about 320 MB).
    pub max_nodes: usize,
    /// Leaves with at most this many stones are solved exactly by the rules
    /// crate's solver instead of evaluated (an endgame table computed on
    /// the fly); 0 turns it off. A solved leaf is a proven node, so the
    /// search plays solved endgames perfectly and spends its simulations
    /// elsewhere.
    pub solve_max_stones: u32,
    /// Solver nodes allowed per leaf; leaves it cannot solve within them go
    /// to the evaluator.
    pub solve_nodes: u64,
    /// Forced playouts (KataGo): at a noised root, a move with prior `P`
    /// gets at least `sqrt(forced_playouts * P * N)` of the root's `N`
    /// visits, so moves the noise favours are looked at before the search
    /// dismisses them; [`Search::policy_target`] takes those visits out of
    /// the training target again. 0 turns it off (KataGo uses 2).
    pub forced_playouts: f32,
    /// The root's priors are raised to `1 / root_policy_temperature` and
    /// normalised before any noise, where the root gets noise (KataGo's
    /// root policy softmax temperature, 1.03 to 1.25 there): above 1 it
    /// spreads a confident network's first visits over more moves, so the
    /// recorded visits can correct it. 1 leaves the priors as they are.
    pub root_policy_temperature: f32,
}

/// The most visits [`Search::run`] lets its root reach: half of what a
/// node's `u32` count holds, so neither the visits nor the virtual losses
/// added on top of them can wrap, whatever simulation count a user asks for.
pub const MAX_ROOT_VISITS: u64 = (u32::MAX / 2) as u64;

/// Transposition table of a search's leaf solver, kept across moves:
/// 2^16 buckets of 32 bytes, 2 MB per search.
pub const LEAF_SOLVER_TABLE_BITS: u32 = 16;

/// A [`SearchConfig`] field outside its range.
#[derive(Clone, Debug, thiserror::Error, PartialEq)]
#[error("{field} = {value}: must be in {range}")]
pub struct SettingError {
    /// The field, as named in [`SearchConfig`].
    pub field: &'static str,
    /// The value given.
    pub value: String,
    /// The allowed range.
    pub range: String,
}

impl SearchConfig {
    /// Allowed `c_puct`: beyond 100 the priors alone pick every move.
    pub const C_PUCT: RangeInclusive<f32> = 0.0..=100.0;
    /// Allowed `fpu_reduction`: values live in [-1, 1], so a reduction
    /// beyond 10 says nothing more than 10 does.
    pub const FPU_REDUCTION: RangeInclusive<f32> = 0.0..=10.0;
    /// Allowed `dirichlet_alpha` (must be positive when the noise is on).
    pub const DIRICHLET_ALPHA: RangeInclusive<f32> = 1e-3..=100.0;
    /// Allowed `dirichlet_epsilon`.
    pub const DIRICHLET_EPSILON: RangeInclusive<f32> = 0.0..=1.0;
    /// Allowed `dirichlet_shape`: a share.
    pub const DIRICHLET_SHAPE: RangeInclusive<f32> = 0.0..=1.0;
    /// Allowed `virtual_loss`.
    pub const VIRTUAL_LOSS: RangeInclusive<u32> = 0..=1000;
    /// Allowed `batch_size`: leaves per evaluator call.
    pub const BATCH_SIZE: RangeInclusive<usize> = 1..=4096;
    /// Allowed `max_nodes`: 2^26 nodes of 40 bytes are 2.5 GiB for one tree.
    pub const MAX_NODES: RangeInclusive<usize> = 1..=1 << 26;
    /// Allowed `solve_max_stones` (a 20x20 board holds 400 stones).
    pub const SOLVE_MAX_STONES: RangeInclusive<u32> = 0..=400;
    /// Allowed `solve_nodes`.
    pub const SOLVE_NODES: RangeInclusive<u64> = 1..=1_000_000_000;
    /// Allowed `forced_playouts`: at 100 every move with a prior of 1% is
    /// forced to the visits of the best one, past any use.
    pub const FORCED_PLAYOUTS: RangeInclusive<f32> = 0.0..=100.0;
    /// Allowed `root_policy_temperature`: past 10 the priors are all but
    /// uniform, below 0.1 all but one-hot.
    pub const ROOT_POLICY_TEMPERATURE: RangeInclusive<f32> = 0.1..=10.0;

    /// Checks every field against its range (the constants above).
    ///
    /// # Errors
    /// The first field out of range.
    pub fn validate(&self) -> Result<(), SettingError> {
        fn check<T: PartialOrd + std::fmt::Display>(
            field: &'static str,
            value: T,
            range: RangeInclusive<T>,
        ) -> Result<(), SettingError> {
            if range.contains(&value) {
                Ok(())
            } else {
                Err(SettingError {
                    field,
                    value: value.to_string(),
                    range: format!("[{}, {}]", range.start(), range.end()),
                })
            }
        }
        check("c_puct", self.c_puct, Self::C_PUCT)?;
        check("fpu_reduction", self.fpu_reduction, Self::FPU_REDUCTION)?;
        check("dirichlet_alpha", self.dirichlet_alpha, Self::DIRICHLET_ALPHA)?;
        check("dirichlet_epsilon", self.dirichlet_epsilon, Self::DIRICHLET_EPSILON)?;
        check("dirichlet_shape", self.dirichlet_shape, Self::DIRICHLET_SHAPE)?;
        check("virtual_loss", self.virtual_loss, Self::VIRTUAL_LOSS)?;
        check("batch_size", self.batch_size, Self::BATCH_SIZE)?;
        check("max_nodes", self.max_nodes, Self::MAX_NODES)?;
        check("solve_max_stones", self.solve_max_stones, Self::SOLVE_MAX_STONES)?;
        check("solve_nodes", self.solve_nodes, Self::SOLVE_NODES)?;
        check("forced_playouts", self.forced_playouts, Self::FORCED_PLAYOUTS)?;
        check("root_policy_temperature", self.root_policy_temperature, Self::ROOT_POLICY_TEMPERATURE)
    }
}

/// The plain search, under both presets below. One leaf per evaluator
/// call: the native kernels run as fast a position at batch 1 as at 128,
/// so larger batches only buy virtual-loss detours (on 8x8 at 800
/// simulations, batch 1 scored 88.5% against `alphabeta:ms=1000` where
/// batch 16 scored 84.5%, same 200 games). No root noise, no leaf solver.
impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig {
            c_puct: 1.5,
            fpu_reduction: 0.2,
            dirichlet_alpha: 0.3,
            dirichlet_epsilon: 0.0,
            dirichlet_shape: 0.0,
            virtual_loss: 1,
            batch_size: 1,
            max_nodes: 1 << 23,
            solve_max_stones: 0,
            solve_nodes: 20_000,
            forced_playouts: 0.0,
            root_policy_temperature: 1.0,
        }
    }
}

impl SearchConfig {
    /// Stones at or below which a player's search solves its leaves: on
    /// 8x8 most games a network lost to `alphabeta:ms=1000` were thrown
    /// away in endgames of 24-30 stones, which the solver plays exactly.
    pub const PLAYER_SOLVE_MAX_STONES: u32 = 30;

    /// The search of a network player (a `net:` spec, `konane play`, the
    /// engine protocol, the web board): the plain search with the leaf
    /// solver on endgames of at most [`Self::PLAYER_SOLVE_MAX_STONES`]
    /// stones, so a won endgame is never thrown away. Its cost is bounded by
    /// `solve_nodes` a leaf; on 8x8 and 9x13 at 800 simulations a move took
    /// about as long as without it (`docs/experiments/2026-12-06-endgame-solver-by-default.md`).
    pub fn player() -> SearchConfig {
        SearchConfig { solve_max_stones: Self::PLAYER_SOLVE_MAX_STONES, ..Self::default() }
    }

    /// The search of a self-play move: root noise on (alpha 0.5 suits the
    /// 10-30 legal moves of 6x6 and 8x8 midgames), eight leaves a game per
    /// network call (many games share each call, so the batch is large
    /// anyway), and a smaller tree cap, since dozens of games search at once.
    pub fn self_play() -> SearchConfig {
        SearchConfig {
            dirichlet_alpha: 0.5,
            dirichlet_epsilon: 0.25,
            batch_size: 8,
            max_nodes: 1 << 20,
            ..Self::default()
        }
    }
}

/// Some [`SearchConfig`] fields, to set on top of a base config (a player
/// spec's `c=`, `fpu=`, `batch=`, `solve=`; a training config's
/// `[selfplay.search]` table). Unset fields keep the base's values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchPatch {
    /// [`SearchConfig::c_puct`].
    pub c_puct: Option<f32>,
    /// [`SearchConfig::fpu_reduction`].
    pub fpu_reduction: Option<f32>,
    /// [`SearchConfig::dirichlet_alpha`].
    pub dirichlet_alpha: Option<f32>,
    /// [`SearchConfig::dirichlet_epsilon`].
    pub dirichlet_epsilon: Option<f32>,
    /// [`SearchConfig::dirichlet_shape`].
    pub dirichlet_shape: Option<f32>,
    /// [`SearchConfig::virtual_loss`].
    pub virtual_loss: Option<u32>,
    /// [`SearchConfig::batch_size`].
    pub batch_size: Option<usize>,
    /// [`SearchConfig::max_nodes`].
    pub max_nodes: Option<usize>,
    /// [`SearchConfig::solve_max_stones`].
    pub solve_max_stones: Option<u32>,
    /// [`SearchConfig::solve_nodes`].
    pub solve_nodes: Option<u64>,
    /// [`SearchConfig::forced_playouts`].
    pub forced_playouts: Option<f32>,
    /// [`SearchConfig::root_policy_temperature`].
    pub root_policy_temperature: Option<f32>,
}

impl SearchPatch {
    /// `base` with the fields this patch sets.
    pub fn apply(&self, base: SearchConfig) -> SearchConfig {
        let SearchPatch {
            c_puct,
            fpu_reduction,
            dirichlet_alpha,
            dirichlet_epsilon,
            dirichlet_shape,
            virtual_loss,
            batch_size,
            max_nodes,
            solve_max_stones,
            solve_nodes,
            forced_playouts,
            root_policy_temperature,
        } = *self;
        SearchConfig {
            c_puct: c_puct.unwrap_or(base.c_puct),
            fpu_reduction: fpu_reduction.unwrap_or(base.fpu_reduction),
            dirichlet_alpha: dirichlet_alpha.unwrap_or(base.dirichlet_alpha),
            dirichlet_epsilon: dirichlet_epsilon.unwrap_or(base.dirichlet_epsilon),
            dirichlet_shape: dirichlet_shape.unwrap_or(base.dirichlet_shape),
            virtual_loss: virtual_loss.unwrap_or(base.virtual_loss),
            batch_size: batch_size.unwrap_or(base.batch_size),
            max_nodes: max_nodes.unwrap_or(base.max_nodes),
            solve_max_stones: solve_max_stones.unwrap_or(base.solve_max_stones),
            solve_nodes: solve_nodes.unwrap_or(base.solve_nodes),
            forced_playouts: forced_playouts.unwrap_or(base.forced_playouts),
            root_policy_temperature: root_policy_temperature.unwrap_or(base.root_policy_temperature),
        }
    }
}

/// A root move with what the search learnt about it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RootChild {
    /// The move.
    pub mv: Move,
    /// Completed simulations through the move.
    pub visits: u32,
    /// Its prior (with the root noise, if any).
    pub prior: f32,
    /// Mean value for the side to move at the root (0 if unvisited).
    pub value: f32,
    /// `Some(true)` if the move is proven to win, `Some(false)` to lose.
    pub proven: Option<bool>,
}

/// A leaf handed to the evaluator by the last gather.
#[derive(Clone, Copy)]
struct Leaf {
    node: u32,
    position: Position,
}

/// How one descent ended.
enum Descent {
    /// At a leaf to evaluate, now pending.
    Leaf,
    /// At an exact value, already backed up.
    Done,
    /// At a leaf another descent of this gather is evaluating.
    Collision(u32),
}

/// A PUCT search tree with its root position; see the module documentation.
pub struct Search {
    config: SearchConfig,
    rng: ChaCha8Rng,
    gamma: Option<Gamma<f64>>,
    tree: Tree,
    root: Option<Position>,
    simulations: u64,
    pending: Vec<Leaf>,
    collisions: Vec<u32>,
    moves: MoveList,
    noise: Vec<f64>,
    /// The batch of `run`, kept to avoid allocating per batch.
    batch: Batch,
    /// The leaf solver (its table is kept across moves), when
    /// `solve_max_stones > 0`.
    solver: Option<Box<Solver>>,
    solved_leaves: u64,
    /// Whether new roots get Dirichlet noise (with `dirichlet_epsilon > 0`).
    root_noise: bool,
}

impl Search {
    /// A search with `config`, seeding its noise generator with `seed`.
    /// Call [`Search::set_root`] before searching.
    ///
    /// # Panics
    /// On a config outside its ranges ([`SearchConfig::validate`]): the
    /// callers that take settings from users validate them first.
    pub fn new(config: SearchConfig, seed: u64) -> Search {
        if let Err(e) = config.validate() {
            panic!("Search::new: {e}");
        }
        let gamma = (config.dirichlet_epsilon > 0.0)
            .then(|| Gamma::new(config.dirichlet_alpha as f64, 1.0).expect("dirichlet_alpha is in range"));
        Search {
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            gamma,
            tree: Tree::default(),
            root: None,
            simulations: 0,
            pending: Vec::new(),
            collisions: Vec::new(),
            moves: MoveList::new(),
            noise: Vec::new(),
            batch: Batch::new(),
            solver: (config.solve_max_stones > 0).then(|| Box::new(Solver::new(LEAF_SOLVER_TABLE_BITS))),
            solved_leaves: 0,
            root_noise: true,
        }
    }

    /// Whether roots expanded from now on get the configured Dirichlet
    /// noise (on by default). Self-play under playout-cap randomisation
    /// turns it off for its fast searches: they are not recorded, so noise
    /// would only make their moves worse (KataGo does the same).
    pub fn set_root_noise(&mut self, on: bool) {
        self.root_noise = on;
    }

    /// The settings.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// Starts a new tree at `position`, dropping the old one (and any
    /// gathered leaves not yet applied).
    pub fn set_root(&mut self, position: Position) {
        self.tree.reset();
        self.root = Some(position);
        self.simulations = 0;
        self.pending.clear();
        self.collisions.clear();
        self.mark_terminal_root();
    }

    /// Drops the tree and the root position.
    pub fn clear(&mut self) {
        self.tree.reset();
        self.root = None;
        self.simulations = 0;
        self.pending.clear();
        self.collisions.clear();
    }

    /// The root position, once set.
    pub fn root_position(&self) -> Option<&Position> {
        self.root.as_ref()
    }

    /// Simulations completed since the root was set or last advanced: leaves
    /// evaluated (the root's own evaluation is the first) plus exact values
    /// backed up; collisions do not count. On a fresh tree the root's child
    /// visits sum to `simulations() - 1`.
    pub fn simulations(&self) -> u64 {
        self.simulations
    }

    /// Leaves the solver has settled since the search was created.
    pub fn solved_leaves(&self) -> u64 {
        self.solved_leaves
    }

    /// Nodes in the arena.
    pub fn tree_size(&self) -> usize {
        self.tree.nodes.len()
    }

    /// Descends from the root up to `max_leaves` times, pushing onto
    /// `batch` the leaves that need evaluating; returns how many it pushed
    /// (they follow the positions already in the batch, which other
    /// searches may have gathered). Descents ending at a known value (no
    /// legal move, or a proven node) are backed up at once and push nothing;
    /// a descent reaching a leaf already pushed by this gather is dropped.
    /// Returns 0 at a root with no legal move.
    ///
    /// # Panics
    /// No root set, or the previous gather's leaves not yet applied.
    pub fn gather(&mut self, max_leaves: usize, batch: &mut Batch) -> usize {
        let root = self.root.expect("set_root before gather");
        assert!(self.pending.is_empty(), "apply the previous gather's evaluations first");
        if self.tree.root().state == State::Expanded && self.tree.root().num_children == 0 {
            return 0;
        }
        for _ in 0..max_leaves {
            match self.descend(root, batch) {
                Descent::Leaf | Descent::Done => {}
                Descent::Collision(node) => self.collisions.push(node),
            }
        }
        for node in self.collisions.drain(..) {
            self.tree.revert(node);
        }
        self.pending.len()
    }

    /// Expands the leaves of the last gather with their evaluations and backs
    /// the values up, in gather order: the leaves' outputs are those of
    /// `batch` from position `first` on (where the batch stood when this
    /// search gathered into it). Priors that do not sum to 1 are
    /// renormalised (uniform if they sum to 0).
    ///
    /// # Errors
    /// Missing outputs, priors of the wrong length, or a value or prior that
    /// is not finite: nothing is applied, the gathered leaves are given up
    /// (the tree is as before the gather) and the search can go on with
    /// another evaluator.
    pub fn apply(&mut self, batch: &Batch, first: usize) -> Result<(), EvalError> {
        if let Err(e) = self.check_evaluations(batch, first) {
            self.abandon_gather();
            return Err(e);
        }
        let mut pending = std::mem::take(&mut self.pending);
        for (i, leaf) in pending.iter().enumerate() {
            let (value, priors) = batch.output(first + i);
            leaf.position.legal_moves(&mut self.moves);
            self.expand(leaf.node, priors);
            // The evaluator scores the side to move at the leaf; the tree
            // stores values for the player who moved into it.
            self.tree.backup(leaf.node, -(value.clamp(-1.0, 1.0) as f64));
            self.simulations += 1;
        }
        pending.clear();
        self.pending = pending;
        Ok(())
    }

    /// The checks of [`Search::apply`], before anything changes.
    fn check_evaluations(&mut self, batch: &Batch, first: usize) -> Result<(), EvalError> {
        let layout = |what, expected, got| EvalError::Layout { evaluator: "the evaluator".into(), what, expected, got };
        let end = first + self.pending.len();
        if batch.outputs() < end {
            return Err(layout("outputs", end, batch.outputs()));
        }
        for (i, leaf) in self.pending.iter().enumerate() {
            let (value, priors) = batch.output(first + i);
            let moves = leaf.position.count_moves() as usize;
            if priors.len() != moves {
                return Err(layout("priors", moves, priors.len()));
            }
            check_outputs("the evaluator", &leaf.position, value, priors)?;
        }
        Ok(())
    }

    /// Gives up the leaves of the last gather: their virtual loss is taken
    /// back and they become unexpanded leaves again.
    fn abandon_gather(&mut self) {
        for leaf in std::mem::take(&mut self.pending) {
            self.tree.nodes[leaf.node as usize].state = State::Unexpanded;
            self.tree.revert(leaf.node);
        }
    }

    /// Runs up to `simulations` more simulations, in batches of
    /// `batch_size` leaves per evaluator call, stopping early at `deadline`
    /// (checked between batches; the first batch always runs, so the root
    /// is expanded), at a root with no legal move, or once the root has
    /// [`MAX_ROOT_VISITS`] visits. Returns the simulations run.
    ///
    /// # Errors
    /// The evaluator failed or gave unusable outputs (see
    /// [`Search::apply`]); the simulations before the failure stay.
    pub fn run(
        &mut self,
        evaluator: &mut dyn Evaluator,
        simulations: u64,
        deadline: Option<Instant>,
    ) -> Result<u64, EvalError> {
        let start = self.simulations;
        // Each simulation is a visit of the root, and visits are `u32`.
        let room = MAX_ROOT_VISITS.saturating_sub(u64::from(self.tree.root().visits));
        let target = start.saturating_add(simulations.min(room));
        let mut batch = std::mem::take(&mut self.batch);
        let mut outcome = Ok(());
        while self.simulations < target {
            let before = self.simulations;
            let want = (target - self.simulations).min(self.config.batch_size as u64) as usize;
            batch.clear();
            if self.gather(want, &mut batch) > 0 {
                let evaluated = evaluator.evaluate(&mut batch);
                if let Err(e) = evaluated.and_then(|()| self.apply(&batch, 0)) {
                    self.abandon_gather();
                    outcome = Err(e);
                    break;
                }
            }
            if self.simulations == before || deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        self.batch = batch;
        outcome.map(|()| self.simulations - start)
    }

    /// The root moves with their visit counts, in legal-move order (the
    /// policy training target); empty until the root is expanded.
    pub fn root_visits(&self) -> impl Iterator<Item = (Move, u32)> + '_ {
        self.root_nodes().iter().map(|n| (n.mv, n.visits))
    }

    /// The policy training target of the search: the root visits, in
    /// legal-move order, less the forced playouts where they were on
    /// (KataGo's policy target pruning, [`prune_forced_visits`]).
    pub fn policy_target(&self) -> Vec<(Move, u32)> {
        if !self.forcing() {
            return self.root_visits().collect();
        }
        let children: Vec<RootChild> = self.root_children().collect();
        let parent_visits = self.tree.root().visits;
        prune_forced_visits(&children, parent_visits, self.config.c_puct, self.config.forced_playouts)
    }

    /// Whether the root's moves get forced playouts: they are on and the
    /// root is noised.
    fn forcing(&self) -> bool {
        self.config.forced_playouts > 0.0 && self.gamma.is_some() && self.root_noise
    }

    /// The root moves with their statistics, in legal-move order.
    pub fn root_children(&self) -> impl Iterator<Item = RootChild> + '_ {
        self.root_nodes().iter().map(|n| RootChild {
            mv: n.mv,
            visits: n.visits,
            prior: n.prior,
            value: n.mean() as f32,
            proven: match n.proof {
                Proof::Unknown => None,
                Proof::MoverWins => Some(true),
                Proof::MoverLoses => Some(false),
            },
        })
    }

    /// The line the search expects after the root move `first`: `first`,
    /// then at each node the most visited reply, while the tree goes on (at
    /// most `max_len` moves). Empty if `first` is not a root move.
    pub fn principal_variation(&self, first: Move, max_len: usize) -> Vec<Move> {
        let mut line = Vec::new();
        let Some(mut node) = self.tree.root().children().find(|&c| self.tree.nodes[c].mv == first) else {
            return line;
        };
        while line.len() < max_len {
            let current = &self.tree.nodes[node];
            line.push(current.mv);
            if current.state != State::Expanded {
                break;
            }
            let best = current
                .children()
                .filter(|&c| self.tree.nodes[c].visits > 0)
                .max_by_key(|&c| self.tree.nodes[c].visits);
            match best {
                Some(child) => node = child,
                None => break,
            }
        }
        line
    }

    /// Mean value of the search for the side to move at the root, in
    /// [-1, 1]; exactly ±1 once the root is proven, 0 before any simulation.
    pub fn root_value(&self) -> f32 {
        match self.root_proof() {
            Some(true) => 1.0,
            Some(false) => -1.0,
            None => -self.tree.root().mean() as f32,
        }
    }

    /// `Some(true)` if the side to move at the root is proven to win,
    /// `Some(false)` to lose, `None` while unknown.
    pub fn root_proof(&self) -> Option<bool> {
        self.root.as_ref()?;
        match self.tree.root().proof {
            Proof::Unknown => None,
            Proof::MoverWins => Some(false),
            Proof::MoverLoses => Some(true),
        }
    }

    /// The move to play: a proven win if there is one (the most visited),
    /// else the most visited move not proven lost (ties: higher value, then
    /// higher prior, then legal-move order), else the most visited move.
    /// `None` if the root has no legal move or was never expanded.
    pub fn best_move(&self) -> Option<Move> {
        let children = self.root_nodes();
        let better = |a: &Node, b: &Node| {
            (a.visits, a.mean(), a.prior).partial_cmp(&(b.visits, b.mean(), b.prior)).is_some_and(|o| o.is_gt())
        };
        let pick = |keep: &dyn Fn(&Node) -> bool| {
            let mut best: Option<&Node> = None;
            for n in children.iter().filter(|n| keep(n)) {
                if best.is_none_or(|b| better(n, b)) {
                    best = Some(n);
                }
            }
            best.map(|n| n.mv)
        };
        pick(&|n| n.proof == Proof::MoverWins)
            .or_else(|| pick(&|n| n.proof != Proof::MoverLoses))
            .or_else(|| pick(&|_| true))
    }

    /// A move drawn in proportion to `visits^(1 / temperature)` among the
    /// moves not proven lost (all moves if every one is); temperature 0 (or
    /// less) is [`Search::best_move`]. A proven win is always played: it
    /// keeps self-play games honest at no cost to their opening variety.
    /// With forced playouts the visits are the pruned ones of
    /// [`Search::policy_target`] (as KataGo chooses), so forcing a move
    /// does not make it likelier to be played.
    pub fn choose_move<R: Rng + ?Sized>(&self, temperature: f32, rng: &mut R) -> Option<Move> {
        let children = self.root_nodes();
        if temperature <= 0.0 || children.iter().any(|n| n.proof == Proof::MoverWins) {
            return self.best_move();
        }
        let pruned = self.forcing().then(|| self.policy_target());
        let visits = |i: usize| pruned.as_ref().map_or(children[i].visits, |target| target[i].1);
        let any_open = children.iter().any(|n| n.proof != Proof::MoverLoses);
        let eligible = |i: usize| !any_open || children[i].proof != Proof::MoverLoses;
        let max = (0..children.len()).filter(|&i| eligible(i)).map(visits).max().unwrap_or(0);
        if max == 0 {
            return self.best_move();
        }
        // Scaled by the largest count first so that small temperatures
        // cannot overflow.
        let exponent = 1.0 / temperature as f64;
        let weight = |i: usize| {
            if eligible(i) { (visits(i) as f64 / max as f64).powf(exponent) } else { 0.0 }
        };
        let total: f64 = (0..children.len()).map(weight).sum();
        let mut r = rng.random::<f64>() * total;
        let mut last = None;
        for (i, n) in children.iter().enumerate() {
            let w = weight(i);
            if w > 0.0 {
                last = Some(n.mv);
                if r < w {
                    return Some(n.mv);
                }
                r -= w;
            }
        }
        last
    }

    /// Plays `mv` from the root and keeps its subtree as the new tree (its
    /// visits and values carry over; [`Search::simulations`] restarts at 0).
    /// If the root was never expanded the tree starts afresh.
    ///
    /// # Panics
    /// No root set, `mv` illegal at the root, or leaves gathered but not
    /// applied.
    pub fn advance(&mut self, mv: Move) {
        let mut position = self.root.expect("set_root before advance");
        assert!(self.pending.is_empty(), "apply the gathered evaluations before advancing");
        if let Err(e) = position.play(mv) {
            panic!("advance: {e}");
        }
        let child = self.tree.root().children().find(|&c| self.tree.nodes[c].mv == mv);
        match child {
            Some(child) => {
                self.tree.reroot(child as u32);
                self.root = Some(position);
                self.simulations = 0;
                self.mark_terminal_root();
                if self.tree.root().state == State::Expanded {
                    self.prepare_root_priors();
                }
            }
            None => self.set_root(position),
        }
    }

    /// Makes `position` the root, keeping the subtree if it is the root
    /// itself, a child or a grandchild of the current root (one's own move
    /// and the opponent's reply); otherwise starts afresh. Returns whether a
    /// tree was kept.
    pub fn set_root_reusing(&mut self, position: Position) -> bool {
        let Some(root) = self.root else {
            self.set_root(position);
            return false;
        };
        if !self.pending.is_empty() {
            self.set_root(position);
            return false;
        }
        if root == position {
            return true;
        }
        let nodes = &self.tree.nodes;
        let mut path = None;
        'search: for c in nodes[ROOT as usize].children() {
            let mut child = root;
            child.play_unchecked(nodes[c].mv);
            if child == position {
                path = Some((nodes[c].mv, None));
                break;
            }
            for g in nodes[c].children() {
                let mut grandchild = child;
                grandchild.play_unchecked(nodes[g].mv);
                if grandchild == position {
                    path = Some((nodes[c].mv, Some(nodes[g].mv)));
                    break 'search;
                }
            }
        }
        match path {
            Some((first, second)) => {
                self.advance(first);
                if let Some(second) = second {
                    self.advance(second);
                }
                true
            }
            None => {
                self.set_root(position);
                false
            }
        }
    }

    fn root_nodes(&self) -> &[Node] {
        if self.root.is_none() {
            return &[];
        }
        &self.tree.nodes[self.tree.root().children()]
    }

    /// Marks a root with no legal move as expanded (no children) and lost,
    /// so that gather never has to select from it.
    fn mark_terminal_root(&mut self) {
        let over = self.root.is_some_and(|p| p.is_over());
        let root = &mut self.tree.nodes[ROOT as usize];
        if over && root.state != State::Expanded {
            root.state = State::Expanded;
            root.num_children = 0;
            root.proof = Proof::MoverWins;
        }
    }

    /// One descent from the root with virtual loss; a leaf to evaluate is
    /// added to the pending list and to `out`.
    fn descend(&mut self, root: Position, out: &mut Batch) -> Descent {
        let mut node = ROOT;
        let mut position = root;
        loop {
            let n = &mut self.tree.nodes[node as usize];
            n.in_flight += 1;
            if node != ROOT && n.proof != Proof::Unknown {
                let value = if n.proof == Proof::MoverWins { 1.0 } else { -1.0 };
                self.tree.backup(node, value);
                self.simulations += 1;
                return Descent::Done;
            }
            match n.state {
                State::Pending => return Descent::Collision(node),
                State::Unexpanded => {
                    if position.is_over() {
                        // The side to move has lost: exact, no evaluator.
                        n.state = State::Expanded;
                        n.num_children = 0;
                        return self.settle(node, true);
                    }
                    // A solved leaf is proven, never expanded or evaluated
                    // (a root is always expanded: its moves need priors).
                    if node != ROOT
                        && let Some(to_move_wins) = self.solve_leaf(&position)
                    {
                        return self.settle(node, !to_move_wins);
                    }
                    let n = &mut self.tree.nodes[node as usize];
                    n.state = State::Pending;
                    out.push(position);
                    self.pending.push(Leaf { node, position });
                    return Descent::Leaf;
                }
                State::Expanded => {
                    let child = self.select(node);
                    position.play_unchecked(self.tree.nodes[child as usize].mv);
                    node = child;
                }
            }
        }
    }

    /// Marks the leaf `node` proven (`mover_wins`: for the player who moved
    /// into it), propagates the proof and backs the exact value up.
    fn settle(&mut self, node: u32, mover_wins: bool) -> Descent {
        self.tree.nodes[node as usize].proof = if mover_wins { Proof::MoverWins } else { Proof::MoverLoses };
        self.tree.propagate_proof(node);
        self.tree.backup(node, if mover_wins { 1.0 } else { -1.0 });
        self.simulations += 1;
        Descent::Done
    }

    /// Whether the side to move at `position` wins, if the position is small
    /// enough for the leaf solver and solved within its budget.
    fn solve_leaf(&mut self, position: &Position) -> Option<bool> {
        let solver = self.solver.as_mut()?;
        if position.stones() > self.config.solve_max_stones {
            return None;
        }
        let win = solver.wins_within(position, self.config.solve_nodes).ok()?;
        self.solved_leaves += 1;
        Some(win)
    }

    /// The PUCT choice among the children of the expanded `node`; a child
    /// proven won for the mover is taken at once, children proven lost for
    /// the mover are skipped unless all are. Always a child: a score that
    /// is not a number never wins a comparison, and if no score does, the
    /// first child open (else the first) is taken, so a descent always goes
    /// one ply deeper and ends.
    fn select(&self, node: u32) -> u32 {
        let parent = &self.tree.nodes[node as usize];
        let range = parent.children();
        let first = range.start;
        let children = &self.tree.nodes[range];
        let mut visited_policy = 0.0f64;
        for (i, c) in children.iter().enumerate() {
            if c.proof == Proof::MoverWins {
                return (first + i) as u32;
            }
            if c.visits + c.in_flight > 0 {
                visited_policy += c.prior as f64;
            }
        }
        if node == ROOT
            && self.forcing()
            && let Some(i) = forced_child(children, self.config.forced_playouts)
        {
            return (first + i) as u32;
        }
        let virtual_loss = self.config.virtual_loss as f64;
        // The parent's own in-flight count includes this descent.
        let parent_n = parent.visits as f64 + (parent.in_flight - 1) as f64 * virtual_loss;
        let explore = self.config.c_puct as f64 * parent_n.max(1.0).sqrt();
        let parent_q = -parent.mean();
        let fpu = parent_q - self.config.fpu_reduction as f64 * visited_policy.sqrt();
        let mut best = (usize::MAX, f64::NEG_INFINITY);
        let mut best_lost = (usize::MAX, f64::NEG_INFINITY);
        for (i, c) in children.iter().enumerate() {
            let lost = c.in_flight as f64 * virtual_loss;
            let n = c.visits as f64 + lost;
            let q = if n == 0.0 { fpu } else { (c.value_sum - lost) / n };
            let score = puct(q, c.prior as f64, n, explore);
            let slot = if c.proof == Proof::MoverLoses { &mut best_lost } else { &mut best };
            if score > slot.1 {
                *slot = (i, score);
            }
        }
        let pick = match (best.0, best_lost.0) {
            (open, _) if open != usize::MAX => open,
            (_, lost) if lost != usize::MAX => lost,
            _ => children.iter().position(|c| c.proof != Proof::MoverLoses).unwrap_or(0),
        };
        (first + pick) as u32
    }

    /// Creates the children of `node` with `priors` (renormalised), unless
    /// the arena is full; noises them if `node` is the root.
    fn expand(&mut self, node: u32, priors: &[f32]) {
        let n = self.moves.len();
        if node != ROOT && self.tree.nodes.len() + n > self.config.max_nodes {
            self.tree.nodes[node as usize].state = State::Unexpanded;
            return;
        }
        // Finite by `check_evaluations`; negative priors count as 0.
        let sum: f32 = priors.iter().map(|&p| p.max(0.0)).sum();
        let uniform = 1.0 / n.max(1) as f32;
        let ok = sum.is_finite() && sum > 0.0;
        self.tree.expand(node, &self.moves, priors.iter().map(|&p| if ok { p.max(0.0) / sum } else { uniform }));
        if node == ROOT {
            self.prepare_root_priors();
        }
    }

    /// Tempers the root priors ([`SearchConfig::root_policy_temperature`])
    /// and mixes Dirichlet noise into them, if configured and this search's
    /// roots get noise. A Dirichlet sample is independent Gamma(alpha, 1)
    /// draws, normalised; drawing them directly works for any number of
    /// moves, one included.
    fn prepare_root_priors(&mut self) {
        if !self.root_noise {
            return;
        }
        let temperature = self.config.root_policy_temperature;
        if temperature != 1.0 {
            let range = self.tree.root().children();
            let children = &mut self.tree.nodes[range];
            let power = 1.0 / f64::from(temperature);
            let sum: f64 = children.iter().map(|c| f64::from(c.prior).powf(power)).sum();
            if sum.is_finite() && sum > 0.0 {
                for c in children {
                    c.prior = (f64::from(c.prior).powf(power) / sum) as f32;
                }
            }
        }
        let Some(gamma) = self.gamma else {
            return;
        };
        let eps = self.config.dirichlet_epsilon as f64;
        let range = self.tree.root().children();
        self.noise.clear();
        if self.config.dirichlet_shape > 0.0 {
            self.shaped_noise();
        } else {
            for _ in range.clone() {
                self.noise.push(gamma.sample(&mut self.rng));
            }
        }
        let total: f64 = self.noise.iter().sum();
        if !total.is_finite() || total <= 0.0 {
            return;
        }
        for (c, &eta) in self.tree.nodes[range].iter_mut().zip(&self.noise) {
            c.prior = ((1.0 - eps) * c.prior as f64 + eps * eta / total) as f32;
        }
    }

    /// Fills `noise` with one Gamma draw per root child whose concentration
    /// is shaped by the child's prior ([`SearchConfig::dirichlet_shape`]):
    /// `alpha * ((1 - s) + s * n * w / sum(w))` with `w` the log prior's
    /// excess over the mean log prior. Priors that are all equal give no
    /// excess, and the plain noise.
    fn shaped_noise(&mut self) {
        let range = self.tree.root().children();
        let n = range.len() as f64;
        let alpha = f64::from(self.config.dirichlet_alpha);
        let shape = f64::from(self.config.dirichlet_shape);
        let log_prior = |c: &Node| f64::from(c.prior).max(1e-12).ln();
        let children = &self.tree.nodes[range];
        let mean = children.iter().map(log_prior).sum::<f64>() / n;
        // `noise` holds the excesses first, then the draws.
        self.noise.extend(children.iter().map(|c| (log_prior(c) - mean).max(0.0)));
        let excess: f64 = self.noise.iter().sum();
        for w in &mut self.noise {
            let share = if excess > 1e-9 { (1.0 - shape) + shape * n * *w / excess } else { 1.0 };
            // A move without excess under `shape = 1` gets (almost) no noise.
            let concentration = (alpha * share).max(1e-6);
            *w = Gamma::new(concentration, 1.0).map_or(0.0, |g| g.sample(&mut self.rng));
        }
    }
}

/// PUCT's score of a child with mean value `q`, prior `prior` and `n`
/// visits, under a parent whose exploration factor is
/// `explore = c_puct * sqrt(N_parent)`.
#[inline]
fn puct(q: f64, prior: f64, n: f64, explore: f64) -> f64 {
    q + explore * prior / (1.0 + n)
}

/// The visits forced playouts of strength `k` owe a root move with prior
/// `prior` when the root's moves have `total` visits: `sqrt(k * P * N)`.
fn forced_share(k: f32, prior: f32, total: f64) -> f64 {
    (f64::from(k) * f64::from(prior) * total).sqrt()
}

/// The root child short of its forced playouts, `sqrt(k * P * N)` of the
/// root's `N` visits (in flight included), most short first; proven
/// losses are never forced.
fn forced_child(children: &[Node], k: f32) -> Option<usize> {
    let total: f64 = children.iter().map(|c| f64::from(c.visits + c.in_flight)).sum();
    let mut pick = None;
    let mut most_short = 0.0;
    for (i, c) in children.iter().enumerate() {
        if c.proof == Proof::MoverLoses {
            continue;
        }
        let short = forced_share(k, c.prior, total) - f64::from(c.visits + c.in_flight);
        if short > most_short {
            (pick, most_short) = (Some(i), short);
        }
    }
    pick
}

/// KataGo's policy target pruning: the visits of `children` (a root's,
/// searched with forced playouts of strength `k` and `parent_visits`
/// visits) less what forcing added. The most visited move keeps its
/// visits; every other loses up to its `sqrt(k * P * N)` forced visits, as
/// long as its PUCT score with the fewer visits stays at or below the most
/// visited move's, so that what is left is what PUCT would have chosen
/// anyway; a move left with one visit or none is dropped to 0.
pub fn prune_forced_visits(children: &[RootChild], parent_visits: u32, c_puct: f32, k: f32) -> Vec<(Move, u32)> {
    let mut target: Vec<(Move, u32)> = children.iter().map(|c| (c.mv, c.visits)).collect();
    let Some(best) = (0..children.len()).reduce(|a, b| if children[b].visits > children[a].visits { b } else { a })
    else {
        return target;
    };
    let total: f64 = children.iter().map(|c| f64::from(c.visits)).sum();
    let explore = f64::from(c_puct) * f64::from(parent_visits.max(1)).sqrt();
    let bar = {
        let c = &children[best];
        puct(f64::from(c.value), f64::from(c.prior), f64::from(c.visits), explore)
    };
    for (i, (c, (_, visits))) in children.iter().zip(&mut target).enumerate() {
        if i == best || c.visits == 0 {
            continue;
        }
        let forced = forced_share(k, c.prior, total).floor();
        let mut keep = (f64::from(c.visits) - forced).max(0.0);
        // Fewer visits raise the exploration term: keep enough that the
        // move would still not have been chosen over the best one (the
        // least `n` with `puct(q, P, n) <= bar`).
        let gap = bar - f64::from(c.value);
        let needed = if gap > 0.0 { (explore * f64::from(c.prior) / gap - 1.0).ceil().max(0.0) } else { f64::INFINITY };
        keep = keep.max(needed).min(f64::from(c.visits));
        *visits = if keep <= 1.0 { 0 } else { keep as u32 };
    }
    target
}

#[cfg(test)]
mod tests {
    use konane_rules::Size;

    use super::*;
    use crate::evaluator::UniformEvaluator;

    fn midgame(size: &str, plies: usize) -> Position {
        let size: Size = size.parse().unwrap();
        let mut position = Position::start(size);
        for _ in 0..plies {
            let moves = position.moves();
            position.play_unchecked(moves[moves.len() / 2]);
        }
        assert!(!position.is_over());
        position
    }

    #[test]
    fn no_virtual_loss_is_left_behind() {
        for batch_size in [1, 7, 32] {
            let config = SearchConfig { batch_size, ..SearchConfig::default() };
            let mut search = Search::new(config, 1);
            search.set_root(midgame("6x6", 6));
            search.run(&mut UniformEvaluator::default(), 300, None).unwrap();
            assert!(search.tree.nodes.iter().all(|n| n.in_flight == 0));
            assert!(search.tree.nodes.iter().all(|n| n.state != State::Pending));
            // The root's own evaluation is the first simulation.
            let root = search.tree.root();
            assert_eq!(root.visits as u64, search.simulations());
        }
    }

    /// Each move of a principal variation is legal where it is played, and
    /// is the most visited reply of the node before it.
    #[test]
    fn principal_variations_follow_the_most_visited_legal_replies() {
        let start = midgame("6x6", 4);
        let mut search = Search::new(SearchConfig::default(), 5);
        search.set_root(start);
        search.run(&mut UniformEvaluator::default(), 2000, None).unwrap();
        let best = search.best_move().unwrap();
        let line = search.principal_variation(best, 6);
        assert!(line.len() >= 3, "2000 simulations go deeper than two plies: {line:?}");
        assert_eq!(line[0], best);
        let mut position = start;
        for &mv in &line {
            assert!(position.is_legal(mv), "{mv:?} in {position}");
            position.play_unchecked(mv);
        }
        // The second move is the most visited child of the first.
        let first = search.tree.root().children().find(|&c| search.tree.nodes[c].mv == best).unwrap();
        let node = &search.tree.nodes[first];
        let most = node.children().max_by_key(|&c| search.tree.nodes[c].visits).unwrap();
        assert_eq!(search.tree.nodes[most].visits, node.children().map(|c| search.tree.nodes[c].visits).max().unwrap());
        assert_eq!(line[1], search.tree.nodes[most].mv);
        assert_eq!(search.principal_variation(best, 1), vec![best]);
        let illegal = Move::Remove(konane_rules::Cell(0));
        assert!(!start.is_legal(illegal));
        assert!(search.principal_variation(illegal, 6).is_empty());
    }

    /// An evaluator answering each position from its number of legal
    /// moves `n` alone: `answer(n)` is the value and the `n` priors.
    struct ByMoveCount<F> {
        moves: MoveList,
        answer: F,
    }

    impl<F: FnMut(usize) -> (f32, Vec<f32>)> ByMoveCount<F> {
        fn new(answer: F) -> Self {
            ByMoveCount { moves: MoveList::new(), answer }
        }
    }

    impl<F: FnMut(usize) -> (f32, Vec<f32>) + Send> Evaluator for ByMoveCount<F> {
        fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
            for i in 0..batch.len() {
                batch.positions()[i].legal_moves(&mut self.moves);
                let (value, priors) = (self.answer)(self.moves.len());
                batch.push_output(value, &priors);
            }
            Ok(())
        }
    }

    /// Equal priors and a value of +0.8 for the side to move when it has an
    /// even number of moves, -0.8 when odd: root moves differ sharply in
    /// value, so a search left alone keeps to the few best.
    fn parity() -> ByMoveCount<impl FnMut(usize) -> (f32, Vec<f32>) + Send> {
        ByMoveCount::new(|n| (if n % 2 == 0 { 0.8 } else { -0.8 }, vec![1.0 / n.max(1) as f32; n]))
    }

    /// With forced playouts every noised root move gets its
    /// `sqrt(k * P * N)` visits (give or take the one in flight), more than
    /// the same search gives the least visited move without them; the
    /// training target takes them back out as far as PUCT allows; without
    /// noise nothing is forced.
    #[test]
    fn forced_playouts_are_given_and_pruned_from_the_policy_target() {
        let position = midgame("8x8", 8);
        let search_with = |forced_playouts: f32, noise: bool| {
            // Little exploration: left alone, the search stays on few moves.
            let config =
                SearchConfig { c_puct: 0.2, dirichlet_epsilon: 0.25, forced_playouts, ..SearchConfig::default() };
            let mut search = Search::new(config, 9);
            search.set_root_noise(noise);
            search.set_root(position);
            search.run(&mut parity(), 400, None).unwrap();
            search
        };
        let (plain, forced) = (search_with(0.0, true), search_with(2.0, true));
        let children: Vec<RootChild> = forced.root_children().collect();
        let total: u32 = children.iter().map(|c| c.visits).sum();
        for c in &children {
            let share = (2.0 * f64::from(c.prior) * f64::from(total)).sqrt();
            assert!(f64::from(c.visits) + 1.0 >= share.floor(), "{c:?}: {share:.1} forced of {total}");
        }
        let least = |s: &Search| s.root_visits().map(|(_, v)| v).min().unwrap();
        assert!(least(&forced) > least(&plain), "{} against {}", least(&forced), least(&plain));
        // The target: the best move keeps its visits, the others lose some.
        let target = forced.policy_target();
        let raw: Vec<(Move, u32)> = forced.root_visits().collect();
        let best = raw.iter().max_by_key(|(_, v)| *v).unwrap();
        assert!(target.contains(best));
        assert!(target.iter().zip(&raw).all(|(t, r)| t.0 == r.0 && t.1 <= r.1));
        let pruned: u32 = target.iter().map(|(_, v)| v).sum();
        assert!(pruned < total, "nothing pruned: {target:?}");
        // What is left of each other move: at most its forced visits gone,
        // and with what is left PUCT would still not prefer it to the best.
        let explore = 0.2 * f64::from(forced.tree.root().visits).sqrt();
        let puct = |c: &RootChild, n: u32| f64::from(c.value) + explore * f64::from(c.prior) / (1.0 + f64::from(n));
        let best_child = children.iter().find(|c| c.mv == best.0).unwrap();
        let bar = puct(best_child, best_child.visits);
        for (c, &(_, kept)) in children.iter().zip(&target).filter(|(c, _)| c.mv != best.0) {
            let forced_share = (2.0 * f64::from(c.prior) * f64::from(total)).sqrt().floor() as u32;
            assert!(kept == 0 || kept + forced_share >= c.visits, "{c:?}: {kept} kept");
            assert!(kept == 0 || kept == c.visits || puct(c, kept) <= bar + 1e-9, "{c:?}: {kept} kept");
        }
        // Moves played at temperature 1 are drawn from the pruned visits:
        // never one whose visits were all forced.
        let zeroed: Vec<Move> =
            target.iter().zip(&raw).filter(|(t, r)| t.1 == 0 && r.1 > 0).map(|(t, _)| t.0).collect();
        assert!(!zeroed.is_empty(), "{target:?}");
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for _ in 0..300 {
            let mv = forced.choose_move(1.0, &mut rng).unwrap();
            assert!(!zeroed.contains(&mv), "{mv:?} was only forced");
        }
        // No noise, no forcing: the target is the visits, as in plain search.
        let quiet = search_with(2.0, false);
        assert_eq!(quiet.policy_target(), quiet.root_visits().collect::<Vec<_>>());
        assert_eq!(least(&quiet), least(&search_with(0.0, false)));
    }

    /// The pruning by hand: a move whose visits were all forced goes to 0,
    /// one the search wanted anyway keeps what PUCT asks for.
    #[test]
    fn policy_target_pruning_keeps_what_puct_would_have_chosen() {
        let position = midgame("8x8", 8);
        let moves = position.moves();
        let child = |i: usize, visits, prior, value| RootChild { mv: moves[i], visits, prior, value, proven: None };
        // 100 root visits: explore = 1.5 * 10 = 15; the best scores
        // 0.2 + 15 * 0.5 / 61 = 0.3230.
        let children = [child(0, 60, 0.5, 0.2), child(1, 30, 0.3, 0.1), child(2, 9, 0.2, -0.6)];
        let target = prune_forced_visits(&children, 100, 1.5, 2.0);
        // Move 1: sqrt(2 * 0.3 * 99) = 7.7, so at most 7 visits go (23
        // left); PUCT needs 15 * 0.3 / (0.3230 - 0.1) - 1 = 19.2, so 20.
        // Move 2: sqrt(2 * 0.2 * 99) = 6.3, so 6 go (3 left); PUCT needs
        // 15 * 0.2 / (0.3230 + 0.6) - 1 = 2.25, so 3.
        assert_eq!(target, vec![(moves[0], 60), (moves[1], 23), (moves[2], 3)]);
        // Forced visits are taken down to one: the move is dropped.
        let children = [child(0, 60, 0.5, 0.2), child(1, 2, 0.1, -0.9)];
        assert_eq!(prune_forced_visits(&children, 62, 1.5, 2.0), vec![(moves[0], 60), (moves[1], 0)]);
        // k = 0 takes nothing away but single visits.
        let children = [child(0, 60, 0.5, 0.2), child(1, 30, 0.3, 0.1)];
        assert_eq!(prune_forced_visits(&children, 91, 1.5, 0.0), vec![(moves[0], 60), (moves[1], 30)]);
    }

    #[test]
    fn root_noise_keeps_a_distribution_and_changes_it() {
        let config = SearchConfig { dirichlet_epsilon: 0.25, ..SearchConfig::default() };
        let mut search = Search::new(config, 3);
        search.set_root(midgame("8x8", 8));
        search.run(&mut UniformEvaluator::default(), 1, None).unwrap();
        let priors: Vec<f32> = search.root_children().map(|c| c.prior).collect();
        let sum: f32 = priors.iter().sum();
        assert!((sum - 1.0).abs() < 1e-4, "{sum}");
        assert!(priors.iter().any(|&p| (p - priors[0]).abs() > 1e-4), "{priors:?}");
    }

    /// With root noise off, the root keeps the evaluator's priors, both on
    /// a fresh tree and on the subtree kept by `advance`; on again, the
    /// next root is noised.
    #[test]
    fn root_noise_can_be_turned_off_per_root() {
        let config = SearchConfig { dirichlet_epsilon: 0.25, ..SearchConfig::default() };
        let uniform = |search: &Search| {
            let priors: Vec<f32> = search.root_children().map(|c| c.prior).collect();
            priors.iter().all(|&p| (p - priors[0]).abs() < 1e-6)
        };
        let mut search = Search::new(config, 3);
        search.set_root_noise(false);
        search.set_root(midgame("8x8", 8));
        search.run(&mut UniformEvaluator::default(), 64, None).unwrap();
        assert!(uniform(&search), "no noise on a fresh root");
        let mv = search.best_move().unwrap();
        search.advance(mv);
        search.run(&mut UniformEvaluator::default(), 64, None).unwrap();
        assert!(uniform(&search), "no noise on a kept subtree's root");
        search.set_root_noise(true);
        let mv = search.best_move().unwrap();
        search.advance(mv);
        search.run(&mut UniformEvaluator::default(), 64, None).unwrap();
        assert!(!uniform(&search), "noise again once turned on");
    }

    /// The noise mass on the moves the network all but rules out: about
    /// half the noise (they are half the moves) with plain noise, none when
    /// the noise is shaped wholly, in between when shaped by half. Uniform
    /// priors are noised all the same when shaped.
    #[test]
    fn shaped_noise_goes_to_the_plausible_moves() {
        let position = midgame("8x8", 8);
        let noise_on_ruled_out = |shape: f32| {
            let mut mass = 0.0;
            for seed in 0..40 {
                let config =
                    SearchConfig { dirichlet_epsilon: 0.25, dirichlet_shape: shape, ..SearchConfig::default() };
                let mut search = Search::new(config, seed);
                search.set_root(position);
                // Prior 1 for the first half of the moves, 1e-6 for the rest.
                let mut peaked =
                    ByMoveCount::new(|n| (0.0, (0..n).map(|m| if m < n / 2 { 1.0 } else { 1e-6 }).collect()));
                search.run(&mut peaked, 1, None).unwrap();
                let priors: Vec<f32> = search.root_children().map(|c| c.prior).collect();
                let sum: f32 = priors.iter().sum();
                assert!((sum - 1.0).abs() < 1e-4, "{sum}");
                mass += priors[priors.len() / 2..].iter().map(|&p| f64::from(p)).sum::<f64>();
            }
            mass / 40.0 / 0.25
        };
        let (plain, half, whole) = (noise_on_ruled_out(0.0), noise_on_ruled_out(0.5), noise_on_ruled_out(1.0));
        assert!((0.35..0.65).contains(&plain), "plain noise spreads evenly: {plain}");
        assert!(whole < 1e-3, "wholly shaped noise skips the ruled-out moves: {whole}");
        assert!((0.1..0.4).contains(&half), "half shaped, a quarter of the noise: {half}");
        let config = SearchConfig { dirichlet_epsilon: 0.25, dirichlet_shape: 1.0, ..SearchConfig::default() };
        let mut search = Search::new(config, 3);
        search.set_root(position);
        search.run(&mut UniformEvaluator::default(), 1, None).unwrap();
        let priors: Vec<f32> = search.root_children().map(|c| c.prior).collect();
        assert!(priors.iter().any(|&p| (p - priors[0]).abs() > 1e-4), "{priors:?}");
    }

    #[test]
    fn the_root_policy_temperature_flattens_noised_roots_only() {
        let position = midgame("8x8", 8);
        let root_priors = |temperature: f32, noise: bool| {
            let config = SearchConfig { root_policy_temperature: temperature, ..SearchConfig::default() };
            let mut search = Search::new(config, 1);
            search.set_root_noise(noise);
            search.set_root(position);
            // Priors 1, 2, 3, ... normalised.
            let mut rising = ByMoveCount::new(|n| (0.0, (0..n).map(|m| (m + 1) as f32).collect()));
            search.run(&mut rising, 1, None).unwrap();
            search.root_children().map(|c| c.prior).collect::<Vec<f32>>()
        };
        let plain = root_priors(1.0, true);
        assert!(plain.len() > 2);
        let total = (plain.len() * (plain.len() + 1) / 2) as f32;
        for (m, &p) in plain.iter().enumerate() {
            assert!((p - (m + 1) as f32 / total).abs() < 1e-6, "{plain:?}");
        }
        assert_eq!(root_priors(2.0, false), plain, "a root without noise keeps its priors");
        let warm = root_priors(2.0, true);
        let norm: f32 = (1..=plain.len()).map(|m| (m as f32).sqrt()).sum();
        for (m, &p) in warm.iter().enumerate() {
            assert!((p - ((m + 1) as f32).sqrt() / norm).abs() < 1e-6, "{warm:?}");
        }
        let cold = root_priors(0.5, true);
        assert!(cold[cold.len() - 1] > plain[plain.len() - 1] && cold[0] < plain[0], "sharper below 1");
    }

    /// Uniform priors and value 0 for `good` calls, then `value` and
    /// `prior` for every position after.
    struct TurnsBad {
        good: usize,
        value: f32,
        prior: f32,
    }
    impl Evaluator for TurnsBad {
        fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
            let bad = self.good == 0;
            self.good = self.good.saturating_sub(1);
            for i in 0..batch.len() {
                let moves = batch.positions()[i].count_moves() as usize;
                let priors = batch.priors_mut();
                priors.extend(std::iter::repeat_n(1.0 / moves as f32, moves));
                if bad {
                    *priors.last_mut().expect("positions in a search have moves") = self.prior;
                }
                batch.finish_output(if bad { self.value } else { 0.0 });
            }
            Ok(())
        }
    }

    #[test]
    fn a_non_finite_evaluation_is_an_error_and_leaves_the_tree_usable() {
        for (value, prior) in [(f32::NAN, 0.1), (0.0, f32::INFINITY), (f32::NEG_INFINITY, 0.1), (0.0, f32::NAN)] {
            let config = SearchConfig { batch_size: 8, ..SearchConfig::default() };
            let mut search = Search::new(config, 1);
            search.set_root(midgame("6x6", 6));
            search.run(&mut UniformEvaluator::default(), 40, None).unwrap();
            let visits: Vec<(Move, u32)> = search.root_visits().collect();
            // Good for two batches, then bad: what came before stays.
            let mut evaluator = TurnsBad { good: 2, value, prior };
            let error = search.run(&mut evaluator, 1000, None).unwrap_err();
            assert!(matches!(error, EvalError::NonFinite { .. }), "{value}, {prior}: {error}");
            assert!(error.to_string().contains("the evaluator"), "{error}");
            let applied = search.simulations();
            assert!((41..=56).contains(&applied), "two batches of at most 8 after 40: {applied}");
            assert!(search.tree.nodes.iter().all(|n| n.in_flight == 0 && n.state != State::Pending));
            assert_eq!(search.tree.root().visits as u64, applied);
            // An evaluator bad from the start changes nothing at all.
            let visits_before: Vec<(Move, u32)> = search.root_visits().collect();
            assert_ne!(visits_before, visits);
            let mut evaluator = TurnsBad { good: 0, value, prior };
            assert!(search.run(&mut evaluator, 1000, None).is_err());
            assert_eq!(search.simulations(), applied);
            assert_eq!(search.root_visits().collect::<Vec<_>>(), visits_before);
            // The search goes on with a working evaluator.
            assert_eq!(search.run(&mut UniformEvaluator::default(), 50, None).unwrap(), 50);
            assert_eq!(search.tree.root().visits as u64, applied + 50);
        }
    }

    #[test]
    fn a_full_arena_stops_growing_but_keeps_counting() {
        let config = SearchConfig { max_nodes: 60, ..SearchConfig::default() };
        let mut search = Search::new(config, 1);
        search.set_root(midgame("8x8", 10));
        search.run(&mut UniformEvaluator::default(), 400, None).unwrap();
        let root_children = search.tree.root().num_children as usize;
        assert!(search.tree_size() <= 60.max(1 + root_children));
        assert_eq!(search.simulations(), 400);
        let total: u32 = search.root_visits().map(|(_, v)| v).sum();
        assert_eq!(total + 1, 400);
    }

    #[test]
    fn reroot_keeps_children_contiguous_and_parents_right() {
        let mut search = Search::new(SearchConfig::default(), 1);
        search.set_root(midgame("6x6", 4));
        search.run(&mut UniformEvaluator::default(), 500, None).unwrap();
        let mv = search.best_move().unwrap();
        search.advance(mv);
        let nodes = &search.tree.nodes;
        for (i, n) in nodes.iter().enumerate() {
            for c in n.children() {
                assert_eq!(nodes[c].parent as usize, i);
            }
            if n.state == State::Expanded && n.proof == Proof::Unknown {
                assert_eq!(n.visits, 1 + nodes[n.children()].iter().map(|c| c.visits).sum::<u32>());
            }
        }
    }
}
