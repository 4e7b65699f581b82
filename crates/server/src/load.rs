//! A load test of a running server: clients that play whole games (their
//! own moves at random, the engine's by `genmove`) and ask for analyses,
//! each checking after every answer that the game holds exactly the moves
//! it made, so a lost or mixed-up game shows as an error.

use std::time::{Duration, Instant};

use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

/// What to run.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The server, `http://127.0.0.1:8080`.
    pub base: String,
    /// Clients playing at once.
    pub clients: usize,
    /// How long clients start new requests.
    pub duration: Duration,
    /// Board of every game.
    pub size: String,
    /// Simulations of the engine's moves.
    pub sims: u64,
    /// Simulations of an analysis, asked for every few moves.
    pub analysis_sims: u64,
    /// Seed of the clients' own moves.
    pub seed: u64,
}

/// What the clients saw.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// Requests answered (any status).
    pub requests: u64,
    /// Games played to the end.
    pub games_finished: u64,
    /// Every failure: an error status, a transport error or a game that
    /// did not hold the moves its client made.
    pub errors: Vec<String>,
    /// Latency of each request, in milliseconds, sorted.
    pub latencies_ms: Vec<f64>,
    /// Wall time from the first request to the last answer.
    pub elapsed: Duration,
}

impl LoadReport {
    /// Requests a second.
    pub fn requests_per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The latency below which `p` (0 to 1) of the requests were answered.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        if self.latencies_ms.is_empty() {
            return 0.0;
        }
        let i = ((self.latencies_ms.len() - 1) as f64 * p.clamp(0.0, 1.0)).round() as usize;
        self.latencies_ms[i]
    }
}

/// One client's connection and tallies.
struct Client {
    http: reqwest::Client,
    base: String,
    requests: u64,
    latencies_ms: Vec<f64>,
}

impl Client {
    /// Sends one request; the JSON answer, or why it failed.
    async fn send(&mut self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, String> {
        let start = Instant::now();
        let mut request = self.http.request(method.clone(), format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().await;
        self.requests += 1;
        let response = answer.map_err(|e| format!("{method} {path}: {e}"))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| format!("{method} {path}: {e}"))?;
        self.latencies_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        if !status.is_success() {
            return Err(format!("{method} {path}: {status}: {text}"));
        }
        if text.is_empty() { Ok(Value::Null) } else { serde_json::from_str(&text).map_err(|e| format!("{path}: {e}")) }
    }
}

/// The moves a game answer holds.
fn moves_of(game: &Value) -> Vec<String> {
    game["moves"]
        .as_array()
        .map(|a| a.iter().filter_map(|m| m.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Plays games until `deadline`; returns the games finished and the errors.
async fn play(client: &mut Client, config: &LoadConfig, index: usize, deadline: Instant) -> (u64, Vec<String>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(config.seed.wrapping_add(index as u64));
    let mut finished = 0;
    let mut errors = Vec::new();
    while Instant::now() < deadline {
        let human = if rng.random::<bool>() { "black" } else { "white" };
        let create = json!({"size": config.size, "human": human, "opponent": {"kind": "network", "sims": config.sims}});
        let game = match client.send(reqwest::Method::POST, "/api/v1/games", Some(create)).await {
            Ok(game) => game,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let id = game["id"].as_str().unwrap_or_default().to_string();
        let mut expected: Vec<String> = Vec::new();
        let mut current = game;
        let outcome: Result<bool, String> = async {
            let mut ply = 0usize;
            while current["over"] != true {
                if Instant::now() >= deadline {
                    return Ok(false);
                }
                let mine = current["to_move"] == human;
                current = if mine {
                    let legal: Vec<&str> = current["legal"]
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let mv = legal.choose(&mut rng).ok_or("no legal move in an unfinished game")?.to_string();
                    expected.push(mv.clone());
                    client
                        .send(reqwest::Method::POST, &format!("/api/v1/games/{id}/moves"), Some(json!({"move": mv})))
                        .await?
                } else {
                    let answer =
                        client.send(reqwest::Method::POST, &format!("/api/v1/games/{id}/genmove"), None).await?;
                    expected.push(answer["move"].as_str().ok_or("genmove without a move")?.to_string());
                    answer["game"].clone()
                };
                if moves_of(&current) != expected || current["id"] != id.as_str() {
                    return Err(format!("game {id}: holds {:?}, its client made {expected:?}", moves_of(&current)));
                }
                ply += 1;
                if ply.is_multiple_of(8) && current["over"] != true {
                    let body = json!({"sims": config.analysis_sims});
                    let analysis =
                        client.send(reqwest::Method::POST, &format!("/api/v1/games/{id}/analysis"), Some(body)).await?;
                    if analysis["position"] != current["position"] {
                        return Err(format!(
                            "game {id}: analysed {}, the game is at {}",
                            analysis["position"], current["position"]
                        ));
                    }
                }
            }
            Ok(true)
        }
        .await;
        match outcome {
            Ok(true) => finished += 1,
            Ok(false) => {}
            Err(e) => errors.push(e),
        }
        if let Err(e) = client.send(reqwest::Method::DELETE, &format!("/api/v1/games/{id}"), None).await {
            errors.push(e);
        }
    }
    (finished, errors)
}

/// Runs `config.clients` clients against the server for `config.duration`
/// (a game under way at the deadline is abandoned, not counted).
pub async fn run(config: &LoadConfig) -> LoadReport {
    let http =
        reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(120)).build().expect("a plain HTTP client");
    let start = Instant::now();
    let deadline = start + config.duration;
    let tasks: Vec<_> = (0..config.clients)
        .map(|index| {
            let config = config.clone();
            let mut client =
                Client { http: http.clone(), base: config.base.clone(), requests: 0, latencies_ms: Vec::new() };
            tokio::spawn(async move {
                let (finished, errors) = play(&mut client, &config, index, deadline).await;
                (client, finished, errors)
            })
        })
        .collect();
    let mut report = LoadReport::default();
    for task in tasks {
        match task.await {
            Ok((client, finished, errors)) => {
                report.requests += client.requests;
                report.latencies_ms.extend(client.latencies_ms);
                report.games_finished += finished;
                report.errors.extend(errors);
            }
            Err(e) => report.errors.push(format!("a client failed: {e}")),
        }
    }
    report.elapsed = start.elapsed();
    report.latencies_ms.sort_by(f64::total_cmp);
    report
}

/// Starts `app` on a free port of 127.0.0.1 and runs the load against it
/// (`config.base` is replaced by that address), on a runtime of its own.
///
/// # Errors
/// No port of 127.0.0.1 could be bound.
pub fn run_local(app: std::sync::Arc<crate::App>, mut config: LoadConfig) -> std::io::Result<LoadReport> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        config.base = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(crate::serve(listener, app, async move {
            let _ = stopped.await;
        }));
        let report = run(&config).await;
        let _ = stop.send(());
        let _ = server.await;
        Ok(report)
    })
}
