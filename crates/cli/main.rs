//! `konane`: the command-line front end. Each subcommand is a thin file in
//! `commands/`; the logic lives in the library crates.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;
mod memory;

/// Kōnane: exact rules, baseline players, search and self-play learning.
#[derive(Parser)]
#[command(name = "konane", version, about, propagate_version = true)]
struct Cli {
    /// The widest vector instructions the native kernels may use: `avx2`
    /// runs on a CPU with AVX-512 what one without it would (to measure or
    /// compare that path); `gemm`, which takes the products the kernels do
    /// not, still chooses its own.
    #[arg(long, global = true, value_enum, default_value = "auto", env = "KONANE_SIMD")]
    simd: Simd,
    #[command(subcommand)]
    command: Command,
}

/// `--simd`'s values, as [`konane_nn::native::simd::Simd`] has them.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Simd {
    Auto,
    Avx2,
}

#[derive(Subcommand)]
enum Command {
    /// Count positions DEPTH plies from the start (or from a position).
    Perft(commands::perft::Args),
    /// Solve a position exactly: its value and every winning move.
    Solve(commands::solve::Args),
    /// Draw a board with coordinates and list its legal moves.
    Show(commands::show::Args),
    /// Play a match between two players and report score and Elo.
    Eval(commands::eval::Args),
    /// Round robin between several players, with Bradley–Terry Elo.
    Tournament(commands::tournament::Args),
    /// Share of solved won positions where each player picks a winning move.
    Accuracy(commands::accuracy::Args),
    /// Measure network inference speed per batch size.
    BenchNet(commands::bench_net::Args),
    /// Measure training speed (samples/s of gradient steps) per thread count.
    BenchTrain(commands::bench_train::Args),
    /// Load-test the web server on 127.0.0.1: clients playing and analysing at once.
    BenchServe(commands::bench_serve::Args),
    /// Train a network by self-play (default: the quick 6x6 config).
    Train(commands::train::Args),
    /// Play self-play games for a learner's run (`konane train --role learner`) on shared storage.
    Selfplay(commands::selfplay::Args),
    /// Draw a run's training curves (loss, win rate, Elo) to PNG or SVG.
    Plot(commands::plot::Args),
    /// Rate a run's checkpoints against one opponent: its strength curve.
    Rate(commands::rate::Args),
    /// Play against a network in the terminal (default: the shipped network for the size, on 6x6).
    Play(commands::play::Args),
    /// Run an engine speaking KTP (the Kōnane Text Protocol) on stdin/stdout.
    Ktp(commands::ktp::Args),
    /// Serve the web board and its JSON API (docs/api.md) on 127.0.0.1:8080.
    Serve(commands::serve::Args),
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Perft(args) => commands::perft::run(args),
        Command::Solve(args) => commands::solve::run(args),
        Command::Show(args) => commands::show::run(args),
        Command::Eval(args) => commands::eval::run(args),
        Command::Tournament(args) => commands::tournament::run(args),
        Command::Accuracy(args) => commands::accuracy::run(args),
        Command::BenchNet(args) => commands::bench_net::run(args),
        Command::BenchTrain(args) => commands::bench_train::run(args),
        Command::BenchServe(args) => commands::bench_serve::run(args),
        Command::Train(args) => commands::train::run(args),
        Command::Selfplay(args) => commands::selfplay::run(args),
        Command::Plot(args) => commands::plot::run(args),
        Command::Rate(args) => commands::rate::run(args),
        Command::Play(args) => commands::play::run(args),
        Command::Ktp(args) => commands::ktp::run(args),
        Command::Serve(args) => commands::serve::run(args),
    }
}

fn main() -> ExitCode {
    memory::limit_malloc_arenas();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("KONANE_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    konane_nn::native::simd::limit(match cli.simd {
        Simd::Auto => konane_nn::native::simd::Simd::Auto,
        Simd::Avx2 => konane_nn::native::simd::Simd::Avx2,
    });
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output went away (`konane perft 8x8 9 | head`):
        // nobody is left to tell, and `head` expects the writer to end quietly.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            // Not eprintln!, which panics if standard error is gone too.
            let _ = writeln!(io::stderr(), "error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `error` comes from writing to a pipe whose reader has closed.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || cause.downcast_ref::<konane_files::WriteError>().is_some_and(konane_files::WriteError::is_broken_pipe)
    })
}
