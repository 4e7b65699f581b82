//! The page in a real browser: headless Chromium driven through WebDriver
//! plays the opening and a jump against the network by clicking, sees the
//! replies on the board and in the move list, takes a move back, asks for
//! a hint and a live analysis, and saves a screenshot.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`scripts/install-browser.sh`;
//! `.ci/run` installs them). Without them the test says so and passes,
//! except under `CI`, where it fails.

use std::error::Error;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use konane_mcts::SearchPatch;
use konane_nn::player::NetFactory;
use konane_nn::{Backend, NetConfig};
use konane_players::Limits;
use konane_rules::{Move, Position, Size};
use konane_server::engine::{Engines, Model};
use konane_server::{App, ServerLimits};

type Outcome = Result<(), Box<dyn Error>>;

fn chromedriver() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KONANE_CHROMEDRIVER") {
        return Some(PathBuf::from(path));
    }
    let path = PathBuf::from("/usr/bin/chromedriver");
    path.exists().then_some(path)
}

/// A child process killed when dropped, so a failed assertion leaves no
/// chromedriver behind.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn app() -> Arc<App> {
    let config = NetConfig::tiny();
    let net = konane_nn::init_net(&config, &Backend::Native.device(), 1);
    let limits = Limits { nodes: Some(32), ..Limits::default() };
    let factory = NetFactory::tuned(net, Backend::Native, limits, SearchPatch::default(), 1, "tiny".into()).unwrap();
    let model = Model { name: "tiny".into(), trained_on: vec![Size::new_const(6, 6)], iteration: 1, factory };
    App::new(Engines::new(vec![model], 2), ServerLimits { max_sims: 5000, ..ServerLimits::default() })
}

#[test]
fn the_page_plays_a_game_in_a_browser() {
    in_browser(app(), async |client, base| play(client, base).await);
}

/// Starts `app` on 127.0.0.1, chromedriver and a headless Chromium session,
/// runs `drive` with the page's address, and tears everything down; a
/// failure saves what the page looked like and fails the test.
fn in_browser(app: Arc<App>, drive: impl AsyncFnOnce(&Client, &str) -> Outcome) {
    let Some(driver) = chromedriver() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs chromium and chromium-driver for the browser test (.ci/run installs them)"
        );
        eprintln!(
            "skipped: no chromedriver; scripts/install-browser.sh installs Debian's chromium and chromium-driver"
        );
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let server = tokio::spawn(konane_server::serve(listener, app, std::future::pending()));

        let port = free_port();
        let _chromedriver = KillOnDrop(
            Command::new(&driver)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("chromedriver starts"),
        );
        let webdriver = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(20), "chromedriver did not listen on {port}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut options = serde_json::json!({
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"]
        });
        if std::path::Path::new("/usr/bin/chromium").exists() {
            options["binary"] = "/usr/bin/chromium".into();
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), options);
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&webdriver)
            .await
            .expect("a WebDriver session in headless Chromium");
        let outcome = drive(&client, &base).await;
        if outcome.is_err() {
            // What the page looked like when it went wrong.
            if let Ok(png) = client.screenshot().await {
                let _ = std::fs::write(screenshot_path("web-board-failure.png"), png);
            }
        }
        let _ = client.close().await;
        server.abort();
        if let Err(e) = outcome {
            panic!("{e}");
        }
    });
}

/// The README's two screenshots (`docs/images/`), with the 8x8 specialist
/// (`checkpoints/8x8`): `CI=1 cargo test --workspace --test browser -- --ignored`.
#[test]
#[ignore = "writes docs/images/; run by hand with the shipped networks"]
fn readme_screenshots() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = root.join("checkpoints/8x8/net.knet");
    let (net, header) = konane_nn::checkpoint::load(&file, &Backend::Native.device()).unwrap();
    let limits = Limits { nodes: Some(400), ..Limits::default() };
    let factory = NetFactory::tuned(net, Backend::Native, limits, SearchPatch::default(), 1, "8x8".into()).unwrap();
    let model = Model { name: "8x8".into(), trained_on: header.sizes, iteration: header.iteration, factory };
    let app = App::new(Engines::new(vec![model], 2), ServerLimits::default());
    let images = root.join("docs/images");
    std::fs::create_dir_all(&images).unwrap();
    in_browser(app, async |client, base| {
        client.goto(base).await?;
        client.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("#size option[value='8x8']")).await?;
        client.find(Locator::Css("#size")).await?.select_by_value("8x8").await?;
        client.find(Locator::Css("#new-game")).await?.click().await?;
        client.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("#board [data-cell='h8']")).await?;
        // Black's moves are the hint's: the network plays both sides for a while.
        for ply in (2..=16).step_by(2) {
            client.find(Locator::Css("#hint")).await?.click().await?;
            wait_until("a hint", async || {
                client.find_all(Locator::Css("#board .hint")).await.map(|v| !v.is_empty()).unwrap_or(false)
            })
            .await?;
            // The message says "Hint: c5-e5 (...)".
            let message = client.find(Locator::Css("#message")).await?.text().await?;
            let mv = message
                .split_once("Hint: ")
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .ok_or_else(|| format!("no hint in '{message}'"))?
                .to_string();
            replay_on(&[move_list(client).await, vec![mv.clone()]].concat(), Size::new_const(8, 8))?;
            match mv.split_once('-') {
                Some((from, to)) => {
                    click_cell(client, from).await?;
                    click_cell(client, to).await?;
                }
                None => click_cell(client, &mv).await?,
            }
            wait_until("the reply", async || move_list(client).await.len() >= ply).await?;
        }
        let position = replay_on(&move_list(client).await, Size::new_const(8, 8))?;
        if let Some(jump) = position.moves().iter().map(|m| m.to_text(position.size())).find(|t| t.contains('-')) {
            click_cell(client, jump.split('-').next().unwrap_or_default()).await?;
        }
        std::fs::write(images.join("web-board-play.png"), client.screenshot().await?)?;
        client.find(Locator::Css("#analyse")).await?.click().await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
        client.find(Locator::Css("#heatmap")).await?.click().await?;
        // Tall enough for the board, its heat map and the whole analysis panel.
        client.set_window_size(1280, 1300).await?;
        client.execute("window.scrollTo(0, 0)", vec![]).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        std::fs::write(images.join("web-board-analysis.png"), client.screenshot().await?)?;
        Ok(())
    });
}

fn screenshot_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Polls `check` until it holds, for at most 30 s.
async fn wait_until(what: &str, mut check: impl AsyncFnMut() -> bool) -> Outcome {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

async fn move_list(client: &Client) -> Vec<String> {
    let mut moves = Vec::new();
    for item in client.find_all(Locator::Css("#moves li")).await.unwrap_or_default() {
        let text = item.text().await.unwrap_or_default();
        // An item may carry its ply number ("3. b4-d4"): the move is the last word.
        if let Some(word) = text.split_whitespace().last() {
            moves.push(word.to_string());
        }
    }
    moves
}

async fn classes(client: &Client, cell: &str) -> String {
    match client.find(Locator::Css(&format!("#board [data-cell='{cell}']"))).await {
        Ok(element) => element.attr("class").await.ok().flatten().unwrap_or_default(),
        Err(_) => String::new(),
    }
}

async fn click_cell(client: &Client, cell: &str) -> Outcome {
    client.find(Locator::Css(&format!("#board [data-cell='{cell}']"))).await?.click().await?;
    Ok(())
}

/// The position after `moves` on 6x6.
fn replay(moves: &[String]) -> Result<Position, Box<dyn Error>> {
    replay_on(moves, Size::new_const(6, 6))
}

/// The position after `moves` on `size`.
fn replay_on(moves: &[String], size: Size) -> Result<Position, Box<dyn Error>> {
    let mut position = Position::start(size);
    for text in moves {
        let mv = position.parse_legal_move(text).map_err(|e| format!("{text}: {e}"))?;
        position.play_unchecked(mv);
    }
    Ok(position)
}

async fn play(client: &Client, base: &str) -> Outcome {
    client.goto(base).await?;
    client.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("#size option[value='6x6']")).await?;
    client.find(Locator::Css("#size")).await?.select_by_value("6x6").await?;
    client.find(Locator::Css("#color")).await?.select_by_value("black").await?;
    client.find(Locator::Css("#opponent")).await?.select_by_value("network").await?;
    let strength = client.find(Locator::Css("#strength")).await?;
    strength.clear().await?;
    strength.send_keys("32").await?;
    client.find(Locator::Css("#new-game")).await?.click().await?;
    client.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("#board [data-cell='f6']")).await?;
    let typed = client.find(Locator::Css("#strength")).await?.prop("value").await?;
    assert_eq!(typed.as_deref(), Some("32"), "the typed strength is the game's strength");

    // An illegal click explains itself: b1 is no removal cell.
    click_cell(client, "b1").await?;
    wait_until("a message for an illegal click", async || {
        let text = match client.find(Locator::Css("#message")).await {
            Ok(message) => message.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        !text.trim().is_empty()
    })
    .await?;
    assert!(move_list(client).await.is_empty(), "an illegal click plays nothing");

    // Black's opening removal, then the network's reply.
    click_cell(client, "d4").await?;
    wait_until("the network's opening reply", async || move_list(client).await.len() == 2).await?;
    let moves = move_list(client).await;
    assert_eq!(moves[0], "d4");
    let position = replay(&moves)?;
    assert!(classes(client, &moves[1]).await.contains("last"), "the reply {} is marked", moves[1]);

    // A jump by clicking the stone, then one of its marked landing cells.
    let size = position.size();
    let jump = position.moves().iter().copied().find(|m| matches!(m, Move::Jump { .. })).ok_or("black has a jump")?;
    let text = jump.to_text(size);
    let (from, to) = text.split_once('-').ok_or("a jump has two cells")?;
    click_cell(client, from).await?;
    wait_until("the stone's landing cells", async || classes(client, to).await.contains("target")).await?;
    let landings: Vec<String> = position
        .moves()
        .iter()
        .map(|m| m.to_text(size))
        .filter_map(|t| t.strip_prefix(&format!("{from}-")).map(str::to_string))
        .collect();
    for cell in &landings {
        assert!(classes(client, cell).await.contains("target"), "{cell} is a landing cell of {from}");
    }
    assert!(classes(client, from).await.contains("selected"));
    click_cell(client, to).await?;
    wait_until("the jump and the network's reply", async || move_list(client).await.len() == 4).await?;
    let moves = move_list(client).await;
    assert_eq!(moves[2], text);
    replay(&moves)?;
    let reply = &moves[3];
    let marked = reply.split('-').next_back().unwrap_or(reply);
    assert!(classes(client, marked).await.contains("last"), "the reply {reply} is marked");

    // Undo takes back the reply and the jump.
    client.find(Locator::Css("#undo")).await?.click().await?;
    wait_until("the undo", async || move_list(client).await.len() == 2).await?;

    // The same jump by keyboard: Enter on the stone, arrow keys to the
    // landing cell, Enter again; then take it back once more.
    keys(&client.find(Locator::Css(&format!("#board [data-cell='{from}']"))).await?, &[Key::Enter]).await?;
    wait_until("the stone selected by keyboard", async || classes(client, from).await.contains("selected")).await?;
    for arrow in arrows(from, to)? {
        keys(&client.active_element().await?, &[arrow]).await?;
    }
    let focused = client.active_element().await?.attr("data-cell").await?;
    assert_eq!(focused.as_deref(), Some(to), "the arrow keys lead from {from} to {to}");
    keys(&client.active_element().await?, &[Key::Enter]).await?;
    wait_until("the keyboard jump and the reply", async || move_list(client).await.len() == 4).await?;
    assert_eq!(move_list(client).await[2], text);
    client.find(Locator::Css("#undo")).await?.click().await?;
    wait_until("the second undo", async || move_list(client).await.len() == 2).await?;

    // A hint marks a move on the board.
    client.find(Locator::Css("#hint")).await?.click().await?;
    wait_until("a hint on the board", async || {
        client.find_all(Locator::Css("#board .hint")).await.map(|v| !v.is_empty()).unwrap_or(false)
    })
    .await?;

    // A live analysis fills the panel.
    client.find(Locator::Css("#analyse")).await?.click().await?;
    wait_until("the analysis", async || {
        let chance = match client.find(Locator::Css("#win-chance")).await {
            Ok(e) => e.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        let rows = client.find_all(Locator::Css("#top-moves tr")).await.map(|v| v.len()).unwrap_or(0);
        chance.contains('%') && rows >= 2
    })
    .await?;

    let png = client.screenshot().await?;
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    std::fs::write(screenshot_path("web-board.png"), png)?;

    // On a phone-sized screen the board fits the width with touchable cells.
    client.set_window_size(390, 844).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let layout = client
        .execute(
            "const board = document.getElementById('board').getBoundingClientRect();
             const cell = document.querySelector('#board button.cell').getBoundingClientRect();
             return [document.documentElement.scrollWidth, window.innerWidth, board.left, board.right, cell.width];",
            vec![],
        )
        .await?;
    let numbers: Vec<f64> = serde_json::from_value(layout)?;
    let [scroll_width, width, left, right, cell] = numbers[..] else { return Err("five layout numbers".into()) };
    assert!(width <= 400.0, "the window is phone-sized ({width} px)");
    assert!(scroll_width <= width, "no sideways scrolling on a phone: {scroll_width} px of {width}");
    assert!(left >= 0.0 && right <= width, "the board ({left}..{right} px) fits the {width} px screen");
    assert!(cell >= 32.0, "6x6 cells are big enough to tap on a phone ({cell} px)");
    std::fs::write(screenshot_path("web-board-phone.png"), client.screenshot().await?)?;
    Ok(())
}

async fn keys(element: &fantoccini::elements::Element, keys: &[Key]) -> Outcome {
    let text: String = keys.iter().map(|&k| char::from(k)).collect();
    element.send_keys(&text).await?;
    Ok(())
}

/// The arrow keys that move the focus from one cell to another on the same
/// row or column (rows count up the screen: ArrowUp is the next row).
fn arrows(from: &str, to: &str) -> Result<Vec<Key>, Box<dyn Error>> {
    let cell = |name: &str| -> Result<(i32, i32), Box<dyn Error>> {
        let (col, row) = name.split_at(1);
        Ok((i32::from(col.as_bytes()[0]) - i32::from(b'a'), row.parse()?))
    };
    let ((c0, r0), (c1, r1)) = (cell(from)?, cell(to)?);
    let (key, steps) = match (c1 - c0, r1 - r0) {
        (dc, 0) if dc > 0 => (Key::Right, dc),
        (dc, 0) => (Key::Left, -dc),
        (0, dr) if dr > 0 => (Key::Up, dr),
        (0, dr) => (Key::Down, -dr),
        _ => return Err(format!("{from}-{to} is no straight jump").into()),
    };
    Ok(vec![key; steps as usize])
}
