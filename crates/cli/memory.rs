//! The program's memory policy, in one place: how many glibc arenas the
//! threads share, when freed memory goes back to the system, and what the
//! process holds (for the training metrics).

/// Caps glibc's malloc at two arenas (unless `MALLOC_ARENA_MAX` says
/// otherwise). By default glibc gives each thread that allocates its own
/// arena, up to eight per core, and each keeps its freed memory: a long
/// `konane train` (self-play workers, burn's training threads, evaluation
/// threads) held 260-305 MiB resident at the end of 8x8 iterations with a
/// full replay window, 106-152 MiB with two arenas (docs/performance.md).
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; called first
        // thing in main, before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

/// Hands memory freed by a phase back to the system. glibc keeps freed
/// blocks in its heaps; a phase's large transient buffers (training's
/// activations and gradients, evaluation's trees) then stay resident and
/// fragment the heap, and resident memory drifts upwards over a long run.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Starts a new peak for [`memory_mib`]: resets the process's resident
/// memory high-water mark (Linux 4.0+, `/proc/self/clear_refs`), so each
/// iteration reports its own peak instead of the process's since it started.
pub fn reset_peak_memory() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// `(current, peak)` resident memory of this process in MiB, from
/// `/proc/self/status` (`VmRSS`, `VmHWM`); zeros elsewhere.
pub fn memory_mib() -> (f64, f64) {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return (0.0, 0.0) };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_peak_restarts_after_a_transient_allocation() {
        // 1 GiB touched then freed (glibc maps blocks this large, so the
        // free returns them at once): the peak holds it until reset. The
        // block dwarfs what the other tests of this binary allocate at once.
        let mut block = vec![0u8; 1 << 30];
        for page in block.chunks_mut(4096) {
            page[0] = 1;
        }
        std::hint::black_box(&block);
        drop(block);
        let (_, before) = memory_mib();
        reset_peak_memory();
        release_free_memory();
        let (current, after) = memory_mib();
        assert!(before > 1024.0, "the block counted in the peak: {before} MiB");
        assert!(after < before - 512.0, "peak {before} MiB before the reset, {after} MiB after");
        assert!(current <= after + 1.0, "current {current} MiB within the new peak {after} MiB");
    }
}
