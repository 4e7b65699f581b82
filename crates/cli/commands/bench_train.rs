//! `konane bench-train --size 8x8`: training samples/s of one gradient step
//! per thread count, on a chosen backend and network shape.

use std::io::Write;
use std::time::Instant;

use anyhow::Context;
use konane_nn::train::{Learner, LearnerConfig, benchmark_batch};
use konane_nn::{Backend, init_net};
use konane_rules::Size;
use konane_trainer::memory::{gib, physical_memory, training_step_bytes};

/// Arguments of `konane bench-train`.
#[derive(clap::Args)]
pub struct Args {
    /// Board size.
    #[arg(long, default_value = "8x8")]
    size: Size,
    /// native, flex or ndarray: the training engine `train` would use.
    #[arg(long, default_value = "native")]
    backend: Backend,
    #[command(flatten)]
    shape: super::NetShape,
    /// Train a soft policy output too (`network.soft_policy`), at its
    /// default weight.
    #[arg(long)]
    soft_policy: bool,
    /// Train a reply policy output too (`network.reply_policy`), at its
    /// default weight.
    #[arg(long)]
    reply_policy: bool,
    /// Samples per step, 1 to 4096.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=4096))]
    batch: u64,
    /// Thread counts to measure, e.g. `1,2`. The native engine splits each
    /// step over them; burn's run in a pool of that many threads.
    #[arg(long, value_delimiter = ',', num_args = 1..=32, default_value = "1,2", value_parser = super::parse_threads)]
    threads: Vec<usize>,
    /// Seconds per thread count, more than 0 and at most 3600.
    #[arg(long, default_value_t = 5.0, value_parser = super::parse_seconds)]
    seconds: f64,
}

/// Prints samples/s per thread count: AdamW steps (the default learner) on
/// a fixed batch of positions from played games, each with a spread target
/// over its legal moves, as `train` steps on batches from its replay window.
/// The step includes turning the samples into input planes and targets;
/// drawing them from a replay window is not timed.
pub fn run(args: Args) -> anyhow::Result<()> {
    let size = args.size;
    let config = args.shape.config()?.with_soft_policy(args.soft_policy).with_reply_policy(args.reply_policy);
    let samples = benchmark_batch(size, args.batch as usize);
    anyhow::ensure!(!samples.is_empty(), "a {size} board has no positions with a legal move to train on");
    let most_threads = args.threads.iter().copied().max().unwrap_or(1) as u64;
    let needs = training_step_bytes(&config, args.backend, &[size], args.batch, most_threads);
    if let Some(machine) = physical_memory() {
        anyhow::ensure!(
            needs <= machine,
            "--batch {} of {size} at {}: the step would need about {}, more than this machine's {}; lower --batch, \
             --channels or --blocks",
            args.batch,
            config.name(),
            gib(needs),
            gib(machine)
        );
    }
    let flop = 2.0 * 3.0 * config.multiply_adds(size.rows(), size.cols()) as f64;
    let mut out = super::stdout();
    writeln!(
        out,
        "train {}{} ({} backend, {}) on {size}, batch {}: {:.1} MFLOP a sample (forward and backward)",
        config.name(),
        match (config.soft_policy, config.reply_policy) {
            (false, false) => "",
            (true, false) => " with a soft policy output",
            (false, true) => " with a reply policy output",
            (true, true) => " with soft and reply policy outputs",
        },
        args.backend,
        konane_nn::native::simd::in_use(),
        samples.len(),
        flop / 1e6
    )?;
    for &threads in &args.threads {
        let net = init_net(&config, &args.backend.device(), 1);
        let mut learner = Learner::new(net, args.backend, LearnerConfig::default());
        learner.set_threads(threads);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().context("a thread pool")?;
        let rate = pool.install(|| {
            // Warm-up steps size the buffers, then measure.
            for _ in 0..2 {
                learner.step(&samples, 1e-3);
            }
            let start = Instant::now();
            let mut done = 0usize;
            while done == 0 || start.elapsed().as_secs_f64() < args.seconds {
                learner.step(&samples, 1e-3);
                done += samples.len();
            }
            done as f64 / start.elapsed().as_secs_f64()
        });
        writeln!(out, "threads {threads}: {rate:.0} samples/s = {:.1} GFLOP/s", rate * flop / 1e9)?;
    }
    Ok(())
}
