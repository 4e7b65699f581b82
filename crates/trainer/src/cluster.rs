//! A learner and any number of self-play workers as separate processes,
//! connected only by the run's shared storage ([`konane_exchange`]), in
//! the manner of KataGo's distributed training.
//!
//! - A **worker** ([`run_worker`]) reads the run's config, plays shards of
//!   `cluster.shard_games` games with the newest published network
//!   (looking for a newer one between shards), and writes each shard as
//!   one object, `shards/<worker>/<seq>.shard`, numbered from 1 and never
//!   replaced: a restarted worker continues after its last visible shard.
//! - The **learner** (`konane train --role learner`) reads shards instead of
//!   playing: per worker in sequence order, interleaved across workers,
//!   until an iteration's `selfplay.games` have arrived. Its checkpoint
//!   records the next sequence number of every worker with the replay
//!   window those shards went into, so after a kill the resume reads
//!   exactly the shards the lost iteration had read, and each shard joins
//!   the window once. Shards of networks more than
//!   `cluster.max_generation_lag` generations old are dropped and counted.
//!   After each checkpoint it publishes the network as the next
//!   generation (generation = iteration) and keeps the newest few.
//!
//! A shard's layout:
//!
//! ```text
//! "KONANE-SHARD\n" | u32 version (LE) | u32 header bytes (LE) | header (JSON) | replay window | u32 crc32 (LE)
//! ```
//!
//! The window is in the replay file's own layout ([`crate::replay`]), so a
//! shard's samples are checked as a replay file's are.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use konane_exchange::{Exchange, ExchangeError, Lease, keys};
use konane_nn::Net;
use konane_nn::checkpoint::{self, MAX_NET_BYTES};
use konane_rules::Size;
use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::config::{ClusterConfig, MAX_CONFIG_BYTES, TrainConfig};
use crate::memory::MemoryEstimate;
use crate::replay::{PackedSample, ReplayBuffer};
use crate::selfplay::{self, GameOutput, SelfPlayJob, SelfPlayStats, Stream, derive_seed};

const SHARD_MAGIC: &[u8] = b"KONANE-SHARD\n";
/// Version of the shard layout this build writes and reads.
pub const SHARD_VERSION: u32 = 1;
/// The largest shard read: 100,000 games of the largest boards fit.
pub const MAX_SHARD_BYTES: u64 = 4 << 30;
/// The largest shard header read.
const MAX_HEADER_BYTES: usize = 1 << 16;

/// What a shard says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardHeader {
    /// The worker that played it.
    pub worker: String,
    /// Its number among the worker's shards, from 1.
    pub seq: u64,
    /// The generation of the network that played it.
    pub generation: u64,
    /// Totals of its games.
    pub stats: SelfPlayStats,
}

/// A worker's finished games, as one object.
#[derive(Clone, Debug, PartialEq)]
pub struct Shard {
    /// What it says about itself.
    pub header: ShardHeader,
    /// Its training samples, in game order.
    pub samples: Vec<PackedSample>,
}

impl Shard {
    /// The shard in the layout of the module documentation.
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = serde_json::to_vec(&self.header).expect("a shard header serialises");
        let window = crate::replay::encode(&self.samples);
        let mut out = Vec::with_capacity(SHARD_MAGIC.len() + 12 + header.len() + window.len());
        out.extend_from_slice(SHARD_MAGIC);
        out.extend_from_slice(&SHARD_VERSION.to_le_bytes());
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&window);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads a shard written by [`Shard::to_bytes`].
    ///
    /// # Errors
    /// A foreign, damaged, truncated or newer shard, with the reason.
    pub fn from_bytes(bytes: &[u8]) -> Result<Shard, String> {
        if !bytes.starts_with(SHARD_MAGIC) {
            return Err("not a konane shard (bad magic)".into());
        }
        let fixed = SHARD_MAGIC.len() + 8;
        if bytes.len() < fixed + 4 {
            return Err(format!("truncated ({} bytes)", bytes.len()));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err("checksum mismatch: the shard is damaged or truncated".into());
        }
        let at = SHARD_MAGIC.len();
        let version = u32::from_le_bytes(body[at..at + 4].try_into().expect("4 bytes"));
        if version != SHARD_VERSION {
            return Err(format!("shard format version {version}, this build reads {SHARD_VERSION}"));
        }
        let length = u32::from_le_bytes(body[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        if length > MAX_HEADER_BYTES || fixed + length > body.len() {
            return Err(format!("header of {length} bytes does not fit"));
        }
        let header: ShardHeader =
            serde_json::from_slice(&body[fixed..fixed + length]).map_err(|e| format!("header: {e}"))?;
        let window = ReplayBuffer::from_bytes(&body[fixed + length..], usize::MAX).map_err(|e| e.to_string())?;
        Ok(Shard { header, samples: window.into_samples() })
    }
}

/// The run's config, as its learner published it; waits for it while the
/// learner has not started (unless `stop` is raised: `None`).
///
/// # Errors
/// The storage failed, or the config is not one this build reads.
pub fn read_config(exchange: &Exchange, poll: Duration, stop: &AtomicBool) -> Result<Option<TrainConfig>, TrainError> {
    let mut waited = false;
    loop {
        if let Some(bytes) = exchange.get(keys::CONFIG, MAX_CONFIG_BYTES, "config")? {
            let origin = format!("{}/{}", exchange.location(), keys::CONFIG);
            let text =
                String::from_utf8(bytes).map_err(|_| TrainError::Cluster(format!("{origin}: not UTF-8 text")))?;
            return Ok(Some(TrainConfig::parse(&text, &origin)?));
        }
        if !waited {
            tracing::info!(location = exchange.location(), "waiting for the learner to publish the run's config");
            waited = true;
        }
        if !sleep_unless_stopped(poll, stop) {
            return Ok(None);
        }
    }
}

/// The newest published generation, if any.
///
/// # Errors
/// The storage failed.
pub fn newest_generation(exchange: &Exchange) -> Result<Option<u64>, TrainError> {
    Ok(exchange.list(keys::NETWORKS)?.iter().filter_map(|(key, _)| keys::parse_network(key)).max())
}

/// Sleeps `duration` in short steps; false if `stop` was raised.
fn sleep_unless_stopped(duration: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + duration;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
    }
    !stop.load(Ordering::Relaxed)
}

/// FNV-1a of a worker's name: its games' seeds differ from every other
/// worker's.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xCBF2_9CE4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3))
}

/// How to run a self-play worker.
pub struct WorkerOptions {
    /// The run's shared location (a directory or a URL).
    pub location: String,
    /// The worker's name, unique in the run (its shards' directory).
    pub name: String,
    /// Self-play threads; `None` takes the config's `threads`.
    pub threads: Option<usize>,
    /// Stop after this many shards (`None`: until the run finishes or
    /// `stop` is raised).
    pub max_shards: Option<u64>,
    /// Raised by Ctrl-C: the shard in progress is dropped.
    pub stop: Arc<AtomicBool>,
    /// Called with each finished game.
    pub on_game: Box<dyn Fn(&GameOutput) + Sync>,
    /// Called with each published shard's header.
    pub on_shard: Box<dyn Fn(&ShardHeader)>,
}

/// What a worker did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerOutcome {
    /// Shards published.
    pub shards: u64,
    /// Games in them.
    pub games: u64,
    /// Moves played in them.
    pub positions: u64,
    /// Whether it ended because the learner finished the run.
    pub finished: bool,
    /// Seconds of self-play (not waiting).
    pub selfplay_seconds: f64,
}

/// Plays shards for the run at `options.location` until the learner
/// finishes the run, `max_shards` are published, or `stop` is raised.
///
/// # Errors
/// The storage failed, the name is taken or invalid, or the published
/// network does not fit the config.
pub fn run_worker(options: &WorkerOptions) -> Result<WorkerOutcome, TrainError> {
    keys::check_worker(&options.name).map_err(TrainError::Cluster)?;
    let exchange = Exchange::open(&options.location)?;
    let stop = &*options.stop;
    let default_poll = Duration::from_secs(1);
    let Some(config) = read_config(&exchange, default_poll, stop)? else { return Ok(WorkerOutcome::default()) };
    let poll = Duration::from_secs_f64(config.cluster.poll_seconds);
    let threads = options.threads.unwrap_or_else(|| config.threads());
    let mut selfplay_config = config.selfplay.clone();
    selfplay_config.games = config.cluster.shard_games;
    // A worker holds only self-play's trees and caches, for a shard's games
    // on its own threads.
    let share = TrainConfig { selfplay: selfplay_config.clone(), ..config.clone() };
    if let Err(e) = MemoryEstimate::of(&share, threads).selfplay_only().check_machine() {
        return Err(TrainError::Cluster(format!(
            "worker {:?} on {threads} threads: {} (on this machine, run fewer: `konane selfplay --threads`)",
            options.name, e.reason
        )));
    }
    let device = config.backend.device();
    let mut seq = exchange
        .list(&keys::worker_shards(&options.name))?
        .iter()
        .filter_map(|(key, _)| keys::parse_shard(key))
        .filter(|(worker, _)| *worker == options.name)
        .map(|(_, seq)| seq)
        .max()
        .unwrap_or(0)
        + 1;
    if seq > keys::MAX_NUMBER {
        // Only a foreign file numbered at the limit gets here (no worker
        // writes 10^12 shards): the learner would not read a longer number.
        return Err(TrainError::Cluster(format!(
            "worker {:?}: a shard numbered {} leaves no numbers after it; remove the foreign files from its directory",
            options.name,
            keys::MAX_NUMBER
        )));
    }
    tracing::info!(worker = %options.name, location = exchange.location(), first_shard = seq, threads, "worker started");
    let mut outcome = WorkerOutcome::default();
    let mut current: Option<(u64, Net)> = None;
    let mut waiting = false;
    while !stop.load(Ordering::Relaxed) && options.max_shards.is_none_or(|max| outcome.shards < max) {
        if exchange.get(keys::FINISHED, 4096, "finished marker")?.is_some() {
            tracing::info!(worker = %options.name, "the learner finished the run");
            outcome.finished = true;
            break;
        }
        let Some(newest) = newest_generation(&exchange)? else {
            if !waiting {
                tracing::info!(worker = %options.name, "waiting for the learner's first network");
                waiting = true;
            }
            sleep_unless_stopped(poll, stop);
            continue;
        };
        // Any other generation: a learner resumed from an older checkpoint
        // republishes its own newest, and later ones anew.
        if current.as_ref().is_none_or(|(generation, _)| *generation != newest) {
            let key = keys::network(newest);
            // Pruned between the listing and the read: look again.
            let Some(bytes) = exchange.get(&key, MAX_NET_BYTES, "network")? else { continue };
            let name = format!("{}/{key}", exchange.location());
            let (net, header) = checkpoint::load_bytes(&bytes, &name, &device)?;
            if header.net != config.network {
                return Err(TrainError::Cluster(format!(
                    "{name} is {} but the run's config asks for {}",
                    header.net.name(),
                    config.network.name()
                )));
            }
            tracing::info!(worker = %options.name, generation = newest, "playing with a new network");
            current = Some((newest, net));
        }
        let (generation, net) = current.as_ref().expect("just loaded");
        let started = Instant::now();
        // Sizes are dealt round-robin over the worker's games, across shards.
        let deal = config.size_deal();
        let first = (seq as usize).wrapping_sub(1).wrapping_mul(selfplay_config.games) % deal.len();
        let sizes: Vec<Size> = deal[first..].iter().chain(&deal[..first]).copied().collect();
        let job = SelfPlayJob {
            net,
            backend: config.backend,
            config: &selfplay_config,
            sizes: &sizes,
            seed: derive_seed(config.seed, seq, name_hash(&options.name), Stream::WorkerShard),
            iteration: *generation,
            threads,
            stop,
            on_game: &*options.on_game,
        };
        let Some((games, stats)) = selfplay::play_games(&job)? else { break };
        outcome.selfplay_seconds += started.elapsed().as_secs_f64();
        let header = ShardHeader { worker: options.name.clone(), seq, generation: *generation, stats };
        let shard = Shard { header, samples: games.into_iter().flat_map(|g| g.samples).collect() };
        let key = keys::shard(&options.name, seq);
        if !exchange.put_new(&key, shard.to_bytes())? {
            return Err(TrainError::Cluster(format!(
                "{}/{key} already exists: is another worker running as {:?}? Give each worker its own --worker name",
                exchange.location(),
                options.name
            )));
        }
        outcome.shards += 1;
        outcome.games += shard.header.stats.games as u64;
        outcome.positions += shard.header.stats.moves;
        (options.on_shard)(&shard.header);
        seq += 1;
    }
    Ok(outcome)
}

/// What the learner has read of its workers' shards: part of its
/// checkpoint, so that a resume reads each shard exactly once. (The
/// totals are the sums of the iterations' [`IngestReport`]s in the
/// checkpoint's metrics.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestState {
    /// The next sequence number to read, by worker.
    pub next: BTreeMap<String, u64>,
}

/// One iteration's reading.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IngestReport {
    /// Shards read.
    pub shards: u64,
    /// Shards dropped as stale, and their games.
    pub stale_shards: u64,
    /// Games in them.
    pub stale_games: u64,
    /// Shards that did not read.
    pub damaged_shards: u64,
    /// Workers whose shards were read.
    pub workers: usize,
    /// Seconds spent waiting for shards.
    pub wait_seconds: f64,
}

/// The shards to read next: every worker's shards from its next number on,
/// in sequence order per worker, interleaved across workers (each
/// worker's first pending shard, then each one's second, ...).
fn pending(exchange: &Exchange, next: &BTreeMap<String, u64>) -> Result<Vec<(String, u64)>, TrainError> {
    let mut by_worker: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for worker in exchange.dirs(keys::SHARDS)? {
        if keys::check_worker(&worker).is_err() {
            continue;
        }
        let first = next.get(&worker).copied().unwrap_or(1);
        // Names sort by number (eight digits), so only the new ones are listed.
        let after = keys::shard(&worker, first.saturating_sub(1));
        for (key, _) in exchange.list_after(&keys::worker_shards(&worker), &after)? {
            if let Some((name, seq)) = keys::parse_shard(&key)
                && name == worker
                && seq >= first
            {
                by_worker.entry(worker.clone()).or_default().push(seq);
            }
        }
    }
    let mut order: Vec<(usize, String, u64)> = Vec::new();
    for (worker, mut seqs) in by_worker {
        seqs.sort_unstable();
        order.extend(seqs.into_iter().enumerate().map(|(rank, seq)| (rank, worker.clone(), seq)));
    }
    order.sort();
    Ok(order.into_iter().map(|(_, worker, seq)| (worker, seq)).collect())
}

/// Reads shards until `games` games have arrived, or `stop` is raised
/// (`None`). Shards of networks more than `cluster.max_generation_lag`
/// generations older than `generation` are dropped; `state` advances past
/// every shard read.
///
/// # Errors
/// The storage failed.
pub fn ingest(
    exchange: &Exchange,
    state: &mut IngestState,
    games: usize,
    generation: u64,
    cluster: &ClusterConfig,
    stop: &AtomicBool,
    on_games: &dyn Fn(usize),
) -> Result<Option<(Vec<PackedSample>, SelfPlayStats, IngestReport)>, TrainError> {
    let mut samples = Vec::new();
    let mut stats = SelfPlayStats::default();
    let mut report = IngestReport::default();
    let mut workers = std::collections::BTreeSet::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let mut read = false;
        // In order per worker: each shard after those before it.
        for (worker, seq) in pending(exchange, &state.next)? {
            let key = keys::shard(&worker, seq);
            let Some(bytes) = exchange.get(&key, MAX_SHARD_BYTES, "shard")? else { continue };
            read = true;
            state.next.insert(worker.clone(), seq + 1);
            report.shards += 1;
            workers.insert(worker.clone());
            let shard = Shard::from_bytes(&bytes).and_then(|shard| {
                if shard.header.worker == worker && shard.header.seq == seq {
                    Ok(shard)
                } else {
                    Err(format!("it says it is shard {} of {:?}", shard.header.seq, shard.header.worker))
                }
            });
            match shard {
                Err(reason) => {
                    tracing::warn!("skipped {}/{key}: {reason}", exchange.location());
                    report.damaged_shards += 1;
                }
                Ok(shard) if shard.header.generation.saturating_add(cluster.max_generation_lag) < generation => {
                    tracing::debug!(%key, generation = shard.header.generation, "stale shard dropped");
                    report.stale_shards += 1;
                    report.stale_games += shard.header.stats.games as u64;
                }
                Ok(shard) => {
                    stats.add(&shard.header.stats);
                    samples.extend(shard.samples);
                    on_games(stats.games);
                    if stats.games >= games {
                        report.workers = workers.len();
                        return Ok(Some((samples, stats, report)));
                    }
                }
            }
        }
        if !read {
            let started = Instant::now();
            if !sleep_unless_stopped(Duration::from_secs_f64(cluster.poll_seconds), stop) {
                return Ok(None);
            }
            report.wait_seconds += started.elapsed().as_secs_f64();
        }
    }
}

/// Publishes `bytes` (a network file) as `generation`, the newest: removes
/// generations older than the `keep` newest, and any later ones (published
/// before a resume from an older checkpoint, so no longer the run's).
///
/// # Errors
/// The storage failed.
pub fn publish(exchange: &Exchange, generation: u64, bytes: Vec<u8>, keep: u64) -> Result<(), TrainError> {
    let published: Vec<(String, u64)> = exchange
        .list(keys::NETWORKS)?
        .into_iter()
        .filter_map(|(key, _)| keys::parse_network(&key).map(|other| (key, other)))
        .collect();
    // Later generations go first, so that no worker takes one for the newest.
    for (key, _) in published.iter().filter(|(_, other)| *other > generation) {
        exchange.delete(key)?;
    }
    exchange.put(&keys::network(generation), bytes)?;
    for (key, _) in published.iter().filter(|(_, old)| old + keep <= generation) {
        exchange.delete(key)?;
    }
    Ok(())
}

/// The learner's hold on its run: the shared storage and the lease,
/// renewed by a thread of its own every third of its length. If the lease
/// is lost (another learner took the run over after this one stalled) the
/// thread raises the run's stop flag and [`LearnerLink::close`] reports it.
pub struct LearnerLink {
    /// The shared storage.
    pub exchange: Exchange,
    lost: Arc<std::sync::Mutex<Option<ExchangeError>>>,
    done: Arc<AtomicBool>,
    renewer: Option<JoinHandle<Option<Lease>>>,
}

impl LearnerLink {
    /// Opens `location`, takes its lease, publishes `config_text` and
    /// clears a finished marker of an earlier end of the run. A `new_run`
    /// needs storage without shards or networks.
    ///
    /// # Errors
    /// Another learner holds the run, a new run's storage holds another
    /// run, or the storage failed.
    pub fn open(
        location: &str,
        config: &TrainConfig,
        config_text: &str,
        new_run: bool,
        stop: Arc<AtomicBool>,
    ) -> Result<LearnerLink, TrainError> {
        let exchange = Exchange::open(location)?;
        let lease = Lease::acquire(&exchange, konane_exchange::holder_name(), config.cluster.lease_seconds)?;
        // A new run's workers would otherwise feed it an old run's games.
        if new_run && !(exchange.list(keys::SHARDS)?.is_empty() && exchange.list(keys::NETWORKS)?.is_empty()) {
            lease.release(&exchange)?;
            return Err(TrainError::Cluster(format!(
                "{} already holds another run's shards or networks: resume that run (--resume), \
                 or give the new one empty storage",
                exchange.location()
            )));
        }
        tracing::info!(location = exchange.location(), holder = lease.holder(), "learner lease taken");
        exchange.put(keys::CONFIG, config_text.as_bytes().to_vec())?;
        exchange.delete(keys::FINISHED)?;
        let (lost, done) = (Arc::new(std::sync::Mutex::new(None)), Arc::new(AtomicBool::new(false)));
        let renew_exchange = Exchange::open(location)?;
        let (thread_lost, thread_done) = (lost.clone(), done.clone());
        let every = Duration::from_secs_f64(lease.seconds() / 3.0);
        let renewer = std::thread::Builder::new()
            .name("lease".into())
            .spawn(move || {
                loop {
                    if !sleep_unless_stopped(every, &thread_done) {
                        return Some(lease);
                    }
                    match lease.renew(&renew_exchange) {
                        Ok(()) => {}
                        Err(e @ ExchangeError::LeaseLost { .. }) => {
                            tracing::error!("{e}");
                            *thread_lost.lock().expect("lease state") = Some(e);
                            stop.store(true, Ordering::Relaxed);
                            return None;
                        }
                        // A passing storage failure: the next renewal may work.
                        Err(e) => tracing::warn!("renewing the learner lease: {e}"),
                    }
                }
            })
            .map_err(|e| TrainError::Threads { threads: 1, reason: e.to_string() })?;
        Ok(LearnerLink { exchange, lost, done, renewer: Some(renewer) })
    }

    /// Whether the lease was lost.
    pub fn lost(&self) -> bool {
        self.lost.lock().expect("lease state").is_some()
    }

    /// Stops renewing and releases the lease; with `finished`, marks the
    /// run finished at `generation` so its workers stop.
    ///
    /// # Errors
    /// The lease was lost while the learner ran, or the storage failed.
    pub fn close(mut self, finished: Option<u64>) -> Result<(), TrainError> {
        self.done.store(true, Ordering::Relaxed);
        let lease = self.renewer.take().and_then(|h| h.join().ok()).flatten();
        if let Some(e) = self.lost.lock().expect("lease state").take() {
            return Err(e.into());
        }
        if let Some(generation) = finished {
            self.exchange.put(keys::FINISHED, generation.to_string().into_bytes())?;
        }
        if let Some(lease) = lease {
            lease.release(&self.exchange)?;
        }
        Ok(())
    }
}

impl Drop for LearnerLink {
    fn drop(&mut self) {
        // An error path: stop the renewals and let the lease expire.
        self.done.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use konane_rules::{Position, Size};

    use super::*;

    fn shard(worker: &str, seq: u64, generation: u64, games: usize) -> Shard {
        let position = Position::start(Size::new_const(6, 6));
        let moves = position.moves();
        let samples =
            (0..games).map(|g| PackedSample::new(&position, moves.iter().map(|&m| (m, g as u32 + 1)), 0.5)).collect();
        let stats = SelfPlayStats { games, moves: 10 * games as u64, samples: games as u64, ..Default::default() };
        Shard { header: ShardHeader { worker: worker.into(), seq, generation, stats }, samples }
    }

    #[test]
    fn a_shard_reads_back_and_damage_is_refused() {
        let original = shard("w1", 3, 7, 4);
        let bytes = original.to_bytes();
        assert_eq!(Shard::from_bytes(&bytes).unwrap(), original);
        for cut in [0, 5, bytes.len() / 2, bytes.len() - 1] {
            assert!(Shard::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[SHARD_MAGIC.len() + 20] ^= 1;
        assert!(Shard::from_bytes(&flipped).unwrap_err().contains("checksum"));
    }

    #[test]
    fn ingestion_reads_each_shard_once_in_order_and_drops_stale_ones() {
        let dir = tempfile::tempdir().unwrap();
        let exchange = Exchange::open(dir.path().to_str().unwrap()).unwrap();
        let put =
            |s: Shard| assert!(exchange.put_new(&keys::shard(&s.header.worker, s.header.seq), s.to_bytes()).unwrap());
        put(shard("a", 1, 5, 2));
        put(shard("a", 2, 5, 2));
        put(shard("b", 1, 1, 3)); // generation 1 is stale at 5 with lag 2
        put(shard("b", 2, 4, 2));
        exchange.put("shards/b/00000003.shard", b"torn or foreign".to_vec()).unwrap();
        let stop = AtomicBool::new(false);
        let mut state = IngestState::default();
        let cluster = ClusterConfig { max_generation_lag: 2, poll_seconds: 0.01, ..ClusterConfig::default() };
        let (samples, stats, report) = ingest(&exchange, &mut state, 4, 5, &cluster, &stop, &|_| {}).unwrap().unwrap();
        // a1, then b1 (stale), then a2 and b2 interleaved: a1 + a2 reach 4 games.
        assert_eq!((stats.games, samples.len()), (4, 4));
        assert_eq!((report.shards, report.stale_games), (3, 3));
        assert_eq!(state.next, BTreeMap::from([("a".into(), 3), ("b".into(), 2)]));
        // The next iteration continues where this one stopped, with b2.
        let again = ingest(&exchange, &mut state, 2, 5, &cluster, &stop, &|_| {}).unwrap().unwrap();
        assert_eq!((again.1.games, again.2.shards), (2, 1));
        assert_eq!(state.next["b"], 3);
        // The damaged b3 is skipped and counted; b4 is read.
        put(shard("b", 4, 5, 1));
        let third = ingest(&exchange, &mut state, 1, 5, &cluster, &stop, &|_| {}).unwrap().unwrap();
        assert_eq!((third.1.games, third.2.damaged_shards, third.2.shards), (1, 1, 2));
        assert_eq!(state.next["b"], 5);
        // Nothing new: it waits, until stopped.
        stop.store(true, Ordering::Relaxed);
        assert!(ingest(&exchange, &mut state, 1, 5, &cluster, &stop, &|_| {}).unwrap().is_none());
    }
}
