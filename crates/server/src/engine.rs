//! The engines behind the API: the networks the server was started with,
//! a bounded pool of search threads, and the analysis a search produces.
//!
//! A search holds one permit of the pool for its whole run, on a blocking
//! thread, so requests are never stalled by searches and at most
//! `search_threads` run at once (more wait for a permit). Network players
//! are kept between searches (building one packs the weights for the
//! native kernels) but each search starts from a fresh tree: the previous
//! one may have been another game's.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use konane_mcts::Evaluator;
use konane_nn::player::{NetFactory, NetPlayer};
use konane_players::{Baseline, BaselineFactory, Limits, Player, PlayerFactory};
use konane_rules::{Color, Move, Position, Size};
use serde::Serialize;
use tokio::sync::Semaphore;

use crate::error::ApiError;

/// A network the API may name.
pub struct Model {
    /// Its name in the API (`8x8`).
    pub name: String,
    /// The sizes it was trained on (it plays every size).
    pub trained_on: Vec<Size>,
    /// The training iteration that produced it.
    pub iteration: u64,
    /// Builds its players.
    pub factory: NetFactory,
}

/// Who chooses the engine's moves in a game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opponent {
    /// PUCT search with a model.
    Network {
        /// Index into the server's models.
        model: usize,
        /// Simulations per move.
        sims: u64,
    },
    /// Iterative-deepening alpha-beta for a time per move.
    AlphaBeta {
        /// Milliseconds per move.
        ms: u64,
    },
    /// One ply: fewest replies.
    Greedy,
    /// Uniformly random.
    Random,
    /// Nobody: two people at one screen.
    Human,
}

/// What a search may spend: simulations, and optionally time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Simulations in all.
    pub sims: u64,
    /// Wall time in all.
    pub time: Option<Duration>,
}

/// One root move as the search sees it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MoveStats {
    /// The move (notation).
    #[serde(rename = "move")]
    pub mv: String,
    /// Simulations through it.
    pub visits: u32,
    /// Its share of the root's visits.
    pub share: f32,
    /// The network's prior.
    pub prior: f32,
    /// Mean value for the side to move (-1 to 1; 0 unvisited).
    pub value: f32,
    /// Proven to win (`true`) or lose (`false`) for the side to move.
    pub proven: Option<bool>,
    /// The expected line from this move: most visited replies.
    pub pv: Vec<String>,
}

/// The raw policy of one legal move.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Prior {
    /// The move (notation).
    #[serde(rename = "move")]
    pub mv: String,
    /// The network's prior, before any search.
    pub prior: f32,
}

/// The network's view of a position after some search; see docs/api.md.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Analysis {
    /// The position analysed (notation).
    pub position: String,
    /// `black` or `white`.
    pub to_move: String,
    /// The model's name.
    pub model: String,
    /// Simulations run.
    pub simulations: u64,
    /// Milliseconds spent.
    pub elapsed_ms: u64,
    /// The search's value for the side to move, -1 to 1.
    pub value: f32,
    /// `value` as a winning chance, 0 to 1.
    pub win_chance: f32,
    /// Black's winning chance, 0 to 1.
    pub black_win_chance: f32,
    /// Proven won (`true`) or lost (`false`) for the side to move.
    pub proven: Option<bool>,
    /// The root moves, most visited first.
    pub moves: Vec<MoveStats>,
    /// The raw policy of every legal move, in legal-move order.
    pub policy: Vec<Prior>,
    /// The last analysis of this search.
    #[serde(rename = "final")]
    pub is_final: bool,
}

impl Analysis {
    /// The move the search would play: the first of `moves`.
    pub fn best_move(&self) -> Option<&str> {
        self.moves.first().map(|m| m.mv.as_str())
    }
}

/// How many simulations a search runs between checks of its budget, its
/// stop flag and the time to report: small enough that a closed
/// connection stops it within milliseconds.
const CHUNK: u64 = 64;

/// Moves of a principal variation shown per root move.
const PV_LENGTH: usize = 8;

/// The engines: models, the pool of search permits and idle players.
pub struct Engines {
    models: Vec<Model>,
    permits: Arc<Semaphore>,
    threads: usize,
    /// Players of each model not searching now (at most `threads` each).
    idle: Vec<Mutex<Vec<NetPlayer>>>,
}

impl Engines {
    /// Engines for `models` (at least one), running at most `threads`
    /// searches at once.
    ///
    /// # Panics
    /// With no model or no thread: the command line guarantees both.
    pub fn new(models: Vec<Model>, threads: usize) -> Engines {
        assert!(!models.is_empty(), "the server needs a model");
        assert!(threads > 0, "the server needs a search thread");
        let idle = models.iter().map(|_| Mutex::new(Vec::new())).collect();
        Engines { models, permits: Arc::new(Semaphore::new(threads)), threads, idle }
    }

    /// The models, in the order given.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// Searches that may run at once.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The index of the model called `name`.
    ///
    /// # Errors
    /// No model has that name (400, listing the names).
    pub fn model_named(&self, name: &str) -> Result<usize, ApiError> {
        self.models.iter().position(|m| m.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.models.iter().map(|m| m.name.as_str()).collect();
            ApiError::bad_request(format!("no model '{name}'; this server has {}", names.join(", ")))
        })
    }

    /// The model for `size` when none is named, by
    /// [`konane_nn::shipped::choose_for_size`].
    pub fn model_for(&self, size: Size) -> usize {
        konane_nn::shipped::choose_for_size(self.models.iter().map(|m| m.trained_on.as_slice()), size)
    }

    /// Runs `job` on a blocking thread once a search permit is free. If the
    /// caller stops waiting (its client went away) before a permit is free,
    /// the job never runs.
    async fn run<T: Send + 'static>(
        self: &Arc<Self>,
        job: impl FnOnce(&Engines) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| ApiError::unavailable("the server is shutting down"))?;
        let engines = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job(&engines)
        })
        .await
        .map_err(|e| ApiError::internal(format!("the search thread failed: {e}")))
    }

    /// Analyses `position` with model `model` under `budget`, calling
    /// `report` with a snapshot every `every` (it returns `false` to stop)
    /// and stopping early when `stop` says so; the final analysis is the
    /// answer.
    ///
    /// # Errors
    /// The position is over (409), or the network failed (500).
    pub async fn analyse(
        self: &Arc<Self>,
        model: usize,
        position: Position,
        budget: Budget,
        every: Option<Duration>,
        stop: impl Fn() -> bool + Send + 'static,
        report: impl FnMut(&Analysis) -> bool + Send + 'static,
    ) -> Result<Analysis, ApiError> {
        ensure_not_over(&position)?;
        self.run(move |engines| {
            engines.with_player(model, |player, name| search(player, name, position, budget, every, &stop, report))
        })
        .await?
    }

    /// The move `opponent` plays in `position`, with the network's analysis
    /// when a network chose it. `budget` overrides a network's simulations
    /// or alpha-beta's time when given.
    ///
    /// # Errors
    /// The position is over (409), or the engine failed (500).
    pub async fn choose(
        self: &Arc<Self>,
        opponent: Opponent,
        position: Position,
        budget: Option<Budget>,
        seed: u64,
        stop: impl Fn() -> bool + Send + 'static,
    ) -> Result<(Move, Option<Analysis>), ApiError> {
        ensure_not_over(&position)?;
        let (model, sims) = match opponent {
            Opponent::Network { model, sims } => (model, sims),
            Opponent::Human => (self.model_for(position.size()), crate::DEFAULT_GAME_SIMS),
            baseline => {
                let (kind, limits) = match baseline {
                    Opponent::AlphaBeta { ms } => {
                        let time = budget.and_then(|b| b.time).unwrap_or(Duration::from_millis(ms));
                        (Baseline::AlphaBeta, Limits { movetime: Some(time), ..Limits::default() })
                    }
                    Opponent::Greedy => (Baseline::Greedy, Limits::default()),
                    _ => (Baseline::Random, Limits::default()),
                };
                return self
                    .run(move |_| {
                        let mut player = BaselineFactory::new(kind, limits, "opponent").build(seed);
                        let choice =
                            player.choose(&position, &limits).map_err(|e| ApiError::internal(e.to_string()))?;
                        choice.map(|c| (c.mv, None)).ok_or_else(|| ApiError::internal("the opponent found no move"))
                    })
                    .await?;
            }
        };
        let budget = budget.unwrap_or(Budget { sims, time: None });
        let analysis = self.analyse(model, position, budget, None, stop, |_| true).await?;
        let best = analysis.best_move().ok_or_else(|| ApiError::internal("the search found no move"))?;
        let mv = position.parse_legal_move(best).map_err(|e| ApiError::internal(e.to_string()))?;
        Ok((mv, Some(analysis)))
    }

    /// Lends a player of `model` to `job` (an idle one, or a new one) and
    /// keeps it for the next search.
    fn with_player<T>(&self, model: usize, job: impl FnOnce(&mut NetPlayer, &str) -> T) -> T {
        let idle = self.idle[model].lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
        let mut player = idle.unwrap_or_else(|| self.models[model].factory.build_player(model as u64 + 1));
        let answer = job(&mut player, &self.models[model].name);
        let mut idle = self.idle[model].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < self.threads {
            idle.push(player);
        }
        answer
    }
}

/// Refuses a finished game: there is nothing to play or analyse (409).
pub(crate) fn ensure_not_over(position: &Position) -> Result<(), ApiError> {
    if position.is_over() {
        return Err(ApiError::conflict(format!("the game is over: {} has no move", position.side_to_move())));
    }
    Ok(())
}

/// The search loop of [`Engines::analyse`], on a blocking thread.
fn search<E: Evaluator>(
    player: &mut konane_mcts::MctsPlayer<E>,
    model: &str,
    position: Position,
    budget: Budget,
    every: Option<Duration>,
    stop: &dyn Fn() -> bool,
    mut report: impl FnMut(&Analysis) -> bool,
) -> Result<Analysis, ApiError> {
    let start = Instant::now();
    let deadline = budget.time.map(|t| start + t);
    let failed = |e: &dyn std::fmt::Display| ApiError::internal(format!("model {model}: {e}"));
    player.new_game();
    let size = position.size();
    let (_, priors) = player.evaluate_raw(&position).map_err(|e| failed(&e))?;
    let policy: Vec<Prior> =
        position.moves().iter().zip(priors.iter()).map(|(mv, &prior)| Prior { mv: mv.to_text(size), prior }).collect();
    let mut simulations = 0;
    let mut last_report = start;
    loop {
        let now = Instant::now();
        let time_left = deadline.map(|d| d.saturating_duration_since(now));
        // The first chunk always runs, so that even a tiny budget has a move.
        if simulations > 0 && (simulations >= budget.sims || time_left == Some(Duration::ZERO) || stop()) {
            break;
        }
        let time_left = time_left.filter(|t| !t.is_zero());
        let limits = Limits { nodes: Some((budget.sims - simulations).min(CHUNK)), movetime: time_left, depth: None };
        let Some(choice) = player.choose(&position, &limits).map_err(|e| failed(&e))? else { break };
        if choice.nodes == 0 {
            break; // the tree is proven to its end: nothing more to learn
        }
        simulations += choice.nodes;
        if let Some(every) = every
            && last_report.elapsed() >= every
        {
            last_report = Instant::now();
            if !report(&snapshot(player, model, &position, &policy, simulations, start, false)) {
                break;
            }
        }
    }
    Ok(snapshot(player, model, &position, &policy, simulations, start, true))
}

/// The analysis the player's tree holds now.
fn snapshot<E: Evaluator>(
    player: &konane_mcts::MctsPlayer<E>,
    model: &str,
    position: &Position,
    policy: &[Prior],
    simulations: u64,
    start: Instant,
    is_final: bool,
) -> Analysis {
    let search = player.search();
    let size = position.size();
    let mut children: Vec<_> = search.root_children().collect();
    // Most visited first; the search's own choice (proven wins first) leads.
    children.sort_by(|a, b| b.visits.cmp(&a.visits).then(b.value.total_cmp(&a.value)));
    if let Some(best) = search.best_move()
        && let Some(i) = children.iter().position(|c| c.mv == best)
    {
        let chosen = children.remove(i);
        children.insert(0, chosen);
    }
    let total = children.iter().map(|c| c.visits).sum::<u32>().max(1) as f32;
    let moves = children
        .iter()
        .map(|c| MoveStats {
            mv: c.mv.to_text(size),
            visits: c.visits,
            share: c.visits as f32 / total,
            prior: c.prior,
            value: c.value,
            proven: c.proven,
            pv: search.principal_variation(c.mv, PV_LENGTH).iter().map(|m| m.to_text(size)).collect(),
        })
        .collect();
    let value = search.root_value();
    let win_chance = (value + 1.0) / 2.0;
    let to_move = position.side_to_move();
    Analysis {
        position: position.to_string(),
        to_move: to_move.to_string(),
        model: model.to_string(),
        simulations,
        elapsed_ms: start.elapsed().as_millis() as u64,
        value,
        win_chance,
        black_win_chance: if to_move == Color::Black { win_chance } else { 1.0 - win_chance },
        proven: search.root_proof(),
        moves,
        policy: policy.to_vec(),
        is_final,
    }
}
