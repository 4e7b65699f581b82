//! Self-play: every worker thread plays many games at once and feeds the
//! leaves of all their searches to one network call.
//!
//! A worker owns a [`NetEvaluator`] and up to `parallel_games` games, each
//! with its own [`Search`]. One step gathers up to `leaves_per_game` leaves
//! from every active game into one batch, evaluates it, hands each game its
//! slice of values and priors back, and plays a move in every game whose
//! search has reached its budget. Finished games make room for new ones.
//!
//! Workers run as plain threads, one evaluator each: one single-threaded
//! evaluator per core measured about twice the throughput of one evaluator
//! spread over both cores (`docs/burn-0.22.md`), and the network's
//! evaluator keeps its work on one thread.
//!
//! **Determinism.** Game `i` of iteration `t` is played by worker
//! `i % threads` and seeds its search noise and move choice from
//! `(seed, t, i)`; the batches a worker forms depend only on its own games.
//! On the CPU backends the network answers a position the same in any
//! batch, so the games are bit-for-bit the same across runs and for any
//! number of workers (not checked on the GPU backends).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use konane_mcts::{Batch, CachedEvaluator, EvalError, Evaluator, Search};
use konane_nn::{Backend, Net, NetEvaluator};
use konane_rules::{Color, Move, Position, Size, Solver};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::config::SelfPlayConfig;
use crate::replay::PackedSample;

/// The random streams of a run. Each draws from its own seed, derived from
/// the run's seed, the iteration, an index and the stream's number, so no
/// two streams ever share draws: the determinism of a run (and of its
/// resume) rests on these numbers being distinct, which this one list
/// makes visible. The numbers are part of every seeded run's results:
/// changing one changes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// A self-play game's search noise (index: the game).
    GameSearch = 0,
    /// A self-play game's move choices, openings and playout caps.
    GameMoves = 1,
    /// An iteration's training batches.
    TrainingBatches = 2,
    /// The anchor round robin at the start of a run.
    AnchorMatches = 3,
    /// An iteration's evaluation matches (index: the opponent, 0 for the
    /// previous network).
    EvaluationMatches = 4,
    /// The bootstrap's game moves (index: the game).
    BootstrapMoves = 5,
    /// The bootstrap teacher's own seed (index: the game).
    BootstrapTeacher = 6,
    /// The bootstrap's training batches.
    BootstrapBatches = 8,
    /// The initial weights of a new run.
    InitialWeights = 9,
    /// A cluster worker's shard (iteration: the shard's sequence number,
    /// index: the worker name's hash).
    WorkerShard = 10,
}

/// A seed for `(master, iteration, index, stream)`, mixed so that nearby
/// inputs give unrelated seeds (SplitMix64 finaliser).
pub fn derive_seed(master: u64, iteration: u64, index: u64, stream: Stream) -> u64 {
    let mut z = master
        .wrapping_add(iteration.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(index.wrapping_mul(0xD1B5_4A32_D192_ED03))
        .wrapping_add((stream as u64).wrapping_mul(0x94D0_49BB_1331_11EB));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Restricts a won position's visit counts to its `winning` moves (the
/// losing ones drop to 0; if no winning move was visited, each gets one
/// visit); returns whether anything changed.
fn correct_policy(visits: &mut [(Move, u32)], winning: &[Move]) -> bool {
    let mut changed = false;
    let mut kept = 0;
    for (mv, n) in visits.iter_mut() {
        if winning.contains(mv) {
            kept += *n;
        } else if *n > 0 {
            *n = 0;
            changed = true;
        }
    }
    if kept == 0 {
        for (_, n) in visits.iter_mut().filter(|(mv, _)| winning.contains(mv)) {
            *n = 1;
        }
    }
    changed
}

/// The winner under perfect play of a position where `to_move` is to move
/// and, by the solver, `wins` or not.
fn exact_winner(to_move: Color, wins: bool) -> Color {
    if wins { to_move } else { to_move.opposite() }
}

/// The start of `size` after a uniformly drawn number of uniformly random
/// plies, 0 to `max_plies`, stopping early rather than playing a move that
/// ends the game; with the plies played. Draws nothing when `max_plies` is 0,
/// so runs without random openings replay.
fn random_opening(size: Size, max_plies: u32, rng: &mut ChaCha8Rng) -> (Position, u32) {
    let mut position = Position::start(size);
    if max_plies == 0 {
        return (position, 0);
    }
    let plies = rng.random_range(0..=max_plies);
    for ply in 0..plies {
        let moves = position.moves();
        if moves.is_empty() {
            return (position, ply);
        }
        let mut next = position;
        next.play_unchecked(moves[rng.random_range(0..moves.len())]);
        if next.is_over() {
            return (position, ply);
        }
        position = next;
    }
    (position, plies)
}

/// One finished self-play game.
#[derive(Clone, Debug)]
pub struct GameOutput {
    /// Index of the game in its iteration.
    pub index: usize,
    /// Board size.
    pub size: Size,
    /// Training samples (positions searched with the full budget).
    pub samples: Vec<PackedSample>,
    /// Plies played.
    pub plies: u32,
    /// Who won.
    pub winner: Color,
    /// Samples whose value target came from the solver.
    pub solved: u32,
    /// Of those, how many disagreed with the game's result.
    pub solver_disagreed: u32,
}

/// Totals of one self-play phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SelfPlayStats {
    /// Games finished.
    pub games: usize,
    /// Moves played.
    pub moves: u64,
    /// Training samples recorded.
    pub samples: u64,
    /// Positions evaluated by the network.
    pub evaluations: u64,
    /// Network calls.
    pub batches: u64,
    /// Positions answered by the cache of network outputs instead.
    #[serde(default)]
    pub cache_hits: u64,
    /// Games won by black (the first player).
    pub black_wins: usize,
    /// Samples with exact (solver) value targets.
    pub solved: u64,
    /// Solved samples whose exact value disagreed with the game result.
    pub solver_disagreed: u64,
    /// Solved won samples whose search visited a losing move (their policy
    /// target was corrected under `solver_policy`).
    pub policy_corrected: u64,
    /// Moves played at random (`random_move_probability`).
    pub random_moves: u64,
    /// Games, moves and samples of each board size (`"10x10"`).
    #[serde(default)]
    pub sizes: BTreeMap<String, SizeTotals>,
}

/// What the games of one board size gave in a self-play phase.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SizeTotals {
    /// Games finished.
    pub games: usize,
    /// Moves played.
    pub moves: u64,
    /// Training samples recorded.
    pub samples: u64,
    /// Games won by black.
    pub black_wins: usize,
}

impl SizeTotals {
    fn add(&mut self, other: &SizeTotals) {
        self.games += other.games;
        self.moves += other.moves;
        self.samples += other.samples;
        self.black_wins += other.black_wins;
    }
}

impl SelfPlayStats {
    /// Adds `other`'s totals to these.
    pub fn add(&mut self, other: &SelfPlayStats) {
        for (size, totals) in &other.sizes {
            self.sizes.entry(size.clone()).or_default().add(totals);
        }
        self.games += other.games;
        self.moves += other.moves;
        self.samples += other.samples;
        self.evaluations += other.evaluations;
        self.batches += other.batches;
        self.cache_hits += other.cache_hits;
        self.black_wins += other.black_wins;
        self.solved += other.solved;
        self.solver_disagreed += other.solver_disagreed;
        self.policy_corrected += other.policy_corrected;
        self.random_moves += other.random_moves;
    }
}

/// What one self-play phase needs.
pub struct SelfPlayJob<'a> {
    /// The network playing both sides.
    pub net: &'a Net,
    /// Its backend.
    pub backend: Backend,
    /// Self-play settings.
    pub config: &'a SelfPlayConfig,
    /// Board sizes, dealt round-robin by game index.
    pub sizes: &'a [Size],
    /// Master seed of the run.
    pub seed: u64,
    /// The iteration (part of every game's seed).
    pub iteration: u64,
    /// Worker threads.
    pub threads: usize,
    /// Set to abandon the phase (Ctrl-C).
    pub stop: &'a AtomicBool,
    /// Called with each finished game.
    pub on_game: &'a (dyn Fn(&GameOutput) + Sync),
}

/// Finished games and their totals, or `None` if stopped first.
pub type SelfPlayOutcome = Option<(Vec<GameOutput>, SelfPlayStats)>;

/// Plays `config.games` games; `Ok(None)` if `stop` was raised first. Games
/// come back in index order.
///
/// # Errors
/// The network's outputs were not finite (the other workers stop at their
/// next batch).
///
/// # Panics
/// If a worker thread panics.
pub fn play_games(job: &SelfPlayJob<'_>) -> Result<SelfPlayOutcome, EvalError> {
    let threads = job.threads.clamp(1, job.config.games.max(1));
    // Raised by a worker that failed, so the others stop too.
    let failed = AtomicBool::new(false);
    let results: Vec<Result<SelfPlayOutcome, EvalError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|worker| {
                let (net, failed) = (job.net.clone(), &failed);
                scope.spawn(move || {
                    let evaluator = NetEvaluator::for_backend(&net, job.backend).with_name("the self-play network");
                    let games: Vec<usize> = (worker..job.config.games).step_by(threads).collect();
                    let outcome = Worker::new(job, evaluator, failed).run(&games);
                    if outcome.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    outcome
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("self-play worker panicked")).collect()
    });
    let mut games = Vec::new();
    let mut stats = SelfPlayStats::default();
    let mut stopped = false;
    for result in results {
        match result? {
            Some((worker_games, worker_stats)) => {
                games.extend(worker_games);
                stats.add(&worker_stats);
            }
            None => stopped = true,
        }
    }
    if stopped {
        return Ok(None);
    }
    games.sort_by_key(|g| g.index);
    Ok(Some((games, stats)))
}

/// A game in progress.
struct Game {
    index: usize,
    search: Search,
    rng: ChaCha8Rng,
    position: Position,
    ply: u32,
    /// Simulations this move gets.
    budget: u64,
    /// Whether this move is a full search (recorded as a sample).
    full: bool,
    /// Where the game's leaves start in the current batch, and how many.
    first: usize,
    gathered: usize,
    /// Full-search samples as recorded.
    samples: Vec<Recorded>,
    /// Whether the last sample recorded waits for its reply target (the
    /// search of the position after its move).
    reply_pending: bool,
}

/// A full-search sample before the game's result is known.
struct Recorded {
    sample: PackedSample,
    /// The solver's verdict for the mover, if solved.
    exact: Option<bool>,
    /// The search's root value for the mover.
    root_value: f32,
    /// How far the policy target moved from the root prior (KL divergence;
    /// 0 unless policy surprise weighting is on).
    surprise: f32,
}

struct Worker<'a> {
    job: &'a SelfPlayJob<'a>,
    evaluator: CachedEvaluator<NetEvaluator>,
    solver: Option<Solver>,
    /// Whether samples get reply targets: the network trains a reply
    /// policy output.
    replies: bool,
    stats: SelfPlayStats,
    /// Another worker failed: stop as if stopped.
    failed: &'a AtomicBool,
}

impl<'a> Worker<'a> {
    fn new(job: &'a SelfPlayJob<'a>, evaluator: NetEvaluator, failed: &'a AtomicBool) -> Worker<'a> {
        let solver = (job.config.solver_max_stones > 0).then(|| Solver::new(16));
        // The network is fixed for the phase, so its outputs stay valid.
        let evaluator = CachedEvaluator::new(evaluator, job.config.eval_cache);
        let replies = job.net.config().reply_policy;
        Worker { job, evaluator, solver, replies, stats: SelfPlayStats::default(), failed }
    }

    fn start(&self, index: usize) -> Game {
        let config = self.job.config;
        let seed = derive_seed(self.job.seed, self.job.iteration, index as u64, Stream::GameSearch);
        let size = self.job.sizes[index % self.job.sizes.len()];
        let mut rng =
            ChaCha8Rng::seed_from_u64(derive_seed(self.job.seed, self.job.iteration, index as u64, Stream::GameMoves));
        let (position, ply) = random_opening(size, config.random_opening_plies, &mut rng);
        let mut search = Search::new(config.search, seed);
        search.set_root(position);
        let mut game = Game {
            index,
            search,
            rng,
            position,
            ply,
            budget: 0,
            full: true,
            first: 0,
            gathered: 0,
            samples: Vec::new(),
            reply_pending: false,
        };
        self.plan_move(&mut game);
        game
    }

    /// Decides the budget of the next move (playout-cap randomisation);
    /// fast searches play without root noise.
    fn plan_move(&self, game: &mut Game) {
        let config = self.job.config;
        game.full = config.full_search_probability >= 1.0 || game.rng.random::<f64>() < config.full_search_probability;
        game.budget = if game.full { config.simulations } else { config.fast_simulations.min(config.simulations) };
        game.search.set_root_noise(game.full);
    }

    fn run(mut self, indices: &[usize]) -> Result<SelfPlayOutcome, EvalError> {
        let config = self.job.config;
        let mut queue = indices.iter().copied();
        let mut active: Vec<Game> = Vec::with_capacity(config.parallel_games);
        let mut finished = Vec::new();
        let mut batch = Batch::new();
        loop {
            while active.len() < config.parallel_games {
                match queue.next() {
                    Some(index) => active.push(self.start(index)),
                    None => break,
                }
            }
            if active.is_empty() {
                break;
            }
            if self.job.stop.load(Ordering::Relaxed) || self.failed.load(Ordering::Relaxed) {
                return Ok(None);
            }
            // Gather from every game, evaluate once, apply each game's part.
            batch.clear();
            for game in &mut active {
                let want =
                    (game.budget.saturating_sub(game.search.simulations())).clamp(1, config.search.batch_size as u64);
                game.first = batch.len();
                game.gathered = game.search.gather(want as usize, &mut batch);
            }
            if !batch.is_empty() {
                self.evaluator.evaluate(&mut batch)?;
                for game in active.iter_mut().filter(|g| g.gathered > 0) {
                    game.search.apply(&batch, game.first)?;
                }
            }
            let mut i = 0;
            while i < active.len() {
                if active[i].search.simulations() >= active[i].budget && self.play_move(&mut active[i]) {
                    let game = active.swap_remove(i);
                    let output = self.finish(game);
                    (self.job.on_game)(&output);
                    finished.push(output);
                } else {
                    i += 1;
                }
            }
        }
        let (batches, evaluations) = self.evaluator.inner().counts();
        self.stats.batches = batches;
        self.stats.evaluations = evaluations;
        self.stats.cache_hits = self.evaluator.hits();
        Ok(Some((finished, self.stats)))
    }

    /// Plays the searched move; returns whether the game is over.
    fn play_move(&mut self, game: &mut Game) -> bool {
        let config = self.job.config;
        let mut solved = false;
        // The search's target, read once: this move's sample and the
        // reply of the last sample (this search answers its move).
        let target = (game.full || game.reply_pending).then(|| game.search.policy_target());
        if game.reply_pending {
            let last = game.samples.last_mut().expect("a sample waits");
            last.sample.set_reply(target.iter().flatten().copied());
        }
        game.reply_pending = game.full && self.replies;
        if let Some(mut visits) = target.filter(|_| game.full) {
            let exact = self.solve(&game.position, &mut visits);
            solved = exact.is_some();
            let root_value = game.search.root_value();
            let surprise = if config.policy_surprise_weight > 0.0 {
                policy_surprise(&visits, game.search.root_children().map(|c| (c.mv, c.prior)))
            } else {
                0.0
            };
            let sample = PackedSample::new(&game.position, visits, 0.0);
            game.samples.push(Recorded { sample, exact, root_value, surprise });
        }
        // No draw unless random moves are on, so runs without them replay.
        let mv = if solved
            && config.random_move_probability > 0.0
            && game.rng.random::<f64>() < config.random_move_probability
        {
            self.stats.random_moves += 1;
            let moves = game.position.moves();
            moves[game.rng.random_range(0..moves.len())]
        } else {
            let temperature = config.temperature_at(game.ply);
            game.search.choose_move(temperature, &mut game.rng).expect("a searched position has a move")
        };
        game.position.play_unchecked(mv);
        game.ply += 1;
        self.stats.moves += 1;
        let over = game.position.is_over();
        if !over {
            // The next move's budget before the tree moves on: its root gets
            // noise only if it is a full (recorded) search.
            self.plan_move(game);
        }
        game.search.advance(mv);
        over
    }

    /// Whether the side to move wins, if the position is small enough to
    /// solve within the budget; under `solver_policy` a won position's
    /// `visits` keep only winning moves.
    fn solve(&mut self, position: &Position, visits: &mut [(Move, u32)]) -> Option<bool> {
        let config = self.job.config;
        let solver = self.solver.as_mut()?;
        if position.stones() > config.solver_max_stones {
            return None;
        }
        if !config.solver_policy {
            return solver.wins_within(position, config.solver_nodes).ok();
        }
        let solution = solver.solve_within(position, config.solver_nodes).ok()?;
        if solution.win && correct_policy(visits, &solution.winning_moves) {
            self.stats.policy_corrected += 1;
        }
        Some(solution.win)
    }

    fn finish(&mut self, mut game: Game) -> GameOutput {
        let winner = game.position.winner().expect("finished games have a winner");
        // With random moves the game's result says little; the first solved
        // position's exact result is what perfect play from there gives.
        let value_winner = if self.job.config.random_move_probability > 0.0 {
            let first_solved = game.samples.iter().find_map(|r| r.exact.map(|win| (&r.sample, win)));
            first_solved.map_or(winner, |(sample, win)| exact_winner(sample.side_to_move(), win))
        } else {
            winner
        };
        let (mut solved, mut disagreed) = (0, 0);
        let weight = self.job.config.root_value_weight as f32;
        let surprise_weight = self.job.config.policy_surprise_weight;
        // Drawn only when weighting is on, so runs without it replay.
        let copies = (surprise_weight > 0.0).then(|| {
            let surprises: Vec<f32> = game.samples.iter().map(|r| r.surprise).collect();
            surprise_copies(&surprises, surprise_weight, &mut game.rng)
        });
        let samples: Vec<PackedSample> = game
            .samples
            .into_iter()
            .map(|Recorded { mut sample, exact, root_value, .. }| {
                let won = sample.side_to_move() == winner;
                sample.value = match exact {
                    Some(win) => {
                        solved += 1;
                        disagreed += (win != won) as u32;
                        if win { 1.0 } else { -1.0 }
                    }
                    None => {
                        let result = if sample.side_to_move() == value_winner { 1.0 } else { -1.0 };
                        ((1.0 - weight) * result + weight * root_value).clamp(-1.0, 1.0)
                    }
                };
                sample
            })
            .enumerate()
            .flat_map(|(i, sample)| {
                let n = copies.as_ref().map_or(1, |copies| copies[i] as usize);
                std::iter::repeat_n(sample, n)
            })
            .collect();
        let totals = SizeTotals {
            games: 1,
            moves: u64::from(game.ply),
            samples: samples.len() as u64,
            black_wins: (winner == Color::Black) as usize,
        };
        self.stats.games += totals.games;
        self.stats.samples += totals.samples;
        self.stats.black_wins += totals.black_wins;
        self.stats.sizes.entry(game.position.size().to_string()).or_default().add(&totals);
        self.stats.solved += solved as u64;
        self.stats.solver_disagreed += disagreed as u64;
        GameOutput {
            index: game.index,
            size: game.position.size(),
            samples,
            plies: game.ply,
            winner,
            solved,
            solver_disagreed: disagreed,
        }
    }
}

/// KL divergence from the root prior to the search's policy target (the
/// visits normalised): how much the search taught the network here. Both
/// list the root's moves in legal-move order. Priors are floored at 1e-6
/// so a move the network all but ruled out and the search then chose
/// counts as very surprising, not infinitely.
fn policy_surprise(target: &[(Move, u32)], priors: impl Iterator<Item = (Move, f32)>) -> f32 {
    let total: u32 = target.iter().map(|&(_, v)| v).sum();
    if total == 0 {
        return 0.0;
    }
    let mut kl = 0.0f64;
    for (&(mv, visits), (prior_mv, prior)) in target.iter().zip(priors) {
        debug_assert_eq!(mv, prior_mv, "the target and the priors list the moves alike");
        if visits > 0 {
            let t = f64::from(visits) / f64::from(total);
            kl += t * (t / f64::from(prior).max(1e-6)).ln();
        }
    }
    kl.max(0.0) as f32
}

/// How many times each of a game's samples is written under policy
/// surprise weighting: weight `1 - w + w * n * s_i / sum(s)` for `n`
/// samples of surprise `s_i`, written `floor` times and once more with the
/// fraction's probability, so a game keeps `n` samples on average. A game
/// without surprise keeps one copy of each.
fn surprise_copies(surprises: &[f32], weight: f64, rng: &mut ChaCha8Rng) -> Vec<u32> {
    let total: f64 = surprises.iter().map(|&s| f64::from(s.max(0.0))).sum();
    let n = surprises.len() as f64;
    surprises
        .iter()
        .map(|&s| {
            let share = if total > 0.0 { n * f64::from(s.max(0.0)) / total } else { 1.0 };
            let w = 1.0 - weight + weight * share;
            let whole = w.floor();
            whole as u32 + u32::from(rng.random::<f64>() < w - whole)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use konane_nn::train::Sample;
    use konane_nn::{NetConfig, init_net};
    use konane_rules::Symmetry;

    /// A tiny seeded network.
    fn tiny_net() -> Net {
        init_net(&NetConfig::new().with_blocks(1).with_channels(8), &Backend::Flex.device(), 3)
    }

    /// Plays `config.games` 5x5 games with a tiny seeded network on one thread.
    fn play_5x5(config: &SelfPlayConfig, seed: u64) -> (Vec<GameOutput>, SelfPlayStats) {
        play_5x5_with(&tiny_net(), config, seed)
    }

    /// Plays `config.games` 5x5 games with `net` on one thread.
    fn play_5x5_with(net: &Net, config: &SelfPlayConfig, seed: u64) -> (Vec<GameOutput>, SelfPlayStats) {
        play_5x5_on(net, Backend::Flex, config, seed, 1)
    }

    /// Plays `config.games` 5x5 games with `net` on `backend` and `threads` workers.
    fn play_5x5_on(
        net: &Net,
        backend: Backend,
        config: &SelfPlayConfig,
        seed: u64,
        threads: usize,
    ) -> (Vec<GameOutput>, SelfPlayStats) {
        let stop = AtomicBool::new(false);
        let job = SelfPlayJob {
            net,
            backend,
            config,
            sizes: &[Size::new(5, 5).unwrap()],
            seed,
            iteration: 1,
            threads,
            stop: &stop,
            on_game: &|_| {},
        };
        play_games(&job).unwrap().expect("not stopped")
    }

    #[test]
    fn correct_policy_keeps_winning_visits_or_gives_each_winner_one() {
        let position = Position::start(Size::new(4, 4).unwrap());
        let moves: Vec<Move> = position.moves().iter().copied().collect();
        let (a, b) = (moves[0], moves[1]);
        let mut visits = vec![(a, 5), (b, 3)];
        assert!(correct_policy(&mut visits, &[b]));
        assert_eq!(visits, vec![(a, 0), (b, 3)]);
        let mut visits = vec![(a, 5), (b, 0)];
        assert!(correct_policy(&mut visits, &[b]));
        assert_eq!(visits, vec![(a, 0), (b, 1)], "an unvisited winner gets a visit");
        let mut visits = vec![(a, 5), (b, 0)];
        assert!(!correct_policy(&mut visits, &[a]));
        assert_eq!(visits, vec![(a, 5), (b, 0)]);
    }

    /// With exact policy targets, every solved won sample's target puts
    /// all its weight on winning moves, checked against a fresh solve.
    #[test]
    fn solver_policy_targets_hold_only_winning_moves() {
        let config = SelfPlayConfig {
            games: 6,
            parallel_games: 3,
            simulations: 16,
            solver_max_stones: 40,
            solver_nodes: 1_000_000,
            solver_policy: true,
            ..SelfPlayConfig::default()
        };
        let (games, stats) = play_5x5(&config, 7);
        let mut solver = Solver::new(16);
        let mut won = 0;
        for sample in games.iter().flat_map(|g| &g.samples) {
            let solution = solver.solve(&sample.position());
            assert_eq!(sample.value, if solution.win { 1.0 } else { -1.0 }, "every sample is solved exactly");
            if solution.win {
                won += 1;
                for (mv, p) in sample.unpack(Symmetry::Identity).policy {
                    assert!(p == 0.0 || solution.winning_moves.contains(&mv), "{mv:?} loses yet has target {p}");
                }
            }
        }
        assert_eq!(stats.solved, stats.samples);
        assert!(won > 0 && stats.policy_corrected > 0, "{won} won samples, {} corrected", stats.policy_corrected);
    }

    /// Random moves come only from solved positions, and the unsolved
    /// positions before them take the first solved position's exact result.
    #[test]
    fn random_moves_keep_value_targets_exact() {
        let config = SelfPlayConfig {
            games: 8,
            parallel_games: 4,
            simulations: 16,
            solver_max_stones: 17,
            solver_nodes: 1_000_000,
            random_move_probability: 0.5,
            ..SelfPlayConfig::default()
        };
        let (games, stats) = play_5x5(&config, 11);
        assert!(stats.random_moves > 0 && stats.solved > 0 && stats.solved < stats.samples);
        let mut solver = Solver::new(16);
        let mut flipped = 0;
        for game in &games {
            let first = game.samples.iter().find(|s| s.position().stones() <= 17).expect("games reach 17 stones");
            let perfect_winner = exact_winner(first.side_to_move(), solver.solve(&first.position()).win);
            flipped += (perfect_winner != game.winner) as usize;
            for sample in &game.samples {
                let position = sample.position();
                let expected = if position.stones() <= 17 {
                    solver.solve(&position).win
                } else {
                    sample.side_to_move() == perfect_winner
                };
                assert_eq!(sample.value, if expected { 1.0 } else { -1.0 }, "{position}");
            }
        }
        assert!(flipped > 0, "some game's result differs from perfect play after its first solved position");
    }

    /// The value target mixes the game's result and the search's root
    /// value: the games themselves do not change with the weight, weight 0
    /// gives the bare result, and weight 1/2 lies halfway between the
    /// result and weight 1's target (the root value).
    #[test]
    fn root_value_weight_mixes_result_and_search_value() {
        let config = |weight| SelfPlayConfig {
            games: 4,
            parallel_games: 2,
            simulations: 24,
            root_value_weight: weight,
            ..SelfPlayConfig::default()
        };
        let values = |weight| -> (Vec<String>, Vec<f32>) {
            let (games, _) = play_5x5(&config(weight), 17);
            let samples: Vec<&PackedSample> = games.iter().flat_map(|g| &g.samples).collect();
            (samples.iter().map(|s| s.position().to_string()).collect(), samples.iter().map(|s| s.value).collect())
        };
        let (positions, results) = values(0.0);
        let (same_positions, half) = values(0.5);
        let (_, searched) = values(1.0);
        assert_eq!(positions, same_positions, "the weight changes targets, not games");
        assert!(results.iter().all(|&z| z == 1.0 || z == -1.0), "weight 0 keeps the game result");
        for ((&z, &h), &q) in results.iter().zip(&half).zip(&searched) {
            assert!((-1.0..=1.0).contains(&q), "root value {q}");
            assert!((h - (z + q) / 2.0).abs() < 1e-6, "{h} is not halfway between {z} and {q}");
        }
        assert!(
            searched.iter().zip(&results).any(|(q, z)| (q - z).abs() > 0.1),
            "the search's values differ from results"
        );
    }

    /// Six short 5x5 games, three at a time.
    fn six_games() -> SelfPlayConfig {
        SelfPlayConfig { games: 6, parallel_games: 3, simulations: 24, ..SelfPlayConfig::default() }
    }

    /// The cache of network outputs changes no game and no sample (the
    /// network answers a position the same in any batch) and saves
    /// network calls.
    #[test]
    fn the_output_cache_saves_network_calls_and_changes_nothing() {
        let config = |cache| SelfPlayConfig { eval_cache: cache, ..six_games() };
        let (plain, plain_stats) = play_5x5(&config(0), 23);
        let (cached, stats) = play_5x5(&config(1 << 12), 23);
        assert_eq!(plain_stats.cache_hits, 0);
        assert!(stats.cache_hits > 0, "{stats:?}");
        assert_eq!(stats.evaluations + stats.cache_hits, plain_stats.evaluations);
        for (p, c) in plain.iter().zip(&cached) {
            assert_eq!((p.index, p.plies, p.winner), (c.index, c.plies, c.winner));
            assert!(p.samples == c.samples, "game {}: the samples differ", p.index);
        }
    }

    /// The number of workers changes no game and no sample: each game's
    /// random streams come from its index, and the network answers a
    /// position the same in any batch, so a run on two cores trains the
    /// same network as on one, and a result found on either reproduces.
    #[test]
    fn the_games_do_not_depend_on_the_number_of_workers() {
        let net = tiny_net();
        let config = SelfPlayConfig { eval_cache: 1 << 12, ..six_games() };
        for backend in [Backend::Native, Backend::Flex] {
            let (one, one_stats) = play_5x5_on(&net, backend, &config, 29, 1);
            for threads in [2, 4] {
                let (many, stats) = play_5x5_on(&net, backend, &config, 29, threads);
                assert_eq!(one.len(), many.len());
                assert_eq!(
                    (stats.moves, stats.samples),
                    (one_stats.moves, one_stats.samples),
                    "{backend:?} on {threads} workers"
                );
                for (a, b) in one.iter().zip(&many) {
                    assert_eq!((a.index, a.plies, a.winner), (b.index, b.plies, b.winner), "{backend:?}, {threads}");
                    assert!(
                        a.samples == b.samples,
                        "{backend:?} on {threads} workers: game {}'s samples differ",
                        a.index
                    );
                }
            }
        }
    }

    /// A network with a reply output gets each sample's reply target from
    /// the search after its move, fast or full, and plays the same games.
    #[test]
    fn samples_get_the_next_search_as_their_reply_target_when_the_network_trains_one() {
        let plain = tiny_net();
        let wanted = plain.config().with_reply_policy(true);
        let with_reply = plain.clone().with_training_outputs_of(&wanted, &Backend::Flex.device(), 1);
        let (without, _) = play_5x5_with(&plain, &six_games(), 29);
        let (with, _) = play_5x5_with(&with_reply, &six_games(), 29);
        for (w, p) in with.iter().zip(&without) {
            assert_eq!((w.plies, w.winner), (p.plies, p.winner), "the same game");
            let unpacked: Vec<Sample> = w.samples.iter().map(|s| s.unpack(Symmetry::Identity)).collect();
            assert!(p.samples.iter().all(|s| s.unpack(Symmetry::Identity).reply.is_empty()));
            // Every position is searched in full: a reply is the next sample's target.
            for pair in unpacked.windows(2) {
                assert_eq!(pair[0].reply, pair[1].policy, "game {}", w.index);
            }
            assert!(unpacked.last().unwrap().reply.is_empty(), "the last move has no reply");
        }
        // With fast searches between the recorded ones, a sample's reply is
        // still the opponent's: every reply jump starts from an opponent stone.
        let config = SelfPlayConfig { full_search_probability: 0.5, fast_simulations: 8, ..six_games() };
        let (games, _) = play_5x5_with(&with_reply, &config, 31);
        let mut replies = 0;
        for game in &games {
            for (i, sample) in game.samples.iter().enumerate() {
                let (position, reply) = (sample.position(), sample.unpack(Symmetry::Identity).reply);
                assert!(!reply.is_empty() || i + 1 == game.samples.len(), "game {} sample {i}", game.index);
                for (mv, _) in &reply {
                    if let Move::Jump { from, .. } = *mv {
                        assert_eq!(position.stone_at(from), Some(position.side_to_move().opposite()), "{mv:?}");
                        replies += 1;
                    }
                }
            }
        }
        assert!(replies > 20, "{replies}");
    }

    /// The surprise is the KL divergence from the prior to the normalised
    /// visits: none where they agree, and a move without a prior is
    /// floored rather than infinite.
    #[test]
    fn policy_surprise_is_the_kl_divergence_from_the_prior() {
        let position = Position::start(Size::new(4, 4).unwrap());
        let moves: Vec<Move> = position.moves().iter().copied().collect();
        let (a, b) = (moves[0], moves[1]);
        let agree = policy_surprise(&[(a, 3), (b, 1)], [(a, 0.75), (b, 0.25)].into_iter());
        assert!(agree.abs() < 1e-6, "{agree}");
        let against = policy_surprise(&[(a, 3), (b, 1)], [(a, 0.25), (b, 0.75)].into_iter());
        assert!((against - 0.5 * 3f32.ln()).abs() < 1e-5, "{against}");
        let unseen = policy_surprise(&[(a, 0), (b, 4)], [(a, 1.0), (b, 0.0)].into_iter());
        assert!((unseen - 1e6f32.ln()).abs() < 1e-3, "{unseen}");
        assert_eq!(policy_surprise(&[(a, 0), (b, 0)], [(a, 0.5), (b, 0.5)].into_iter()), 0.0);
    }

    /// Copies follow the surprise at full weight, keep one each without
    /// surprise, and keep a game's sample count on average.
    #[test]
    fn surprise_copies_follow_the_surprise_and_keep_the_count() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        assert_eq!(surprise_copies(&[0.0, 0.0, 0.0], 0.5, &mut rng), [1, 1, 1]);
        assert_eq!(surprise_copies(&[0.0, 0.0, 2.0], 1.0, &mut rng), [0, 0, 3]);
        // Weight 1/2 on surprises 0 and 1: weights 1/2 and 3/2.
        let mut sums = [0u32; 2];
        for _ in 0..10_000 {
            let copies = surprise_copies(&[0.0, 1.0], 0.5, &mut rng);
            sums[0] += copies[0];
            sums[1] += copies[1];
        }
        assert!((4_800..5_200).contains(&sums[0]) && (14_800..15_200).contains(&sums[1]), "{sums:?}");
    }

    /// In self-play the weighting changes which samples are written, not
    /// the games: the same games, each sample one of the game's positions
    /// in its order, some written twice or more and some not at all, and
    /// about as many samples in all.
    #[test]
    fn surprise_weighting_repeats_positions_without_changing_the_games() {
        let config = |weight| SelfPlayConfig { policy_surprise_weight: weight, ..six_games() };
        let (plain, _) = play_5x5(&config(0.0), 19);
        let (weighted, stats) = play_5x5(&config(1.0), 19);
        let positions =
            |game: &GameOutput| -> Vec<String> { game.samples.iter().map(|s| s.position().to_string()).collect() };
        let (mut repeated, mut dropped) = (false, false);
        for (p, w) in plain.iter().zip(&weighted) {
            assert_eq!((p.index, p.plies, p.winner), (w.index, w.plies, w.winner), "the same game");
            let (all, written) = (positions(p), positions(w));
            let mut distinct = written.clone();
            distinct.dedup();
            repeated |= distinct.len() < written.len();
            dropped |= distinct.len() < all.len();
            let in_order: Vec<&String> = all.iter().filter(|x| distinct.contains(x)).collect();
            assert_eq!(in_order, distinct.iter().collect::<Vec<_>>(), "the game's positions, in order");
        }
        assert!(repeated && dropped, "repeated {repeated}, dropped {dropped}");
        let total = |games: &[GameOutput]| games.iter().map(|g| g.samples.len()).sum::<usize>();
        let (n, m) = (total(&plain), total(&weighted));
        assert!(m * 10 >= n * 6 && m * 10 <= n * 14, "{m} samples written for {n} recorded");
        assert_eq!(stats.samples as usize, m);
    }

    /// Random openings: drawn lengths cover 0 to the maximum, stop short of
    /// ending the game (a 4x4 game can end within a few plies), and the
    /// option draws nothing when off.
    #[test]
    fn random_opening_spreads_lengths_and_never_ends_the_game() {
        let size = Size::new(4, 4).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut untouched = rng.clone();
        assert_eq!(random_opening(size, 0, &mut rng), (Position::start(size), 0));
        assert_eq!(rng.random::<u64>(), untouched.random::<u64>(), "no draw when off");
        let mut lengths = [0usize; 9];
        for _ in 0..400 {
            let (position, plies) = random_opening(size, 8, &mut rng);
            assert!(!position.is_over(), "{position}");
            lengths[plies as usize] += 1;
        }
        assert!(lengths[0] > 0 && lengths[4] > 0, "{lengths:?}");
        assert!(
            lengths[8] < lengths[2],
            "4x4 games often end before 8 plies, so those openings stop short: {lengths:?}"
        );
    }

    /// Games with random openings record samples only after their opening,
    /// so their first samples spread over many positions, not just the start.
    #[test]
    fn random_openings_start_samples_off_the_start_position() {
        let config = SelfPlayConfig { games: 8, parallel_games: 4, simulations: 16, ..SelfPlayConfig::default() };
        let start = Position::start(Size::new(5, 5).unwrap());
        let (games, _) = play_5x5(&config, 13);
        assert!(games.iter().all(|g| g.samples[0].position() == start && g.samples.len() == g.plies as usize));
        let config = SelfPlayConfig { random_opening_plies: 4, ..config };
        let (games, _) = play_5x5(&config, 13);
        let mut firsts = Vec::new();
        for game in &games {
            let opening = game.plies as usize - game.samples.len();
            assert!(opening <= 4, "{opening} unrecorded plies");
            assert_eq!(game.samples[0].position().stones() < start.stones(), opening > 0);
            firsts.push(game.samples[0].position());
        }
        firsts.sort_by_key(|p| p.to_string());
        firsts.dedup();
        assert!(firsts.len() >= 3, "{} distinct first positions in 8 games", firsts.len());
    }
}
