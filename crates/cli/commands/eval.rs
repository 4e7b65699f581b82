//! `konane eval --a SPEC --b SPEC --size 8x8 --games N`: a match in parallel
//! with a progress bar, then the score, Elo and timing.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use konane_files::write_atomically;
use konane_nn::Backend;
use konane_nn::player::player_factory;
use konane_nn::spec::PlayerSpec;
use konane_players::arena::{MatchConfig, MatchSummary, play_match};
use konane_rules::Size;

/// Arguments of `konane eval`.
#[derive(clap::Args)]
pub struct Args {
    /// Player A (the one whose score is reported), e.g. `alphabeta:depth=4`.
    #[arg(long)]
    a: String,
    /// Player B, e.g. `mcts:sims=2000`.
    #[arg(long)]
    b: String,
    /// Board size, `COLSxROWS`.
    #[arg(long, default_value = "8x8")]
    size: Size,
    /// Games to play; pairs share an opening with colours swapped.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    games: u64,
    /// Games played at once (default: every core; at most four per core).
    #[arg(long, value_parser = super::parse_threads)]
    threads: Option<usize>,
    /// Match seed: openings and players' seeds derive from it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write the summary as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write every game, one record a line, to this file.
    #[arg(long)]
    records: Option<PathBuf>,
    /// Backend for network players: native or flex (the native kernels either way) or ndarray.
    #[arg(long, default_value = "native")]
    backend: Backend,
}

/// Validates everything, plays the match, prints and writes the results.
pub fn run(args: Args) -> anyhow::Result<()> {
    let a: PlayerSpec = args.a.parse().context("--a")?;
    let b: PlayerSpec = args.b.parse().context("--b")?;
    let size = args.size;
    let backend = args.backend;
    let (a_factory, b_factory) = (player_factory(&a, backend, 1)?, player_factory(&b, backend, 1)?);
    let threads = args.threads.unwrap_or_else(super::cores);
    let config = MatchConfig { size, games: args.games as usize, threads, seed: args.seed };
    tracing::info!(%a, %b, %size, games = config.games, threads, "match starts");

    let bar = ProgressBar::new(args.games);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} games  A {msg}  [{elapsed_precise} < {eta_precise}]")
            .expect("valid template"),
    );
    // Without a terminal (a match run in the background, output to a file)
    // the bar is hidden, so progress goes to the log every twentieth of the match.
    let log_every = (args.games / 20).max(1);
    let (a_wins, scored, finished) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    let results = play_match(&*a_factory, &*b_factory, &config, &|game| {
        if game.fault.is_none() {
            scored.fetch_add(1, Ordering::Relaxed);
            a_wins.fetch_add(game.a_won as usize, Ordering::Relaxed);
        }
        let done = finished.fetch_add(1, Ordering::Relaxed) as u64 + 1;
        let (w, n) = (a_wins.load(Ordering::Relaxed), scored.load(Ordering::Relaxed));
        let score = format!("{w}/{n} ({:.1}%)", 100.0 * w as f64 / n.max(1) as f64);
        if bar.is_hidden() && (done.is_multiple_of(log_every) || done == args.games) {
            tracing::info!(games = done, of = args.games, a_score = %score, elapsed_s = bar.elapsed().as_secs(), "match progress");
        }
        bar.set_message(score);
        bar.inc(1);
    })?;
    bar.finish_and_clear();

    let summary = MatchSummary::new(a.to_string(), b.to_string(), size, &results);
    print_summary(&mut super::stdout(), &summary)?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&summary)?;
        write_atomically(path, json.as_bytes())?;
    }
    if let Some(path) = &args.records {
        let mut text = String::new();
        for result in &results {
            text += &format!("{}\n", result.record);
        }
        write_atomically(path, text.as_bytes())?;
    }
    Ok(())
}

fn print_summary(out: &mut impl Write, s: &MatchSummary) -> io::Result<()> {
    writeln!(out, "{} vs {} on {}: {} games scored", s.a, s.b, s.size, s.games)?;
    writeln!(
        out,
        "A wins {} (as black {}, as white {}), B wins {}",
        s.a_wins, s.a_wins_as_black, s.a_wins_as_white, s.b_wins
    )?;
    writeln!(
        out,
        "A score {:.1}%  95% CI [{:.1}%, {:.1}%]",
        100.0 * s.score,
        100.0 * s.score_interval.low,
        100.0 * s.score_interval.high
    )?;
    writeln!(out, "Elo A-B {:+.0}  95% CI [{:+.0}, {:+.0}]", s.elo, s.elo_interval.low, s.elo_interval.high)?;
    writeln!(
        out,
        "mean game length {:.1} plies; time per move A {:.2} ms, B {:.2} ms",
        s.mean_game_length, s.ms_per_move[0], s.ms_per_move[1]
    )?;
    if !s.faults.is_empty() {
        writeln!(out, "{} games not scored:", s.faults.len())?;
        for (index, fault) in &s.faults {
            writeln!(out, "  game {index}: player {} {}", fault.player, fault.reason)?;
        }
    }
    Ok(())
}
