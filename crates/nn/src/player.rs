//! `net:PATH,sims=N` players: PUCT search guided by a network, built from a
//! player spec, loading the network once and sharing it across games.

use std::path::Path;

use burn::tensor::Device;
use konane_mcts::{MctsPlayer, SearchConfig, SymmetryEvaluator};
use konane_players::arena::PlayerFactory;
use konane_players::spec::PlayerKind;
use konane_players::{Limits, Player, PlayerSpec};

use crate::backend::Backend;
use crate::checkpoint::{self, CheckpointError, NetHeader};
use crate::evaluator::NetEvaluator;
use crate::model::{Net, NetConfig};

/// Builds network players for each game from one loaded network.
pub struct NetFactory {
    net: Net,
    device: Device,
    limits: Limits,
    search: SearchConfig,
    label: String,
    seed: Option<u64>,
    /// The header of the loaded file (`None` for `net:init`).
    pub header: Option<NetHeader>,
}

impl NetFactory {
    /// A factory for `net` with these limits (`nodes == Some(0)`: raw policy).
    pub fn new(net: Net, device: Device, limits: Limits, search: SearchConfig, label: String) -> NetFactory {
        NetFactory { net, device, limits, search, label, seed: None, header: None }
    }

    /// Loads the network a `net:` spec names (a file, a directory with a
    /// `LATEST` pointer, or `init` for fresh seeded default weights).
    ///
    /// # Errors
    /// The network file is missing, damaged or of another format.
    pub fn from_spec(spec: &PlayerSpec, backend: Backend) -> Result<NetFactory, CheckpointError> {
        let PlayerKind::Net { path } = &spec.kind else {
            panic!("NetFactory::from_spec on a non-net spec {spec}");
        };
        let device = backend.device();
        let (net, header) = if path == "init" {
            (crate::init_net(&NetConfig::new(), &device, spec.seed_or(0)), None)
        } else {
            let file = checkpoint::resolve(Path::new(path))?;
            let (net, header) = checkpoint::load(&file, &device)?;
            (net, Some(header))
        };
        let mut factory = NetFactory::new(net, device, spec.limits, SearchConfig::default(), spec.to_string());
        factory.seed = spec.seed;
        factory.header = header;
        Ok(factory)
    }
}

impl PlayerFactory for NetFactory {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn build(&self, seed: u64) -> Box<dyn Player> {
        let seed = self.seed.unwrap_or(seed);
        let evaluator = SymmetryEvaluator::new(NetEvaluator::new(self.net.clone(), self.device.clone()), seed);
        let raw_policy = self.limits.nodes == Some(0);
        let limits = if raw_policy { Limits { nodes: None, ..self.limits } } else { self.limits };
        Box::new(MctsPlayer::new(evaluator, self.search.clone(), limits, seed, raw_policy))
    }
}

/// A factory for any spec: networks are loaded here, baseline players are
/// built by the spec itself.
///
/// # Errors
/// A `net:` spec whose network cannot be loaded.
pub fn player_factory(spec: &PlayerSpec, backend: Backend) -> Result<Box<dyn PlayerFactory>, CheckpointError> {
    Ok(match spec.kind {
        PlayerKind::Net { .. } => Box::new(NetFactory::from_spec(spec, backend)?),
        _ => Box::new(spec.clone()),
    })
}
