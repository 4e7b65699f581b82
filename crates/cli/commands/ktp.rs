//! `konane ktp --player SPEC`: an engine speaking KTP
//! (`docs/spec/ktp.md`) on standard input and output.

use std::io;

use anyhow::Context;
use konane_nn::Backend;
use konane_nn::player::player_factory;
use konane_nn::spec::PlayerSpec;
use konane_players::ktp::KtpEngine;

/// Arguments of `konane ktp`.
#[derive(clap::Args)]
pub struct Args {
    /// The player that answers `genmove`: `net:shipped,sims=N` (the shipped
    /// networks, each board played by the one for its size),
    /// `net:PATH,sims=N`, random, greedy, alphabeta:ms=N, mcts:sims=N, ...
    /// (`limit` commands override its limits).
    #[arg(long, value_name = "SPEC", default_value = "net:shipped,sims=800")]
    player: String,
    /// Seed for the player, unless its spec sets seed=N.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Backend for network players: native or flex (the native kernels either way) or ndarray.
    #[arg(long, default_value = "native")]
    backend: Backend,
    /// Cores a network player's search uses (one evaluator each); default:
    /// all; at most four per core.
    #[arg(long, value_parser = super::parse_threads)]
    threads: Option<usize>,
}

/// Answers KTP commands from stdin on stdout until `quit` or end of input.
/// Only protocol answers go to stdout; logs go to stderr.
pub fn run(args: Args) -> anyhow::Result<()> {
    let spec: PlayerSpec = args.player.parse()?;
    let backend = args.backend;
    let threads = args.threads.unwrap_or_else(super::cores);
    let player = player_factory(&spec, backend, threads)?.build(args.seed);
    let mut engine = KtpEngine::new(player);
    engine.run(io::stdin().lock(), super::stdout()).context("KTP session")
}
