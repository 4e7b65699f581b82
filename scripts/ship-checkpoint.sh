#!/usr/bin/env bash
# Copies a training run's latest network into a shipped model directory
# (checkpoints/6x6, checkpoints/8x8): the network file, a LATEST pointer, the
# run's config and metrics (not its replay data or optimizer state), and the
# training curves against hours.
#
#   scripts/ship-checkpoint.sh runs/6x6-ship checkpoints/6x6
#   scripts/ship-checkpoint.sh runs/6x6-refine checkpoints/6x6 21   # a kept iteration, not LATEST
set -euo pipefail
usage='usage: ship-checkpoint.sh RUN_DIR MODEL_DIR [ITERATION]'
run=${1:?$usage}
dest=${2:?$usage}
konane=${KONANE:-target/release/konane}
if [ -n "${3:-}" ]; then
  latest=$(printf 'checkpoints/iter-%06d/net.knet' "$3")
  [ -f "$run/$latest" ] || { echo "$run/$latest: no such checkpoint (kept ones: $(ls "$run/checkpoints" | tr '\n' ' '))" >&2; exit 1; }
else
  latest=$(tr -d '\n' < "$run/LATEST")
fi
if grep -q '"partial":{' "$run/$(dirname "$latest")/state.json"; then
  echo "$run/$latest is part-way through an iteration (stopped by Ctrl-C): resume the run to finish it first" >&2
  exit 1
fi
mkdir -p "$dest"
cp "$run/$latest" "$dest/net.knet.tmp" && mv "$dest/net.knet.tmp" "$dest/net.knet"
printf 'net.knet\n' > "$dest/LATEST.tmp" && mv "$dest/LATEST.tmp" "$dest/LATEST"
cp "$run/config.toml" "$dest/config.toml"
if [ -n "${3:-}" ]; then
  # One line per iteration from 1: a kept iteration ships the lines up to it.
  head -n "$3" "$run/metrics.jsonl" > "$dest/metrics.jsonl"
else
  cp "$run/metrics.jsonl" "$dest/metrics.jsonl"
fi
"$konane" plot "$run" --hours --out "$dest/curves.png"
echo "shipped $run/$latest -> $dest ($(du -h "$dest/net.knet" | cut -f1))"
