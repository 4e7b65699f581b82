//! Self-describing network files.
//!
//! One file holds a small JSON header (format version, network shape, board
//! sizes trained on, training step) and the weights in burn's own burnpack
//! format, followed by a CRC-32 of everything before it:
//!
//! ```text
//! "KONANE-NET\n" | u32 format | u32 header length | header JSON
//!                | u64 weights length | burnpack weights | u32 crc32
//! ```
//!
//! A directory (a run, or a shipped model such as `checkpoints/6x6`) names
//! its current network in a `LATEST` file, a path relative to the directory.
//! Files are written to a temporary name and renamed, so a reader sees the
//! old file or the new one, never half of one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::store::ModuleRecord;
use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::model::{Net, NetConfig};

const MAGIC: &[u8] = b"KONANE-NET\n";
/// Version of the file layout and header; bumped on incompatible changes.
pub const FORMAT_VERSION: u32 = 1;
/// Name of the pointer file in a model or run directory.
pub const LATEST: &str = "LATEST";

/// What a network file says about itself.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetHeader {
    /// Layout version of the file ([`FORMAT_VERSION`]).
    pub format: u32,
    /// Shape of the network.
    pub net: NetConfig,
    /// Board sizes it was trained on (`6x6`, ...).
    pub sizes: Vec<String>,
    /// Training iteration that produced it (0: fresh weights).
    pub iteration: u64,
    /// Free text: the config or run it came from.
    pub note: String,
}

/// A network file that could not be read or written.
#[derive(Debug, Error)]
pub enum CheckpointError {
    /// The file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a network file, or is damaged.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The weights do not fit the network the header (or the caller) describes.
    #[error("{path}: the weights do not match network {expected}: {reason}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// The network expected.
        expected: String,
        /// The mismatch burn reported.
        reason: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io { path: path.to_path_buf(), source }
}

fn invalid(path: &Path, reason: impl Into<String>) -> CheckpointError {
    CheckpointError::Invalid { path: path.to_path_buf(), reason: reason.into() }
}

/// Writes `bytes` to `path` through a temporary file in the same directory,
/// synced before the rename.
///
/// # Errors
/// Any I/O failure, naming the file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let mut temp_name = path.file_name().unwrap_or_default().to_os_string();
    temp_name.push(".tmp");
    let temp = path.with_file_name(temp_name);
    let mut file = fs::File::create(&temp).map_err(io(&temp))?;
    file.write_all(bytes).map_err(io(&temp))?;
    file.sync_all().map_err(io(&temp))?;
    fs::rename(&temp, path).map_err(io(path))?;
    Ok(())
}

/// Serialises `net` with `header` into the file layout above.
///
/// # Errors
/// burn could not serialise the weights.
pub fn to_bytes(net: &Net, header: &NetHeader) -> Result<Vec<u8>, CheckpointError> {
    let header_json = serde_json::to_vec(header).expect("header serialises");
    let weights = net
        .clone()
        .into_record()
        .into_bytes()
        .map_err(|e| invalid(Path::new("<memory>"), format!("serialising weights: {e}")))?;
    let mut out = Vec::with_capacity(weights.len() + header_json.len() + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(header_json.len() as u32).to_le_bytes());
    out.extend_from_slice(&header_json);
    out.extend_from_slice(&(weights.len() as u64).to_le_bytes());
    out.extend_from_slice(&weights);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Saves `net` with `header` to `path` atomically.
///
/// # Errors
/// Serialisation or I/O failure.
pub fn save(net: &Net, header: &NetHeader, path: &Path) -> Result<(), CheckpointError> {
    write_atomically(path, &to_bytes(net, header)?)
}

/// Reads the header and the weights' bytes, checking magic, version,
/// lengths and checksum.
fn read_parts(path: &Path) -> Result<(NetHeader, Vec<u8>), CheckpointError> {
    let bytes = fs::read(path).map_err(io(path))?;
    parse_parts(&bytes, path)
}

/// [`read_parts`] on bytes already in memory; `path` names them in errors.
fn parse_parts(bytes: &[u8], path: &Path) -> Result<(NetHeader, Vec<u8>), CheckpointError> {
    let truncated = || invalid(path, format!("truncated ({} bytes)", bytes.len()));
    if !bytes.starts_with(MAGIC) {
        return Err(invalid(path, "not a konane network file (bad magic)"));
    }
    let word = |at: usize| -> Result<u32, CheckpointError> {
        Ok(u32::from_le_bytes(bytes.get(at..at + 4).ok_or_else(truncated)?.try_into().unwrap()))
    };
    let mut at = MAGIC.len();
    let version = word(at)?;
    if version != FORMAT_VERSION {
        return Err(invalid(path, format!("format version {version}, this build reads {FORMAT_VERSION}")));
    }
    let header_len = word(at + 4)? as usize;
    at += 8;
    let header_bytes = bytes.get(at..at + header_len).ok_or_else(truncated)?;
    at += header_len;
    let weights_len = u64::from_le_bytes(bytes.get(at..at + 8).ok_or_else(truncated)?.try_into().unwrap()) as usize;
    at += 8;
    let end = at.checked_add(weights_len).ok_or_else(truncated)?;
    if bytes.len() != end + 4 {
        return Err(if bytes.len() < end + 4 {
            truncated()
        } else {
            invalid(path, "trailing bytes after the checksum")
        });
    }
    let stored = u32::from_le_bytes(bytes[end..end + 4].try_into().unwrap());
    if crc32fast::hash(&bytes[..end]) != stored {
        return Err(invalid(path, "checksum mismatch: the file is damaged"));
    }
    let header: NetHeader =
        serde_json::from_slice(header_bytes).map_err(|e| invalid(path, format!("bad header: {e}")))?;
    if header.format != FORMAT_VERSION {
        return Err(invalid(path, format!("header format {} differs from file format", header.format)));
    }
    Ok((header, bytes[at..end].to_vec()))
}

/// Reads only the header of a network file.
///
/// # Errors
/// Missing, damaged or foreign files.
pub fn read_header(path: &Path) -> Result<NetHeader, CheckpointError> {
    read_parts(path).map(|(header, _)| header)
}

/// Loads a network file onto `device`: the header says which network to
/// build, and the weights must fit it exactly.
///
/// # Errors
/// Missing, damaged, foreign or mismatched files, naming the file.
pub fn load(path: &Path, device: &Device) -> Result<(Net, NetHeader), CheckpointError> {
    let (header, weights) = read_parts(path)?;
    build(path, header, weights, device)
}

/// Loads a network file held in memory (a network embedded in the binary);
/// `name` stands for the file in errors.
///
/// # Errors
/// Damaged, foreign or mismatched bytes.
pub fn load_bytes(bytes: &[u8], name: &str, device: &Device) -> Result<(Net, NetHeader), CheckpointError> {
    let path = Path::new(name);
    let (header, weights) = parse_parts(bytes, path)?;
    build(path, header, weights, device)
}

fn build(
    path: &Path,
    header: NetHeader,
    weights: Vec<u8>,
    device: &Device,
) -> Result<(Net, NetHeader), CheckpointError> {
    let net = header.net.init(device);
    let record = ModuleRecord::from_bytes(burn::tensor::Bytes::from_bytes_vec(weights))
        .map_err(|e| invalid(path, format!("unreadable weights: {e}")))?;
    let net = net.try_load_record(record).map_err(|e| CheckpointError::Shape {
        path: path.to_path_buf(),
        expected: header.net.name(),
        reason: e.to_string(),
    })?;
    Ok((net, header))
}

/// The network file a path names: the file itself, or for a directory the
/// file its `LATEST` pointer names.
///
/// # Errors
/// The path does not exist, or a directory has no valid `LATEST`.
pub fn resolve(path: &Path) -> Result<PathBuf, CheckpointError> {
    let meta = fs::metadata(path).map_err(io(path))?;
    if meta.is_file() {
        return Ok(path.to_path_buf());
    }
    let pointer = path.join(LATEST);
    let target = fs::read_to_string(&pointer).map_err(io(&pointer))?;
    let target = target.trim();
    if target.is_empty() {
        return Err(invalid(&pointer, "empty LATEST pointer"));
    }
    Ok(path.join(target))
}

/// Points `dir/LATEST` at `file` (a path relative to `dir`), atomically.
///
/// # Errors
/// I/O failure.
pub fn set_latest(dir: &Path, file: &Path) -> Result<(), CheckpointError> {
    write_atomically(&dir.join(LATEST), format!("{}\n", file.display()).as_bytes())
}
