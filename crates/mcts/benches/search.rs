//! PUCT search overhead: `cargo bench -p konane-mcts --bench search`.
//!
//! Simulations per second on 8x8 midgame positions with the
//! [`UniformEvaluator`], which costs next to nothing, so the time measured is
//! the search's own (descent, expansion, backup, batching): the share of a
//! real search spent outside the network.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use konane_mcts::{Search, SearchConfig, UniformEvaluator};
use konane_rules::{Position, Size};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A position of `size` `plies` random moves from the start (openings
/// included), reproducible from `seed`; games that end early are replayed.
fn midgame_position(size: &str, plies: usize, seed: u64) -> Position {
    let size: Size = size.parse().expect("a board size");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    konane_rules::sample::midgame(size, plies, |n| rng.random_range(..n))
}

/// Searches of `SIMS` simulations from scratch at batch sizes 1 and 32.
fn bench_puct(c: &mut Criterion) {
    const SIMS: u64 = 2000;
    let mut group = c.benchmark_group("puct");
    group.throughput(Throughput::Elements(SIMS));
    for (i, plies) in [12, 20].into_iter().enumerate() {
        let position = midgame_position("8x8", plies, 17 + i as u64);
        for batch_size in [1, 32] {
            let config = SearchConfig { batch_size, ..SearchConfig::default() };
            let mut search = Search::new(config, 1);
            let mut evaluator = UniformEvaluator::default();
            // A root proven early would make simulations nearly free.
            search.set_root(position);
            search.run(&mut evaluator, SIMS, None).unwrap();
            assert_eq!(search.root_proof(), None, "{position} is solved too quickly to time");
            group.bench_with_input(
                BenchmarkId::new(format!("8x8-ply{plies}"), format!("batch{batch_size}")),
                &position,
                |b, &position| {
                    b.iter(|| {
                        search.set_root(position);
                        search.run(&mut evaluator, SIMS, None).unwrap();
                        black_box(search.best_move())
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench_puct);
criterion_main!(benches);
