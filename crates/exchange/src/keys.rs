//! The names of a run's shared objects, and their parsers: one place that
//! knows the layout the learner and the workers agree on.

/// The run's config, as the learner runs it.
pub const CONFIG: &str = "config.toml";
/// Published networks.
pub const NETWORKS: &str = "networks";
/// Workers' shards, one directory per worker.
pub const SHARDS: &str = "shards";
/// Written by the learner when its run is done: workers stop.
pub const FINISHED: &str = "finished";

/// The longest worker name.
pub const MAX_WORKER_NAME: usize = 64;

/// The network of `generation`.
pub fn network(generation: u64) -> String {
    format!("{NETWORKS}/gen-{generation:06}.knet")
}

/// The generation a network key names, if it names one.
pub fn parse_network(key: &str) -> Option<u64> {
    let name = key.strip_prefix(NETWORKS)?.strip_prefix('/')?;
    let digits = name.strip_prefix("gen-")?.strip_suffix(".knet")?;
    digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse().ok()).flatten()
}

/// The directory of `worker`'s shards.
pub fn worker_shards(worker: &str) -> String {
    format!("{SHARDS}/{worker}")
}

/// Shard `seq` of `worker`.
pub fn shard(worker: &str, seq: u64) -> String {
    format!("{SHARDS}/{worker}/{seq:08}.shard")
}

/// The worker and sequence number a shard key names, if it names one.
pub fn parse_shard(key: &str) -> Option<(String, u64)> {
    let rest = key.strip_prefix(SHARDS)?.strip_prefix('/')?;
    let (worker, file) = rest.split_once('/')?;
    let digits = file.strip_suffix(".shard")?;
    if check_worker(worker).is_err() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((worker.to_string(), digits.parse().ok()?))
}

/// `Ok` if `name` can name a worker: 1 to 64 letters, digits, `-`, `_`
/// and `.`, not starting with `.` (it becomes a directory name).
///
/// # Errors
/// Why it cannot.
pub fn check_worker(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= MAX_WORKER_NAME
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "worker name {name:?}: 1 to {MAX_WORKER_NAME} letters, digits, '-', '_' or '.', not starting with '.'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back_and_foreign_names_do_not() {
        assert_eq!(parse_network(&network(12)), Some(12));
        assert_eq!(parse_shard(&shard("node-17", 42)), Some(("node-17".into(), 42)));
        for foreign in ["networks/gen-12.knet.tmp", "networks/x.knet", "shards/a/1.shard#3", "shards/.a/1.shard"] {
            assert_eq!(parse_network(foreign), None, "{foreign}");
            assert_eq!(parse_shard(foreign), None, "{foreign}");
        }
        assert!(check_worker("node17").is_ok());
        for bad in ["", ".hidden", "a/b", "a b", &"x".repeat(65)] {
            assert!(check_worker(bad).is_err(), "{bad:?}");
        }
    }
}
