//! One file per subcommand: argument parsing and printing only.

pub mod accuracy;
pub mod bench_net;
pub mod bench_serve;
pub mod bench_train;
pub mod eval;
pub mod ktp;
pub mod perft;
pub mod play;
pub mod plot;
pub mod rate;
pub mod selfplay;
pub mod serve;
pub mod show;
pub mod solve;
pub mod tournament;
pub mod train;

use std::io;

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
    konane_players::arena::cores()
}

/// `--threads N`: 1 up to [`konane_players::arena::max_threads`] (four per
/// core), checked when the arguments are parsed.
pub fn parse_threads(text: &str) -> Result<usize, String> {
    let max = konane_players::arena::max_threads();
    match text.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("'{text}': a whole number of threads from 1 to {max} (four per core on this machine)")),
    }
}

/// `--blocks` and `--channels` of the benchmarks: the default network's
/// shape (the one `train` builds) with these changed.
#[derive(clap::Args)]
pub struct NetShape {
    /// Residual blocks (0 to 40; default: the default network's, as `train` builds it).
    #[arg(long)]
    blocks: Option<usize>,
    /// Channels (1 to 512; default: the default network's).
    #[arg(long)]
    channels: Option<usize>,
}

impl NetShape {
    /// The network these options describe, checked against the shape ranges.
    pub fn config(&self) -> anyhow::Result<konane_nn::NetConfig> {
        let default = konane_nn::NetConfig::default();
        let config = konane_nn::NetConfig {
            blocks: self.blocks.unwrap_or(default.blocks),
            channels: self.channels.unwrap_or(default.channels),
            ..default
        };
        config.validate().context("--blocks/--channels")?;
        Ok(config)
    }
}

/// A finite number of seconds in `(0, 3600]`, for `--seconds`.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(format!("'{text}': seconds, more than 0 and at most 3600")),
    }
}

/// Standard output for a command's results. Writes return their errors (a
/// full disk, a closed pipe) where `println!` would panic, saying that it
/// was standard output; `main` ends a command whose reader went away quietly.
pub fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

/// See [`stdout`].
pub struct Stdout(io::StdoutLock<'static>);

/// The same error, saying where it happened; its kind is kept (a closed
/// pipe is still `BrokenPipe`).
fn on_stdout(error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("writing to standard output: {error}"))
}

impl io::Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write(bytes).map_err(on_stdout)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(on_stdout)
    }
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
