//! `konane serve`: the web board and its JSON API (docs/api.md) on
//! 127.0.0.1:8080 unless told otherwise.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use anyhow::Context;
use konane_mcts::SearchPatch;
use konane_nn::player::{NetFactory, load_model};
use konane_nn::{Backend, checkpoint, shipped};
use konane_players::Limits;
use konane_server::engine::{Engines, Model};
use konane_server::{App, ServerLimits};

/// Arguments of `konane serve`.
#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on; 127.0.0.1 keeps the server to this machine.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Port, 0 to 65535 (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// A network the API may name, as NAME=PATH or PATH (named after its
    /// directory or file); repeatable, the first is the default for sizes no
    /// model was trained on. Default: the shipped networks (`6x6` for
    /// 6x6, the all-size `konane` for every other board).
    #[arg(long = "model", value_name = "[NAME=]PATH")]
    models: Vec<String>,
    /// Searches running at once (one core each; more wait); default: every
    /// core; at most four per core.
    #[arg(long, value_parser = super::parse_threads)]
    search_threads: Option<usize>,
    /// Simulations a request may ask for, 1 to 10000000.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    max_sims: u64,
    /// Milliseconds of search a request may ask for, 1 to 600000.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    max_ms: u64,
    /// Games kept, 1 to 100000; beyond it the game idle longest is evicted.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_games: u64,
    /// Largest request body in bytes, 1024 to 16777216.
    #[arg(long, default_value_t = 65_536, value_parser = clap::value_parser!(u64).range(1024..=16_777_216))]
    max_body: u64,
    /// Requests a second per client address (bursts of twice that), 1 to 100000.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    rate: u32,
    /// Backend: native or flex (the native kernels either way) or ndarray.
    #[arg(long, default_value = "native")]
    backend: Backend,
}

/// Loads the models and serves until Ctrl-C.
pub fn run(args: Args) -> anyhow::Result<()> {
    let backend = args.backend;
    let models = if args.models.is_empty() {
        shipped_models(backend)?
    } else {
        let mut models: Vec<Model> = Vec::new();
        for text in &args.models {
            let (name, path) = match text.split_once('=') {
                Some((name, path)) => (name.to_string(), path),
                None => (default_name(text), text.as_str()),
            };
            anyhow::ensure!(!name.is_empty() && !path.is_empty(), "--model {text}: expected NAME=PATH or PATH");
            anyhow::ensure!(models.iter().all(|m| m.name != name), "--model {text}: a second model named '{name}'");
            let (net, header, _) = load_model(path, &backend.device(), 1).with_context(|| format!("--model {text}"))?;
            models.push(model(&name, net, header, backend));
        }
        models
    };
    let threads = args.search_threads.unwrap_or_else(super::cores);
    let limits = ServerLimits {
        max_sims: args.max_sims,
        max_ms: args.max_ms,
        max_games: args.max_games as usize,
        max_body_bytes: args.max_body as usize,
        rate: args.rate,
    };
    let names: Vec<String> = models.iter().map(|m| m.name.clone()).collect();
    let app = App::new(Engines::new(models, threads), limits);
    let address = SocketAddr::new(args.bind, args.port);
    konane_server::run_blocking(address, app, |bound| {
        let mut out = super::stdout();
        // The address is the one line a script waits for; a closed stdout
        // must not stop the server.
        let _ = writeln!(out, "konane serve: http://{bound}/ (models: {}; Ctrl-C stops)", names.join(", "));
        let _ = out.flush();
    })
    .with_context(|| format!("serving on {address}"))
}

/// The networks built into the binary, as models named after their
/// directories (`6x6`, `konane`).
///
/// # Errors
/// An embedded file does not load (a build from a damaged checkout).
pub fn shipped_models(backend: Backend) -> anyhow::Result<Vec<Model>> {
    let models = shipped::load_all(&backend.device())?;
    Ok(models.into_iter().map(|m| model(m.name, m.net, Some(m.header), backend)).collect())
}

/// A model named `name`: one search thread per game search, the player's
/// default search.
fn model(name: &str, net: konane_nn::Net, header: Option<checkpoint::NetHeader>, backend: Backend) -> Model {
    let limits = Limits { nodes: Some(konane_server::DEFAULT_GAME_SIMS), ..Limits::default() };
    let factory = NetFactory::tuned(net, backend, limits, SearchPatch::default(), 1, name.to_string())
        .expect("the default search settings are in range");
    Model {
        name: name.to_string(),
        trained_on: header.as_ref().map(|h| h.sizes.clone()).unwrap_or_default(),
        iteration: header.map_or(0, |h| h.iteration),
        factory,
    }
}

/// `checkpoints/8x8` → `8x8`; `runs/x/iter-000012/net.knet` → `iter-000012`.
fn default_name(path: &str) -> String {
    let path = Path::new(path.trim_end_matches('/'));
    let last = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    if last == "net" {
        path.parent().and_then(Path::file_name).map(|s| s.to_string_lossy().to_string()).unwrap_or(last)
    } else {
        last
    }
}
