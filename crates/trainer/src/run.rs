//! The run directory and its checkpoints.
//!
//! ```text
//! runs/6x6-quick-20261201-1200/
//!   config.toml                 the config the run uses
//!   metrics.jsonl               one line per iteration
//!   LATEST                      -> checkpoints/iter-000007/net.knet
//!   checkpoints/iter-000007/
//!     net.knet                  network (konane-nn format, CRC inside)
//!     optimizer.bpk             optimizer state (burnpack)
//!     replay.bin                replay window (versioned, CRC inside)
//!     state.json                loop state and the CRC of every file above;
//!                               its second line is the CRC of its first
//! ```
//!
//! A checkpoint is written into `iter-NNNNNN.partial/`, every file synced,
//! `state.json` last; the directory is then renamed and only after that does
//! `LATEST` move. A kill at any moment leaves either the previous checkpoint
//! as `LATEST` or the new one complete. On resume every file's checksum is
//! checked; a damaged latest checkpoint is skipped for the newest intact one.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use konane_nn::checkpoint::{self, LATEST};
use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::metrics::IterationMetrics;

/// Version of `state.json` this build writes. Version 2 added `partial`
/// (a checkpoint in the middle of an iteration); version 1 files still load.
pub const STATE_VERSION: u32 = 2;
/// Network file name inside a checkpoint.
pub const NET_FILE: &str = "net.knet";
/// Best-network file (gating) inside a checkpoint.
pub const BEST_FILE: &str = "best.knet";
/// Optimizer state file name.
pub const OPTIMIZER_FILE: &str = "optimizer.bpk";
/// Replay window file name.
pub const REPLAY_FILE: &str = "replay.bin";
/// Loop state file name.
pub const STATE_FILE: &str = "state.json";

/// The loop's state between iterations: with the network, optimizer and
/// replay files it determines the rest of the run (every random stream is
/// derived from the seed, the iteration and an index, so no generator
/// state needs saving).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunState {
    /// [`STATE_VERSION`].
    pub format: u32,
    /// Iterations completed.
    pub iteration: u64,
    /// Training steps taken (the schedule's clock).
    pub steps: u64,
    /// Self-play games played.
    pub games: u64,
    /// Ratings of the evaluation opponents from their round robin at the
    /// start of the run (the first is 0).
    pub anchors: Vec<(String, f64)>,
    /// Cumulative Elo from matches against each previous network.
    pub elo_chain: f64,
    /// Under gating: the iteration whose network plays self-play.
    pub best_iteration: u64,
    /// The bootstrap phase's losses, if it ran.
    pub bootstrap: Option<crate::bootstrap::BootstrapReport>,
    /// Every iteration's metrics so far.
    pub metrics: Vec<IterationMetrics>,
    /// An iteration stopped (Ctrl-C) after its self-play: this checkpoint
    /// holds its games (in the replay window) and whatever training it did;
    /// a resume continues it from there.
    #[serde(default)]
    pub partial: Option<PartialIteration>,
    /// CRC-32 of each file of the checkpoint, by name.
    pub files: BTreeMap<String, u32>,
    /// The network file the run started from (`--init-from`), if not
    /// fresh weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_from: Option<String>,
    /// A learner's progress through its workers' shards (`--role learner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest: Option<crate::cluster::IngestState>,
}

impl RunState {
    /// The number of the checkpoint this state belongs in: the last complete
    /// iteration, or the one in progress when it was stopped part-way.
    pub fn checkpoint_number(&self) -> u64 {
        self.partial.as_ref().map_or(self.iteration, |p| p.iteration)
    }
}

/// What a checkpoint written in the middle of an iteration (Ctrl-C after
/// its self-play) must remember to finish it exactly as an uninterrupted
/// run would: the network and optimizer files hold the training so far, the
/// replay file the iteration's games. Only integers and bit patterns feed
/// the metrics (a JSON number need not read back to its last bit); the
/// seconds are timings, which never compare exactly anyway.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PartialIteration {
    /// The iteration in progress (one more than the state's `iteration`).
    pub iteration: u64,
    /// Its self-play totals.
    pub selfplay: crate::selfplay::SelfPlayStats,
    /// Training steps taken.
    pub train_steps: u64,
    /// Whether its training is finished (the stop came during evaluation).
    pub trained: bool,
    /// `f64::to_bits` of the sums over the steps taken of the policy loss,
    /// value loss, policy entropy and target entropy.
    pub loss_sums: [u64; 4],
    /// `f64::to_bits` of the sum of the soft policy loss over the steps
    /// taken (0 without that output).
    #[serde(default)]
    pub soft_policy_sum: u64,
    /// The same of the reply policy loss.
    #[serde(default)]
    pub reply_policy_sum: u64,
    /// Samples trained on so far.
    pub trained_samples: u64,
    /// Seconds of self-play.
    pub selfplay_seconds: f64,
    /// Seconds of training so far.
    pub train_seconds: f64,
    /// Wall time spent on the iteration before the stop.
    pub seconds: f64,
    /// A learner's reading of shards for it (`--role learner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest: Option<crate::cluster::IngestReport>,
}

/// The directory of checkpoint `iteration`.
pub fn checkpoint_dir(run: &Path, iteration: u64) -> PathBuf {
    run.join("checkpoints").join(format!("iter-{iteration:06}"))
}

/// The checksum of a checkpoint file, read in pieces (a replay window may
/// be gigabytes) and only as far as any checkpoint file goes.
fn crc_of(path: &Path) -> Result<u32, TrainError> {
    use std::io::Read;
    let file = fs::File::open(path).map_err(|e| TrainError::io(path, e))?;
    let mut reader = file.take(crate::replay::MAX_REPLAY_BYTES + 1);
    let (mut hasher, mut buffer, mut total) = (crc32fast::Hasher::new(), vec![0u8; 1 << 16], 0u64);
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(TrainError::io(path, e)),
        };
        hasher.update(&buffer[..n]);
        total += n as u64;
    }
    if total > crate::replay::MAX_REPLAY_BYTES {
        return Err(TrainError::Damaged { path: path.to_path_buf(), reason: "longer than any checkpoint file".into() });
    }
    Ok(hasher.finalize())
}

/// Makes an empty `iter-NNNNNN.partial` directory to write a checkpoint into.
///
/// # Errors
/// I/O failure.
pub fn begin_checkpoint(run: &Path, iteration: u64) -> Result<PathBuf, TrainError> {
    let mut dir = checkpoint_dir(run, iteration).into_os_string();
    dir.push(".partial");
    let dir = PathBuf::from(dir);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| TrainError::io(&dir, e))?;
    }
    fs::create_dir_all(&dir).map_err(|e| TrainError::io(&dir, e))?;
    Ok(dir)
}

/// Seals a checkpoint whose data files are in `partial`: records their
/// checksums in `state.json`, renames the directory and moves `LATEST`.
///
/// # Errors
/// I/O failure.
pub fn commit_checkpoint(run: &Path, partial: &Path, state: &mut RunState) -> Result<PathBuf, TrainError> {
    state.files.clear();
    for entry in fs::read_dir(partial).map_err(|e| TrainError::io(partial, e))? {
        let entry = entry.map_err(|e| TrainError::io(partial, e))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if name != STATE_FILE && !name.ends_with(".tmp") {
            state.files.insert(name, crc_of(&entry.path())?);
        }
    }
    state.format = STATE_VERSION;
    let json = crate::metrics::to_json_checked(state, &partial.join(STATE_FILE))?;
    let text = format!("{json}\ncrc32 {:08x}\n", crc32fast::hash(json.as_bytes()));
    konane_files::write_atomically(&partial.join(STATE_FILE), text.as_bytes())?;
    // Make the files durable before the rename publishes them.
    for name in state.files.keys() {
        let path = partial.join(name);
        if let Ok(file) = fs::File::open(&path) {
            file.sync_all().map_err(|e| TrainError::io(&path, e))?;
        }
    }
    let dir = checkpoint_dir(run, state.checkpoint_number());
    // A checkpoint of the same number (the iteration's part-way one) is
    // moved aside, not deleted, until the new one is in place.
    let mut old = dir.clone().into_os_string();
    old.push(".old");
    let old = PathBuf::from(old);
    if dir.exists() {
        if old.exists() {
            fs::remove_dir_all(&old).map_err(|e| TrainError::io(&old, e))?;
        }
        fs::rename(&dir, &old).map_err(|e| TrainError::io(&dir, e))?;
    }
    fs::rename(partial, &dir).map_err(|e| TrainError::io(&dir, e))?;
    if let Ok(parent) = fs::File::open(dir.parent().expect("checkpoints/")) {
        let _ = parent.sync_all();
    }
    let relative = dir.strip_prefix(run).expect("inside the run").join(NET_FILE);
    checkpoint::set_latest(run, &relative)?;
    if old.exists() {
        fs::remove_dir_all(&old).map_err(|e| TrainError::io(&old, e))?;
    }
    Ok(dir)
}

/// Reads and checks `state.json` and the checksums of the files it lists.
///
/// # Errors
/// A missing, damaged or foreign state file, or a listed file that is
/// missing or does not match its checksum.
pub fn verify_checkpoint(dir: &Path) -> Result<RunState, TrainError> {
    let state = read_state(dir)?;
    let damaged = |reason: String| TrainError::Damaged { path: dir.join(STATE_FILE), reason };
    for required in [NET_FILE, OPTIMIZER_FILE, REPLAY_FILE] {
        if !state.files.contains_key(required) {
            return Err(damaged(format!("lists no {required}")));
        }
    }
    for (name, &expected) in &state.files {
        let file = dir.join(name);
        let actual = crc_of(&file)?;
        if actual != expected {
            return Err(TrainError::Damaged {
                path: file,
                reason: format!("checksum {actual:08x}, state.json recorded {expected:08x}: damaged or truncated"),
            });
        }
    }
    Ok(state)
}

/// Reads and checks `state.json` of the checkpoint in `dir` alone, not the
/// files it lists (for readers that need only the loop state, such as the
/// plot's bootstrap time).
///
/// # Errors
/// A missing, damaged or foreign state file.
pub fn read_state(dir: &Path) -> Result<RunState, TrainError> {
    let path = dir.join(STATE_FILE);
    let damaged = |reason: String| TrainError::Damaged { path: path.clone(), reason };
    let bytes = konane_files::read_bounded(&path, crate::metrics::MAX_METRICS_BYTES, "state file")?;
    let text = String::from_utf8(bytes).map_err(|_| damaged("not UTF-8 text".into()))?;
    let mut lines = text.lines();
    let json = lines.next().ok_or_else(|| damaged("empty".into()))?;
    let crc = lines
        .next()
        .and_then(|l| l.strip_prefix("crc32 "))
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| damaged("no checksum line (truncated?)".into()))?;
    if crc32fast::hash(json.as_bytes()) != crc {
        return Err(damaged("checksum mismatch".into()));
    }
    let state: RunState = serde_json::from_str(json).map_err(|e| damaged(format!("unreadable: {e}")))?;
    if !(1..=STATE_VERSION).contains(&state.format) {
        return Err(damaged(format!("state version {}, this build reads 1 to {STATE_VERSION}", state.format)));
    }
    Ok(state)
}

/// Whether the run in `run` has never committed a checkpoint: no `LATEST`
/// and no checkpoint directory (an unfinished `.partial` one aside). Such a
/// run holds nothing a restart could lose.
pub fn has_no_checkpoint(run: &Path) -> bool {
    !run.join(LATEST).exists() && list_checkpoints(run).is_empty()
}

/// Iterations of the complete-looking checkpoint directories, newest first.
pub fn list_checkpoints(run: &Path) -> Vec<u64> {
    let mut found: Vec<u64> = fs::read_dir(run.join("checkpoints"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("iter-")?.parse().ok())
        .collect();
    found.sort_unstable_by(|a, b| b.cmp(a));
    found
}

/// The checkpoint `LATEST` names: its number, if the pointer has the one
/// form this module writes, `checkpoints/iter-NNNNNN/net.knet`.
///
/// # Errors
/// A missing or unreadable pointer, or one naming anything else (a file
/// outside the run, another run's checkpoint).
pub fn latest_number(run: &Path) -> Result<u64, TrainError> {
    let pointer = run.join(LATEST);
    let target = checkpoint::read_pointer(&pointer)?;
    let parts: Vec<&str> = target.iter().filter_map(|part| part.to_str()).collect();
    match parts[..] {
        ["checkpoints", dir, NET_FILE] => match dir.strip_prefix("iter-").and_then(|n| n.parse().ok()) {
            Some(number) if dir == format!("iter-{number:06}") => Ok(number),
            _ => Err(TrainError::Damaged {
                path: pointer,
                reason: format!("names {}, which is no checkpoint of the run", target.display()),
            }),
        },
        _ => Err(TrainError::Damaged {
            path: pointer,
            reason: format!("names {}, not checkpoints/iter-NNNNNN/{NET_FILE}", target.display()),
        }),
    }
}

/// The newest intact checkpoint: the one `LATEST` names if it verifies,
/// else the newest that does. Returns its directory, state and the reasons
/// others were skipped. Only the run's own checkpoint directories are ever
/// candidates, and a checkpoint's state must carry its directory's number.
///
/// # Errors
/// No checkpoint verifies.
pub fn find_latest(run: &Path) -> Result<(PathBuf, RunState, Vec<String>), TrainError> {
    let mut skipped = Vec::new();
    let mut candidates = Vec::new();
    match latest_number(run) {
        Ok(number) => candidates.push(number),
        Err(e) => skipped.push(format!("LATEST: {e}")),
    }
    candidates.extend(list_checkpoints(run));
    let mut tried = Vec::new();
    for number in candidates {
        if tried.contains(&number) {
            continue;
        }
        tried.push(number);
        let dir = checkpoint_dir(run, number);
        match verify_checkpoint(&dir) {
            Ok(state) if state.checkpoint_number() == number => return Ok((dir, state, skipped)),
            Ok(state) => skipped.push(format!(
                "{}: its state is of checkpoint {}, not {number} (copied from elsewhere?)",
                dir.display(),
                state.checkpoint_number()
            )),
            Err(e) => skipped.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(TrainError::NoCheckpoint { dir: run.to_path_buf(), reasons: skipped.join("\n") })
}

/// Deletes checkpoints beyond the retention policy: the newest `keep_last`
/// stay, as do multiples of `keep_every`, and `keep` (the one `LATEST` names).
///
/// # Errors
/// I/O failure.
pub fn prune(run: &Path, keep_last: usize, keep_every: u64, keep: u64) -> Result<(), TrainError> {
    for (rank, iteration) in list_checkpoints(run).into_iter().enumerate() {
        let milestone = keep_every > 0 && iteration % keep_every == 0;
        if rank >= keep_last && !milestone && iteration != keep {
            let dir = checkpoint_dir(run, iteration);
            fs::remove_dir_all(&dir).map_err(|e| TrainError::io(&dir, e))?;
        }
    }
    Ok(())
}

/// Deletes checkpoints newer than `iteration` (a resumed run rewrites them)
/// and any unfinished `.partial` or replaced `.old` directory.
///
/// # Errors
/// I/O failure.
pub fn drop_newer(run: &Path, iteration: u64) -> Result<(), TrainError> {
    for entry in fs::read_dir(run.join("checkpoints")).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let newer = name.strip_prefix("iter-").and_then(|n| n.parse::<u64>().ok()).is_some_and(|i| i > iteration);
        if newer || name.ends_with(".partial") || name.ends_with(".old") {
            fs::remove_dir_all(entry.path()).map_err(|e| TrainError::io(&entry.path(), e))?;
        }
    }
    Ok(())
}

/// `LATEST` of a run, as the checkpoint directory it points into.
pub fn latest_dir(run: &Path) -> Option<PathBuf> {
    latest_number(run).ok().map(|number| checkpoint_dir(run, number))
}
