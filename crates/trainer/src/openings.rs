//! Solved openings: every position within a few plies of the start, solved
//! exactly, mixed into every training batch.
//!
//! Self-play visits an opening only as often as its network chooses it, so a
//! line the network dislikes is rarely played, never labelled by the
//! solver, and stays misjudged when an opponent chooses it (on 6x6, five
//! positions three captures in were missed at every iteration of a run).
//! Small boards can simply be solved from the start: one transposition
//! table shared across the whole opening tree, deepest positions first so
//! the shallow solves find their subtrees already known, solves all of 6x6
//! in seconds. Each position becomes a sample with an exact value and, when
//! won, a policy over the winning moves a search's leaf solver proves in
//! the fewest nodes (see [`quickest_wins`]). A lost position has no
//! policy target: every move loses against perfect play, and a target
//! spread over all of them taught the network flat priors in openings a
//! few stones away from won ones, where a single move wins
//! (`docs/experiments/2026-12-07-value-only-lost-openings.md`).
//!
//! The set is computed once per run and cached in the run directory in the
//! replay file format (`solved-openings-<size>-<plies>p-<nodes>n-v3.replay`;
//! the version changes with the targets, so a run solves again rather than
//! train on a cache made for other targets).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use konane_rules::solver::Solver;
use konane_rules::{Move, Position, Size, Symmetry};

use crate::TrainError;
use crate::replay::{PackedSample, ReplayBuffer};

/// Positions the enumeration refuses to go past: a deeper opening tree
/// than this is not worth solving exhaustively.
pub const MAX_POSITIONS: usize = 2_000_000;

/// Transposition table of the solver: 2^22 buckets, 128 MiB.
const TABLE_BITS: u32 = 22;

/// Transposition table of the solver that times each winning move's proof:
/// the size of a search's leaf solver, whose work the policy target should
/// save.
const PROVER_TABLE_BITS: u32 = konane_mcts::search::LEAF_SOLVER_TABLE_BITS;

/// Nodes past which a winning move's proof counts as hard, however long it
/// is: ten times a search's leaf budget.
fn proof_budget() -> u64 {
    10 * konane_mcts::SearchConfig::default().solve_nodes
}

/// Of `winning` (the winning moves of `position`), those whose proof a
/// fresh leaf solver finds in the fewest nodes: several when they tie
/// exactly, and all of them when none is proven within [`proof_budget`].
/// A search whose priors point there proves the position in few leaf
/// solves; priors spread over every winning move sent the search wide,
/// into leaves too big to solve in its budget. The count is a proxy: the
/// search's solver keeps its table across leaves and moves.
fn quickest_wins(position: &Position, winning: &[Move], prover: &mut Solver) -> Vec<Move> {
    let budget = proof_budget();
    let costs: Vec<u64> = winning
        .iter()
        .map(|&mv| {
            let mut child = *position;
            child.play_unchecked(mv);
            prover.clear();
            prover.solve_within(&child, budget).map_or(u64::MAX, |solution| solution.nodes)
        })
        .collect();
    let least = costs.iter().copied().min().unwrap_or(u64::MAX);
    winning.iter().zip(&costs).filter(|&(_, &cost)| cost == least).map(|(&mv, _)| mv).collect()
}

/// What a solve of the openings found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpeningStats {
    /// Distinct positions (up to symmetry) with a move to play.
    pub positions: usize,
    /// Positions solved within the node budget (the samples).
    pub solved: usize,
    /// Of those, positions won for the side to move.
    pub won: usize,
    /// Solver nodes of the positions' solves (not the timing of each
    /// winning move's proof that picks the policy targets).
    pub nodes: u64,
}

/// Every position of `size` within `plies` plies of the start that has a
/// move to play, one per symmetry class, deepest first (the order to solve
/// them in).
///
/// # Errors
/// More than `limit` positions.
pub fn opening_positions(size: Size, plies: u32, limit: usize) -> Result<Vec<Position>, TrainError> {
    let symmetries = Symmetry::of(size);
    let canonical = |p: &Position| symmetries.iter().map(|s| s.apply(p).hash()).min().expect("the identity");
    let start = Position::start(size);
    let mut seen = HashSet::from([canonical(&start)]);
    let mut levels = vec![vec![start]];
    for _ in 0..plies {
        let mut next = Vec::new();
        for position in levels.last().expect("the start") {
            for mv in position.moves() {
                let mut child = *position;
                child.play_unchecked(mv);
                if !child.is_over() && seen.insert(canonical(&child)) {
                    next.push(child);
                }
            }
        }
        if seen.len() > limit {
            return Err(TrainError::TooManyOpenings { size, limit });
        }
        if next.is_empty() {
            break;
        }
        levels.push(next);
    }
    Ok(levels.into_iter().rev().flatten().collect())
}

/// The solved samples of `positions`, solving each within `node_limit`
/// nodes (those that need more are left out). `on_progress(done)` sees
/// each position; `None` if `stop` was raised first.
pub fn solve_openings(
    positions: &[Position],
    node_limit: u64,
    stop: &AtomicBool,
    mut on_progress: impl FnMut(usize),
) -> Option<(Vec<PackedSample>, OpeningStats)> {
    let mut solver = Solver::new(TABLE_BITS);
    let mut prover = Solver::new(PROVER_TABLE_BITS);
    let mut stats = OpeningStats { positions: positions.len(), ..OpeningStats::default() };
    let mut samples = Vec::new();
    for (i, position) in positions.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        if let Ok(solution) = solver.solve_within(position, node_limit) {
            stats.nodes += solution.nodes;
            stats.solved += 1;
            let moves =
                if solution.win { quickest_wins(position, &solution.winning_moves, &mut prover) } else { Vec::new() };
            stats.won += solution.win as usize;
            samples.push(PackedSample::new(
                position,
                moves.into_iter().map(|mv| (mv, 1)),
                if solution.win { 1.0 } else { -1.0 },
            ));
        }
        on_progress(i + 1);
    }
    Some((samples, stats))
}

/// Where a run caches the solved openings of `size`.
pub fn cache_path(run_dir: &Path, size: Size, plies: u32, node_limit: u64) -> PathBuf {
    run_dir.join(format!("solved-openings-{size}-{plies}p-{node_limit}n-v3.replay"))
}

/// The solved openings of every size in `sizes`, read from the run's cache
/// or solved (and cached); `None` if stopped while solving.
///
/// # Errors
/// Too many positions, or the cache cannot be written; a damaged cache is
/// solved again.
pub fn load_or_solve(
    run_dir: &Path,
    sizes: &[Size],
    plies: u32,
    node_limit: u64,
    stop: &AtomicBool,
    progress: &dyn Fn(usize, usize),
) -> Result<Option<ReplayBuffer>, TrainError> {
    let mut all = Vec::new();
    for &size in sizes {
        let path = cache_path(run_dir, size, plies, node_limit);
        if path.exists() {
            match ReplayBuffer::load(&path, usize::MAX) {
                Ok(cached) => {
                    tracing::info!(file = %path.display(), samples = cached.len(), "solved openings from the cache");
                    all.extend(cached.iter().cloned());
                    continue;
                }
                Err(err) => tracing::warn!("solving the openings again: {err}"),
            }
        }
        let started = Instant::now();
        let positions = opening_positions(size, plies, MAX_POSITIONS)?;
        tracing::info!(%size, plies, positions = positions.len(), "solving the openings");
        let Some((samples, stats)) =
            solve_openings(&positions, node_limit, stop, |done| progress(done, positions.len()))
        else {
            return Ok(None);
        };
        tracing::info!(
            %size,
            positions = stats.positions,
            solved = stats.solved,
            won = stats.won,
            nodes = stats.nodes,
            seconds = format!("{:.1}", started.elapsed().as_secs_f64()),
            "openings solved"
        );
        let mut cache = ReplayBuffer::new(samples.len());
        cache.extend(samples);
        cache.save(&path)?;
        all.extend(cache.iter().cloned());
    }
    let mut book = ReplayBuffer::new(all.len());
    book.extend(all);
    Ok(Some(book))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use konane_rules::solver::minimax_wins;

    fn size(text: &str) -> Size {
        text.parse().unwrap()
    }

    #[test]
    fn enumeration_is_complete_up_to_symmetry_and_deepest_first() {
        let size = size("4x4");
        let positions = opening_positions(size, 4, MAX_POSITIONS).unwrap();
        // Every position within 4 plies, reached by brute force, has a
        // symmetric image in the list.
        let listed: HashSet<u64> = positions.iter().map(Position::hash).collect();
        let mut frontier = vec![Position::start(size)];
        let mut reached = 0;
        for _ in 0..=4 {
            let mut next = Vec::new();
            for p in &frontier {
                if !p.is_over() {
                    reached += 1;
                    assert!(
                        Symmetry::of(size).iter().any(|s| listed.contains(&s.apply(p).hash())),
                        "missing\n{}",
                        p.pretty(&[])
                    );
                }
                for mv in p.moves() {
                    let mut child = *p;
                    child.play_unchecked(mv);
                    next.push(child);
                }
            }
            frontier = next;
        }
        assert!(positions.len() < reached, "symmetric duplicates are merged");
        assert!(positions.windows(2).all(|w| w[0].stones() <= w[1].stones()), "deepest first");
        assert_eq!(positions.last(), Some(&Position::start(size)));
        assert!(positions.iter().all(|p| !p.is_over()));
        assert!(opening_positions(size, 4, 10).is_err(), "the limit is enforced");
    }

    #[test]
    fn samples_carry_exact_values_and_winning_moves() {
        let positions = opening_positions(size("4x5"), 3, MAX_POSITIONS).unwrap();
        let stop = AtomicBool::new(false);
        let mut seen = 0;
        let (mut several_winning, mut narrowed) = (0, 0);
        let (samples, stats) = solve_openings(&positions, u64::MAX, &stop, |done| seen = done).unwrap();
        assert_eq!((seen, stats.solved, samples.len()), (positions.len(), positions.len(), positions.len()));
        assert!(stats.won > 0 && stats.won < stats.solved, "both values occur: {stats:?}");
        for (sample, position) in samples.iter().zip(&positions) {
            assert_eq!(&sample.position(), position);
            let win = minimax_wins(position);
            assert_eq!(sample.value, if win { 1.0 } else { -1.0 });
            let target = sample.unpack(Symmetry::Identity).policy;
            // Each winning move (by minimax) with what a fresh leaf solver
            // spends proving it.
            let costs: Vec<(Move, u64)> = position
                .moves()
                .into_iter()
                .filter_map(|mv| {
                    let mut child = *position;
                    child.play_unchecked(mv);
                    let proof = Solver::new(PROVER_TABLE_BITS).solve_within(&child, proof_budget());
                    (!minimax_wins(&child)).then(|| (mv, proof.map_or(u64::MAX, |s| s.nodes)))
                })
                .collect();
            let quickest = costs.iter().map(|&(_, cost)| cost).min();
            let expected: BTreeSet<Move> =
                costs.iter().filter(|&&(_, cost)| Some(cost) == quickest).map(|&(mv, _)| mv).collect();
            let targeted: BTreeSet<Move> = target.iter().map(|&(mv, _)| mv).collect();
            assert_eq!(targeted, expected, "the target is every winning move with the quickest proof");
            for (_, p) in &target {
                assert!((p - 1.0 / target.len() as f32).abs() < 1e-6, "uniform over the target moves");
            }
            assert_eq!(target.is_empty(), !win, "a won position has a policy target, a lost one none");
            several_winning += usize::from(costs.len() > 1);
            narrowed += usize::from(target.len() < costs.len());
        }
        assert!(narrowed > 0 && several_winning > 0, "targets keep only the quickest of several winning moves");
        // A budget too small to solve anything leaves every position out.
        let (none, stats) = solve_openings(&positions, 1, &stop, |_| {}).unwrap();
        assert!(none.len() < positions.len() && stats.solved == none.len());
        stop.store(true, Ordering::Relaxed);
        assert!(solve_openings(&positions, u64::MAX, &stop, |_| {}).is_none());
    }

    #[test]
    fn the_cache_is_written_once_and_reread() {
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let sizes = [size("4x4"), size("4x5")];
        let first = load_or_solve(dir.path(), &sizes, 3, u64::MAX, &stop, &|_, _| {}).unwrap().unwrap();
        let path = cache_path(dir.path(), sizes[0], 3, u64::MAX);
        assert!(path.exists());
        // A cached set is read, not solved: a stopped solver would give None.
        stop.store(true, Ordering::Relaxed);
        let again = load_or_solve(dir.path(), &sizes, 3, u64::MAX, &stop, &|_, _| {}).unwrap().unwrap();
        assert_eq!(first, again);
        assert!(first.iter().any(|s| s.size() == sizes[0]) && first.iter().any(|s| s.size() == sizes[1]));
        // A damaged cache is solved again.
        std::fs::write(&path, b"junk").unwrap();
        stop.store(false, Ordering::Relaxed);
        let redone = load_or_solve(dir.path(), &sizes, 3, u64::MAX, &stop, &|_, _| {}).unwrap().unwrap();
        assert_eq!(first, redone);
    }
}
