//! `konane bench-net --size 8x8`: network inference positions/s per batch
//! size, on a chosen backend and network shape.

use std::io::Write;
use std::time::{Duration, Instant};

use konane_mcts::{Batch, Evaluator, ParallelEvaluator, Search, SearchConfig};
use konane_nn::model::Net;
use konane_nn::player::LEAVES_PER_EVALUATOR_THREAD;
use konane_nn::{Backend, NetConfig, NetEvaluator, init_net};
use konane_rules::sample::cycled_positions;
use konane_rules::{Position, Size};

/// Arguments of `konane bench-net`.
#[derive(clap::Args)]
pub struct Args {
    /// Board size.
    #[arg(long, default_value = "8x8")]
    size: Size,
    /// native or flex (the native kernels unless --burn) or ndarray.
    #[arg(long, default_value = "native")]
    backend: Backend,
    /// Run the forward pass through burn's tensor operations instead of
    /// the native kernels that searches on flex use (ndarray always does).
    #[arg(long)]
    burn: bool,
    #[command(flatten)]
    shape: super::NetShape,
    /// Batch sizes to measure, each 1 to 4096 (at most 32 of them).
    #[arg(long, value_delimiter = ',', num_args = 1..=32, default_value = "1,8,32,128",
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    batches: Vec<u64>,
    /// Seconds per batch size, more than 0 and at most 3600.
    #[arg(long, default_value_t = 2.0, value_parser = super::parse_seconds)]
    seconds: f64,
    /// Also measure PUCT simulations/s from a midgame position with this
    /// many evaluator threads (one core each), e.g. `1,2`; the flag with no
    /// value skips the search.
    #[arg(long, value_delimiter = ',', num_args = 0..=32, default_value = "1,2", value_parser = super::parse_threads)]
    search_threads: Vec<usize>,
}

/// Prints positions/s for each batch size (network plus prior softmax, on
/// one core), the same as multiply-adds per second against the backend's own
/// matrix-multiply ceiling, then search simulations/s.
pub fn run(args: Args) -> anyhow::Result<()> {
    let size = args.size;
    let config = args.shape.config()?;
    let net = init_net(&config, &args.backend.device(), 1);
    let positions = cycled_positions(size, 256);
    // The evaluator runs on one core, as each of a search's evaluators does.
    inference(&args, size, &config, &net, &positions)?;
    search(&args, &net, positions[positions.len() / 8])
}

fn inference(args: &Args, size: Size, config: &NetConfig, net: &Net, positions: &[Position]) -> anyhow::Result<()> {
    let backend = args.backend;
    let mut evaluator = evaluator(args, net);
    let flop = 2.0 * config.multiply_adds(size.rows(), size.cols()) as f64;
    let engine = if evaluator.is_native() {
        format!("native kernels, {}", konane_nn::native::simd::in_use())
    } else {
        "burn".to_owned()
    };
    let mut out = super::stdout();
    writeln!(
        out,
        "net {} ({backend} backend, {engine}) on {size}: {:.1} MFLOP a position; one core",
        config.name(),
        flop / 1e6
    )?;
    for &batch in &args.batches {
        let batch = batch as usize;
        let mut done = 0usize;
        let mut chunk = Batch::new();
        for &position in positions.iter().cycle().take(batch) {
            chunk.push(position);
        }
        // One warm-up call, then measure.
        evaluator.evaluate(&mut chunk)?;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs_f64(args.seconds) {
            chunk.clear_outputs();
            evaluator.evaluate(&mut chunk)?;
            done += batch;
        }
        let rate = done as f64 / start.elapsed().as_secs_f64();
        writeln!(out, "batch {batch:>4}: {rate:>9.0} positions/s = {:>5.1} GFLOP/s", rate * flop / 1e9)?;
    }
    // The ceiling: one tower convolution as a plain matrix product (im2col)
    // at batch 32, on the same backend and core.
    let (m, k, n) = (32 * size.rows() * size.cols(), 9 * config.channels, config.channels);
    let ceiling = 2.0 * backend.matmul_multiply_adds_per_second(m, k, n, args.seconds);
    writeln!(
        out,
        "matmul [{m} x {k}] x [{k} x {n}] (a tower convolution at batch 32): {:.1} GFLOP/s = {:.0} positions/s of this net",
        ceiling / 1e9,
        ceiling / flop
    )?;
    Ok(())
}

/// The evaluator `--backend` and `--burn` ask for.
fn evaluator(args: &Args, net: &Net) -> NetEvaluator {
    if args.burn {
        NetEvaluator::new(net.clone(), args.backend.device())
    } else {
        NetEvaluator::for_backend(net, args.backend)
    }
}

/// PUCT simulations/s from `root`: one tree, batches of
/// [`LEAVES_PER_EVALUATOR_THREAD`] leaves per evaluator thread.
fn search(args: &Args, net: &Net, root: Position) -> anyhow::Result<()> {
    let mut out = super::stdout();
    for &threads in &args.search_threads {
        let evaluators = (0..threads).map(|_| evaluator(args, net)).collect();
        let mut evaluator = ParallelEvaluator::new(evaluators);
        let batch_size = LEAVES_PER_EVALUATOR_THREAD * threads;
        let search_config = SearchConfig { batch_size, ..SearchConfig::default() };
        let mut search = Search::new(search_config, 1);
        search.set_root(root);
        let start = Instant::now();
        let simulations = search.run(&mut evaluator, u64::MAX, Some(start + Duration::from_secs_f64(args.seconds)))?;
        let rate = simulations as f64 / start.elapsed().as_secs_f64();
        writeln!(out, "search, {threads} evaluator thread(s), batch {batch_size}: {rate:>7.0} simulations/s")?;
    }
    Ok(())
}
