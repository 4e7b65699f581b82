//! Training speed: samples/s of one gradient step of the default network at
//! batch 256 on 8x8, on the native kernels (one and two threads) and on
//! burn-flex's autodiff.
//!
//! `cargo bench -p konane-nn --bench training`

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use konane_nn::train::{Learner, LearnerConfig, benchmark_batch};
use konane_nn::{Backend, NetConfig, init_net};
use konane_rules::Size;

fn bench_training(c: &mut Criterion) {
    let config = NetConfig::new();
    let size: Size = "8x8".parse().unwrap();
    let batch = benchmark_batch(size, 256);
    let mut group = c.benchmark_group(format!("train-{}", config.name()));
    group.sample_size(10).measurement_time(Duration::from_secs(6));
    group.throughput(Throughput::Elements(batch.len() as u64));
    for (engine, backend, threads) in
        [("native", Backend::Native, 1), ("native", Backend::Native, 2), ("flex", Backend::Flex, 1)]
    {
        let net = init_net(&config, &backend.device(), 1);
        let mut learner = Learner::new(net, backend, LearnerConfig::default());
        learner.set_threads(threads);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        group.bench_function(BenchmarkId::new(format!("{engine}/{size}/threads"), threads), |b| {
            b.iter(|| pool.install(|| learner.step(&batch, 1e-3)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_training);
criterion_main!(benches);
