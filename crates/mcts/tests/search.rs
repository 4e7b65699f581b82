//! The search against exact results, its batching, reuse and determinism,
//! and the symmetry wrapper's prior mapping.

use konane_mcts::{Batch, Evaluator, Search, SearchConfig, SymmetryEvaluator, UniformEvaluator};
use konane_rules::{Move, MoveList, Position, Size, Solver, Symmetry};
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn size(text: &str) -> Size {
    text.parse().unwrap()
}

/// Positions met in random games on `size` (not over), `count` of them
/// with at most `max_stones` stones, reproducible from `seed`.
fn random_positions(size: Size, max_stones: u32, count: usize, seed: u64) -> Vec<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut found = Vec::new();
    while found.len() < count {
        let mut position = Position::start(size);
        while let Some(&mv) = position.moves().choose(&mut rng) {
            position.play_unchecked(mv);
            if position.stones() <= max_stones && !position.is_over() {
                found.push(position);
                break;
            }
        }
    }
    found
}

/// Positions `plies` random moves into games on `size` (not over).
fn midgame(size: Size, plies: usize, seed: u64) -> Position {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    konane_rules::sample::midgame(size, plies, |n| rng.random_range(..n))
}

fn search(config: SearchConfig, position: Position, simulations: u64) -> Search {
    let mut search = Search::new(config, 7);
    search.set_root(position);
    search.run(&mut UniformEvaluator::default(), simulations, None).unwrap();
    search
}

fn visits(search: &Search) -> Vec<(Move, u32)> {
    search.root_visits().collect()
}

#[test]
fn finds_forced_wins_in_small_solved_positions() {
    let mut solver = Solver::new(16);
    let mut wins = 0;
    let mut proofs = 0;
    for (board, seed) in [("4x4", 1), ("5x5", 2), ("4x5", 3)] {
        for position in random_positions(size(board), 10, 12, seed) {
            let solution = solver.solve(&position);
            let s = search(SearchConfig::default(), position, 2000);
            let mv = s.best_move().expect("the position is not over");
            if solution.win {
                wins += 1;
                assert!(
                    solution.winning_moves.contains(&mv),
                    "{position}: played {} but the wins are {:?}",
                    mv.to_text(position.size()),
                    solution.winning_moves
                );
            }
            if let Some(proof) = s.root_proof() {
                proofs += 1;
                assert_eq!(proof, solution.win, "{position}: wrong proof");
                assert_eq!(s.root_value(), if proof { 1.0 } else { -1.0 });
            }
        }
    }
    assert!(wins >= 10, "only {wins} won positions tested");
    assert!(proofs >= 10, "only {proofs} positions proven");
}

#[test]
fn a_root_without_moves_has_no_best_move() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut position = Position::start(size("5x5"));
    while let Some(&mv) = position.moves().choose(&mut rng) {
        position.play_unchecked(mv);
    }
    let mut s = Search::new(SearchConfig::default(), 1);
    s.set_root(position);
    let mut out = Batch::new();
    assert_eq!(s.gather(16, &mut out), 0);
    assert!(out.is_empty());
    assert_eq!(s.run(&mut UniformEvaluator::default(), 100, None).unwrap(), 0);
    assert_eq!(s.best_move(), None);
    assert_eq!(s.root_visits().count(), 0);
    assert_eq!(s.root_proof(), Some(false));
    assert_eq!(s.root_value(), -1.0);
}

#[test]
fn a_move_that_ends_the_game_is_found_and_then_always_chosen() {
    // Positions where some but not all moves leave the opponent without a move.
    let mut tested = 0;
    for (i, position) in random_positions(size("6x6"), 14, 200, 11).into_iter().enumerate() {
        let moves = position.moves();
        let ending: Vec<Move> = moves
            .iter()
            .copied()
            .filter(|&mv| {
                let mut child = position;
                child.play_unchecked(mv);
                child.is_over()
            })
            .collect();
        if ending.is_empty() || ending.len() == moves.len() || moves.len() < 3 {
            continue;
        }
        tested += 1;
        let mut s = Search::new(SearchConfig { batch_size: 1, ..SearchConfig::default() }, i as u64);
        s.set_root(position);
        // Uniform priors visit every root move within a few rounds.
        s.run(&mut UniformEvaluator::default(), 3 * moves.len() as u64 + 1, None).unwrap();
        assert_eq!(s.root_proof(), Some(true), "{position}");
        assert_eq!(s.root_value(), 1.0);
        let best = s.best_move().unwrap();
        assert!(ending.contains(&best), "{position}");
        let before: u32 = s.root_visits().find(|&(m, _)| m == best).unwrap().1;
        s.run(&mut UniformEvaluator::default(), 100, None).unwrap();
        let after: u32 = s.root_visits().find(|&(m, _)| m == best).unwrap().1;
        assert_eq!(after, before + 100, "proven win not chosen at once");
        let won = s.root_children().find(|c| c.mv == best).unwrap();
        assert_eq!(won.proven, Some(true));
        if tested == 10 {
            break;
        }
    }
    assert!(tested >= 5, "only {tested} positions");
}

#[test]
fn visits_add_up_for_every_batch_size() {
    let position = midgame(size("6x6"), 6, 3);
    for batch_size in [1, 8, 32] {
        let config = SearchConfig { batch_size, ..SearchConfig::default() };
        let s = search(config, position, 500);
        assert_eq!(s.simulations(), 500, "batch {batch_size}");
        let total: u32 = s.root_visits().map(|(_, v)| v).sum();
        // The root's own evaluation is the first simulation.
        assert_eq!(total as u64 + 1, s.simulations(), "batch {batch_size}");
        assert!(s.best_move().is_some());
    }
}

#[test]
fn the_leaf_solver_proves_small_endgames_without_the_evaluator() {
    /// Counts the positions it is asked to evaluate.
    #[derive(Default)]
    struct Counting(UniformEvaluator, usize);
    impl Evaluator for Counting {
        fn evaluate(&mut self, batch: &mut Batch) -> Result<(), konane_mcts::EvalError> {
            self.1 += batch.len();
            self.0.evaluate(batch)
        }
    }
    let mut solver = Solver::new(16);
    let config = SearchConfig { solve_max_stones: 14, ..SearchConfig::default() };
    let mut wins = 0;
    for position in random_positions(size("6x6"), 14, 30, 4) {
        let solution = solver.solve(&position);
        let mut search = Search::new(config, 7);
        search.set_root(position);
        let mut evaluator = Counting::default();
        // Far fewer simulations than the plain search needs (2000 above).
        search.run(&mut evaluator, 60, None).unwrap();
        assert_eq!(evaluator.1, 1, "{position}: only the root needs the evaluator");
        assert!(search.solved_leaves() > 0);
        assert_eq!(search.root_proof(), Some(solution.win), "{position}: wrong or missing proof");
        if solution.win {
            wins += 1;
            assert!(solution.winning_moves.contains(&search.best_move().unwrap()), "{position}: missed the win");
        }
    }
    assert!(wins >= 5, "only {wins} won positions tested");
}

#[test]
fn few_moves_and_big_batches_collide_without_harm() {
    // A root with few moves makes most descents of a 32-leaf gather collide.
    let position = random_positions(size("5x5"), 12, 40, 9)
        .into_iter()
        .find(|p| (2..=3).contains(&p.count_moves()))
        .expect("a position with 2 or 3 moves");
    let s = search(SearchConfig { batch_size: 32, ..SearchConfig::default() }, position, 300);
    assert_eq!(s.simulations(), 300);
    assert_eq!(s.root_visits().map(|(_, v)| v as u64).sum::<u64>() + 1, 300);
}

/// A stepwise driver serving several searches with one evaluator call per
/// round, as self-play does.
#[test]
fn many_searches_share_one_evaluator_call() {
    let positions = [midgame(size("6x6"), 4, 1), midgame(size("6x6"), 10, 2), midgame(size("5x7"), 6, 3)];
    let simulations = 200;
    let leaves = 8;
    let mut searches: Vec<Search> = positions
        .iter()
        .map(|&p| {
            let mut s = Search::new(SearchConfig::default(), 1);
            s.set_root(p);
            s
        })
        .collect();
    let mut evaluator = UniformEvaluator::default();
    let mut batch = Batch::new();
    let mut firsts = Vec::new();
    while searches.iter().any(|s| s.simulations() < simulations) {
        batch.clear();
        firsts.clear();
        for s in &mut searches {
            let want = (simulations - s.simulations()).min(leaves) as usize;
            firsts.push(batch.len());
            s.gather(want, &mut batch);
        }
        evaluator.evaluate(&mut batch).unwrap();
        for (s, &first) in searches.iter_mut().zip(&firsts) {
            s.apply(&batch, first).unwrap();
        }
    }
    // Each search is exactly what running it alone with the same batches gives.
    for (s, &p) in searches.iter().zip(&positions) {
        let config = SearchConfig { batch_size: leaves as usize, ..SearchConfig::default() };
        let alone = search(config, p, simulations);
        assert_eq!(visits(s), visits(&alone));
    }
}

#[test]
fn tree_reuse_keeps_the_subtree() {
    let position = midgame(size("6x6"), 4, 8);
    let mut s = search(SearchConfig::default(), position, 600);
    let best = s.root_children().max_by_key(|c| c.visits).unwrap();
    assert_eq!(best.proven, None);
    s.advance(best.mv);
    let mut expected = position;
    expected.play_unchecked(best.mv);
    assert_eq!(s.root_position(), Some(&expected));
    assert_eq!(s.simulations(), 0);
    let kept: u32 = s.root_visits().map(|(_, v)| v).sum();
    assert_eq!(kept + 1, best.visits, "the child's visits are the new root's");
    assert!((s.root_value() + best.value).abs() < 1e-6);
    // The opponent's most visited reply, through set_root_reusing.
    let reply = s.root_children().max_by_key(|c| c.visits).unwrap();
    let mut after = expected;
    after.play_unchecked(reply.mv);
    let mut s2 = search(SearchConfig::default(), position, 600);
    assert!(s2.set_root_reusing(after), "a grandchild is reused");
    assert_eq!(s2.root_visits().map(|(_, v)| v).sum::<u32>() + 1, reply.visits);
    // Searching on from a reused tree adds to its visits.
    s2.run(&mut UniformEvaluator::default(), 100, None).unwrap();
    assert_eq!(s2.root_visits().map(|(_, v)| v).sum::<u32>() + 1, reply.visits + 100);
    // An unrelated position starts afresh.
    assert!(!s2.set_root_reusing(midgame(size("6x6"), 12, 99)));
    assert_eq!(s2.root_visits().count(), 0);
}

#[test]
fn same_seed_same_search() {
    let position = midgame(size("8x8"), 6, 4);
    let noisy = SearchConfig { dirichlet_epsilon: 0.25, ..SearchConfig::default() };
    let run = |seed| {
        let mut s = Search::new(noisy, seed);
        s.set_root(position);
        s.run(&mut UniformEvaluator::default(), 400, None).unwrap();
        visits(&s)
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2), "the noise depends on the seed");
}

#[test]
fn temperature_sampling_follows_the_visits() {
    let position = midgame(size("6x6"), 4, 5);
    let s = search(SearchConfig::default(), position, 400);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    assert_eq!(s.choose_move(0.0, &mut rng), s.best_move());
    let visits = visits(&s);
    let mut counts = vec![0u32; visits.len()];
    for _ in 0..4000 {
        let mv = s.choose_move(1.0, &mut rng).unwrap();
        counts[visits.iter().position(|&(m, _)| m == mv).unwrap()] += 1;
    }
    let total: u32 = visits.iter().map(|&(_, v)| v).sum();
    for (&(_, v), &c) in visits.iter().zip(&counts) {
        let expected = 4000.0 * v as f64 / total as f64;
        assert!((c as f64 - expected).abs() < 5.0 * expected.sqrt() + 5.0, "{v} {c} {expected}");
    }
}

/// Prior proportional to one plus the index of the move's starting cell
/// (not symmetric), value from whether the first cell holds a stone.
struct FromCellEvaluator {
    moves: MoveList,
}

fn from_weight(mv: Move) -> f32 {
    match mv {
        Move::Remove(cell) | Move::Jump { from: cell, .. } => 1.0 + cell.index() as f32,
    }
}

impl Evaluator for FromCellEvaluator {
    fn evaluate(&mut self, batch: &mut Batch) -> Result<(), konane_mcts::EvalError> {
        for i in 0..batch.len() {
            let position = batch.positions()[i];
            position.legal_moves(&mut self.moves);
            let total: f32 = self.moves.iter().map(|&m| from_weight(m)).sum();
            batch.priors_mut().extend(self.moves.iter().map(|&m| from_weight(m) / total));
            let corner = position.stone_at(konane_rules::Cell(0)).is_some();
            batch.finish_output(if corner { 0.5 } else { -0.5 });
        }
        Ok(())
    }
}

/// Evaluates `positions` as one batch: the values, and the priors one
/// position after another.
fn evaluate_flat(evaluator: &mut dyn Evaluator, positions: &[Position]) -> (Vec<f32>, Vec<f32>) {
    let mut batch = Batch::new();
    for &position in positions {
        batch.push(position);
    }
    evaluator.evaluate(&mut batch).unwrap();
    assert_eq!(batch.outputs(), positions.len());
    let (mut values, mut priors) = (Vec::new(), Vec::new());
    for i in 0..positions.len() {
        let (value, p) = batch.output(i);
        values.push(value);
        priors.extend_from_slice(p);
    }
    (values, priors)
}

#[test]
fn symmetry_evaluator_maps_priors_back_to_the_right_moves() {
    let mut evaluator = SymmetryEvaluator::new(FromCellEvaluator { moves: MoveList::new() }, 3);
    let mut used = std::collections::HashSet::new();
    for (board, seed) in [("5x5", 1), ("6x6", 2), ("4x6", 3), ("7x5", 4)] {
        let size = size(board);
        // Opening positions (removals) and midgame ones (jumps).
        let mut batch = vec![Position::start(size)];
        let mut opened = Position::start(size);
        opened.play_unchecked(opened.moves()[0]);
        batch.push(opened);
        batch.extend((0..6).map(|i| midgame(size, 3 + 2 * i, seed * 10 + i as u64)));
        let (values, priors) = evaluate_flat(&mut evaluator, &batch);
        assert_eq!(values.len(), batch.len());
        let syms = evaluator.last_symmetries().to_vec();
        let mut at = 0;
        for ((position, &value), &sym) in batch.iter().zip(&values).zip(&syms) {
            assert!(Symmetry::of(size).contains(&sym));
            used.insert(sym);
            let moves = position.moves();
            let images: Vec<Move> = moves.iter().map(|&m| sym.apply_move(size, m)).collect();
            let total: f32 = images.iter().map(|&m| from_weight(m)).sum();
            for (i, &image) in images.iter().enumerate() {
                let expected = from_weight(image) / total;
                assert!((priors[at + i] - expected).abs() < 1e-6, "{position} {sym:?}");
            }
            at += moves.len();
            let corner = sym.apply(position).stone_at(konane_rules::Cell(0)).is_some();
            assert_eq!(value, if corner { 0.5 } else { -0.5 });
        }
        assert_eq!(at, priors.len());
    }
    assert!(used.len() >= 4, "symmetries drawn: {used:?}");
}

#[test]
fn symmetry_ensembles_average_distinct_symmetries() {
    let cases: [(&[&str], usize, u64); 5] = [
        (&["6x6"], 8, 5),
        (&["6x6"], 3, 6),
        (&["4x6"], 8, 7),
        (&["5x5"], 2, 8),
        (&["6x6", "4x6", "7x5"], 8, 9), // mixed sizes: each position uses its own board's symmetries
    ];
    for (boards, count, seed) in cases {
        let mut evaluator =
            SymmetryEvaluator::new(FromCellEvaluator { moves: MoveList::new() }, seed).with_ensemble(count);
        let batch: Vec<Position> = boards
            .iter()
            .flat_map(|board| (0..4).map(move |i| midgame(size(board), 3 + 2 * i, seed * 10 + i as u64)))
            .collect();
        let (values, priors) = evaluate_flat(&mut evaluator, &batch);
        let syms = evaluator.last_symmetries().to_vec();
        assert_eq!(values.len(), batch.len());
        let (mut at, mut first) = (0, 0);
        for (i, position) in batch.iter().enumerate() {
            let size = position.size();
            // A rectangle has 4 symmetries, so 8 asked means all 4.
            let used = count.min(Symmetry::of(size).len());
            let mine = &syms[first..first + used];
            first += used;
            let distinct: std::collections::HashSet<_> = mine.iter().collect();
            assert_eq!(distinct.len(), used, "{boards:?}: {mine:?} repeats a symmetry");
            assert!(mine.iter().all(|sym| Symmetry::of(size).contains(sym)), "{size:?}: {mine:?}");
            let moves = position.moves();
            let mut value = 0.0;
            let mut expected = vec![0.0f32; moves.len()];
            for &sym in mine {
                let corner = sym.apply(position).stone_at(konane_rules::Cell(0)).is_some();
                value += if corner { 0.5 } else { -0.5 } / used as f32;
                let images: Vec<Move> = moves.iter().map(|&m| sym.apply_move(size, m)).collect();
                let total: f32 = images.iter().map(|&m| from_weight(m)).sum();
                for (e, &image) in expected.iter_mut().zip(&images) {
                    *e += from_weight(image) / total / used as f32;
                }
            }
            assert!((values[i] - value).abs() < 1e-6, "{boards:?} value {} vs {value}", values[i]);
            for (k, e) in expected.iter().enumerate() {
                assert!((priors[at + k] - e).abs() < 1e-6, "{boards:?} prior {k}");
            }
            let sum: f32 = priors[at..at + moves.len()].iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "{boards:?} priors sum to {sum}");
            at += moves.len();
        }
        assert_eq!((at, first), (priors.len(), syms.len()));
    }
}
