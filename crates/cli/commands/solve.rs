//! `konane solve SIZE|POS`: `value: W|L` and `winning: MOVES`.

use std::io::Write;
use std::time::Instant;

use anyhow::Context;
use konane_rules::Solver;

use super::{human, parse_board};

/// Arguments of `konane solve`.
#[derive(clap::Args)]
pub struct Args {
    /// Board size (`6x6`, from the start) or a quoted position string.
    board: String,
    /// Transposition table size: 2^BITS buckets of 32 bytes (10 to 29: 32 KiB to 16 GiB).
    #[arg(long, default_value_t = 22, value_parser = clap::value_parser!(u32).range(10..=Solver::MAX_TABLE_BITS as i64))]
    table_bits: u32,
}

/// Solves exactly and prints the value for the side to move, every winning
/// move, and the search statistics.
pub fn run(args: Args) -> anyhow::Result<()> {
    let position = parse_board(&args.board)?;
    let size = position.size();
    let start = Instant::now();
    let mut solver = Solver::try_new(args.table_bits).context("--table-bits")?;
    let solution = solver.solve(&position);
    let seconds = start.elapsed().as_secs_f64();
    let mut out = super::stdout();
    writeln!(out, "value: {}", if solution.win { "W" } else { "L" })?;
    let winning: Vec<String> = solution.winning_moves.iter().map(|m| m.to_text(size)).collect();
    writeln!(out, "winning: {}", winning.join(" "))?;
    writeln!(
        out,
        "side: {}  nodes: {}  time: {seconds:.3}s  ({} nodes/s)",
        position.side_to_move(),
        solution.nodes,
        human(solution.nodes as f64 / seconds.max(1e-9))
    )?;
    Ok(())
}
