//! What the endgame solver inside a network's search costs on one board:
//! for each spec, the mean time of a move from a fresh tree, how many roots
//! the search proves, and the time by the position's stone count. The
//! leaf solver's table carries over from position to position, as it does
//! from move to move in a game; one untimed move warms the player up.
//!
//!     cargo run --release -p konane-nn --example leaf_solver_cost -- 6x6 200 \
//!         "net:checkpoints/konane,sims=800" "net:checkpoints/6x6,sims=800"
//!
//! The positions are `konane_rules::sample::cycled_positions` (openings,
//! midgames and endgames in a fixed order), so two runs see the same ones.
use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, bail};
use konane_nn::{Backend, player::NetFactory, spec::PlayerSpec};
use konane_players::Player;
use konane_rules::{Size, sample::cycled_positions};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [size, count, specs @ ..] = args.as_slice() else {
        bail!("usage: leaf_solver_cost SIZE POSITIONS SPEC...");
    };
    let size: Size = size.parse()?;
    let count: usize = count.parse().context("POSITIONS: a count")?;
    let positions: Vec<_> = cycled_positions(size, count).into_iter().filter(|p| !p.is_over()).collect();
    let Some(first) = positions.first() else {
        bail!("no position with a move to play among the first {count} of {size}");
    };
    for text in specs {
        let spec: PlayerSpec = text.parse()?;
        let mut player = NetFactory::from_spec(&spec, Backend::Native)?.build_player(1);
        let limits = player.limits();
        player.choose(first, &limits)?;
        let (mut seconds, mut proven) = (0.0, 0);
        let mut by_stones = BTreeMap::<u32, (f64, usize)>::new();
        for position in &positions {
            player.new_game();
            let start = Instant::now();
            player.choose(position, &limits)?;
            let took = start.elapsed().as_secs_f64();
            seconds += took;
            proven += usize::from(player.search().root_proof().is_some());
            let bucket = by_stones.entry(position.stones() / 4 * 4).or_default();
            bucket.0 += took;
            bucket.1 += 1;
        }
        println!(
            "{text}: {} positions, {:.1} ms a move, {proven} roots proven",
            positions.len(),
            1000.0 * seconds / positions.len() as f64
        );
        for (stones, (took, n)) in by_stones {
            println!(
                "  {stones:>3}-{:<3} stones: {n:>4} positions, {:>7.1} ms a move",
                stones + 3,
                1000.0 * took / n as f64
            );
        }
    }
    Ok(())
}
