//! What a run reports as it goes, and the hooks its host provides.
//!
//! The trainer is a library without a user interface: the binary draws
//! progress bars from these events and measures and tunes the process's
//! memory (allocator policy belongs to the program, not to a library);
//! tests stop runs at chosen points through them. Every method has a
//! default that does nothing, so an observer implements what it needs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A phase of a run, as progress reports name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Solving the opening positions (`replay.solved_openings_plies`), in positions.
    Openings,
    /// The supervised start from a teacher, in training steps.
    Bootstrap,
    /// An iteration's self-play, in games.
    SelfPlay,
    /// An iteration's training, in steps.
    Training,
    /// An iteration's evaluation matches, in games.
    Evaluation,
}

impl Phase {
    /// Its name, for progress bars and logs.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Openings => "openings",
            Phase::Bootstrap => "bootstrap",
            Phase::SelfPlay => "self-play",
            Phase::Training => "training",
            Phase::Evaluation => "evaluation",
        }
    }
}

/// Receives a run's events; see the module documentation.
pub trait RunObserver: Send + Sync {
    /// `phase` started.
    fn phase_started(&self, phase: Phase) {
        let _ = phase;
    }

    /// `done` of the phase's `total` units (0 while unknown), with a short
    /// status (`policy 1.234 value 0.456`, or empty).
    fn progress(&self, phase: Phase, done: u64, total: u64, status: &str) {
        let _ = (phase, done, total, status);
    }

    /// `phase` ended: all done, or `finished` false when it was stopped.
    fn phase_ended(&self, phase: Phase, finished: bool) {
        let _ = (phase, finished);
    }

    /// A training step was taken: the run's step count after it.
    fn step_taken(&self, step: u64) {
        let _ = step;
    }

    /// Iteration `iteration` is complete and checkpointed.
    fn iteration_done(&self, iteration: u64) {
        let _ = iteration;
    }

    /// An iteration starts: the moment to begin a new memory peak.
    fn iteration_started(&self) {}

    /// Between the phases of an iteration, whose large buffers were just
    /// freed: the moment to hand memory back to the system.
    fn between_phases(&self) {}

    /// Resident memory of the process now and at its peak since the
    /// iteration started, in MiB; zeros where unknown.
    fn memory_mib(&self) -> (f64, f64) {
        (0.0, 0.0)
    }
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl RunObserver for Quiet {}

/// A phase in progress, reporting to an observer: what the loop holds
/// while a phase runs. Dropped unfinished (a stop, an error), it reports
/// the phase ended unfinished.
pub(crate) struct PhaseProgress<'a> {
    observer: &'a dyn RunObserver,
    phase: Phase,
    total: u64,
    done: AtomicU64,
    finished: AtomicBool,
}

impl<'a> PhaseProgress<'a> {
    pub(crate) fn start(observer: &'a dyn RunObserver, phase: Phase, total: u64, done: u64) -> PhaseProgress<'a> {
        observer.phase_started(phase);
        observer.progress(phase, done, total, "");
        PhaseProgress { observer, phase, total, done: done.into(), finished: AtomicBool::new(false) }
    }

    /// One more unit done, with a status.
    pub(crate) fn advance(&self, status: &str) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        self.observer.progress(self.phase, done, self.total, status);
    }

    /// `done` of `total` (a phase whose size is learnt as it goes).
    pub(crate) fn set(&self, done: u64, total: u64) {
        self.done.store(done, Ordering::Relaxed);
        self.observer.progress(self.phase, done, total, "");
    }

    /// The phase is complete.
    pub(crate) fn finish(&self) {
        self.finished.store(true, Ordering::Relaxed);
    }
}

impl Drop for PhaseProgress<'_> {
    fn drop(&mut self) {
        self.observer.phase_ended(self.phase, *self.finished.get_mut());
    }
}
