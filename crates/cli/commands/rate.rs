//! `konane rate RUN --opponent SPEC [--size 8x8,10x10]`: a run's strength
//! curve on each board asked. Each kept checkpoint plays a match against
//! one fixed opponent; the results go to `RUN/strength.jsonl`, which
//! `konane plot` draws against training hours, a curve per board.
//! A checkpoint already rated on the same terms is skipped, so the command
//! can be run again as a run goes on.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use konane_nn::Backend;
use konane_nn::player::player_factory;
use konane_nn::spec::PlayerSpec;
use konane_players::arena::{MatchConfig, MatchSummary, play_match};
use konane_rules::Size;
use konane_trainer::TrainConfig;
use konane_trainer::run::{self, NET_FILE};
use konane_trainer::strength::{self, StrengthRecord};

/// Arguments of `konane rate`.
#[derive(clap::Args)]
pub struct Args {
    /// The run directory.
    run_dir: PathBuf,
    /// The fixed opponent, a player spec, e.g. `alphabeta:ms=1000`.
    #[arg(long)]
    opponent: String,
    /// The networks' search: `net:` options, e.g. `sims=800` or `sims=800,sym=4`.
    #[arg(long, default_value = "sims=800")]
    search: String,
    /// Games per checkpoint; pairs share an opening with colours swapped.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    games: u64,
    /// Only iterations that are multiples of this (iteration 0 included).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    every: u64,
    /// Boards, comma-separated, each its own curve (default: the run's
    /// first size), e.g. `8x8,10x10,14x14` for a network of every size.
    #[arg(long, value_delimiter = ',')]
    size: Vec<Size>,
    /// Match seed: the same openings for every checkpoint.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Games played at once (default: every core; at most four per core).
    #[arg(long, value_parser = super::parse_threads)]
    threads: Option<usize>,
}

/// Rates every kept checkpoint not rated yet, oldest first.
pub fn run(args: Args) -> anyhow::Result<()> {
    let run_dir = &args.run_dir;
    let config = TrainConfig::load(&run_dir.join("config.toml"))
        .with_context(|| format!("{} is not a run directory", run_dir.display()))?;
    let asked = if args.size.is_empty() { &config.sizes[..1] } else { &args.size[..] };
    let mut sizes: Vec<Size> = Vec::new();
    for &size in asked {
        if !sizes.contains(&size) {
            sizes.push(size);
        }
    }
    let opponent: PlayerSpec = args.opponent.parse().context("--opponent")?;
    let opponent_factory = player_factory(&opponent, Backend::Native, 1)?;
    // The search options are checked once, on a spec of the first checkpoint's form.
    let search = args.search.trim().to_string();
    let spec_of = |iteration: u64| -> anyhow::Result<PlayerSpec> {
        let net = run::checkpoint_dir(run_dir, iteration).join(NET_FILE);
        let text = if search.is_empty() {
            format!("net:{}", net.display())
        } else {
            format!("net:{},{search}", net.display())
        };
        text.parse::<PlayerSpec>().context("--search")
    };
    spec_of(0)?;
    let mut iterations = run::list_checkpoints(run_dir);
    iterations.retain(|i| i.is_multiple_of(args.every));
    iterations.reverse();
    anyhow::ensure!(!iterations.is_empty(), "{}: no checkpoints to rate", run_dir.display());
    let existing = strength::read(run_dir)?;
    let threads = args.threads.unwrap_or_else(super::cores);
    let mut out = super::stdout();
    for &size in &sizes {
        for &iteration in &iterations {
            let mut record = StrengthRecord {
                iteration,
                search: search.clone(),
                opponent: opponent.to_string(),
                size: size.to_string(),
                seed: args.seed,
                games: args.games as usize,
                scored: 0,
                wins: 0,
                score: 0.0,
                score_low: 0.0,
                score_high: 0.0,
                elo: 0.0,
            };
            if existing.iter().any(|r| r.iteration == iteration && r.same_curve(&record)) {
                continue;
            }
            let net = match player_factory(&spec_of(iteration)?, Backend::Native, 1) {
                Ok(net) => net,
                // Pruned by a run still training, between listing and loading.
                Err(error) => {
                    tracing::warn!(iteration, %error, "checkpoint skipped");
                    continue;
                }
            };
            let config = MatchConfig { size, games: args.games as usize, threads, seed: args.seed };
            tracing::info!(iteration, %size, opponent = %opponent, games = config.games, "rating");
            let results = play_match(&*net, &*opponent_factory, &config, &|_| {})?;
            let summary = MatchSummary::new(format!("iteration {iteration}"), opponent.to_string(), size, &results);
            record.scored = summary.games;
            record.wins = summary.a_wins;
            record.score = summary.score;
            record.score_low = summary.score_interval.low;
            record.score_high = summary.score_interval.high;
            record.elo = summary.elo;
            writeln!(
                out,
                "iteration {iteration}: {}/{} = {:.1}% [{:.1}%, {:.1}%] against {opponent} on {size}",
                record.wins,
                record.scored,
                100.0 * record.score,
                100.0 * record.score_low,
                100.0 * record.score_high
            )?;
            strength::record(run_dir, record)?;
        }
    }
    writeln!(out, "{}", strength::path(run_dir).display())?;
    Ok(())
}
