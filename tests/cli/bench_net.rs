//! `konane bench-net` end to end on a tiny network: a speed per batch size
//! in the order asked, FLOP figures that follow from the network's shape,
//! and the search only when asked, with the threads asked for.

use konane_nn::NetConfig;

use crate::common::konane_command;

fn bench_net(extra: &[&str]) -> String {
    let out = konane_command()
        .args(["bench-net", "--size", "4x4", "--blocks", "1", "--channels", "8", "--batches", "1,4"])
        .args(["--seconds", "0.05"])
        .args(extra)
        .output()
        .expect("start konane bench-net");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    text
}

/// The positions/s and GFLOP/s of the line for `batch`.
fn rates(text: &str, batch: usize) -> (f64, f64) {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("batch {batch:>4}:")))
        .unwrap_or_else(|| panic!("no line for batch {batch}: {text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |i: usize| words[i].parse::<f64>().unwrap_or_else(|_| panic!("no number at {i} in {line:?}"));
    (number(2), number(5))
}

/// The network bench-net builds for `--blocks 1 --channels 8`: the default
/// heads, as `train` would build them.
fn tiny() -> NetConfig {
    NetConfig { blocks: 1, channels: 8, ..NetConfig::default() }
}

#[test]
fn reports_each_batch_and_skips_the_search_when_told() {
    let text = bench_net(&["--search-threads"]);
    let mflop = 2.0 * tiny().multiply_adds(4, 4) as f64 / 1e6;
    assert!(
        text.contains(&format!(
            "net b1c8 (native backend, native kernels, {}) on 4x4: {mflop:.1} MFLOP a position",
            konane_nn::native::simd::in_use()
        )),
        "{text}"
    );
    for batch in [1, 4] {
        let (positions, gflops) = rates(&text, batch);
        assert!(positions > 0.0, "{text}");
        // The FLOP rate is the position rate times the network's work.
        let expected = positions * mflop / 1e3;
        assert!((gflops - expected).abs() <= 0.05 + 0.01 * expected, "batch {batch}: {gflops} vs {expected}: {text}");
    }
    let order: Vec<usize> =
        text.lines().filter_map(|l| l.strip_prefix("batch ")?.split(':').next()?.trim().parse().ok()).collect();
    assert_eq!(order, [1, 4], "the batches in the order asked: {text}");
    assert!(!text.contains("simulations/s"), "the search was skipped: {text}");
}

#[test]
fn measures_the_search_with_the_threads_asked_for() {
    let text = bench_net(&["--batches", "2", "--search-threads", "1,2", "--burn"]);
    assert!(text.contains("net b1c8 (native backend, burn) on 4x4"), "{text}");
    assert!(rates(&text, 2).0 > 0.0, "{text}");
    // Each evaluator thread gets 16 leaves of the search's batch.
    for (threads, batch) in [(1, 16), (2, 32)] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("search, {threads} evaluator thread(s), batch {batch}:")))
            .unwrap_or_else(|| panic!("no search line for {threads} threads: {text}"));
        let rate: f64 = line.split_whitespace().rev().nth(1).unwrap().parse().unwrap();
        assert!(rate > 0.0, "{line}");
    }
}

#[test]
fn simd_limits_the_kernels_and_refuses_unknown_sets() {
    // `--simd avx2` (or KONANE_SIMD) keeps the kernels off AVX-512 and
    // says so; the results are the same to rounding (crates/nn/tests/simd_avx2.rs).
    let text = bench_net(&["--simd", "avx2", "--search-threads"]);
    let line = text.lines().next().unwrap_or_default();
    assert!(line.contains("native kernels, AVX2+FMA)") || line.contains("native kernels, baseline)"), "{text}");
    let text = String::from_utf8_lossy(
        &konane_command()
            .env("KONANE_SIMD", "avx2")
            .args(["bench-net", "--size", "4x4", "--blocks", "1", "--channels", "8", "--batches", "1"])
            .args(["--seconds", "0.05", "--search-threads"])
            .output()
            .expect("start konane bench-net")
            .stdout,
    )
    .into_owned();
    assert!(!text.contains("AVX-512") && text.contains("native kernels, "), "{text}");
    let out = konane_command().args(["--simd", "avx9", "perft", "6x6", "1"]).output().expect("start konane");
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && error.contains("avx9") && error.contains("avx2"), "{error}");
}
