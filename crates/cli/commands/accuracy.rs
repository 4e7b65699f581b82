//! `konane accuracy --players "net:checkpoints/6x6,sims=200;net:checkpoints/6x6,sims=0" --size 6x6`:
//! the share of solved won positions in which each player picks a winning move.

use std::io::Write;

use konane_nn::Backend;
use konane_nn::player::player_factories;
use konane_nn::spec::PlayerSpec;
use konane_players::accuracy::{sample_positions, score};
use konane_rules::Size;

/// Arguments of `konane accuracy`.
#[derive(clap::Args)]
pub struct Args {
    /// Player specs separated by semicolons; all see the same positions.
    #[arg(long, num_args = 1.., value_delimiter = ';', required = true)]
    players: Vec<PlayerSpec>,
    /// Board size (small enough for the solver: 6x6 and below solve in seconds).
    #[arg(long, default_value = "6x6")]
    size: Size,
    /// Positions to sample and solve, 1 to 100000 (won and lost; only won ones are scored).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    positions: u64,
    /// Solver node budget per position, 1 to 10^10; positions it cannot finish are skipped.
    #[arg(long, default_value_t = 20_000_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000_000))]
    solver_nodes: u64,
    /// Seed of the sampled games and of the players.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Backend for network players: native or flex (the native kernels either way) or ndarray.
    #[arg(long, default_value = "native")]
    backend: Backend,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

/// Samples and solves the positions, then scores every player on them.
pub fn run(args: Args) -> anyhow::Result<()> {
    let specs = &args.players;
    let backend = args.backend;
    let factories = player_factories(specs, backend)?;
    let started = std::time::Instant::now();
    let set = sample_positions(args.size, args.positions as usize, args.seed, args.solver_nodes);
    tracing::info!(
        won = set.won.len(),
        lost = set.lost,
        unsolved = set.unsolved,
        seconds = format!("{:.1}", started.elapsed().as_secs_f64()),
        "positions sampled and solved"
    );
    anyhow::ensure!(!set.won.is_empty(), "no won position among the samples: raise --positions or --solver-nodes");
    let mut out = super::stdout();
    writeln!(
        out,
        "accuracy on {}: {} won positions scored ({} lost, {} beyond the solver budget skipped)",
        args.size,
        set.won.len(),
        set.lost,
        set.unsolved
    )?;
    writeln!(out, "| player | winning moves chosen | share | random play |")?;
    writeln!(out, "| --- | --- | --- | --- |")?;
    let mut results = Vec::new();
    for factory in &factories {
        let started = std::time::Instant::now();
        let result = score(&**factory, &set, args.seed)?;
        tracing::info!(player = %result.player, seconds = format!("{:.1}", started.elapsed().as_secs_f64()), "scored");
        writeln!(
            out,
            "| `{}` | {}/{} | {:.1}% | {:.1}% |",
            result.player,
            result.correct,
            result.positions,
            100.0 * result.share,
            100.0 * result.random_share
        )?;
        results.push(result);
    }
    for result in results.iter().filter(|r| !r.misses.is_empty()) {
        let mut stones: Vec<u32> = result.misses.iter().map(|m| m.stones).collect();
        stones.sort_unstable();
        writeln!(out, "`{}` missed with these stone counts: {stones:?}", result.player)?;
    }
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "size": args.size.to_string(),
            "seed": args.seed,
            "won": set.won.len(),
            "lost": set.lost,
            "unsolved": set.unsolved,
            "results": results,
        });
        konane_files::write_atomically(path, serde_json::to_string_pretty(&json)?.as_bytes())?;
    }
    Ok(())
}
