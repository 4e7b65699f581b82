//! Network speed: inference positions/s per batch size, board and engine
//! (native kernels, burn-flex, burn-ndarray) for the default network, and
//! PUCT simulations/s with the network on 8x8 together with the share of
//! search time spent outside the network.
//!
//! `cargo bench -p konane-nn`

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use konane_mcts::{Batch, Evaluator, Search, SearchConfig};
use konane_nn::{Backend, NetConfig, NetEvaluator, init_net};
use konane_rules::Size;
use konane_rules::sample::cycled_positions;

fn bench_inference(c: &mut Criterion) {
    let config = NetConfig::new();
    let mut group = c.benchmark_group(format!("inference-{}", config.name()));
    group.sample_size(10).measurement_time(Duration::from_secs(4));
    for (engine, backend) in [("native", Backend::Flex), ("flex", Backend::Flex), ("ndarray", Backend::Ndarray)] {
        for size in ["6x6", "8x8"].map(|s| s.parse::<Size>().unwrap()) {
            let device = backend.device();
            let net = init_net(&config, &device, 1);
            let mut evaluator =
                if engine == "native" { NetEvaluator::native(&net) } else { NetEvaluator::new(net, device) };
            let pool = cycled_positions(size, 128);
            for batch in [1usize, 8, 32, 128] {
                if backend == Backend::Ndarray && batch == 128 {
                    continue; // minutes per sample on the deprecated backend
                }
                let mut chunk = Batch::new();
                for &position in &pool[..batch] {
                    chunk.push(position);
                }
                group.throughput(Throughput::Elements(batch as u64));
                group.bench_function(BenchmarkId::new(format!("{engine}/{size}"), batch), |b| {
                    b.iter(|| {
                        chunk.clear_outputs();
                        evaluator.evaluate(&mut chunk).unwrap();
                    })
                });
            }
        }
    }
    group.finish();
}

/// Wraps an evaluator and times it, so the search's own share can be shown.
struct Timed<E> {
    inner: E,
    spent: Duration,
}

impl<E: Evaluator> Evaluator for Timed<E> {
    fn evaluate(&mut self, batch: &mut Batch) -> Result<(), konane_mcts::EvalError> {
        let start = Instant::now();
        let outcome = self.inner.evaluate(batch);
        self.spent += start.elapsed();
        outcome
    }
}

fn bench_search(c: &mut Criterion) {
    const SIMS: u64 = 800;
    let config = NetConfig::new();
    let size: Size = "8x8".parse().unwrap();
    let root = cycled_positions(size, 24)[23];
    let mut group = c.benchmark_group(format!("puct-{}-8x8", config.name()));
    group.sample_size(10).throughput(Throughput::Elements(SIMS));
    for batch in [1usize, 8, 32] {
        let net = init_net(&config, &Backend::Flex.device(), 1);
        let mut evaluator = Timed { inner: NetEvaluator::native(&net), spent: Duration::ZERO };
        let search_config = SearchConfig { batch_size: batch, ..SearchConfig::default() };
        let mut search = Search::new(search_config, 1);
        // Report the share of wall time outside the network once per batch size.
        let start = Instant::now();
        search.set_root(root);
        search.run(&mut evaluator, SIMS, None).unwrap();
        let total = start.elapsed();
        eprintln!(
            "puct 8x8 batch {batch}: {:.0} sims/s, {:.1}% of search time outside the network",
            SIMS as f64 / total.as_secs_f64(),
            100.0 * (1.0 - evaluator.spent.as_secs_f64() / total.as_secs_f64())
        );
        group.bench_function(BenchmarkId::new("native", batch), |b| {
            b.iter(|| {
                search.set_root(root);
                search.run(&mut evaluator, SIMS, None).unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_inference, bench_search);
criterion_main!(benches);
