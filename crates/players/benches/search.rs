//! Search speed of the players: `cargo bench -p konane-players --bench search`.
//!
//! Each player's benchmark is one function added to the group at the bottom.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use konane_players::alphabeta::AlphaBetaPlayer;
use konane_players::uct::UctPlayer;
use konane_players::{Limits, Player};
use konane_rules::{Position, Size};
use rand::RngExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// `count` positions of `size`, each `plies` random moves from the start
/// (openings included), reproducible from `seed`; games that end early are
/// replayed.
fn midgame_positions(size: &str, plies: usize, count: usize, seed: u64) -> Vec<Position> {
    let size: Size = size.parse().expect("a board size");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count).map(|_| konane_rules::sample::midgame(size, plies, |n| rng.random_range(..n))).collect()
}

/// UCT simulations per second (throughput in simulations) on 8x8 midgame
/// positions, 20 to 30 plies in.
fn bench_uct(c: &mut Criterion) {
    const SIMS: u64 = 1000;
    let mut group = c.benchmark_group("uct");
    group.throughput(Throughput::Elements(SIMS));
    let limits = Limits { nodes: Some(SIMS), ..Limits::default() };
    for (i, plies) in [20, 24, 30].into_iter().enumerate() {
        let position = midgame_positions("8x8", plies, 1, 17 + i as u64)[0];
        let mut player = UctPlayer::new(limits, 1.0, 1);
        // A root proven early would run fewer simulations than the throughput says.
        let probe = player.choose(&position, &limits).unwrap().expect("the game is not over");
        assert_eq!(probe.nodes, SIMS, "{position} is solved too quickly to time");
        group.bench_with_input(BenchmarkId::new("8x8", format!("ply{plies}")), &position, |b, pos| {
            b.iter(|| player.choose(black_box(pos), &limits).unwrap().expect("the game is not over"))
        });
    }
    group.finish();
}

/// Alpha-beta nodes per second (throughput in nodes) on 8x8 midgame
/// positions: a fixed node budget per search, so every iteration does the
/// same work.
fn bench_alphabeta(c: &mut Criterion) {
    const NODES: u64 = 200_000;
    let mut group = c.benchmark_group("alphabeta");
    group.throughput(Throughput::Elements(NODES));
    group.sample_size(20);
    let limits = Limits { nodes: Some(NODES), ..Limits::default() };
    for (i, plies) in [20, 24, 30].into_iter().enumerate() {
        let position = midgame_positions("8x8", plies, 1, 17 + i as u64)[0];
        let mut player = AlphaBetaPlayer::new(limits, 1);
        let probe = player.choose(&position, &limits).unwrap().expect("the game is not over");
        if probe.nodes < NODES {
            continue; // solved before the budget: its rate would be misleading
        }
        group.bench_with_input(BenchmarkId::new("8x8", format!("ply{plies}")), &position, |b, pos| {
            b.iter(|| {
                player.new_game();
                player.choose(black_box(pos), &limits).unwrap().expect("the game is not over")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_uct, bench_alphabeta);
criterion_main!(benches);
