#!/bin/bash
# Usage: accuracy.sh RUN OUT.json, from the repository root.
# The 12 players of docs/experiments/2026-12-04-forced-playouts-6x6.md on
# one run: its last network at 200 simulations with player seeds 1, 11-14,
# raw, then iterations 10, 20 and 30 at 200 simulations and raw.
set -euo pipefail
KONANE=${KONANE:-target/release/konane}
R=$1
P="net:$R,sims=200;net:$R,sims=200,seed=11;net:$R,sims=200,seed=12;net:$R,sims=200,seed=13;net:$R,sims=200,seed=14;net:$R,sims=0"
for i in 10 20 30; do
    P="$P;net:$R/checkpoints/iter-0000$i/net.knet,sims=200;net:$R/checkpoints/iter-0000$i/net.knet,sims=0"
done
"$KONANE" accuracy --size 6x6 --positions 500 --players "$P" --json "$2"
