#!/usr/bin/env bash
# burn's GPU backends: builds konane-nn with `--features wgpu` and runs the
# GPU tests (crates/nn/tests/gpu.rs) on the device.
# On a machine without a GPU it installs Mesa's software Vulkan (lavapipe),
# which runs the same wgpu code on the CPU. Run as root or with sudo.
#
#   scripts/test-gpu.sh            # wgpu
#   scripts/test-gpu.sh cuda       # CUDA: needs the NVIDIA driver, and nvcc or CUDARC_CUDA_VERSION to build
set -euo pipefail
cd "$(dirname "$0")/.."
backend="${1:-wgpu}"
case "$backend" in
  wgpu | cuda) ;;
  *) echo "usage: $0 [wgpu|cuda]" >&2; exit 2 ;;
esac
if [ "$backend" = wgpu ] && ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1
fi
# Mesa's window-system layer asks for a runtime directory even headless.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  XDG_RUNTIME_DIR="$(mktemp -d)"
  export XDG_RUNTIME_DIR
fi
# Its own target directory: the GPU feature changes burn's features, and
# sharing target/ would rebuild burn for every switch between the builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/$backend}"
cargo test -p konane-nn --features "$backend" --test gpu --locked
# A whole `konane train` run on the device, resumed, and a match.
cargo test --features "$backend" --test cli a_run_trains_and_resumes_on_wgpu --locked
