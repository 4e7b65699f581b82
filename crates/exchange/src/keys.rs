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

/// The most digits a generation or shard number may have: far more than a
/// run ever makes, and few enough that counting on from one never
/// overflows, whatever foreign file sits in the storage.
pub const MAX_NUMBER_DIGITS: usize = 12;

/// The largest generation or shard number: [`MAX_NUMBER_DIGITS`] nines.
pub const MAX_NUMBER: u64 = 10u64.pow(MAX_NUMBER_DIGITS as u32) - 1;

/// The number `digits` spells, if it is 1 to [`MAX_NUMBER_DIGITS`] ASCII
/// digits.
fn parse_number(digits: &str) -> Option<u64> {
    let valid = (1..=MAX_NUMBER_DIGITS).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit());
    valid.then(|| digits.parse().ok()).flatten()
}

/// The network of `generation`.
pub fn network(generation: u64) -> String {
    format!("{NETWORKS}/gen-{generation:06}.knet")
}

/// The generation a network key names, if it names one.
pub fn parse_network(key: &str) -> Option<u64> {
    let name = key.strip_prefix(NETWORKS)?.strip_prefix('/')?;
    parse_number(name.strip_prefix("gen-")?.strip_suffix(".knet")?)
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
    let seq = parse_number(file.strip_suffix(".shard")?)?;
    check_worker(worker).is_ok().then(|| (worker.to_string(), seq))
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
        assert_eq!(parse_shard(&shard("w", MAX_NUMBER)), Some(("w".into(), 999_999_999_999)));
        // A number too long to count on from is a foreign file (it would
        // overflow the next shard's number or the pruning of old networks).
        let too_long = [
            "networks/gen-18446744073709551615.knet",
            "shards/w1/18446744073709551615.shard",
            "shards/w/1000000000000.shard",
        ];
        let malformed = [
            "networks/gen-12.knet.tmp",
            "networks/x.knet",
            "networks/gen-.knet",
            "shards/a/1.shard#3",
            "shards/.a/1.shard",
            "shards/a/.shard",
        ];
        for foreign in too_long.into_iter().chain(malformed) {
            assert_eq!(parse_network(foreign), None, "{foreign}");
            assert_eq!(parse_shard(foreign), None, "{foreign}");
        }
        assert!(check_worker("node17").is_ok());
        for bad in ["", ".hidden", "a/b", "a b", &"x".repeat(65)] {
            assert!(check_worker(bad).is_err(), "{bad:?}");
        }
    }
}
