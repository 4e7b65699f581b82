#!/usr/bin/env bash
# Runs the fuzz targets long, in release mode, and prints how many inputs
# each ran. CI runs the same targets with a bounded count (their defaults).
#
#   scripts/fuzz.sh [SCALE] [SEED]
#
# SCALE multiplies every target's count (1: 10.3 million inputs in all, about
# 6.5 minutes in release on one core of the 2-core EPYC); SEED picks other
# inputs than the default run.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-1}
export KONANE_FUZZ_SEED=${2:-20261201}
# One package selection for every run, so cargo builds the binaries once.
cargo test --release --quiet --workspace --test fuzz --test fuzz_ktp --no-run
run() { # package test-file target count (the package is for the reader)
  KONANE_FUZZ_CASES=$(($4 * scale)) cargo test --release --quiet --workspace --test fuzz --test fuzz_ktp "$3" \
    -- --exact --nocapture 2>&1 | grep -E '^fuzz target|minimal failing input|Test failed|panicked at'
}
run konane-rules fuzz position_strings 2000000
run konane-rules fuzz sizes 1000000
run konane-rules fuzz moves 2000000
run konane-rules fuzz game_records 1000000
run konane-players fuzz_ktp command_by_command_a_failure_changes_nothing 1000000
run konane-players fuzz_ktp byte_streams_get_one_answer_per_line 500000
run konane-trainer fuzz configs 1000000
run konane-trainer fuzz replay_files 1000000
run konane-trainer fuzz state_and_metrics_files 300000
run konane-nn fuzz network_files 500000
