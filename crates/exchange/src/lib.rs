//! The storage a training run's learner and its self-play workers share,
//! and the only channel between them: the learner publishes networks and
//! its config there, workers write shards of finished games there, and the
//! learner holds a lease there so that a second learner refuses to start.
//!
//! A location is a directory on any POSIX filesystem (NFS, Lustre, CephFS,
//! a Kubernetes ReadWriteMany volume) or, with the `cloud` feature, an
//! `s3://`, `gs://` or `az://` URL. Both go through `object_store`, whose
//! local-filesystem backend writes a staging file and renames (or links) it
//! into place, so every object becomes visible whole or not at all, as a
//! single put does on an object store. A worker killed mid-write leaves at
//! most a staging file (`name#123`), which no listing shows.
//!
//! The layout under the location (see [`keys`]):
//!
//! ```text
//! config.toml                      the run's config (written by the learner)
//! networks/gen-000012.knet         published networks, by generation
//! shards/<worker>/00000042.shard   a worker's finished games, by sequence number
//! learner.lease                    who trains, until when
//! finished                         the learner's last generation, once its run is done
//! ```
//!
//! Calls block: the trainer is synchronous, so each [`Exchange`] drives its
//! own single-threaded tokio runtime.
#![deny(missing_docs)]

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::{Path, PathPart};
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub mod keys;

/// What went wrong with the shared storage.
#[derive(Debug, Error)]
pub enum ExchangeError {
    /// The location is neither a usable directory nor a supported URL.
    #[error("run location {location}: {reason}")]
    Location {
        /// As given.
        location: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The store refused an operation.
    #[error("{location}/{key}: {source}")]
    Store {
        /// The run location.
        location: String,
        /// The object.
        key: String,
        /// What the store said.
        source: object_store::Error,
    },
    /// An object larger than its reader accepts.
    #[error("{location}/{key}: {size} bytes, more than the {limit} a {what} may have")]
    TooLarge {
        /// The run location.
        location: String,
        /// The object.
        key: String,
        /// Its size.
        size: u64,
        /// The most accepted.
        limit: u64,
        /// What it should have been.
        what: &'static str,
    },
    /// Another learner holds the run.
    #[error(
        "another learner holds {location} (lease {location}/learner.lease: {holder}, for {seconds:.0} s more): \
         one learner per run; if it died, its lease expires by itself"
    )]
    Held {
        /// The run location.
        location: String,
        /// Who holds it.
        holder: String,
        /// Seconds until its lease expires.
        seconds: f64,
    },
    /// This learner's lease was taken over (it was not renewed in time).
    #[error("{location}: the learner lease now belongs to {holder}; this learner stops")]
    LeaseLost {
        /// The run location.
        location: String,
        /// Who holds it now.
        holder: String,
    },
    /// The tokio runtime could not start.
    #[error("could not start the storage runtime: {0}")]
    Runtime(std::io::Error),
}

/// A run's shared storage.
pub struct Exchange {
    store: Arc<dyn ObjectStore>,
    root: Path,
    location: String,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange").field("location", &self.location).finish()
    }
}

/// Whether `location` names an object store (a URL) rather than a directory.
pub fn is_url(location: &str) -> bool {
    location.contains("://")
}

impl Exchange {
    /// Opens the run location `location`: a directory (created if missing)
    /// or a `file://`, `memory://`, `s3://`, `gs://` or `az://` URL (the
    /// last three with the `cloud` feature; credentials come from the usual
    /// environment variables, `AWS_ACCESS_KEY_ID` and so on).
    ///
    /// # Errors
    /// The directory cannot be created, or the URL is malformed or of a
    /// scheme this build does not support.
    pub fn open(location: &str) -> Result<Exchange, ExchangeError> {
        let fail = |reason: String| ExchangeError::Location { location: location.to_string(), reason };
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ExchangeError::Runtime)?;
        let (store, root): (Arc<dyn ObjectStore>, Path) = if is_url(location) {
            let url = url::Url::parse(location).map_err(|e| fail(format!("not a URL: {e}")))?;
            let cloud = matches!(url.scheme(), "s3" | "s3a" | "gs" | "az" | "adl" | "azure" | "abfs" | "abfss");
            if cloud && !cfg!(feature = "cloud") {
                return Err(fail(
                    "this build has no cloud storage clients: build with `cargo build --release --features cloud`"
                        .into(),
                ));
            }
            if url.scheme() == "file" {
                let dir = url.to_file_path().map_err(|()| fail("not a local file URL".into()))?;
                (Arc::new(local_store(&dir).map_err(fail)?), Path::default())
            } else {
                let (store, root) = object_store::parse_url_opts(&url, std::env::vars())
                    .map_err(|e| fail(format!("no store for this URL: {e}")))?;
                (Arc::from(store), root)
            }
        } else {
            (Arc::new(local_store(std::path::Path::new(location)).map_err(fail)?), Path::default())
        };
        Ok(Exchange { store, root, location: location.trim_end_matches('/').to_string(), runtime })
    }

    /// The location as given (for messages).
    pub fn location(&self) -> &str {
        &self.location
    }

    fn path(&self, key: &str) -> Path {
        self.root.parts().chain(key.split('/').filter(|s| !s.is_empty()).map(PathPart::from)).collect()
    }

    fn error(&self, key: &str, source: object_store::Error) -> ExchangeError {
        ExchangeError::Store { location: self.location.clone(), key: key.to_string(), source }
    }

    /// Writes `key` whole, replacing what was there.
    ///
    /// # Errors
    /// The store refused (a full disk, no permission).
    pub fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), ExchangeError> {
        let path = self.path(key);
        self.runtime
            .block_on(self.store.put(&path, PutPayload::from(bytes)))
            .map(|_| ())
            .map_err(|e| self.error(key, e))
    }

    /// Writes `key` whole if nothing is there yet; false (and nothing
    /// written) if something is.
    ///
    /// # Errors
    /// The store refused.
    pub fn put_new(&self, key: &str, bytes: Vec<u8>) -> Result<bool, ExchangeError> {
        let path = self.path(key);
        let options = PutOptions::from(PutMode::Create);
        match self.runtime.block_on(self.store.put_opts(&path, PutPayload::from(bytes), options)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(self.error(key, e)),
        }
    }

    /// The bytes of `key`, `None` if it does not exist.
    ///
    /// # Errors
    /// The store refused, or the object is larger than `limit` (`what` it
    /// should have been names it in the message).
    pub fn get(&self, key: &str, limit: u64, what: &'static str) -> Result<Option<Vec<u8>>, ExchangeError> {
        let path = self.path(key);
        // `None`: no such object; `Some(Err(size))`: too large.
        let result: Result<Option<Result<_, u64>>, object_store::Error> = self.runtime.block_on(async {
            let got = match self.store.get(&path).await {
                Ok(got) => got,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
            if got.meta.size > limit {
                return Ok(Some(Err(got.meta.size)));
            }
            got.bytes().await.map(|bytes| Some(Ok(bytes)))
        });
        match result.map_err(|e| self.error(key, e))? {
            None => Ok(None),
            // Without a copy when the bytes are not shared.
            Some(Ok(bytes)) => Ok(Some(Vec::from(bytes))),
            Some(Err(size)) => Err(ExchangeError::TooLarge {
                location: self.location.clone(),
                key: key.to_string(),
                size,
                limit,
                what,
            }),
        }
    }

    /// The keys under `prefix` (a directory such as `shards`), with their
    /// sizes, in no particular order.
    ///
    /// # Errors
    /// The store refused.
    pub fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, ExchangeError> {
        let path = self.path(prefix);
        let metas: Vec<object_store::ObjectMeta> =
            self.runtime.block_on(self.store.list(Some(&path)).try_collect()).map_err(|e| self.error(prefix, e))?;
        Ok(metas.into_iter().map(|meta| (self.key_of(&meta.location), meta.size)).collect())
    }

    /// The keys under `prefix` that sort after `after` (with their sizes):
    /// a store that can (S3, GCS) lists only those, so reading what is new
    /// costs the same however much is old.
    ///
    /// # Errors
    /// The store refused.
    pub fn list_after(&self, prefix: &str, after: &str) -> Result<Vec<(String, u64)>, ExchangeError> {
        let (path, offset) = (self.path(prefix), self.path(after));
        let metas: Vec<object_store::ObjectMeta> = self
            .runtime
            .block_on(self.store.list_with_offset(Some(&path), &offset).try_collect())
            .map_err(|e| self.error(prefix, e))?;
        Ok(metas.into_iter().map(|meta| (self.key_of(&meta.location), meta.size)).collect())
    }

    /// The names of the directories (common prefixes) right under `prefix`.
    ///
    /// # Errors
    /// The store refused.
    pub fn dirs(&self, prefix: &str) -> Result<Vec<String>, ExchangeError> {
        let path = self.path(prefix);
        let listed =
            self.runtime.block_on(self.store.list_with_delimiter(Some(&path))).map_err(|e| self.error(prefix, e))?;
        Ok(listed.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_string)).collect())
    }

    fn key_of(&self, location: &Path) -> String {
        let parts: Vec<String> =
            location.parts().skip(self.root.parts_count()).map(|p| p.as_ref().to_string()).collect();
        parts.join("/")
    }

    /// Removes `key`; nothing if it is not there.
    ///
    /// # Errors
    /// The store refused.
    pub fn delete(&self, key: &str) -> Result<(), ExchangeError> {
        let path = self.path(key);
        match self.runtime.block_on(self.store.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error(key, e)),
        }
    }
}

/// A directory as a store, created if missing, with every write synced
/// before it becomes visible.
fn local_store(dir: &std::path::Path) -> Result<LocalFileSystem, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the directory: {e}"))?;
    LocalFileSystem::new_with_prefix(dir).map(|store| store.with_fsync(true)).map_err(|e| e.to_string())
}

/// Seconds since the Unix epoch.
fn now_seconds() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The learner lease's object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LeaseRecord {
    /// Who holds it: host, process and a random part, unique per learner.
    holder: String,
    /// Unix seconds at which it expires unless renewed.
    expires: f64,
}

/// The lease that makes a learner the only one of its run. It expires by
/// itself when its holder stops renewing it (a crash, a kill), so a dead
/// learner never blocks the run for longer than the lease lasts.
///
/// Taking over an expired lease deletes it and creates a new one, then
/// reads it back after a pause: of two learners racing for the same expired
/// lease, the one whose record is not there stops. Every renewal checks the
/// record is still its holder's.
#[derive(Debug)]
pub struct Lease {
    holder: String,
    seconds: f64,
}

/// The lease's key.
pub const LEASE_KEY: &str = "learner.lease";

impl Lease {
    /// Takes the run's lease for `seconds` (renewed by [`Lease::renew`]).
    ///
    /// # Errors
    /// [`ExchangeError::Held`] while another learner's lease is live, or a
    /// store failure.
    pub fn acquire(exchange: &Exchange, holder: String, seconds: f64) -> Result<Lease, ExchangeError> {
        let lease = Lease { holder, seconds };
        let record = || LeaseRecord { holder: lease.holder.clone(), expires: now_seconds() + seconds };
        if exchange.put_new(LEASE_KEY, to_json(&record()))? {
            return Ok(lease);
        }
        match lease.read(exchange)? {
            Some(other) if other.holder != lease.holder && other.expires > now_seconds() => Err(ExchangeError::Held {
                location: exchange.location().to_string(),
                holder: other.holder,
                seconds: other.expires - now_seconds(),
            }),
            _ => {
                // Expired or unreadable: take it over.
                exchange.delete(LEASE_KEY)?;
                if !exchange.put_new(LEASE_KEY, to_json(&record()))? {
                    return lease.held_by_other(exchange);
                }
                std::thread::sleep(Duration::from_millis(500));
                match lease.read(exchange)? {
                    Some(now) if now.holder == lease.holder => Ok(lease),
                    _ => lease.held_by_other(exchange),
                }
            }
        }
    }

    fn held_by_other(&self, exchange: &Exchange) -> Result<Lease, ExchangeError> {
        let other = self.read(exchange)?;
        Err(ExchangeError::Held {
            location: exchange.location().to_string(),
            holder: other.as_ref().map_or_else(|| "a learner starting at the same time".into(), |o| o.holder.clone()),
            seconds: other.map_or(self.seconds, |o| o.expires - now_seconds()),
        })
    }

    fn read(&self, exchange: &Exchange) -> Result<Option<LeaseRecord>, ExchangeError> {
        Ok(exchange.get(LEASE_KEY, 4096, "lease")?.and_then(|bytes| serde_json::from_slice(&bytes).ok()))
    }

    /// Who holds it.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// How long a renewal lasts.
    pub fn seconds(&self) -> f64 {
        self.seconds
    }

    /// Extends the lease by its length from now.
    ///
    /// # Errors
    /// [`ExchangeError::LeaseLost`] if another learner took it over, or a
    /// store failure.
    pub fn renew(&self, exchange: &Exchange) -> Result<(), ExchangeError> {
        // Gone counts as lost: another learner may have taken it over,
        // finished and released it while this one stalled.
        let holder = self.read(exchange)?.map(|record| record.holder);
        if holder.as_deref() != Some(self.holder.as_str()) {
            return Err(ExchangeError::LeaseLost {
                location: exchange.location().to_string(),
                holder: holder.unwrap_or_else(|| "nobody (it was removed)".into()),
            });
        }
        let record = LeaseRecord { holder: self.holder.clone(), expires: now_seconds() + self.seconds };
        exchange.put(LEASE_KEY, to_json(&record))
    }

    /// Gives the lease up (if it is still ours), so the next learner need
    /// not wait for it to expire.
    ///
    /// # Errors
    /// A store failure.
    pub fn release(self, exchange: &Exchange) -> Result<(), ExchangeError> {
        match self.read(exchange)? {
            Some(record) if record.holder == self.holder => exchange.delete(LEASE_KEY),
            _ => Ok(()),
        }
    }
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("a lease record serialises")
}

/// A holder name for this process: host, process id and the clock's
/// nanoseconds, so two learners never share one.
pub fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("{host}:{}:{nanos:09}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_lists_gets_and_deletes_in_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let exchange = Exchange::open(dir.path().join("run").to_str().unwrap()).unwrap();
        assert_eq!(exchange.get("shards/a/00000001.shard", 100, "shard").unwrap(), None);
        assert!(exchange.put_new("shards/a/00000001.shard", b"one".to_vec()).unwrap());
        assert!(!exchange.put_new("shards/a/00000001.shard", b"two".to_vec()).unwrap(), "create never replaces");
        exchange.put("shards/b/00000001.shard", b"three".to_vec()).unwrap();
        assert_eq!(exchange.get("shards/a/00000001.shard", 100, "shard").unwrap().as_deref(), Some(&b"one"[..]));
        let mut listed = exchange.list("shards").unwrap();
        listed.sort();
        assert_eq!(
            listed,
            vec![("shards/a/00000001.shard".to_string(), 3), ("shards/b/00000001.shard".to_string(), 5)]
        );
        assert!(matches!(
            exchange.get("shards/b/00000001.shard", 4, "shard"),
            Err(ExchangeError::TooLarge { size: 5, limit: 4, .. })
        ));
        assert_eq!(exchange.dirs("shards").unwrap().len(), 2);
        exchange.put_new("shards/a/00000002.shard", b"4".to_vec()).unwrap();
        let after = exchange.list_after("shards/a", "shards/a/00000001.shard").unwrap();
        assert_eq!(after, vec![("shards/a/00000002.shard".to_string(), 1)]);
        exchange.delete("shards/a/00000002.shard").unwrap();
        exchange.delete("shards/a/00000001.shard").unwrap();
        exchange.delete("shards/a/00000001.shard").unwrap();
        assert_eq!(exchange.list("shards/a").unwrap(), vec![]);
        // The files are plain files in the directory.
        assert_eq!(std::fs::read(dir.path().join("run/shards/b/00000001.shard")).unwrap(), b"three");
    }

    #[test]
    fn a_second_learner_is_refused_until_the_lease_expires() {
        let dir = tempfile::tempdir().unwrap();
        let exchange = Exchange::open(dir.path().to_str().unwrap()).unwrap();
        let first = Lease::acquire(&exchange, "first".into(), 60.0).unwrap();
        let refused = Lease::acquire(&exchange, "second".into(), 60.0).unwrap_err();
        assert!(matches!(&refused, ExchangeError::Held { holder, .. } if holder == "first"), "{refused}");
        first.renew(&exchange).unwrap();
        first.release(&exchange).unwrap();
        let second = Lease::acquire(&exchange, "second".into(), 0.2).unwrap();
        // Not renewed: it expires, and a third learner takes the run over.
        std::thread::sleep(Duration::from_millis(300));
        let third = Lease::acquire(&exchange, "third".into(), 60.0).unwrap();
        let lost = second.renew(&exchange).unwrap_err();
        assert!(matches!(&lost, ExchangeError::LeaseLost { holder, .. } if holder == "third"), "{lost}");
        assert_eq!(third.holder(), "third");
    }

    #[test]
    fn unusable_locations_say_why() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let error = Exchange::open(file.path().join("run").to_str().unwrap()).unwrap_err().to_string();
        assert!(error.contains("cannot create the directory"), "{error}");
        let error = Exchange::open("ftp://example.invalid/run").unwrap_err().to_string();
        assert!(error.contains("no store for this URL"), "{error}");
        if !cfg!(feature = "cloud") {
            let error = Exchange::open("s3://bucket/run").unwrap_err().to_string();
            assert!(error.contains("--features cloud"), "{error}");
        }
        let memory = Exchange::open("memory://").unwrap();
        assert!(memory.put_new("config.toml", b"x".to_vec()).unwrap());
        assert_eq!(memory.list("").unwrap(), vec![("config.toml".to_string(), 1)]);
    }
}
