//! `konane bench-serve`: the web server under load on 127.0.0.1, in this
//! process: clients playing games and asking for analyses at once. Prints
//! requests/s and latency percentiles, and every error (there should be none).

use std::io::Write;
use std::time::Duration;

use konane_nn::Backend;
use konane_server::engine::Engines;
use konane_server::load::{LoadConfig, run_local};
use konane_server::{App, ServerLimits};

/// Arguments of `konane bench-serve`.
#[derive(clap::Args)]
pub struct Args {
    /// Clients playing at once, 1 to 1000.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1000))]
    clients: u64,
    /// Seconds clients start new requests, 1 to 3600.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    seconds: u64,
    /// Board of every game.
    #[arg(long, default_value = "6x6")]
    size: konane_rules::Size,
    /// Simulations of the network's moves, 1 to 100000.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    sims: u64,
    /// Simulations of the analyses clients ask for every 8 moves, 1 to 100000.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    analysis_sims: u64,
    /// Searches running at once; default: every core.
    #[arg(long, value_parser = super::parse_threads)]
    search_threads: Option<usize>,
}

/// Runs the load and prints what the clients saw.
pub fn run(args: Args) -> anyhow::Result<()> {
    let models = super::serve::shipped_models(Backend::Native)?;
    let threads = args.search_threads.unwrap_or_else(super::cores);
    // One address sends everything here: no rate limit.
    let limits = ServerLimits { rate: 100_000, ..ServerLimits::default() };
    let app = App::new(Engines::new(models, threads), limits);
    let config = LoadConfig {
        base: String::new(),
        clients: args.clients as usize,
        duration: Duration::from_secs(args.seconds),
        size: args.size.to_string(),
        sims: args.sims,
        analysis_sims: args.analysis_sims,
        seed: 1,
    };
    let report = run_local(app, config)?;
    let mut out = super::stdout();
    writeln!(
        out,
        "{} clients, {:.1} s, {} on {} search threads: {} requests ({:.1}/s), {} games finished",
        args.clients,
        report.elapsed.as_secs_f64(),
        args.size,
        threads,
        report.requests,
        report.requests_per_second(),
        report.games_finished
    )?;
    writeln!(
        out,
        "latency ms: p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
        report.percentile_ms(0.5),
        report.percentile_ms(0.9),
        report.percentile_ms(0.99),
        report.percentile_ms(1.0)
    )?;
    writeln!(out, "errors: {}", report.errors.len())?;
    for error in report.errors.iter().take(10) {
        writeln!(out, "  {error}")?;
    }
    anyhow::ensure!(report.errors.is_empty(), "{} requests failed or found a game mixed up", report.errors.len());
    Ok(())
}
