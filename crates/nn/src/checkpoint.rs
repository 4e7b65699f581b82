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
//! its current network in a `LATEST` file, a path relative to the directory
//! and inside it. Files are written to a temporary name and renamed
//! ([`konane_files::write_atomically`]), so a reader sees the old file or
//! the new one, never half of one.
//!
//! Reading trusts nothing: the checksum catches damage, the header's network
//! shape is checked against [`NetConfig::validate`]'s ranges, and against
//! the size of the weights the file holds, before anything is allocated
//! for it.

use std::fs;
use std::path::{Component, Path, PathBuf};

use konane_files::WriteError;

use burn::module::Module;
use burn::store::ModuleRecord;
use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::model::{Net, NetConfig};

const MAGIC: &[u8] = b"KONANE-NET\n";
/// Version of the file layout and header; bumped on incompatible changes.
pub const FORMAT_VERSION: u32 = 1;
/// The longest network file read: b40c512, the largest shape
/// [`NetConfig::validate`] allows, takes 0.75 GB.
pub const MAX_NET_BYTES: u64 = 2 << 30;
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
    pub sizes: Vec<konane_rules::Size>,
    /// Training iteration that produced it (0: fresh weights).
    pub iteration: u64,
    /// Free text: the config or run it came from.
    pub note: String,
}

/// A network file that could not be read or written.
#[derive(Debug, Error)]
pub enum CheckpointError {
    /// The file or directory could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file is not a network file, or is damaged.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
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

impl From<konane_files::ReadError> for CheckpointError {
    fn from(error: konane_files::ReadError) -> CheckpointError {
        match error {
            konane_files::ReadError::Io { path, error } => CheckpointError::Io { path, error },
            konane_files::ReadError::TooLong { path, max, what } => {
                CheckpointError::Invalid { path, reason: format!("more than {max} bytes, too long for a {what}") }
            }
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |error| CheckpointError::Io { path: path.to_path_buf(), error }
}

fn invalid(path: &Path, reason: impl Into<String>) -> CheckpointError {
    CheckpointError::Invalid { path: path.to_path_buf(), reason: reason.into() }
}

/// Serialises `net` with `header` into the file layout above.
///
/// # Errors
/// The header describes another network than `net` (its file could never
/// be loaded), or burn could not serialise the weights.
pub fn to_bytes(net: &Net, header: &NetHeader) -> Result<Vec<u8>, CheckpointError> {
    let actual = net.config();
    if header.net != actual {
        return Err(invalid(
            Path::new("<memory>"),
            format!("the header says network {}, the weights are {}", header.net.name(), actual.name()),
        ));
    }
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
    Ok(konane_files::write_atomically(path, &to_bytes(net, header)?)?)
}

/// Reads the header and the weights' bytes, checking magic, version,
/// lengths and checksum.
fn read_parts(path: &Path) -> Result<(NetHeader, Vec<u8>), CheckpointError> {
    let bytes = konane_files::read_bounded(path, MAX_NET_BYTES, "network file")?;
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
    let end = at.checked_add(weights_len).filter(|end| *end <= bytes.len().saturating_sub(4)).ok_or_else(truncated)?;
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
    header.net.validate().map_err(|e| invalid(path, format!("bad header: {e}")))?;
    // Weights are f32: a header claiming a bigger network than the file
    // holds is refused before that network is allocated.
    let needed = header.net.parameters().saturating_mul(4);
    if (weights_len as u64) < needed {
        return Err(invalid(
            path,
            format!(
                "the header's network {} needs {needed} bytes of weights, the file holds {weights_len}",
                header.net.name()
            ),
        ));
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

/// The header of a network file held in memory; `name` stands for the
/// file in errors.
///
/// # Errors
/// Damaged or foreign bytes.
pub fn header_of_bytes(bytes: &[u8], name: &str) -> Result<NetHeader, CheckpointError> {
    parse_parts(bytes, Path::new(name)).map(|(header, _)| header)
}

fn build(
    path: &Path,
    header: NetHeader,
    weights: Vec<u8>,
    device: &Device,
) -> Result<(Net, NetHeader), CheckpointError> {
    check_tensors(path, &weights)?;
    // Building a network draws its initial weights before the file's
    // replace them: under the initialisation lock (see `crate::init_net`).
    let _guard = crate::init_lock();
    let net = header.net.init(device);
    let record = ModuleRecord::from_bytes(burn::tensor::Bytes::from_bytes_vec(weights))
        .map_err(|e| invalid(path, format!("unreadable weights: {e}")))?;
    let net = net.try_load_record(record).map_err(|e| CheckpointError::Shape {
        path: path.to_path_buf(),
        expected: header.net.name(),
        reason: e.to_string(),
    })?;
    if let Some(parameter) = net.non_finite_parameter() {
        return Err(invalid(
            path,
            format!("parameter {parameter} holds NaN or infinite weights (from a training run that diverged?)"),
        ));
    }
    Ok((net, header))
}

/// Checks that every tensor of the burnpack `weights` is `f32` with the
/// bytes its shape needs: burn panics when it applies some damaged records
/// (a tensor of another type), so they are refused before it sees them.
fn check_tensors(path: &Path, weights: &[u8]) -> Result<(), CheckpointError> {
    let unreadable = |e: burn_pack::Error| invalid(path, format!("unreadable weights: {e}"));
    let reader =
        burn_pack::Reader::from_bytes(burn::tensor::Bytes::from_bytes_vec(weights.to_vec())).map_err(unreadable)?;
    for tensor in reader.into_tensors().map_err(unreadable)? {
        let (name, dtype, shape, _, bytes) = tensor.into_parts().map_err(unreadable)?;
        if dtype != burn::tensor::DType::F32 {
            return Err(invalid(path, format!("weights {name} are {dtype:?}, not f32")));
        }
        let elements = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if elements.and_then(|n| n.checked_mul(4)) != Some(bytes.len()) {
            return Err(invalid(path, format!("weights {name} hold {} bytes for shape {shape:?}", bytes.len())));
        }
    }
    Ok(())
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
    Ok(path.join(read_pointer(&pointer)?))
}

/// The longest `LATEST` file read: a pointer is one short relative path.
const MAX_POINTER_BYTES: u64 = 4096;

/// What a `LATEST` file says: a relative path inside its directory (no
/// `..`, no root), so that a directory never names a file elsewhere.
///
/// # Errors
/// A missing, empty, oversized or escaping pointer.
pub fn read_pointer(pointer: &Path) -> Result<PathBuf, CheckpointError> {
    let bytes = konane_files::read_bounded(pointer, MAX_POINTER_BYTES, "LATEST pointer")?;
    let text = String::from_utf8(bytes).map_err(|_| invalid(pointer, "not UTF-8 text"))?;
    let target = Path::new(text.trim());
    if target.as_os_str().is_empty() {
        return Err(invalid(pointer, "empty LATEST pointer"));
    }
    if !target.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(invalid(
            pointer,
            format!("points at {}, outside its directory: a pointer names a file inside it", target.display()),
        ));
    }
    Ok(target.to_path_buf())
}

/// Points `dir/LATEST` at `file` (a path relative to `dir`), atomically.
///
/// # Errors
/// I/O failure.
pub fn set_latest(dir: &Path, file: &Path) -> Result<(), CheckpointError> {
    Ok(konane_files::write_atomically(&dir.join(LATEST), format!("{}\n", file.display()).as_bytes())?)
}
