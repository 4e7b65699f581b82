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
pub mod spec;
pub mod train;

pub use backend::Backend;
pub use checkpoint::{CheckpointError, NetHeader};
pub use evaluator::NetEvaluator;
pub use model::{Net, NetConfig};
pub use native::NativeNet;

/// Fresh weights of `config` on `device`, reproducible for a seed when built
/// on one thread (burn seeds its initialisers per device).
pub fn init_net(config: &NetConfig, device: &burn::tensor::Device, seed: u64) -> Net {
    device.seed(seed);
    config.init(device)
}
