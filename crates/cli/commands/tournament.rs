//! `konane tournament --players a,b,c --size 6x6 --games 200`: every pair
//! plays a match; Elo for all from one Bradley–Terry fit (first player = 0).

use std::io::Write;

use konane_nn::Backend;
use konane_nn::player::player_factories;
use konane_nn::spec::PlayerSpec;
use konane_players::PlayerFactory;
use konane_players::arena::{MatchConfig, RoundRobin, round_robin};
use konane_rules::Size;

/// Most players in one round robin (their pairings grow as the square).
const MAX_PLAYERS: usize = 32;

/// Arguments of `konane tournament`.
#[derive(clap::Args)]
pub struct Args {
    /// Player specs separated by spaces or semicolons; the first is the Elo anchor (0).
    #[arg(long, num_args = 1.., value_delimiter = ';', required = true)]
    players: Vec<PlayerSpec>,
    /// Board size.
    #[arg(long, default_value = "6x6")]
    size: Size,
    /// Games per pairing.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    games: u64,
    /// Games played at once (default: every core; at most four per core).
    #[arg(long, value_parser = super::parse_threads)]
    threads: Option<usize>,
    /// Match seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Backend for network players: native or flex (the native kernels either way) or ndarray.
    #[arg(long, default_value = "native")]
    backend: Backend,
}

/// Plays the round robin and prints a Markdown table.
pub fn run(args: Args) -> anyhow::Result<()> {
    let specs = &args.players;
    anyhow::ensure!(
        (2..=MAX_PLAYERS).contains(&specs.len()),
        "--players needs 2 to {MAX_PLAYERS} players, separated by ';' (found {})",
        specs.len()
    );
    let size = args.size;
    let backend = args.backend;
    let factories = player_factories(specs, backend)?;
    let threads = args.threads.unwrap_or_else(super::cores);
    let n = specs.len();
    let config = MatchConfig { size, games: args.games as usize, threads, seed: args.seed };
    let players: Vec<&dyn PlayerFactory> = factories.iter().map(|f| f.as_ref()).collect();
    let RoundRobin { wins, elo, faults } = round_robin(&players, &config, &|_, _, summary| {
        tracing::info!(a = %summary.a, b = %summary.b, score = summary.score, "pairing done");
    })?;
    let mut out = super::stdout();
    writeln!(out, "| player | Elo | score |")?;
    writeln!(out, "| --- | --- | --- |")?;
    for i in 0..n {
        let won: f64 = wins[i].iter().sum();
        let played: f64 = (0..n).map(|j| wins[i][j] + wins[j][i]).sum();
        writeln!(out, "| `{}` | {:+.0} | {:.1}% |", specs[i], elo[i], 100.0 * won / played.max(1.0))?;
    }
    writeln!(out)?;
    write!(out, "| A \\ B |")?;
    for spec in specs {
        write!(out, " `{spec}` |")?;
    }
    writeln!(out)?;
    writeln!(out, "|{}", " --- |".repeat(n + 1))?;
    for i in 0..n {
        write!(out, "| `{}` |", specs[i])?;
        #[allow(clippy::needless_range_loop)] // wins[i][j] and wins[j][i] both
        for j in 0..n {
            if i == j {
                write!(out, " – |")?;
            } else {
                write!(out, " {:.0}/{:.0} |", wins[i][j], wins[i][j] + wins[j][i])?;
            }
        }
        writeln!(out)?;
    }
    if faults > 0 {
        writeln!(out, "\n{faults} games were not scored (player faults); see `konane eval` for details")?;
    }
    Ok(())
}
