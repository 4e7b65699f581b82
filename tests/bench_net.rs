//! `konane bench-net` end to end on a tiny network: it reports a speed per
//! batch size, its FLOP rate, and the search only when asked.

use std::process::Command;

fn bench_net(extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_konane"))
        .args(["bench-net", "--size", "4x4", "--blocks", "1", "--channels", "8", "--batches", "1,4"])
        .args(["--seconds", "0.05"])
        .args(extra)
        .output()
        .expect("start konane bench-net");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    text
}

/// The positions/s figure of the line for `batch`.
fn positions_per_second(text: &str, batch: usize) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("batch {batch:>4}:")))
        .unwrap_or_else(|| panic!("no line for batch {batch}: {text}"));
    line.split_whitespace().nth(2).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no rate in {line:?}"))
}

#[test]
fn reports_each_batch_and_skips_the_search_when_told() {
    let text = bench_net(&["--search-threads"]);
    assert!(text.contains("net b1c8 (flex backend, native kernels) on 4x4"), "{text}");
    assert!(positions_per_second(&text, 1) > 0.0, "{text}");
    assert!(positions_per_second(&text, 4) > 0.0, "{text}");
    assert!(!text.contains("simulations/s"), "the search was skipped: {text}");
}

#[test]
fn measures_the_search_with_the_threads_asked_for() {
    let text = bench_net(&["--batches", "2", "--search-threads", "1", "--burn"]);
    assert!(text.contains("net b1c8 (flex backend, burn) on 4x4"), "{text}");
    assert!(positions_per_second(&text, 2) > 0.0, "{text}");
    assert!(text.contains("search, 1 evaluator thread(s), batch 16:"), "{text}");
    assert!(!text.contains("2 evaluator thread(s)"), "{text}");
}
