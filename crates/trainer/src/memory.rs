//! What a run's config asks of the machine's memory, estimated before
//! anything is allocated.
//!
//! Every key has its own range, but their products do not: a b40c512
//! network trained in batches of 8,192 20x20 positions is within every
//! range and needs terabytes for its step. Without this check such a run
//! is killed by the kernel mid-step (or takes the machine down with it)
//! instead of being refused with the keys to lower. The check compares the
//! estimate with the machine's whole memory, so only a run that clearly
//! cannot fit is refused; [`crate::trainer`] makes it on the final config
//! of a start or a resume, and a cluster worker on its own share.

use konane_nn::{Backend, NetConfig};
use konane_rules::Size;

use crate::config::{InvalidKey, TrainConfig};
use crate::replay::PackedSample;

/// Bytes of one `f32`.
const F32: u64 = 4;

/// A run's resident memory, part by part, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// The training step over the run's boards
    /// ([`training_step_bytes`]).
    pub training: u64,
    /// The replay window, or the bootstrap's labelled positions, which
    /// come before the window fills.
    pub replay: u64,
    /// Every self-play worker's search trees and output cache.
    pub selfplay: u64,
}

impl MemoryEstimate {
    /// The estimate for `config` run with `threads` self-play workers and
    /// training threads, all three parts (a run of role `both`).
    pub fn of(config: &TrainConfig, threads: usize) -> MemoryEstimate {
        let threads = threads.max(1) as u64;
        let batch = config.training.batch_size as u64;
        let training = training_step_bytes(&config.network, config.backend, &config.sizes, batch, threads);
        let cells = config.sizes.iter().map(|size| size.cells() as u64).max().unwrap_or(0);
        // About as many moves as an eighth of the cells have visits, at
        // the root and at the reply (8x8 samples measured about 110 bytes).
        let sample = std::mem::size_of::<PackedSample>() as u64 + cells.div_ceil(4) + 2 * cells.div_ceil(8) * 4;
        let bootstrap = config.bootstrap.as_ref().map_or(0, |b| b.positions as u64);
        let replay = (config.replay.window as u64).max(bootstrap).saturating_mul(sample);
        MemoryEstimate { training, replay, selfplay: selfplay_bytes(config, cells, threads) }
    }

    /// Only the self-play part: what a `konane selfplay` worker holds.
    pub fn selfplay_only(self) -> MemoryEstimate {
        MemoryEstimate { training: 0, replay: 0, ..self }
    }

    /// Without the self-play part: what a learner (`--role learner`) holds.
    pub fn without_selfplay(self) -> MemoryEstimate {
        MemoryEstimate { selfplay: 0, ..self }
    }

    /// The parts together.
    pub fn total(&self) -> u64 {
        self.training.saturating_add(self.replay).saturating_add(self.selfplay)
    }

    /// `Ok` if the estimate fits in `machine` bytes; otherwise an error
    /// naming the key that lowers the largest part, and each part's size.
    ///
    /// # Errors
    /// The estimate exceeds `machine`.
    pub fn check(&self, machine: u64) -> Result<(), InvalidKey> {
        if self.total() <= machine {
            return Ok(());
        }
        let (key, advice) = if self.training >= self.replay && self.training >= self.selfplay {
            (
                "training.batch_size",
                "the training step; lower training.batch_size or threads (a workspace each), or on a new run \
                 network.channels or network.blocks",
            )
        } else if self.replay >= self.selfplay {
            ("replay.window", "the replay window; lower replay.window (or bootstrap.positions)")
        } else {
            (
                "selfplay.parallel_games",
                "self-play's trees and caches; lower selfplay.parallel_games, selfplay.simulations, \
                 selfplay.search.max_nodes, selfplay.eval_cache or threads",
            )
        };
        let reason = format!(
            "the run would need about {} (training step {}, replay {}, self-play {}), more than this machine's {}: \
             most of it is {advice}",
            gib(self.total()),
            gib(self.training),
            gib(self.replay),
            gib(self.selfplay),
            gib(machine),
        );
        Err(InvalidKey::new(key, reason))
    }

    /// [`MemoryEstimate::check`] against this machine's memory, where it
    /// is known ([`physical_memory`]).
    ///
    /// # Errors
    /// The estimate exceeds the machine's memory.
    pub fn check_machine(&self) -> Result<(), InvalidKey> {
        physical_memory().map_or(Ok(()), |machine| self.check(machine))
    }
}

/// Self-play's trees and caches: each worker plays its share of the
/// iteration's games, `parallel_games` at a time.
fn selfplay_bytes(config: &TrainConfig, cells: u64, threads: u64) -> u64 {
    let s = &config.selfplay;
    let games = s.games.max(1) as u64;
    let workers = threads.min(games);
    let at_once = (s.parallel_games as u64).min(games.div_ceil(workers));
    // A tree holds the kept subtree and a move's new nodes: about twice
    // the simulations times the moves a node has (at most about a quarter
    // of the cells). Two arenas (a reroot copies into the spare), each
    // grown by doubling.
    let moves = cells.div_ceil(4).max(4);
    let nodes = 2u64.saturating_mul(s.simulations.max(s.fast_simulations)).saturating_mul(moves);
    let tree = 4 * nodes.min(s.search.max_nodes as u64) * konane_mcts::NODE_BYTES as u64;
    // Every slot is allocated up front; a filled one also holds the
    // priors of its position's moves.
    let slot = konane_mcts::cache::SLOT_BYTES as u64 + 16 + moves * F32;
    let cache = if s.eval_cache == 0 { 0 } else { s.eval_cache.next_power_of_two() as u64 * slot };
    workers.saturating_mul(at_once.saturating_mul(tree).saturating_add(cache))
}

/// Bytes the training step of `net` holds on `backend` for batches of
/// `batch` positions of the boards `sizes` split over `threads` threads.
/// The native engine's count is that of its buffers
/// (`konane_nn::native::train::step_bytes`, tested against what steps
/// hold). burn's autodiff (flex, ndarray) was
/// measured (`konane bench-train` under `/usr/bin/time -v`: 8x8 b4c48 and
/// b4c96 at batch 256, b8c48 at 512) to hold 2.5-3.7 activations of the
/// batch per convolution, counted here as 4. The GPU backends keep the
/// step on the device, and the host only a copy of the weights.
pub fn training_step_bytes(net: &NetConfig, backend: Backend, sizes: &[Size], batch: u64, threads: u64) -> u64 {
    let weights = net.parameters() * F32;
    match backend {
        Backend::Native => konane_nn::native::train::step_bytes(net, sizes, batch, threads),
        Backend::Flex | Backend::Ndarray => {
            let cells = sizes.iter().map(|size| size.cells() as u64).max().unwrap_or(0);
            let planes = batch.saturating_mul(cells * net.channels as u64 * F32);
            let convolutions = 2 * net.blocks as u64 + 1;
            planes.saturating_mul(convolutions * 4).saturating_add(4 * weights)
        }
        Backend::Wgpu | Backend::Cuda => 2 * weights,
    }
}

/// This machine's physical memory in bytes (`MemTotal` of
/// `/proc/meminfo`), or `None` where that is not known (other systems).
/// The total, not what is free now, so the same config gets the same
/// answer on the same machine. (One line of `/proc/meminfo` does not
/// justify a system-information crate; the process's own memory is read
/// the same way for the metrics.)
pub fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = text.lines().find_map(|line| line.strip_prefix("MemTotal:"))?.trim().strip_suffix("kB")?.trim();
    kib.parse::<u64>().ok()?.checked_mul(1024)
}

/// `bytes` in GiB with one decimal, for messages.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}
