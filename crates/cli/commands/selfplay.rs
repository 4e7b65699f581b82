//! `konane selfplay RUN --worker NAME [--threads N] [--shards N]`: a
//! self-play worker for a learner's run on shared storage (docs/cluster.md).

use std::io::Write;

use konane_trainer::cluster::{WorkerOptions, run_worker};

/// Arguments of `konane selfplay`.
#[derive(clap::Args)]
pub struct Args {
    /// The run's shared storage: the learner's run directory (or its
    /// `--exchange`), a directory or, in a build with `--features cloud`,
    /// an s3://, gs:// or az:// URL.
    run: String,
    /// This worker's name, unique in the run (its shards' directory): 1 to
    /// 64 letters, digits, '-', '_' or '.', e.g. the host name.
    #[arg(long)]
    worker: String,
    /// Self-play threads (default: the run config's `threads`; 0 there is every core).
    #[arg(long, value_parser = super::parse_threads)]
    threads: Option<usize>,
    /// Stop after this many shards, 1 to 1000000 (default: when the learner
    /// finishes the run, or at Ctrl-C).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    shards: Option<u64>,
}

/// Plays shards until the run ends, `--shards` are done or Ctrl-C.
pub fn run(args: Args) -> anyhow::Result<()> {
    let stop = super::train::stop_on_ctrl_c("the shards published so far stay; the one in progress is dropped")?;
    let options = WorkerOptions {
        location: args.run,
        name: args.worker,
        threads: args.threads,
        max_shards: args.shards,
        stop,
        on_game: Box::new(|_| {}),
        on_shard: Box::new(|header| {
            tracing::info!(
                shard = header.seq,
                generation = header.generation,
                games = header.stats.games,
                samples = header.stats.samples,
                "shard published"
            );
        }),
    };
    let outcome = run_worker(&options)?;
    let mut out = super::stdout();
    let rate = outcome.positions as f64 / outcome.selfplay_seconds.max(1e-9);
    writeln!(out, "worker: {}", options.name)?;
    writeln!(out, "shards published: {} ({} games)", outcome.shards, outcome.games)?;
    writeln!(out, "self-play: {:.0} positions/s over {:.1} s", rate, outcome.selfplay_seconds)?;
    if outcome.finished {
        writeln!(out, "the learner finished the run")?;
    }
    Ok(())
}
