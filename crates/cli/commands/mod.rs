//! One file per subcommand: argument parsing and printing only.

pub mod accuracy;
pub mod bench_net;
pub mod eval;
pub mod ktp;
pub mod perft;
pub mod play;
pub mod plot;
pub mod show;
pub mod solve;
pub mod tournament;
pub mod train;

use anyhow::Context;
use konane_rules::{Position, Size};

/// Reads an argument that may be a size (`8x8`: its start position) or a
/// position string (`WBWB/B.BW/W..B/BWBW w`).
pub fn parse_board(text: &str) -> anyhow::Result<Position> {
    let text = text.trim();
    if text.contains(' ') || text.contains('/') {
        text.parse::<Position>().context("expected a size like 8x8 or a position string")
    } else {
        let size: Size = text.parse().context("expected a size like 8x8 or a position string")?;
        Ok(Position::start(size))
    }
}

/// The machine's cores (1 if unknown): the default for work split over threads.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `1234567` → `1.23M`: rates for people.
pub fn human(rate: f64) -> String {
    match rate {
        r if r >= 1e9 => format!("{:.2}G", r / 1e9),
        r if r >= 1e6 => format!("{:.2}M", r / 1e6),
        r if r >= 1e3 => format!("{:.1}k", r / 1e3),
        r => format!("{r:.0}"),
    }
}
