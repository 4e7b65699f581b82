//! Every endpoint of docs/api.md, with the bad input each must refuse
//! leaving the game as it was. A tiny untrained network keeps searches
//! fast; what is checked is the API, not the play.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use konane_mcts::SearchPatch;
use konane_nn::player::NetFactory;
use konane_nn::{Backend, NetConfig};
use konane_players::Limits;
use konane_rules::{Position, Size};
use konane_server::engine::{Engines, Model};
use konane_server::{App, ServerLimits, router};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

fn tiny_model(name: &str, sizes: &[&str], seed: u64) -> Model {
    let config = NetConfig::tiny();
    let backend = Backend::Native;
    let net = konane_nn::init_net(&config, &backend.device(), seed);
    let limits = Limits { nodes: Some(64), ..Limits::default() };
    let factory = NetFactory::tuned(net, backend, limits, SearchPatch::default(), 1, name.to_string()).unwrap();
    Model { name: name.into(), trained_on: sizes.iter().map(|s| s.parse().unwrap()).collect(), iteration: 3, factory }
}

fn app_with(limits: ServerLimits) -> Arc<App> {
    let models = vec![tiny_model("eight", &["8x8"], 1), tiny_model("six", &["6x6"], 2)];
    App::new(Engines::new(models, 2), limits)
}

fn app() -> Arc<App> {
    app_with(ServerLimits { max_sims: 20_000, max_ms: 5_000, ..ServerLimits::default() })
}

/// One request; the status and the body as JSON (`Value::Null` if empty,
/// the text as a string if not JSON).
async fn call(router: &Router, method: Method, uri: &str, body: Option<&str>) -> (StatusCode, Value) {
    let request = Request::builder().method(method).uri(uri);
    let request = match body {
        Some(body) => request.header(header::CONTENT_TYPE, "application/json").body(Body::from(body.to_string())),
        None => request.body(Body::empty()),
    }
    .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 24).await.unwrap();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
    };
    (status, value)
}

async fn new_game(router: &Router, body: Value) -> Value {
    let (status, game) = call(router, Method::POST, "/api/v1/games", Some(&body.to_string())).await;
    assert_eq!(status, StatusCode::CREATED, "{game}");
    game
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn info_names_the_models_and_limits() {
    let router = router(app());
    let (status, info) = call(&router, Method::GET, "/api/v1/info", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(info["models"][0]["name"], "eight");
    assert_eq!(info["models"][1]["trained_on"], json!(["6x6"]));
    assert_eq!(info["limits"]["max_sims"], 20_000);
    assert_eq!(info["limits"]["search_threads"], 2);
    assert!(strings(&info["presets"]).contains(&"14x17".to_string()));
}

#[tokio::test]
async fn a_game_against_the_network_plays_undoes_records_and_ends() {
    let router = router(app());
    let game = new_game(&router, json!({"size": "6x6", "opponent": {"kind": "network", "sims": 32}})).await;
    let id = game["id"].as_str().unwrap().to_string();
    assert_eq!(game["size"], "6x6");
    assert_eq!(game["position"], Position::start(Size::new_const(6, 6)).to_string());
    assert_eq!(game["opponent"], json!({"kind": "network", "sims": 32, "model": "six"}), "the model trained on 6x6");
    assert_eq!(game["human"], "black");
    assert_eq!(strings(&game["legal"]).len(), 4, "a1, c3, d4, f6");
    assert_eq!(game["estimates"], json!([null]));

    let (status, after) =
        call(&router, Method::POST, &format!("/api/v1/games/{id}/moves"), Some(r#"{"move": "d4"}"#)).await;
    assert_eq!(status, StatusCode::OK, "{after}");
    assert_eq!(after["moves"], json!(["d4"]));
    assert_eq!(after["last_move"], "d4");
    assert_eq!(after["to_move"], "white");

    let (status, answer) = call(&router, Method::POST, &format!("/api/v1/games/{id}/genmove"), None).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let reply = answer["move"].as_str().unwrap();
    assert!(["c4", "e4", "d3", "d5"].contains(&reply), "white removes next to the hole: {reply}");
    assert_eq!(answer["game"]["moves"], json!(["d4", reply]));
    let analysis = &answer["analysis"];
    assert_eq!(analysis["moves"][0]["move"], reply, "the move played leads the analysis");
    assert!(analysis["simulations"].as_u64().unwrap() >= 32);
    let estimate = answer["game"]["estimates"][1].as_f64().expect("the engine's estimate at ply 1");
    assert!((0.0..=1.0).contains(&estimate));

    let (status, record) = call(&router, Method::GET, &format!("/api/v1/games/{id}/record"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(record, Value::String(format!("6x6 d4 {reply}\n")));

    let (status, undone) =
        call(&router, Method::POST, &format!("/api/v1/games/{id}/undo"), Some(r#"{"plies": 2}"#)).await;
    assert_eq!(status, StatusCode::OK, "{undone}");
    assert_eq!(undone["moves"], json!([]));
    assert_eq!(undone["estimates"], json!([null]));

    // Played out with genmove for both sides: the game ends with a winner.
    for _ in 0..200 {
        let (status, answer) =
            call(&router, Method::POST, &format!("/api/v1/games/{id}/genmove"), Some(r#"{"sims": 8}"#)).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        if answer["game"]["over"] == true {
            break;
        }
    }
    let (_, game) = call(&router, Method::GET, &format!("/api/v1/games/{id}"), None).await;
    assert_eq!(game["over"], true);
    assert_eq!(game["legal"], json!([]));
    let winner = game["winner"].as_str().unwrap();
    assert_ne!(winner, game["to_move"].as_str().unwrap(), "the side with no move lost");
    assert!(game["record"].as_str().unwrap().ends_with(&format!("; result {}", &winner[..1].to_uppercase())));
    let (status, error) = call(&router, Method::POST, &format!("/api/v1/games/{id}/genmove"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    let (status, error) =
        call(&router, Method::POST, &format!("/api/v1/games/{id}/moves"), Some(r#"{"move": "a1"}"#)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");

    let (status, _) = call(&router, Method::DELETE, &format!("/api/v1/games/{id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, error) = call(&router, Method::GET, &format!("/api/v1/games/{id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(error["error"].as_str().unwrap().contains(&id));
}

#[tokio::test]
async fn baseline_opponents_and_records_start_games() {
    let router = router(app());
    for opponent in [json!({"kind": "alphabeta", "ms": 20}), json!({"kind": "greedy"}), json!({"kind": "random"})] {
        let game = new_game(&router, json!({"size": "5x5", "opponent": opponent, "human": "white"})).await;
        let id = game["id"].as_str().unwrap();
        let (status, answer) = call(&router, Method::POST, &format!("/api/v1/games/{id}/genmove"), None).await;
        assert_eq!(status, StatusCode::OK, "{opponent}: {answer}");
        assert_eq!(answer["analysis"], Value::Null);
        assert_eq!(answer["game"]["moves"].as_array().unwrap().len(), 1);
        assert_eq!(answer["game"]["opponent"]["kind"], opponent["kind"]);
    }
    let game = new_game(&router, json!({"record": "6x6 d4 d3 b4-d4", "opponent": {"kind": "human"}})).await;
    assert_eq!(game["moves"], json!(["d4", "d3", "b4-d4"]));
    assert_eq!(game["estimates"], json!([null, null, null, null]));
    assert_eq!(game["to_move"], "white");
    // A human opponent's genmove is the default network's move.
    let id = game["id"].as_str().unwrap();
    let (status, answer) = call(&router, Method::POST, &format!("/api/v1/games/{id}/genmove"), None).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["analysis"]["model"], "six");
}

#[tokio::test]
async fn analyses_cover_every_move_with_legal_lines() {
    let router = router(app());
    let game = new_game(&router, json!({"record": "8x8 d4 d5"})).await;
    let id = game["id"].as_str().unwrap();
    let (status, analysis) =
        call(&router, Method::POST, &format!("/api/v1/games/{id}/analysis"), Some(r#"{"sims": 300, "model": "six"}"#))
            .await;
    assert_eq!(status, StatusCode::OK, "{analysis}");
    assert_eq!(analysis["model"], "six");
    assert_eq!(analysis["final"], true);
    let position: Position = analysis["position"].as_str().unwrap().parse().unwrap();
    let moves = analysis["moves"].as_array().unwrap();
    assert_eq!(moves.len(), position.count_moves() as usize);
    assert_eq!(analysis["policy"].as_array().unwrap().len(), moves.len());
    let shares: f64 = moves.iter().map(|m| m["share"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-3, "{shares}");
    let visits: Vec<u64> = moves.iter().map(|m| m["visits"].as_u64().unwrap()).collect();
    assert!(visits[1..].windows(2).all(|w| w[0] >= w[1]), "most visited first after the choice: {visits:?}");
    for m in moves {
        let mut p = position;
        for mv in strings(&m["pv"]) {
            let parsed = p.parse_legal_move(&mv).unwrap_or_else(|e| panic!("pv {mv} in {p}: {e}"));
            p.play_unchecked(parsed);
        }
    }
    let chance = analysis["win_chance"].as_f64().unwrap();
    assert!((analysis["black_win_chance"].as_f64().unwrap() - chance).abs() < 1e-6, "black to move");
    let (_, game) = call(&router, Method::GET, &format!("/api/v1/games/{id}"), None).await;
    assert!((game["estimates"][2].as_f64().unwrap() - chance).abs() < 1e-6, "the analysis is the estimate at ply 2");

    // Any position, without a game.
    let body = json!({"position": "WBWB/B.BW/W..B/BWBW w", "sims": 50}).to_string();
    let (status, analysis) = call(&router, Method::POST, "/api/v1/analyse", Some(&body)).await;
    assert_eq!(status, StatusCode::OK, "{analysis}");
    assert_eq!(analysis["to_move"], "white");
    assert_eq!(analysis["model"], "eight", "no model was trained on 4x4: the first");
}

#[tokio::test]
async fn a_streamed_analysis_reports_and_ends_with_the_final_one() {
    let router = router(app());
    let game = new_game(&router, json!({"size": "6x6"})).await;
    let id = game["id"].as_str().unwrap();
    let request =
        Request::get(format!("/api/v1/games/{id}/analysis?sims=3000&every_ms=50")).body(Body::empty()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "text/event-stream");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 26).await.unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let events: Vec<Value> =
        text.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect();
    assert!(!events.is_empty(), "{text}");
    let last = events.last().unwrap();
    assert_eq!(last["final"], true);
    assert_eq!(last["simulations"], 3000);
    assert!(events[..events.len() - 1].iter().all(|e| e["final"] == false));
    let sims: Vec<u64> = events.iter().map(|e| e["simulations"].as_u64().unwrap()).collect();
    assert!(sims.windows(2).all(|w| w[0] <= w[1]), "{sims:?}");
}

/// The client of a long streamed analysis goes away: its search stops, so
/// the game's next search does not wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stream_stops_its_search() {
    let app = app_with(ServerLimits { max_sims: 10_000_000, ..ServerLimits::default() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(konane_server::serve(listener, Arc::clone(&app), std::future::pending()));
    let router = router(Arc::clone(&app));
    let game = new_game(&router, json!({"size": "8x8"})).await;
    let id = game["id"].as_str().unwrap();

    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET /api/v1/games/{id}/analysis?sims=10000000&every_ms=50 HTTP/1.1\r\nHost: x\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("event: analysis") {
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buffer)).await.unwrap().unwrap();
        assert!(n > 0, "the stream ended early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buffer[..n]);
    }
    let (_, game) = call(&router, Method::GET, &format!("/api/v1/games/{id}"), None).await;
    assert_eq!(game["searching"], true);
    drop(stream);
    let start = Instant::now();
    let (status, answer) =
        call(&router, Method::POST, &format!("/api/v1/games/{id}/genmove"), Some(r#"{"sims": 16}"#)).await;
    assert_eq!(status, StatusCode::OK, "the abandoned search let go: {answer}");
    assert!(start.elapsed() < Duration::from_secs(2));
    server.abort();
}

#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() {
    let router = router(app_with(ServerLimits {
        max_sims: 20_000,
        max_ms: 5_000,
        max_body_bytes: 1024,
        ..ServerLimits::default()
    }));
    let game = new_game(&router, json!({"size": "6x6", "opponent": {"kind": "network", "sims": 16}})).await;
    let id = game["id"].as_str().unwrap().to_string();
    let (_, before) = call(&router, Method::GET, &format!("/api/v1/games/{id}"), None).await;
    let games = format!("/api/v1/games/{id}");
    let cases: Vec<(Method, String, Option<String>, StatusCode, &str)> = vec![
        (Method::POST, "/api/v1/games".into(), Some("{not json".into()), StatusCode::BAD_REQUEST, "request body"),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"size": "6x6", "colour": "w"}"#.into()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown field",
        ),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"size": 6}"#.into()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid type",
        ),
        (Method::POST, "/api/v1/games".into(), Some(r#"{"size": "21x21"}"#.into()), StatusCode::BAD_REQUEST, "size"),
        (Method::POST, "/api/v1/games".into(), Some(r#"{"size": "0x4"}"#.into()), StatusCode::BAD_REQUEST, "size"),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"size": "8x8", "record": "8x8"}"#.into()),
            StatusCode::BAD_REQUEST,
            "not both",
        ),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"record": "6x6 d4 a1"}"#.into()),
            StatusCode::BAD_REQUEST,
            "record",
        ),
        (Method::POST, "/api/v1/games".into(), Some(r#"{"human": "red"}"#.into()), StatusCode::BAD_REQUEST, "red"),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"opponent": {"kind": "oracle"}}"#.into()),
            StatusCode::BAD_REQUEST,
            "oracle",
        ),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"opponent": {"kind": "random", "sims": 5}}"#.into()),
            StatusCode::BAD_REQUEST,
            "sims",
        ),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"opponent": {"kind": "network", "sims": 0}}"#.into()),
            StatusCode::BAD_REQUEST,
            "sims 0",
        ),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"opponent": {"kind": "network", "sims": 1e30}}"#.into()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "request body",
        ),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"opponent": {"kind": "network", "model": "../../etc/passwd"}}"#.into()),
            StatusCode::BAD_REQUEST,
            "no model",
        ),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(r#"{"opponent": {"kind": "alphabeta", "ms": 999999}}"#.into()),
            StatusCode::BAD_REQUEST,
            "ms 999999",
        ),
        (
            Method::POST,
            "/api/v1/games".into(),
            Some(format!(r#"{{"size": "{}"}}"#, "x".repeat(2000))),
            StatusCode::PAYLOAD_TOO_LARGE,
            "length limit",
        ),
        (Method::POST, format!("{games}/moves"), Some(r#"{"move": "b1"}"#.into()), StatusCode::BAD_REQUEST, "'b1'"),
        (Method::POST, format!("{games}/moves"), Some(r#"{"move": "zz99"}"#.into()), StatusCode::BAD_REQUEST, "'zz99'"),
        (
            Method::POST,
            format!("{games}/moves"),
            Some(r#"{"move": "d4-d6"}"#.into()),
            StatusCode::BAD_REQUEST,
            "'d4-d6'",
        ),
        (Method::POST, format!("{games}/moves"), Some("{}".into()), StatusCode::UNPROCESSABLE_ENTITY, "move"),
        (
            Method::POST,
            format!("{games}/moves"),
            Some(r#"{"move": "d4", "again": true}"#.into()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown field",
        ),
        (Method::POST, format!("{games}/undo"), None, StatusCode::CONFLICT, "nothing to undo"),
        (
            Method::POST,
            format!("{games}/genmove"),
            Some(r#"{"sims": 20001}"#.into()),
            StatusCode::BAD_REQUEST,
            "sims 20001",
        ),
        (Method::POST, format!("{games}/genmove"), Some(r#"{"ms": 0}"#.into()), StatusCode::BAD_REQUEST, "ms 0"),
        (
            Method::POST,
            format!("{games}/genmove"),
            Some(r#"{"sims": -5}"#.into()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "request body",
        ),
        (
            Method::POST,
            format!("{games}/analysis"),
            Some(r#"{"every_ms": 100}"#.into()),
            StatusCode::BAD_REQUEST,
            "every_ms",
        ),
        (
            Method::POST,
            format!("{games}/analysis"),
            Some(r#"{"model": "nine"}"#.into()),
            StatusCode::BAD_REQUEST,
            "eight, six",
        ),
        (Method::GET, format!("{games}/analysis?every_ms=10"), None, StatusCode::BAD_REQUEST, "every_ms 10"),
        (Method::GET, format!("{games}/analysis?sims=abc"), None, StatusCode::BAD_REQUEST, "query string"),
        (Method::GET, format!("{games}/analysis?depth=3"), None, StatusCode::BAD_REQUEST, "depth"),
        (
            Method::POST,
            "/api/v1/analyse".into(),
            Some(r#"{"position": "WBWB/B.BW/W..B b w"}"#.into()),
            StatusCode::BAD_REQUEST,
            "position",
        ),
        (
            Method::POST,
            "/api/v1/analyse".into(),
            Some(r#"{"position": "WB/BW b", "sims": 1.5}"#.into()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "request body",
        ),
        (
            Method::POST,
            "/api/v1/analyse".into(),
            Some(r#"{"position": "../x b"}"#.into()),
            StatusCode::BAD_REQUEST,
            "position",
        ),
        (Method::GET, "/api/v1/games/nope".into(), None, StatusCode::NOT_FOUND, "nope"),
        (
            Method::POST,
            "/api/v1/games/nope/moves".into(),
            Some(r#"{"move": "d4"}"#.into()),
            StatusCode::NOT_FOUND,
            "nope",
        ),
        (Method::GET, "/api/v1/nothing".into(), None, StatusCode::NOT_FOUND, "/api/v1/nothing"),
        (Method::PUT, games.clone(), None, StatusCode::METHOD_NOT_ALLOWED, "PUT"),
    ];
    for (method, uri, body, status, says) in cases {
        let (got, answer) = call(&router, method.clone(), &uri, body.as_deref()).await;
        assert_eq!(got, status, "{method} {uri} {body:?}: {answer}");
        let message = answer["error"].as_str().unwrap_or_else(|| panic!("{method} {uri}: no error message: {answer}"));
        assert!(message.contains(says), "{method} {uri} {body:?}: '{message}' should mention '{says}'");
        let (_, now) = call(&router, Method::GET, &games, None).await;
        assert_eq!(now, before, "{method} {uri} {body:?} changed the game");
    }
    let (status, _) = call(&router, Method::POST, &format!("{games}/moves"), Some(r#"{"move": "d4"}"#)).await;
    assert_eq!(status, StatusCode::OK, "a good move still plays");
    let (status, answer) = call(&router, Method::POST, &format!("{games}/undo"), Some(r#"{"plies": 2}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("1 to 1"));
}

#[tokio::test]
async fn the_longest_idle_game_is_evicted_beyond_the_limit() {
    let router = router(app_with(ServerLimits { max_games: 2, ..ServerLimits::default() }));
    let first = new_game(&router, json!({"size": "4x4"})).await;
    let second = new_game(&router, json!({"size": "4x4"})).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    // Touching the first makes the second the idle one.
    let (status, _) =
        call(&router, Method::GET, &format!("/api/v1/games/{}", first["id"].as_str().unwrap()), None).await;
    assert_eq!(status, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(5)).await;
    new_game(&router, json!({"size": "4x4"})).await;
    let (status, _) =
        call(&router, Method::GET, &format!("/api/v1/games/{}", second["id"].as_str().unwrap()), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) =
        call(&router, Method::GET, &format!("/api/v1/games/{}", first["id"].as_str().unwrap()), None).await;
    assert_eq!(status, StatusCode::OK);
}

/// The status and body of `GET path` over a real connection (the rate
/// limit keys on the client's address, which only a connection has).
async fn get_over_tcp(address: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_over_its_rate_is_told_to_slow_down() {
    let app = app_with(ServerLimits { rate: 2, ..ServerLimits::default() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(konane_server::serve(listener, app, std::future::pending()));
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(get_over_tcp(address, "/api/v1/info").await.0);
    }
    assert_eq!(statuses[0], 200);
    assert!(statuses.contains(&429), "a burst of twice the rate, then refusals: {statuses:?}");
    let (status, answer) = get_over_tcp(address, "/api/v1/info").await;
    assert_eq!(status, 429);
    assert!(answer.contains("slow down"), "{answer}");
    server.abort();
}

#[tokio::test]
async fn the_page_and_its_assets_are_served() {
    let router = router(app());
    for (path, kind, marker) in [
        ("/", "text/html", "id=\"board\""),
        ("/app.js", "text/javascript", "/api/v1/games"),
        ("/style.css", "text/css", "{"),
    ] {
        let response = router.clone().oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert!(response.headers()[header::CONTENT_TYPE].to_str().unwrap().starts_with(kind), "{path}");
        let body = axum::body::to_bytes(response.into_body(), 1 << 22).await.unwrap();
        assert!(String::from_utf8_lossy(&body).contains(marker), "{path}");
    }
}
