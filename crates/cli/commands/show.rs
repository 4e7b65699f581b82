//! `konane show SIZE|POS`: a drawing with coordinates, the position string
//! and the legal moves.

use std::io::Write;

use super::parse_board;

/// Arguments of `konane show`.
#[derive(clap::Args)]
pub struct Args {
    /// Board size (`6x6`) or a quoted position string.
    board: String,
}

/// Prints the board for people, then the machine-readable forms.
pub fn run(args: Args) -> anyhow::Result<()> {
    let position = parse_board(&args.board)?;
    let size = position.size();
    let mut out = super::stdout();
    write!(out, "{}", position.pretty(&[]))?;
    writeln!(out, "position: {position}")?;
    let moves: Vec<String> = position.moves().iter().map(|m| m.to_text(size)).collect();
    writeln!(out, "legal ({}): {}", moves.len(), moves.join(" "))?;
    Ok(())
}
