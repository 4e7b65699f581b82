//! `konane perft SIZE|POS DEPTH`: one line per depth, `depth leaves ...`.

use std::io::Write;
use std::time::Instant;

use konane_rules::perft::{divide, perft};

use super::{human, parse_board};

/// Arguments of `konane perft`.
#[derive(clap::Args)]
pub struct Args {
    /// Board size (`8x8`) or a quoted position string.
    board: String,
    /// Plies to count, 1 or more.
    #[arg(value_parser = clap::value_parser!(u32).range(1..=64))]
    depth: u32,
    /// Print the leaf count below each legal first move instead.
    #[arg(long)]
    divide: bool,
}

/// Prints `depth leaves seconds leaves/s` for each depth 1..=DEPTH, or with
/// `--divide` one `move leaves` line per first move and a total.
pub fn run(args: Args) -> anyhow::Result<()> {
    let position = parse_board(&args.board)?;
    let size = position.size();
    let mut out = super::stdout();
    if args.divide {
        let start = Instant::now();
        let rows = divide(&position, args.depth);
        let total: u64 = rows.iter().map(|(_, n)| n).sum();
        for (mv, leaves) in rows {
            writeln!(out, "{} {leaves}", mv.display(size))?;
        }
        writeln!(out, "total {total} moves {} time {:.3}s", position.count_moves(), start.elapsed().as_secs_f64())?;
        return Ok(());
    }
    for depth in 1..=args.depth {
        let start = Instant::now();
        let leaves = perft(&position, depth);
        let seconds = start.elapsed().as_secs_f64();
        writeln!(out, "{depth} {leaves} {seconds:.3}s {} leaves/s", human(leaves as f64 / seconds.max(1e-9)))?;
    }
    Ok(())
}
