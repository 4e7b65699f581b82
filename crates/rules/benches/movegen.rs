//! Move generation speed: perft with bulk counting from the start, and
//! move generation on random midgame positions.
//!
//! `cargo bench -p konane-rules` ; throughput is reported in leaves/s and
//! positions/s.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use konane_rules::perft::perft;
use konane_rules::{MoveList, Position, Size};
use rand::prelude::*;
use rand_chacha::ChaCha8Rng;

fn bench_perft(c: &mut Criterion) {
    let mut group = c.benchmark_group("perft");
    group.sample_size(10);
    for (size, depth) in [("6x6", 10), ("8x8", 10), ("10x10", 9), ("14x17", 7)] {
        let position = Position::start(size.parse().unwrap());
        let leaves = perft(&position, depth);
        group.throughput(Throughput::Elements(leaves));
        group.bench_function(format!("{size}/depth{depth}"), |b| b.iter(|| perft(black_box(&position), depth)));
    }
    group.finish();
}

/// Positions from random games, taken between a quarter and three quarters
/// of the way through: the midgame.
fn midgame_positions(size: Size, count: usize, seed: u64) -> Vec<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut positions = Vec::with_capacity(count);
    let mut moves = MoveList::new();
    while positions.len() < count {
        let mut game = vec![Position::start(size)];
        loop {
            let position = *game.last().unwrap();
            position.legal_moves(&mut moves);
            let Some(&mv) = moves.choose(&mut rng) else { break };
            let mut next = position;
            next.play_unchecked(mv);
            game.push(next);
        }
        let n = game.len();
        positions.extend(game[n / 4..(3 * n / 4).max(n / 4 + 1)].iter().copied());
    }
    positions.truncate(count);
    positions
}

fn bench_movegen(c: &mut Criterion) {
    let mut group = c.benchmark_group("movegen");
    for size in ["6x6", "8x8", "10x10", "14x17"] {
        let positions = midgame_positions(size.parse().unwrap(), 1000, 7);
        group.throughput(Throughput::Elements(positions.len() as u64));
        let mut moves = MoveList::new();
        group.bench_function(format!("{size}/generate"), |b| {
            b.iter(|| {
                let mut total = 0;
                for position in &positions {
                    position.legal_moves(&mut moves);
                    total += moves.len();
                }
                total
            })
        });
        group.bench_function(format!("{size}/count"), |b| {
            b.iter(|| positions.iter().map(|p| p.count_moves()).sum::<u32>())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_perft, bench_movegen);
criterion_main!(benches);
