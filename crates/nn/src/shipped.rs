//! The networks shipped in `checkpoints/`, compiled into the binary so
//! that every command works from any directory, and which of them plays a
//! board: the spec `net:shipped` is all of them, each board searched by the
//! network chosen for its size.

use std::sync::Arc;

use burn::tensor::Device;
use konane_players::{Choice, Limits, Player, PlayerError, PlayerFactory};
use konane_rules::{Position, Size};

use crate::backend::Backend;
use crate::checkpoint::{self, CheckpointError, NetHeader};
use crate::model::Net;
use crate::player::{FactoryError, NetFactory, NetPlayer};
use crate::spec::PlayerSpec;

/// The `net:` path that names the shipped networks.
pub const SHIPPED_PATH: &str = "shipped";

/// The shipped networks: (name, network file), `name` being the directory
/// under `checkpoints/`. A board plays with the first trained on its size,
/// any other board with the one trained on the most sizes
/// ([`choose_for_size`]). Which networks ship is measured: a specialist
/// stays only while it beats the all-size network on its own board. On
/// 6x6 the 6x6 network ties the all-size network in play (100 of 200
/// games at 800 simulations) and finds more winning moves with its raw
/// policy (283 against 277 of the 311 of `konane accuracy`, 824 against 804
/// over three position sets), for 62 ms a move against 46
/// (`docs/experiments/2026-12-07-quickest-proof-targets.md`), so it plays
/// 6x6. The 8x8 specialist lost to the all-size network on 8x8 (44 of 100
/// games at 800 simulations with the default endgame solver), so it is not
/// embedded; it stays a file (`checkpoints/8x8`, and the same network as
/// `checkpoints/reference-8x8`, the fixed zero-shot reference of
/// `docs/results.md`).
pub const MODELS: [(&str, &[u8]); 2] = [
    ("6x6", include_bytes!("../../../checkpoints/6x6/net.knet")),
    ("konane", include_bytes!("../../../checkpoints/konane/net.knet")),
];

/// Which of several networks plays a board of `size` when the user named
/// none, given the sizes each was trained on: the first trained on that
/// size, else the one trained on the most sizes (the first of those), as a
/// network that learned from many boards carries over to a new one better
/// than a specialist. 0 for an empty list.
pub fn choose_for_size<'a, I>(trained_on: I, size: Size) -> usize
where
    I: IntoIterator<Item = &'a [Size]>,
    I::IntoIter: Clone,
{
    let trained_on = trained_on.into_iter();
    trained_on.clone().position(|sizes| sizes.contains(&size)).unwrap_or_else(|| widest(trained_on))
}

/// Of several networks, given the sizes each was trained on, the one
/// trained on the most sizes (the first of those); 0 for an empty list.
fn widest<'a>(trained_on: impl Iterator<Item = &'a [Size]> + Clone) -> usize {
    let most = trained_on.clone().map(<[Size]>::len).max().unwrap_or(0);
    trained_on.clone().position(|sizes| sizes.len() == most).unwrap_or(0)
}

/// A shipped network, loaded.
pub struct ShippedModel {
    /// Its directory under `checkpoints/` (`6x6`).
    pub name: &'static str,
    /// The network.
    pub net: Net,
    /// Its header: the sizes it was trained on, its iteration.
    pub header: NetHeader,
}

impl ShippedModel {
    /// What reports and errors call it: `checkpoints/6x6 (embedded)`.
    pub fn label(&self) -> String {
        label_of(self.name)
    }
}

/// What reports and errors call the shipped network `name`.
fn label_of(name: &str) -> String {
    format!("checkpoints/{name} (embedded)")
}

/// The shipped network `MODELS[index]`, loaded.
fn load(index: usize, device: &Device) -> Result<ShippedModel, CheckpointError> {
    let (name, bytes) = MODELS[index];
    let (net, header) = checkpoint::load_bytes(bytes, &label_of(name), device)?;
    Ok(ShippedModel { name, net, header })
}

/// Every shipped network, in the order of [`MODELS`].
///
/// # Errors
/// An embedded file does not load (a build from a damaged checkout).
pub fn load_all(device: &Device) -> Result<Vec<ShippedModel>, CheckpointError> {
    (0..MODELS.len()).map(|index| load(index, device)).collect()
}

/// The shipped network that plays `size` when the user names none; only
/// that one is built (the others' headers are read to choose it).
///
/// # Errors
/// An embedded file does not load.
pub fn load_for(size: Size, device: &Device) -> Result<ShippedModel, CheckpointError> {
    let headers = headers()?;
    load(choose_for_size(headers.iter().map(|h| h.sizes.as_slice()), size), device)
}

/// The headers of [`MODELS`], in order, read without building a network.
fn headers() -> Result<Vec<NetHeader>, CheckpointError> {
    MODELS.iter().map(|&(name, bytes)| checkpoint::header_of_bytes(bytes, &label_of(name))).collect()
}

/// The shipped network trained on the most sizes (the all-size one), built
/// alone. The solver orders its moves by it on every board: on 6x6 its
/// policy needs 1.9 M nodes for the whole solve, the 6x6 network's 2.5 M
/// (`docs/experiments/2026-12-07-quickest-proof-targets.md`).
///
/// # Errors
/// An embedded file does not load.
pub fn load_widest(device: &Device) -> Result<ShippedModel, CheckpointError> {
    let headers = headers()?;
    load(widest(headers.iter().map(|h| h.sizes.as_slice())), device)
}

/// `net:shipped,...`: a factory per shipped network, all with the spec's
/// search and limits; its players pick the network by the board's size.
pub struct ShippedFactory {
    factories: Arc<[NetFactory]>,
    label: String,
}

impl ShippedFactory {
    /// The factory for a `net:shipped` spec, each search split over
    /// `evaluator_threads` cores.
    ///
    /// # Errors
    /// A search setting out of range, or an embedded file that does not load.
    pub fn from_spec(spec: &PlayerSpec, backend: Backend, evaluator_threads: usize) -> Result<Self, FactoryError> {
        let factories = load_all(&backend.device())?
            .into_iter()
            .map(|model| {
                let label = model.label();
                let factory = NetFactory::for_spec(model.net, Some(model.header), label, spec, backend)?;
                Ok(factory.with_evaluator_threads(evaluator_threads))
            })
            .collect::<Result<Vec<_>, FactoryError>>()?;
        Ok(ShippedFactory { factories: factories.into(), label: spec.to_string() })
    }
}

impl PlayerFactory for ShippedFactory {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn build(&self, seed: u64) -> Box<dyn Player> {
        let players = self.factories.iter().map(|_| None).collect();
        Box::new(ShippedPlayer { factories: Arc::clone(&self.factories), players, seed, label: self.label.clone() })
    }
}

/// A player over the shipped networks: each position is searched by the
/// network chosen for its size, whose player is built on first use.
pub struct ShippedPlayer {
    factories: Arc<[NetFactory]>,
    players: Vec<Option<NetPlayer>>,
    seed: u64,
    label: String,
}

impl ShippedPlayer {
    /// The index of the network that plays `size`.
    pub fn model_for(&self, size: Size) -> usize {
        let trained_on = self.factories.iter().map(|f| f.header.as_ref().map_or(&[][..], |h| h.sizes.as_slice()));
        choose_for_size(trained_on, size)
    }
}

impl Player for ShippedPlayer {
    fn name(&self) -> String {
        self.label.clone()
    }

    fn limits(&self) -> Limits {
        self.factories.first().map(NetFactory::limits).unwrap_or_default()
    }

    fn choose(&mut self, position: &Position, limits: &Limits) -> Result<Option<Choice>, PlayerError> {
        let chosen = self.model_for(position.size());
        let (factories, seed) = (&self.factories, self.seed);
        let player = self.players[chosen].get_or_insert_with(|| factories[chosen].build_player(seed));
        player.choose(position, limits)
    }

    fn new_game(&mut self) {
        for player in self.players.iter_mut().flatten() {
            player.new_game();
        }
    }
}

#[cfg(test)]
mod tests {
    use konane_rules::Size;

    use super::{choose_for_size, load_for, load_widest};
    use crate::Backend;

    #[test]
    fn every_board_gets_a_shipped_network_trained_on_it_or_the_widest() {
        let device = Backend::Native.device();
        for (size, expected) in [
            ("6x6", "6x6"),
            ("8x8", "konane"),
            ("10x10", "konane"),
            ("12x12", "konane"),
            ("14x14", "konane"),
            ("9x13", "konane"),
            ("14x17", "konane"),
            ("13x20", "konane"),
            ("7x7", "konane"),
            ("1x1", "konane"),
            ("20x20", "konane"),
        ] {
            let model = load_for(size.parse().unwrap(), &device).unwrap();
            assert_eq!(model.name, expected, "{size}");
            assert_eq!(model.label(), format!("checkpoints/{expected} (embedded)"));
        }
        assert_eq!(load_widest(&device).unwrap().name, "konane", "the solver's move order");
    }

    #[test]
    fn a_size_plays_with_its_specialist_else_the_widest_network() {
        let size = |s: &str| s.parse::<Size>().unwrap();
        let (six, eight) = ([size("6x6")], [size("8x8")]);
        let all = [size("10x10"), size("6x6"), size("8x8"), size("14x14")];
        let models: [&[Size]; 3] = [&six, &eight, &all];
        assert_eq!(choose_for_size(models, size("6x6")), 0);
        assert_eq!(choose_for_size(models, size("8x8")), 1);
        assert_eq!(choose_for_size(models, size("14x14")), 2);
        // A size none was trained on: the network that saw the most sizes.
        assert_eq!(choose_for_size(models, size("7x9")), 2);
        assert_eq!(choose_for_size(models[..2].iter().copied(), size("7x9")), 0);
        assert_eq!(choose_for_size([], size("7x9")), 0);
    }
}
