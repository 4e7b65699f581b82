//! The web board: `konane serve`'s JSON API over HTTP (docs/api.md) and the
//! page that uses it, embedded in the binary.
//!
//! * [`App`] holds the engines ([`engine::Engines`]: models and a bounded
//!   pool of search threads), the games ([`games::Games`]) and the limits.
//! * [`router`] maps the API onto handlers; [`serve`] runs it on a
//!   listener until a shutdown signal.
//!
//! Requests never wait for a search to get a thread: searches run on
//! blocking threads, at most `search_threads` at once, and a game runs one
//! search at a time. A search stops within a few milliseconds when its
//! client goes away. Every failure is a 4xx or 5xx answer with a message,
//! and leaves the game as it was.
#![deny(missing_docs)]

pub mod engine;
pub mod error;
pub mod games;
pub mod load;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use konane_players::game::Game;
use konane_rules::{Color, GameRecord, Position, Size};
use serde::Deserialize;
use tokio::sync::mpsc::error::TrySendError;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};

use crate::engine::{Analysis, Budget, Engines, Opponent};
use crate::error::{ApiError, parse_json};
use crate::games::{GameState, GameView, Games};

/// Simulations of a network opponent's move when the request names none.
pub const DEFAULT_GAME_SIMS: u64 = 400;
/// Simulations of an analysis when the request names none.
pub const DEFAULT_ANALYSIS_SIMS: u64 = 800;
/// Milliseconds of an alpha-beta opponent's move when none is named.
pub const DEFAULT_ALPHABETA_MS: u64 = 1000;
/// The board sizes the page offers first.
pub const PRESETS: [&str; 8] = ["6x6", "8x8", "10x10", "12x12", "14x14", "9x13", "14x17", "13x20"];
/// How long a search request waits for the game's running search (say, a
/// live analysis the page is closing) before it is refused.
const SEARCH_WAIT: Duration = Duration::from_secs(2);
/// How long Ctrl-C waits for open requests and searches before leaving.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What a client may ask of the server; see docs/api.md for the ranges the
/// command line enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    /// Simulations a request may ask for.
    pub max_sims: u64,
    /// Milliseconds a request may ask for.
    pub max_ms: u64,
    /// Games kept; the longest idle is evicted beyond.
    pub max_games: usize,
    /// Request body bytes.
    pub max_body_bytes: usize,
    /// Requests a second per client address (bursts of twice that).
    pub rate: u32,
}

impl Default for ServerLimits {
    fn default() -> ServerLimits {
        ServerLimits { max_sims: 100_000, max_ms: 30_000, max_games: 1000, max_body_bytes: 64 * 1024, rate: 50 }
    }
}

/// Everything the handlers share.
pub struct App {
    engines: Arc<Engines>,
    games: Games,
    limits: ServerLimits,
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    /// Seeds of baseline opponents, one per move.
    seeds: AtomicU64,
}

impl App {
    /// An app over `engines` with `limits`.
    pub fn new(engines: Engines, limits: ServerLimits) -> Arc<App> {
        let rate = NonZeroU32::new(limits.rate.max(1)).expect("at least 1");
        let burst = rate.saturating_mul(NonZeroU32::new(2).expect("2"));
        Arc::new(App {
            engines: Arc::new(engines),
            games: Games::new(limits.max_games),
            limits,
            limiter: RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)),
            seeds: AtomicU64::new(1),
        })
    }

    /// The games held.
    pub fn games(&self) -> &Games {
        &self.games
    }
}

/// The API and the page, over `app`.
pub fn router(app: Arc<App>) -> Router {
    let api = Router::new()
        .route("/info", get(info))
        .route("/games", post(create_game))
        .route("/games/{id}", get(read_game).delete(delete_game))
        .route("/games/{id}/moves", post(play_move))
        .route("/games/{id}/genmove", post(genmove))
        .route("/games/{id}/undo", post(undo))
        .route("/games/{id}/record", get(record))
        .route("/games/{id}/analysis", get(analysis_stream).post(analysis_once))
        .route("/analyse", post(analyse_position));
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", include_str!("../assets/index.html")) }))
        .route("/app.js", get(|| async { asset("text/javascript; charset=utf-8", include_str!("../assets/app.js")) }))
        .route("/style.css", get(|| async { asset("text/css; charset=utf-8", include_str!("../assets/style.css")) }))
        .nest("/api/v1", api)
        .fallback(|request: Request| async move {
            ApiError::not_found(format!("no such path: {} {}", request.method(), request.uri().path()))
        })
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(app.limits.max_body_bytes))
        .layer(middleware::from_fn_with_state(Arc::clone(&app), rate_limit))
        .with_state(app)
}

/// Serves `app` on `listener` until `shutdown` completes; clients'
/// addresses key the rate limit.
///
/// # Errors
/// The listener failed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The rate limiter keeps a cell per address: forget the quiet ones.
    let sweeper = Arc::clone(&app);
    let sweep = tokio::spawn(async move {
        let mut ticks = tokio::time::interval(Duration::from_secs(60));
        loop {
            ticks.tick().await;
            sweeper.limiter.retain_recent();
        }
    });
    let service = router(app).into_make_service_with_connect_info::<SocketAddr>();
    let served = axum::serve(listener, service).with_graceful_shutdown(shutdown).await;
    sweep.abort();
    served
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        message: format!("{} is not allowed on {}", request.method(), request.uri().path()),
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

async fn rate_limit(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let client = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    if let Some(ip) = client
        && app.limiter.check_key(&ip).is_err()
    {
        let rate = app.limits.rate;
        return ApiError::too_many_requests(format!("more than {rate} requests a second from {ip}; slow down"))
            .into_response();
    }
    next.run(request).await
}

/// Stops a search when dropped: the handler's future is dropped when its
/// client goes away, and the search notices within one chunk.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl StopOnDrop {
    fn new() -> StopOnDrop {
        StopOnDrop(Arc::new(AtomicBool::new(false)))
    }

    fn flag(&self) -> impl Fn() -> bool + Send + 'static {
        let flag = Arc::clone(&self.0);
        move || flag.load(Ordering::Relaxed)
    }
}

// ---- requests ----

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct NewGame {
    size: Option<String>,
    record: Option<String>,
    opponent: Option<OpponentRequest>,
    human: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct OpponentRequest {
    kind: String,
    sims: Option<u64>,
    ms: Option<u64>,
    model: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MoveRequest {
    #[serde(rename = "move")]
    mv: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct GenmoveRequest {
    sims: Option<u64>,
    ms: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct UndoRequest {
    plies: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct AnalysisRequest {
    sims: Option<u64>,
    ms: Option<u64>,
    model: Option<String>,
    every_ms: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PositionRequest {
    position: Option<String>,
    sims: Option<u64>,
    ms: Option<u64>,
    model: Option<String>,
}

impl App {
    fn sims(&self, sims: Option<u64>, default: u64) -> Result<u64, ApiError> {
        let sims = sims.unwrap_or(default.min(self.limits.max_sims));
        if !(1..=self.limits.max_sims).contains(&sims) {
            return Err(ApiError::bad_request(format!("sims {sims}: must be 1 to {}", self.limits.max_sims)));
        }
        Ok(sims)
    }

    fn ms(&self, ms: Option<u64>) -> Result<Option<Duration>, ApiError> {
        match ms {
            None => Ok(None),
            Some(ms) if (1..=self.limits.max_ms).contains(&ms) => Ok(Some(Duration::from_millis(ms))),
            Some(ms) => Err(ApiError::bad_request(format!("ms {ms}: must be 1 to {}", self.limits.max_ms))),
        }
    }

    /// The budget of a search request: `sims` (default `default_sims`) and
    /// `ms`; with only `ms` given, time bounds the search and simulations
    /// only by the server's limit.
    fn budget(&self, sims: Option<u64>, ms: Option<u64>, default_sims: u64) -> Result<Budget, ApiError> {
        let time = self.ms(ms)?;
        let sims = if time.is_some() && sims.is_none() { self.limits.max_sims } else { self.sims(sims, default_sims)? };
        Ok(Budget { sims, time })
    }

    fn opponent(&self, request: Option<OpponentRequest>, size: Size) -> Result<Opponent, ApiError> {
        let request = request.unwrap_or(OpponentRequest { kind: "network".into(), ..OpponentRequest::default() });
        let only = |kind: &str, allowed: &[&str]| -> Result<(), ApiError> {
            let given =
                [("sims", request.sims.is_some()), ("ms", request.ms.is_some()), ("model", request.model.is_some())];
            match given.iter().find(|(name, set)| *set && !allowed.contains(name)) {
                Some((name, _)) => Err(ApiError::bad_request(format!("opponent {kind} takes no '{name}'"))),
                None => Ok(()),
            }
        };
        Ok(match request.kind.as_str() {
            "network" => {
                only("network", &["sims", "model"])?;
                let model = match &request.model {
                    Some(name) => self.engines.model_named(name)?,
                    None => self.engines.model_for(size),
                };
                Opponent::Network { model, sims: self.sims(request.sims, DEFAULT_GAME_SIMS)? }
            }
            "alphabeta" => {
                only("alphabeta", &["ms"])?;
                let ms = request.ms.unwrap_or(DEFAULT_ALPHABETA_MS.min(self.limits.max_ms));
                self.ms(Some(ms))?;
                Opponent::AlphaBeta { ms }
            }
            "greedy" => only("greedy", &[]).map(|()| Opponent::Greedy)?,
            "random" => only("random", &[]).map(|()| Opponent::Random)?,
            "human" => only("human", &[]).map(|()| Opponent::Human)?,
            other => {
                return Err(ApiError::bad_request(format!(
                    "opponent kind '{other}': expected network, alphabeta, greedy, random or human"
                )));
            }
        })
    }

    fn model(&self, name: Option<&str>, size: Size) -> Result<usize, ApiError> {
        name.map_or(Ok(self.engines.model_for(size)), |name| self.engines.model_named(name))
    }

    fn view(&self, id: &str, entry: &games::Entry) -> GameView {
        let searching = entry.search.try_lock().is_err();
        GameView::new(id, &entry.lock(), searching, &self.engines)
    }

    fn next_seed(&self) -> u64 {
        self.seeds.fetch_add(1, Ordering::Relaxed)
    }
}

fn parse_color(text: &str) -> Result<Color, ApiError> {
    match text {
        "black" => Ok(Color::Black),
        "white" => Ok(Color::White),
        other => Err(ApiError::bad_request(format!("colour '{other}': expected black or white"))),
    }
}

/// A game from a record: every move checked against the rules.
fn game_from_record(text: &str) -> Result<Game, ApiError> {
    let record: GameRecord = text.trim().parse().map_err(|e| ApiError::bad_request(format!("record: {e}")))?;
    let mut game = Game::new(Position::start(record.size));
    for (ply, &mv) in record.moves.iter().enumerate() {
        if !game.position().is_legal(mv) {
            return Err(ApiError::bad_request(format!(
                "record: move {} ({}) is illegal there",
                ply + 1,
                mv.to_text(record.size)
            )));
        }
        game.play_legal(mv);
    }
    Ok(game)
}

// ---- handlers ----

async fn info(State(app): State<Arc<App>>) -> Json<serde_json::Value> {
    let models: Vec<_> = app
        .engines
        .models()
        .iter()
        .map(|m| {
            let sizes: Vec<String> = m.trained_on.iter().map(ToString::to_string).collect();
            serde_json::json!({ "name": m.name, "trained_on": sizes, "iteration": m.iteration })
        })
        .collect();
    let l = app.limits;
    Json(serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "models": models,
        "presets": PRESETS,
        "limits": {
            "max_sims": l.max_sims, "max_ms": l.max_ms, "max_games": l.max_games,
            "max_body_bytes": l.max_body_bytes, "rate": l.rate, "search_threads": app.engines.threads(),
        },
    }))
}

async fn create_game(
    State(app): State<Arc<App>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<GameView>), ApiError> {
    let request: NewGame = parse_json(&body?)?;
    let game = match (&request.size, &request.record) {
        (Some(_), Some(_)) => return Err(ApiError::bad_request("give a size or a record, not both")),
        (None, Some(record)) => game_from_record(record)?,
        (size, None) => {
            let size: Size =
                size.as_deref().unwrap_or("8x8").parse().map_err(|e| ApiError::bad_request(format!("size: {e}")))?;
            Game::new(Position::start(size))
        }
    };
    let size = game.position().size();
    let opponent = app.opponent(request.opponent, size)?;
    let human = request.human.as_deref().map_or(Ok(Color::Black), parse_color)?;
    let (id, entry) = app.games.insert(GameState::new(game, human, opponent));
    tracing::info!(game = %id, %size, "new game");
    Ok((StatusCode::CREATED, Json(app.view(&id, &entry))))
}

async fn read_game(
    State(app): State<Arc<App>>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<GameView>, ApiError> {
    let Path(id) = id?;
    let entry = app.games.get(&id)?;
    Ok(Json(app.view(&id, &entry)))
}

async fn delete_game(
    State(app): State<Arc<App>>,
    id: Result<Path<String>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let Path(id) = id?;
    app.games.remove(&id)?;
    Ok(StatusCode::NO_CONTENT)
}

async fn record(State(app): State<Arc<App>>, id: Result<Path<String>, PathRejection>) -> Result<Response, ApiError> {
    let Path(id) = id?;
    let entry = app.games.get(&id)?;
    let text = entry.lock().game.record().map(|r| format!("{r}\n")).unwrap_or_default();
    let disposition = format!("attachment; filename=\"konane-{id}.txt\"");
    Ok((
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8".to_string()), (header::CONTENT_DISPOSITION, disposition)],
        text,
    )
        .into_response())
}

async fn play_move(
    State(app): State<Arc<App>>,
    id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<GameView>, ApiError> {
    let Path(id) = id?;
    let request: MoveRequest = parse_json(&body?)?;
    let text = request.mv.ok_or_else(|| ApiError::unprocessable("request body: missing field `move`"))?;
    edit_game(&app, &id, |state| {
        engine::ensure_not_over(state.game.position())?;
        state.game.play_text(&text).map_err(|e| ApiError::bad_request(format!("'{text}': {e}")))?;
        Ok(())
    })
}

async fn undo(
    State(app): State<Arc<App>>,
    id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<GameView>, ApiError> {
    let Path(id) = id?;
    let request: UndoRequest = parse_json(&body?)?;
    edit_game(&app, &id, |state| {
        let played = state.game.moves().len();
        let plies = request.plies.unwrap_or(1);
        if played == 0 {
            return Err(ApiError::conflict("nothing to undo: no move has been played"));
        }
        if !(1..=played).contains(&plies) {
            return Err(ApiError::bad_request(format!("plies {plies}: must be 1 to {played}, the moves played")));
        }
        state.game.undo_to(played - plies);
        Ok(())
    })
}

/// Changes game `id` with `edit` under its state lock and answers with the
/// game; an edit that fails leaves the game as it was.
fn edit_game(
    app: &App,
    id: &str,
    edit: impl FnOnce(&mut GameState) -> Result<(), ApiError>,
) -> Result<Json<GameView>, ApiError> {
    let entry = app.games.get(id)?;
    {
        let mut state = entry.lock();
        edit(&mut state)?;
        state.changed();
    }
    Ok(Json(app.view(id, &entry)))
}

/// A game's search lock, held, with the position and version the game had
/// once the lock was taken.
struct Locked {
    guard: tokio::sync::OwnedMutexGuard<()>,
    position: Position,
    version: u64,
}

/// Takes the game's search lock, waiting a little for a search that is
/// ending (a live analysis whose page just moved on).
async fn lock_game(entry: &games::Entry) -> Result<Locked, ApiError> {
    let guard = tokio::time::timeout(SEARCH_WAIT, Arc::clone(&entry.search).lock_owned())
        .await
        .map_err(|_| ApiError::conflict("the game already runs a search; wait for it or close its analysis"))?;
    let state = entry.lock();
    Ok(Locked { guard, position: *state.game.position(), version: state.version })
}

async fn genmove(
    State(app): State<Arc<App>>,
    id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Path(id) = id?;
    let request: GenmoveRequest = parse_json(&body?)?;
    let entry = app.games.get(&id)?;
    let (asked_at, opponent) = {
        let state = entry.lock();
        (state.version, state.opponent.clone())
    };
    let default_sims = match opponent {
        Opponent::Network { sims, .. } => sims,
        _ => DEFAULT_GAME_SIMS,
    };
    // No override: the opponent's own limit (a human opponent's network
    // still keeps to the server's).
    let budget = if request.sims.is_none() && request.ms.is_none() && opponent != Opponent::Human {
        None
    } else {
        Some(app.budget(request.sims, request.ms, default_sims)?)
    };
    let Locked { guard: searching, position, version } = lock_game(&entry).await?;
    if version != asked_at {
        // Another search (or a move) went first: this request's move is stale.
        return Err(ApiError::conflict("the game changed while this request waited for its search; ask again"));
    }
    let stop = StopOnDrop::new();
    let (mv, analysis) = app.engines.choose(opponent, position, budget, app.next_seed(), stop.flag()).await?;
    let mut state = entry.lock();
    if state.version != version {
        return Err(ApiError::conflict("the game changed while the engine searched; ask again"));
    }
    if let Some(analysis) = &analysis {
        state.set_estimate(analysis.black_win_chance);
    }
    state.game.play_legal(mv);
    state.changed();
    drop(state);
    drop(searching);
    let game = app.view(&id, &entry);
    Ok(Json(serde_json::json!({ "move": mv.to_text(position.size()), "analysis": analysis, "game": game })))
}

/// The budget and model of an analysis request.
fn analysis_terms(app: &App, request: &AnalysisRequest, size: Size) -> Result<(usize, Budget), ApiError> {
    let budget = app.budget(request.sims, request.ms, DEFAULT_ANALYSIS_SIMS)?;
    Ok((app.model(request.model.as_deref(), size)?, budget))
}

/// Keeps a finished analysis as the game's estimate at its ply, if the
/// game has not moved on.
fn keep_estimate(entry: &games::Entry, version: u64, analysis: &Analysis) {
    let mut state = entry.lock();
    if state.version == version {
        state.set_estimate(analysis.black_win_chance);
    }
}

async fn analysis_once(
    State(app): State<Arc<App>>,
    id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Analysis>, ApiError> {
    let Path(id) = id?;
    let request: AnalysisRequest = parse_json(&body?)?;
    if request.every_ms.is_some() {
        return Err(ApiError::bad_request("every_ms belongs to the streamed analysis (GET)"));
    }
    let entry = app.games.get(&id)?;
    let size = entry.lock().game.position().size();
    let (model, budget) = analysis_terms(&app, &request, size)?;
    // The position once the game's previous search let go.
    let Locked { guard: _searching, position, version } = lock_game(&entry).await?;
    let stop = StopOnDrop::new();
    let analysis = app.engines.analyse(model, position, budget, None, stop.flag(), |_| true).await?;
    keep_estimate(&entry, version, &analysis);
    Ok(Json(analysis))
}

async fn analysis_stream(
    State(app): State<Arc<App>>,
    id: Result<Path<String>, PathRejection>,
    query: Result<Query<AnalysisRequest>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let Path(id) = id?;
    let Query(request) = query?;
    let every = Duration::from_millis(request.every_ms.unwrap_or(250));
    if !(50..=5000).contains(&every.as_millis()) {
        return Err(ApiError::bad_request(format!("every_ms {}: must be 50 to 5000", every.as_millis())));
    }
    let entry = app.games.get(&id)?;
    let size = entry.lock().game.position().size();
    let (model, budget) = analysis_terms(&app, &request, size)?;
    // The position once the game's previous search let go.
    let Locked { guard: searching, position, version } = lock_game(&entry).await?;
    engine::ensure_not_over(&position)?;
    let (sender, receiver) = tokio::sync::mpsc::channel::<Event>(4);
    let engines = Arc::clone(&app.engines);
    tokio::spawn(async move {
        let _searching = searching;
        let reports = sender.clone();
        let closed = sender.clone();
        // A reader that falls behind misses snapshots rather than holding
        // a search thread: only a closed stream stops the search.
        let report = move |analysis: &Analysis| match Event::default().event("analysis").json_data(analysis) {
            Ok(event) => !matches!(reports.try_send(event), Err(TrySendError::Closed(_))),
            Err(_) => false,
        };
        let stop = move || closed.is_closed();
        let analysis = engines.analyse(model, position, budget, Some(every), stop, report);
        // A client gone while the search waited for a thread stops it too.
        let outcome = tokio::select! {
            outcome = analysis => outcome,
            () = sender.closed() => return,
        };
        let event = match outcome {
            Ok(analysis) => {
                if !sender.is_closed() && analysis.simulations > 0 {
                    keep_estimate(&entry, version, &analysis);
                }
                Event::default().event("analysis").json_data(&analysis)
            }
            Err(error) => Event::default().event("error").json_data(serde_json::json!({ "error": error.message })),
        };
        if let Ok(event) = event {
            let _ = sender.send(event).await;
        }
    });
    Ok(Sse::new(ReceiverStream::new(receiver).map(Ok)).keep_alive(KeepAlive::default()))
}

async fn analyse_position(
    State(app): State<Arc<App>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Analysis>, ApiError> {
    let request: PositionRequest = parse_json(&body?)?;
    let text = request.position.ok_or_else(|| ApiError::unprocessable("request body: missing field `position`"))?;
    let position: Position = text.parse().map_err(|e| ApiError::bad_request(format!("position: {e}")))?;
    let terms = AnalysisRequest { sims: request.sims, ms: request.ms, model: request.model, every_ms: None };
    let (model, budget) = analysis_terms(&app, &terms, position.size())?;
    let stop = StopOnDrop::new();
    Ok(Json(app.engines.analyse(model, position, budget, None, stop.flag(), |_| true).await?))
}

/// Runs the server on `address` on its own runtime until Ctrl-C; `ready`
/// gets the bound address (port 0 picks a free one).
///
/// # Errors
/// The address cannot be bound, or the listener failed.
pub fn run_blocking(address: SocketAddr, app: Arc<App>, ready: impl FnOnce(SocketAddr)) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address).await?;
        ready(listener.local_addr()?);
        let (signalled, on_signal) = tokio::sync::watch::channel(false);
        let shutdown = async move {
            // Without a signal handler the server runs until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            let _ = signalled.send(true);
        };
        let mut on_signal = on_signal;
        tokio::select! {
            served = serve(listener, app, shutdown) => served,
            // Open streams and long searches get a moment to finish, no more.
            _ = async {
                let _ = on_signal.wait_for(|&s| s).await;
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            } => Ok(()),
        }
    });
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    served
}
