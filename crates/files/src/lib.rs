//! Files that matter (checkpoints, configs, metrics, match results), written
//! so that a crash, a kill or a full disk leaves either the old file or the
//! new one, never half of one.
//!
//! [`write_atomically`] writes into a uniquely named temporary file beside
//! the target, syncs it and renames it over the target. What the path names
//! decides how:
//!
//! - a regular file, or nothing yet: replaced (created) atomically, keeping
//!   the old file's permissions;
//! - a symbolic link: the file it points to is replaced, the link stays;
//! - a device, pipe or socket (`--json /dev/stdout`): written through
//!   directly, since such a file cannot be replaced;
//! - a directory: an error.
//!
//! On any failure the temporary file is removed and the target is as it was.
//!
//! [`read_bounded`] reads a whole file only up to a size its reader can
//! expect, so that a wrong path (`/dev/zero`, a 20 GB file) is an error
//! rather than all of the memory.
#![deny(missing_docs)]

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// A file that could not be written.
#[derive(Debug, Error)]
#[error("{path}: {error}")]
pub struct WriteError {
    /// The file (or the directory it was to go in).
    pub path: PathBuf,
    /// What the system said.
    pub error: io::Error,
}

impl WriteError {
    fn new(path: &Path, error: io::Error) -> WriteError {
        WriteError { path: path.to_path_buf(), error }
    }

    /// Whether the write failed because the reader of a pipe went away.
    pub fn is_broken_pipe(&self) -> bool {
        self.error.kind() == io::ErrorKind::BrokenPipe
    }
}

/// A file that could not be read.
#[derive(Debug, Error)]
pub enum ReadError {
    /// The system refused.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// Longer than any file of its kind.
    #[error("{path}: more than {max} bytes, too long for a {what}")]
    TooLong {
        /// The file.
        path: PathBuf,
        /// The most its kind may hold.
        max: u64,
        /// What it was read as.
        what: &'static str,
    },
}

/// The bytes of `path`, read as a `what` (for the error message), which is
/// never longer than `max` bytes.
///
/// # Errors
/// The file cannot be read, or holds more than `max` bytes: a regular file
/// that says so is refused before any of it is read, anything else (a
/// device, a pipe) after at most `max + 1` bytes.
pub fn read_bounded(path: &Path, max: u64, what: &'static str) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let io = |error| ReadError::Io { path: path.to_path_buf(), error };
    let file = fs::File::open(path).map_err(io)?;
    let metadata = file.metadata().ok();
    if metadata.as_ref().is_some_and(|m| m.is_file() && m.len() > max) {
        return Err(ReadError::TooLong { path: path.to_path_buf(), max, what });
    }
    // The length the file claims sizes the buffer, up to the bound; a
    // device or pipe claims 0 and grows it as it reads.
    let claimed = metadata.map_or(0, |m| m.len());
    let mut bytes = Vec::with_capacity(claimed.min(max) as usize);
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLong { path: path.to_path_buf(), max, what });
    }
    Ok(bytes)
}

/// What a path names, for [`write_atomically`].
enum Target {
    /// A regular file to replace (or create) at this path, with the
    /// permissions to keep.
    Replace(PathBuf, Option<fs::Permissions>),
    /// A device, pipe or socket: written through.
    Stream,
}

/// Follows `path` to what a write should change.
fn target(path: &Path) -> Result<Target, WriteError> {
    let link = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target::Replace(path.to_path_buf(), None)),
        Err(e) => return Err(WriteError::new(path, e)),
    };
    if !link.file_type().is_symlink() {
        return classify(path, &link);
    }
    match fs::metadata(path) {
        // A dangling link: create the file it names.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let pointee = fs::read_link(path).map_err(|e| WriteError::new(path, e))?;
            let parent = path.parent().unwrap_or(Path::new(""));
            Ok(Target::Replace(parent.join(pointee), None))
        }
        Err(e) => Err(WriteError::new(path, e)),
        Ok(meta) if meta.is_file() => {
            let real = fs::canonicalize(path).map_err(|e| WriteError::new(path, e))?;
            classify(&real, &meta)
        }
        Ok(meta) => classify(path, &meta),
    }
}

fn classify(path: &Path, meta: &fs::Metadata) -> Result<Target, WriteError> {
    if meta.is_dir() {
        Err(WriteError::new(path, io::Error::new(io::ErrorKind::IsADirectory, "is a directory")))
    } else if meta.is_file() {
        Ok(Target::Replace(path.to_path_buf(), Some(meta.permissions())))
    } else {
        Ok(Target::Stream)
    }
}

/// Writes `bytes` to `path` atomically (see the crate documentation),
/// creating missing parent directories.
///
/// # Errors
/// Any I/O failure, naming the file; the target is then unchanged (a
/// device written through may have received part of the bytes).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let (file, permissions) = match target(path)? {
        Target::Stream => {
            let mut stream = fs::OpenOptions::new().write(true).open(path).map_err(|e| WriteError::new(path, e))?;
            return stream.write_all(bytes).and_then(|()| stream.flush()).map_err(|e| WriteError::new(path, e));
        }
        Target::Replace(file, permissions) => (file, permissions),
    };
    let parent = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs::create_dir_all(parent).map_err(|e| WriteError::new(parent, e))?;
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // What `File::create` gives (before the umask), not tempfile's 0600.
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    // The temporary file is deleted when dropped unless persisted, so every
    // early return below leaves nothing behind.
    let mut temp = builder.tempfile_in(parent).map_err(|e| WriteError::new(parent, e))?;
    let temp_path = temp.path().to_path_buf();
    let io = |e| WriteError::new(&temp_path, e);
    temp.write_all(bytes).map_err(io)?;
    if let Some(permissions) = permissions {
        temp.as_file().set_permissions(permissions).map_err(io)?;
    }
    temp.as_file().sync_all().map_err(io)?;
    temp.persist(&file).map_err(|e| WriteError::new(&file, e.error))?;
    // The rename is durable once the directory is synced; a directory that
    // cannot be opened for that (some filesystems) still holds the file.
    if let Ok(dir) = fs::File::open(parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn bounded_reads_refuse_what_is_too_long() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"12345").unwrap();
        assert_eq!(read_bounded(&path, 5, "test file").unwrap(), b"12345");
        let error = read_bounded(&path, 4, "test file").unwrap_err().to_string();
        assert!(error.contains("more than 4 bytes") && error.contains("test file"), "{error}");
        assert!(read_bounded(&dir.path().join("missing"), 4, "test file").is_err());
        // A file that says it is too long is refused unread: reading this
        // sparse 64 GiB file would take minutes and more memory than CI has.
        let huge = dir.path().join("huge");
        fs::File::create(&huge).unwrap().set_len(1 << 36).unwrap();
        let error = read_bounded(&huge, 1 << 30, "proof").unwrap_err().to_string();
        assert!(error.contains("more than 1073741824 bytes, too long for a proof"), "{error}");
        #[cfg(target_os = "linux")]
        {
            let error = read_bounded(Path::new("/dev/zero"), 1 << 20, "config").unwrap_err().to_string();
            assert!(error.contains("/dev/zero") && error.contains("too long for a config"), "{error}");
        }
    }

    #[test]
    fn replaces_a_file_and_creates_missing_directories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert!(leftovers(&dir.path().join("a/b")).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn keeps_permissions_and_writes_through_symlinks() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        fs::write(&real, "old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.txt");
        symlink("real.txt", &link).unwrap();
        write_atomically(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(fs::read(&real).unwrap(), b"new");
        assert_eq!(fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o640);
        // A dangling link creates the file it names.
        let dangling = dir.path().join("dangling");
        symlink("created.txt", &dangling).unwrap();
        write_atomically(&dangling, b"made").unwrap();
        assert_eq!(fs::read(dir.path().join("created.txt")).unwrap(), b"made");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn writes_through_devices_instead_of_replacing_them() {
        write_atomically(Path::new("/dev/null"), b"gone").unwrap();
        assert!(!fs::symlink_metadata("/dev/null").unwrap().is_file(), "/dev/null is still a device");
        // A full device is an error naming it, not a panic.
        let error = write_atomically(Path::new("/dev/full"), b"x").unwrap_err();
        assert_eq!(error.path, Path::new("/dev/full"));
        assert!(error.to_string().contains("/dev/full"), "{error}");
    }

    #[test]
    fn a_failed_write_leaves_the_target_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // A directory cannot be replaced by a file.
        let target = dir.path().join("taken");
        fs::create_dir(&target).unwrap();
        let error = write_atomically(&target, b"x").unwrap_err();
        assert!(error.to_string().contains("directory"), "{error}");
        assert!(target.is_dir());
        // A parent that is a file cannot hold one.
        let file = dir.path().join("plain");
        fs::write(&file, "keep").unwrap();
        assert!(write_atomically(&file.join("child"), b"x").is_err());
        assert_eq!(fs::read(&file).unwrap(), b"keep");
        assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
    }
}
