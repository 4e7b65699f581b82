//! `net:PATH,sims=N` players: PUCT search guided by a network, built from a
//! player spec, loading the network once and sharing it across games.

use std::path::Path;

use burn::tensor::Device;
use konane_mcts::search::SettingError;
use konane_mcts::{MctsPlayer, ParallelEvaluator, SearchConfig, SearchPatch, SymmetryEvaluator};
use konane_players::{Limits, Player, PlayerFactory};

use crate::backend::Backend;
use crate::checkpoint::{self, CheckpointError, NetHeader};
use crate::evaluator::NetEvaluator;
use crate::model::{Net, NetConfig};
use crate::shipped::{SHIPPED_PATH, ShippedFactory};
use crate::spec::{PlayerKind, PlayerSpec};

/// A player that could not be built from its spec.
#[derive(Debug, thiserror::Error)]
pub enum FactoryError {
    /// Its network file could not be loaded.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The spec names no network.
    #[error("{spec}: not a net: player")]
    NotANetwork {
        /// The player spec.
        spec: String,
    },
    /// Its search settings are out of range.
    #[error("{spec}: {error}")]
    Setting {
        /// The player spec.
        spec: String,
        /// The setting.
        error: SettingError,
    },
}

/// The network a `net:` path names, with its header and the file it came
/// from: `init` is the default network with fresh weights from `seed` (no
/// header), anything else a checkpoint file or a directory with a `LATEST`
/// pointer.
///
/// # Errors
/// The network file is missing, damaged or of another format.
pub fn load_model(path: &str, device: &Device, seed: u64) -> Result<(Net, Option<NetHeader>, String), CheckpointError> {
    if path == "init" {
        return Ok((crate::init_net(&NetConfig::new(), device, seed), None, "untrained network".into()));
    }
    let file = checkpoint::resolve(Path::new(path))?;
    let (net, header) = checkpoint::load(&file, device)?;
    Ok((net, Some(header), file.display().to_string()))
}

/// A PUCT player over the network (with a random symmetry per evaluation),
/// its batches split over one evaluator per thread.
pub type NetPlayer = MctsPlayer<SymmetryEvaluator<ParallelEvaluator<NetEvaluator>>>;

/// Leaves per evaluator thread when a search splits its batches over
/// several threads (`konane play`, `konane ktp`): each thread's share must
/// be large enough to pay for handing it over.
pub const LEAVES_PER_EVALUATOR_THREAD: usize = 16;

/// Builds network players for each game from one loaded network.
pub struct NetFactory {
    net: Net,
    backend: Backend,
    limits: Limits,
    search: SearchConfig,
    label: String,
    /// What the players' evaluation errors call the network: its file.
    network: String,
    seed: Option<u64>,
    evaluator_threads: usize,
    /// Whether the spec set `batch=`: such a batch is not grown by more threads.
    batch_set: bool,
    /// Symmetries each evaluation averages over (1: one random symmetry).
    symmetries: usize,
    /// The header of the loaded file (`None` for `net:init`).
    pub header: Option<NetHeader>,
}

impl NetFactory {
    /// A factory for `net` with these limits (`nodes == Some(0)`: raw policy).
    /// Its players search with [`NetEvaluator::for_backend`]; `label` names
    /// the player in reports and the network in errors.
    pub fn new(net: Net, backend: Backend, limits: Limits, search: SearchConfig, label: String) -> NetFactory {
        NetFactory {
            net,
            backend,
            limits,
            search,
            network: label.clone(),
            label,
            seed: None,
            evaluator_threads: 1,
            batch_set: false,
            symmetries: 1,
            header: None,
        }
    }

    /// Splits each player's batches over `threads` evaluators, one core
    /// each (for a single search: an engine, `konane play`); unless the
    /// spec set `batch=`, the batch grows to
    /// [`LEAVES_PER_EVALUATOR_THREAD`] a thread. Matches that already play
    /// games in parallel on every core keep one thread and their batch.
    pub fn with_evaluator_threads(mut self, threads: usize) -> NetFactory {
        let threads = threads.max(1);
        if !self.batch_set && threads > 1 {
            self.search.batch_size = self.search.batch_size.max(LEAVES_PER_EVALUATOR_THREAD * threads);
        }
        self.evaluator_threads = threads;
        self
    }

    /// The limits of its players' moves.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// A factory for a network player as a `net:` spec describes one: the
    /// player's search ([`SearchConfig::player`]) with `patch` on it, each
    /// evaluation averaged over `symmetries` board symmetries.
    ///
    /// # Errors
    /// A setting outside the search's ranges ([`SearchConfig::validate`]).
    pub fn tuned(
        net: Net,
        backend: Backend,
        limits: Limits,
        patch: SearchPatch,
        symmetries: usize,
        label: String,
    ) -> Result<NetFactory, FactoryError> {
        let search = patch.apply(SearchConfig::player());
        search.validate().map_err(|error| FactoryError::Setting { spec: label.clone(), error })?;
        let factory = NetFactory::new(net, backend, limits, search, label);
        Ok(NetFactory { batch_set: patch.batch_size.is_some(), symmetries: symmetries.max(1), ..factory })
    }

    /// Loads the network a `net:` spec names (a file, a directory with a
    /// `LATEST` pointer, or `init` for fresh seeded default weights).
    ///
    /// # Errors
    /// The network file is missing, damaged or of another format, or a
    /// search setting is out of range.
    pub fn from_spec(spec: &PlayerSpec, backend: Backend) -> Result<NetFactory, FactoryError> {
        let PlayerKind::Net { path, .. } = &spec.kind else {
            return Err(FactoryError::NotANetwork { spec: spec.to_string() });
        };
        let (net, header, network) = load_model(path, &backend.device(), spec.seed_or(0))?;
        NetFactory::for_spec(net, header, network, spec, backend)
    }

    /// A factory for a loaded `net` as a `net:` spec's options describe its
    /// player (search, symmetries, limits, seed); `network` names the
    /// network in errors.
    ///
    /// # Errors
    /// The spec is not a `net:` one, or a search setting is out of range.
    pub(crate) fn for_spec(
        net: Net,
        header: Option<NetHeader>,
        network: String,
        spec: &PlayerSpec,
        backend: Backend,
    ) -> Result<NetFactory, FactoryError> {
        let PlayerKind::Net { search, symmetries, .. } = &spec.kind else {
            return Err(FactoryError::NotANetwork { spec: spec.to_string() });
        };
        let symmetries = symmetries.unwrap_or(1);
        let factory = NetFactory::tuned(net, backend, spec.limits, *search, symmetries, spec.to_string())?;
        Ok(NetFactory { seed: spec.seed, header, network, ..factory })
    }
}

impl NetFactory {
    /// The player [`PlayerFactory::build`] boxes, with its concrete type so
    /// callers can read the search tree (hints, win estimates).
    pub fn build_player(&self, seed: u64) -> NetPlayer {
        let seed = self.seed.unwrap_or(seed);
        let evaluators = (0..self.evaluator_threads)
            .map(|_| NetEvaluator::for_backend(&self.net, self.backend).with_name(&self.network))
            .collect();
        let evaluator = SymmetryEvaluator::new(ParallelEvaluator::new(evaluators), seed).with_ensemble(self.symmetries);
        let raw_policy = self.limits.nodes == Some(0);
        let limits = if raw_policy { Limits { nodes: None, ..self.limits } } else { self.limits };
        MctsPlayer::new(evaluator, self.search, limits, seed, raw_policy)
    }
}

impl PlayerFactory for NetFactory {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn build(&self, seed: u64) -> Box<dyn Player> {
        Box::new(self.build_player(seed))
    }
}

/// A factory for any spec: networks are loaded here (their searches split
/// over `evaluator_threads` cores, see [`NetFactory::with_evaluator_threads`]),
/// baseline players are built by the spec itself.
///
/// # Errors
/// A `net:` spec whose network cannot be loaded or whose settings are out
/// of range.
pub fn player_factory(
    spec: &PlayerSpec,
    backend: Backend,
    evaluator_threads: usize,
) -> Result<Box<dyn PlayerFactory>, FactoryError> {
    Ok(match (spec.baseline(), &spec.kind) {
        (Some(baseline), _) => Box::new(baseline),
        (None, PlayerKind::Net { path, .. }) if path == SHIPPED_PATH => {
            Box::new(ShippedFactory::from_spec(spec, backend, evaluator_threads)?)
        }
        (None, _) => Box::new(NetFactory::from_spec(spec, backend)?.with_evaluator_threads(evaluator_threads)),
    })
}

/// [`player_factory`] for each spec, one evaluator thread each: the players
/// of a match, round robin or evaluation, which play their games in
/// parallel already.
///
/// # Errors
/// The first `net:` spec whose network cannot be loaded.
pub fn player_factories(specs: &[PlayerSpec], backend: Backend) -> Result<Vec<Box<dyn PlayerFactory>>, FactoryError> {
    specs.iter().map(|spec| player_factory(spec, backend, 1)).collect()
}
