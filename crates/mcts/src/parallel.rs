//! One search, several cores: each batch of leaves is split across
//! evaluators that run on threads of their own.
//!
//! A CPU network backend gets more from one single-threaded evaluator per
//! core than from one evaluator whose operations are spread over the cores
//! (`docs/burn-0.22.md`: about 2x). Self-play gets that by playing
//! games on several workers; a single game (an engine answering `genmove`,
//! `konane play`) gets it here: the search gathers a batch as usual and each
//! evaluator takes a contiguous slice of it. (How an evaluator keeps its own
//! work on one thread is its own business: the network's does.)

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use crate::evaluator::{Batch, EvalError, Evaluator};

/// Positions below which a batch is not worth splitting further.
const MIN_SLICE: usize = 4;

/// A slice of a batch and its results; the buffers travel back and forth
/// between the caller and a worker, so steady-state evaluation does not
/// allocate.
struct Job {
    batch: Batch,
    outcome: Result<(), EvalError>,
}

impl Default for Job {
    fn default() -> Job {
        Job { batch: Batch::new(), outcome: Ok(()) }
    }
}

struct Worker {
    jobs: Option<Sender<Job>>,
    results: Receiver<Job>,
    spare: Option<Job>,
    thread: Option<JoinHandle<()>>,
}

/// Splits each batch across its evaluators, one thread each; see the
/// module documentation. With one evaluator it evaluates on the caller's
/// thread and starts no thread at all.
pub struct ParallelEvaluator<E> {
    inline: Option<E>,
    workers: Vec<Worker>,
}

impl<E: Evaluator + 'static> ParallelEvaluator<E> {
    /// Takes the evaluators (at least one), starting a thread for each when
    /// there are several.
    ///
    /// # Panics
    /// If `evaluators` is empty or a thread cannot be started.
    pub fn new(mut evaluators: Vec<E>) -> ParallelEvaluator<E> {
        assert!(!evaluators.is_empty(), "ParallelEvaluator needs at least one evaluator");
        if evaluators.len() == 1 {
            return ParallelEvaluator { inline: evaluators.pop(), workers: Vec::new() };
        }
        let workers = evaluators
            .into_iter()
            .enumerate()
            .map(|(i, mut evaluator)| {
                let (jobs, job_rx) = channel::<Job>();
                let (result_tx, results) = channel::<Job>();
                let thread = std::thread::Builder::new()
                    .name(format!("evaluator-{i}"))
                    .spawn(move || {
                        while let Ok(mut job) = job_rx.recv() {
                            job.batch.clear_outputs();
                            job.outcome = evaluator.evaluate(&mut job.batch);
                            if result_tx.send(job).is_err() {
                                break;
                            }
                        }
                    })
                    .expect("an evaluator thread starts");
                Worker { jobs: Some(jobs), results, spare: Some(Job::default()), thread: Some(thread) }
            })
            .collect();
        ParallelEvaluator { inline: None, workers }
    }

    /// How many evaluators share each batch.
    pub fn evaluators(&self) -> usize {
        self.workers.len().max(1)
    }
}

impl<E: Evaluator + 'static> Evaluator for ParallelEvaluator<E> {
    fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
        if let Some(inline) = &mut self.inline {
            return inline.evaluate(batch);
        }
        let positions = batch.positions();
        let ended = |i: usize| EvalError::Failed {
            evaluator: format!("evaluator thread {i}"),
            reason: "the thread ended (it panicked)".into(),
        };
        let slices = self.workers.len().min(positions.len().div_ceil(MIN_SLICE)).max(1);
        let per = positions.len().div_ceil(slices);
        let mut sent = 0;
        for (i, (worker, chunk)) in self.workers.iter_mut().zip(positions.chunks(per.max(1))).enumerate() {
            let mut job = worker.spare.take().unwrap_or_default();
            job.batch.clear();
            for &position in chunk {
                job.batch.push(position);
            }
            let jobs = worker.jobs.as_ref().expect("workers run until drop");
            if jobs.send(job).is_err() {
                return Err(ended(i));
            }
            sent += 1;
        }
        // Every job sent is received back, even after a failure, so that
        // the next batch finds the workers idle.
        let mut outcome = Ok(());
        for (i, worker) in self.workers.iter_mut().take(sent).enumerate() {
            let Ok(mut job) = worker.results.recv() else {
                outcome = outcome.and(Err(ended(i)));
                continue;
            };
            let done = std::mem::replace(&mut job.outcome, Ok(()))
                .and_then(|()| job.batch.check_complete(&format!("evaluator thread {i}")));
            if done.is_ok() && outcome.is_ok() {
                for k in 0..job.batch.len() {
                    let (value, priors) = job.batch.output(k);
                    batch.push_output(value, priors);
                }
            }
            outcome = outcome.and(done);
            worker.spare = Some(job);
        }
        outcome
    }
}

impl<E> Drop for ParallelEvaluator<E> {
    fn drop(&mut self) {
        for worker in &mut self.workers {
            worker.jobs = None; // the thread's recv fails and it ends
        }
        for worker in &mut self.workers {
            if let Some(thread) = worker.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use konane_rules::{Position, Size};

    use super::*;
    use crate::evaluator::RolloutEvaluator;

    /// Values and priors that identify the position: its hash.
    struct HashEvaluator;

    impl Evaluator for HashEvaluator {
        fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
            for i in 0..batch.len() {
                let position = batch.positions()[i];
                let n = position.count_moves() as usize;
                batch.priors_mut().extend((0..n).map(|i| (position.hash() % 97) as f32 + i as f32));
                batch.finish_output((position.hash() % 1000) as f32 / 1000.0);
            }
            Ok(())
        }
    }

    fn positions(n: usize) -> Vec<Position> {
        konane_rules::sample::cycled_positions(Size::new_const(6, 6), n)
    }

    #[test]
    fn split_batches_give_the_results_of_one_evaluator_in_order() {
        let mut single = HashEvaluator;
        let mut parallel = ParallelEvaluator::new(vec![HashEvaluator, HashEvaluator, HashEvaluator]);
        assert_eq!(parallel.evaluators(), 3);
        for n in [1, 2, 5, 12, 13, 40] {
            let (mut one, mut split) = (Batch::new(), Batch::new());
            for position in positions(n) {
                one.push(position);
                split.push(position);
            }
            single.evaluate(&mut one).unwrap();
            parallel.evaluate(&mut split).unwrap();
            assert_eq!((one.outputs(), split.outputs()), (n, n), "a batch of {n}");
            for i in 0..n {
                assert_eq!(one.output(i), split.output(i), "output {i} of a batch of {n}");
            }
        }
    }

    #[test]
    fn one_evaluator_runs_inline_and_search_works_through_several() {
        let inline = ParallelEvaluator::new(vec![RolloutEvaluator::new(1)]);
        assert_eq!(inline.evaluators(), 1);
        assert!(inline.workers.is_empty());
        let mut parallel = ParallelEvaluator::new(vec![RolloutEvaluator::new(1), RolloutEvaluator::new(2)]);
        let mut search = crate::Search::new(crate::SearchConfig::default(), 1);
        search.set_root(Position::start(Size::new_const(6, 6)));
        let run = search.run(&mut parallel, 400, None).unwrap();
        assert!(run >= 400);
        let visits: u32 = search.root_visits().map(|(_, v)| v).sum();
        assert!(visits >= 399, "the root's children share the simulations: {visits}");
    }
}
