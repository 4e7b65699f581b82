//! The Kōnane policy/value network in burn: input planes and move encoding,
//! the residual network, a batched evaluator for the search, and
//! self-describing checkpoint files.
#![deny(missing_docs)]

pub mod backend;
pub mod checkpoint;
pub mod encoding;
pub mod evaluator;
pub mod model;
pub mod native;
pub mod player;
pub mod shipped;
pub mod spec;
pub mod train;

pub use backend::Backend;
pub use checkpoint::{CheckpointError, NetHeader};
pub use evaluator::NetEvaluator;
pub use model::{Net, NetConfig};
pub use native::NativeNet;

/// Fresh weights of `config` on `device`, reproducible for a seed when built
/// on one thread.
///
/// burn's initialisers draw from a generator seeded per device, process
/// wide, and lazily, when a parameter is first used. So the weights are
/// drawn here, all of them, under a lock that every initialisation and
/// every load holds ([`checkpoint::load`] initialises a network before it
/// overwrites the weights): two networks built at once (parallel runs in
/// one process, tests) would otherwise interleave their draws.
pub fn init_net(config: &NetConfig, device: &burn::tensor::Device, seed: u64) -> Net {
    let _guard = init_lock();
    device.seed(seed);
    let net = config.init(device);
    net.materialize();
    net
}

/// Held by every initialisation and load of a network; see [`init_net`].
pub(crate) fn init_lock() -> std::sync::MutexGuard<'static, ()> {
    static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    INIT.lock().unwrap_or_else(|e| e.into_inner())
}
