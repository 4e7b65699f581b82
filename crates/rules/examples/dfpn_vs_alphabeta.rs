//! Solves boards from the start with df-pn and with the alpha-beta solver
//! (fewest replies first, one thread, no network), one after the other,
//! and prints each one's value, nodes and time: the measurement behind
//! docs/experiments/2026-12-04-dfpn.md.
//!
//!     cargo run --release -p konane-rules --example dfpn_vs_alphabeta -- [TABLE_BITS] SIZE...

use std::time::Instant;

use konane_rules::dfpn::DfpnSolver;
use konane_rules::{Position, Size, Solver};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let bits = match args.first().map(|a| a.parse::<u32>()) {
        Some(Ok(bits)) if (10..=26).contains(&bits) => {
            args.remove(0);
            bits
        }
        _ => 22,
    };
    let epsilons: Vec<u64> = std::env::var("EPSILONS")
        .ok()
        .map(|text| text.split(',').map(|e| e.parse().expect("EPSILONS: whole numbers, e.g. 0,256")).collect())
        .unwrap_or(vec![256]);
    for name in &args {
        let size: Size = name.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        let start = Position::start(size);
        for &epsilon in &epsilons {
            // df-pn's sets are 64 bytes for two entries, the alpha-beta's
            // buckets 32 bytes for two results: df-pn gets twice the memory.
            let mut dfpn = DfpnSolver::new(bits);
            dfpn.set_epsilon(epsilon);
            let clock = Instant::now();
            let win = dfpn.wins_within(&start, u64::MAX).expect("no node limit");
            println!(
                "{name}\tdf-pn eps={epsilon}/1024\t{}\t{} nodes\t{:.2} s",
                if win { "black" } else { "white" },
                dfpn.nodes(),
                clock.elapsed().as_secs_f64()
            );
        }
        // The root's value only, as df-pn finds it: `wins` stops at the
        // first winning opening, where `solve` would try every one.
        let mut solver = Solver::new(bits);
        let progress = solver.progress();
        let clock = Instant::now();
        let win = solver.wins(&start).expect("no node limit");
        println!(
            "{name}\talpha-beta\t{}\tabout {} nodes\t{:.2} s",
            if win { "black" } else { "white" },
            progress.nodes(),
            clock.elapsed().as_secs_f64()
        );
    }
}
