//! What a run's config asks of the machine's memory, estimated before
//! anything is allocated.
//!
//! Every key has its own range, but their products do not: a b40c512
//! network trained in batches of 8,192 20x20 positions is within every
//! range and needs terabytes of activations. Without this check such a run
//! is killed by the kernel mid-step (or takes the machine down with it)
//! instead of being refused with the keys to lower. The estimates are fits
//! to measured peaks (`konane bench-train` under `/usr/bin/time -v`, the
//! 8x8 runs' `peak_rss_mib`) that lean high as a part grows, and they are
//! compared with the machine's whole memory, so a run is refused only when
//! it clearly cannot fit.

use konane_nn::{Backend, NetConfig};

use crate::config::TrainConfig;
use crate::replay::PackedSample;

/// Bytes of one `f32`.
const F32: u64 = 4;

/// Bytes of one search-tree node (`konane_mcts` keeps them at 40).
const NODE_BYTES: u64 = 40;

/// A run's resident memory, part by part, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// The training step: activations and gradients of one batch of the
    /// largest board, the weights and the optimizer's state
    /// ([`training_step_bytes`]).
    pub training: u64,
    /// The replay window and the bootstrap's labelled positions.
    pub replay: u64,
    /// Every self-play worker's search trees and output cache.
    pub selfplay: u64,
}

impl MemoryEstimate {
    /// The estimate for `config` run with `threads` self-play workers and
    /// training threads.
    pub fn of(config: &TrainConfig, threads: usize) -> MemoryEstimate {
        let cells = config.sizes.iter().map(|size| size.cells() as u64).max().unwrap_or(0);
        let threads = threads.max(1) as u64;
        let training =
            training_step_bytes(&config.network, config.backend, cells, config.training.batch_size as u64, threads);

        // A packed sample: its struct, two bits a cell, and (policy index,
        // visits) pairs for the root's moves and the reply's, about an
        // eighth of the cells each (8x8 samples measured about 110 bytes).
        let sample = std::mem::size_of::<PackedSample>() as u64 + cells.div_ceil(4) + 2 * cells.div_ceil(8) * 4;
        let bootstrap = config.bootstrap.as_ref().map_or(0, |b| b.positions as u64);
        let replay = (config.replay.window as u64 + bootstrap) * sample;

        // A game's tree holds the kept subtree and a move's new nodes,
        // about twice the simulations times the moves a node has (at most
        // about a quarter of the cells); two arenas (the reroot copies
        // into the spare) that grow by doubling.
        let s = &config.selfplay;
        let simulations = s.simulations.max(s.fast_simulations);
        let nodes = (2 * simulations * cells.div_ceil(4).max(4)).min(s.search.max_nodes as u64);
        let tree = 2 * 2 * nodes * NODE_BYTES;
        // A cache slot: the position, the value, the priors of its moves.
        let slot = 96 + cells.div_ceil(4) * F32;
        let cache = if s.eval_cache == 0 { 0 } else { s.eval_cache.next_power_of_two() as u64 * slot };
        let selfplay = threads * (s.parallel_games as u64 * tree + cache);

        MemoryEstimate { training, replay, selfplay }
    }

    /// The three parts together.
    pub fn total(&self) -> u64 {
        self.training + self.replay + self.selfplay
    }

    /// The config keys that lower the largest part, and the part's name.
    pub fn largest(&self) -> (&'static str, &'static str) {
        if self.training >= self.replay && self.training >= self.selfplay {
            ("training.batch_size", "the training step; lower training.batch_size, network.channels or network.blocks")
        } else if self.replay >= self.selfplay {
            ("replay.window", "the replay window; lower replay.window (or bootstrap.positions)")
        } else {
            (
                "selfplay.parallel_games",
                "self-play's trees and caches; lower selfplay.parallel_games, selfplay.simulations, \
                 selfplay.search.max_nodes, selfplay.eval_cache or threads",
            )
        }
    }
}

/// Bytes the training step of `net` holds on `backend` for batches of
/// `batch` positions of `cells` cells split over `threads` threads: its
/// activations and gradients, the weights and the optimizer's state. The
/// GPU backends' activations live on the device and are not counted.
pub fn training_step_bytes(net: &NetConfig, backend: Backend, cells: u64, batch: u64, threads: u64) -> u64 {
    let (blocks, channels) = (net.blocks as u64, net.channels as u64);
    // One activation plane set of the batch; the tower keeps about one per
    // convolution for the backward pass. Measured at batch 256 (8x8 b4c48,
    // b8c48, b4c96, b4c128, b8c96; 16x16 b4c48; batch 1024): the native
    // step holds 0.5-1.0 of these per convolution at 48 channels and more
    // as the channels grow (its transform buffers scale with the widest
    // layer), burn's autodiff (flex, ndarray) 2.5-3.7 whatever the width.
    let planes = batch * cells * channels * F32;
    let convolutions = 2 * blocks + 1;
    let activations = match backend {
        Backend::Native => planes * convolutions * channels.div_ceil(48),
        Backend::Flex | Backend::Ndarray => planes * convolutions * 4,
        _ => 0,
    };
    // Weights, gradients, AdamW's two moments, the kernels' layouts of the
    // weights, and a gradient per training thread.
    activations + net.parameters() * F32 * (6 + threads.max(1))
}

/// This machine's physical memory in bytes (`MemTotal` of
/// `/proc/meminfo`), or `None` where that is not known. The total, not
/// what is free now, so a config is refused only for what can never fit and
/// the same config validates the same way on the same machine. (One line of
/// `/proc/meminfo` does not justify a system-information crate; the
/// process's own memory is read the same way for the metrics.)
pub fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = text.lines().find_map(|line| line.strip_prefix("MemTotal:"))?.trim().strip_suffix("kB")?.trim();
    kib.parse::<u64>().ok().map(|kib| kib * 1024)
}

/// `bytes` in GiB with one decimal, for messages.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}
