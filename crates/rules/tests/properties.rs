//! Property tests of the rules crate: notation round trips, make/unmake,
//! incremental hashing, symmetries, game length, the solver against plain
//! minimax, and game records.
//!
//! Every property runs from a fixed proptest seed, so the suite is
//! deterministic; failures are not persisted to files.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use konane_rules::dfpn::DfpnSolver;
use konane_rules::naive::Naive;
use konane_rules::solver::{MoveOrder, Solver, minimax_wins};
use konane_rules::{Cell, Color, GameRecord, Move, Phase, Position, Size, Symmetry};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn config(cases: u32, seed: u64) -> ProptestConfig {
    ProptestConfig { cases, rng_seed: RngSeed::Fixed(seed), failure_persistence: None, ..ProptestConfig::default() }
}

fn arb_size(max_cols: usize, max_rows: usize) -> impl Strategy<Value = Size> {
    (1..=max_cols, 1..=max_rows).prop_map(|(c, r)| Size::new(c, r).unwrap())
}

fn arb_side() -> impl Strategy<Value = Color> {
    prop_oneof![Just(Color::Black), Just(Color::White)]
}

/// Any arrangement of stones on any size up to `max`x`max`, either side to
/// move: most such positions never arise in a game.
fn arb_filling(max: usize) -> impl Strategy<Value = Position> {
    // The share of empty cells varies per case so that full (opening),
    // almost full and sparse boards all occur.
    let empty_pct = prop_oneof![1 => Just(0u32), 4 => 0u32..=100];
    (arb_size(max, max), arb_side(), empty_pct).prop_flat_map(|(size, side, empty_pct)| {
        proptest::collection::vec((0u32..100, any::<bool>()), size.cells()).prop_map(move |cells| {
            Position::from_fn(size, side, |c| {
                let (roll, black) = cells[c.index()];
                match (roll < empty_pct, black) {
                    (true, _) => None,
                    (false, true) => Some(Color::Black),
                    (false, false) => Some(Color::White),
                }
            })
        })
    })
}

/// A random game from the start of `size`, played to its end: the
/// positions before each move, the moves, and the final position.
struct Game {
    positions: Vec<Position>,
    moves: Vec<Move>,
    last: Position,
}

fn random_game(size: Size, seed: u64) -> Game {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut position = Position::start(size);
    let mut game = Game { positions: Vec::new(), moves: Vec::new(), last: position };
    loop {
        let moves = position.moves();
        if moves.is_empty() {
            break;
        }
        let mv = moves[rng.random_range(0..moves.len())];
        game.positions.push(position);
        game.moves.push(mv);
        position.play(mv).unwrap();
        assert!(game.moves.len() <= size.cells(), "{size} seed {seed}: more plies than cells");
    }
    game.last = position;
    game
}

/// Every position of a random game (the final one included).
fn game_positions(size: Size, seed: u64) -> Vec<Position> {
    let game = random_game(size, seed);
    let mut all = game.positions;
    all.push(game.last);
    all
}

fn sorted(moves: impl IntoIterator<Item = Move>) -> Vec<Move> {
    let mut moves: Vec<Move> = moves.into_iter().collect();
    moves.sort();
    moves
}

/// The notation name of a cell, written independently of the crate.
fn cell_name(size: Size, cell: Cell) -> String {
    let (col, row) = (cell.index() % size.cols(), cell.index() / size.cols());
    format!("{}{}", (b'a' + col as u8) as char, row + 1)
}

/// A valid position string: `cols`x`rows` cells, side letter.
fn arb_position_string() -> impl Strategy<Value = String> {
    (1usize..=20, 1usize..=20, prop_oneof![Just('b'), Just('w')]).prop_flat_map(|(cols, rows, side)| {
        let row = proptest::collection::vec(prop_oneof![Just('B'), Just('W'), Just('.')], cols)
            .prop_map(|cells| cells.into_iter().collect::<String>());
        proptest::collection::vec(row, rows).prop_map(move |rows| format!("{} {side}", rows.join("/")))
    })
}

proptest! {
    #![proptest_config(config(256, 0x0001))]

    /// print then parse gives back the same position (stones, side, size
    /// and hash), and the printed string is what the spec describes.
    #[test]
    fn position_print_parse_round_trip(position in arb_filling(20)) {
        let text = position.to_string();
        prop_assert_eq!(&text, &Naive::from_position(&position).to_notation());
        let parsed: Position = text.parse().unwrap();
        prop_assert_eq!(parsed, position);
        prop_assert_eq!(parsed.hash(), position.hash());
        prop_assert_eq!(parsed.size(), position.size());
        prop_assert_eq!(parsed.to_string(), text);
    }

    /// parse then print gives back any valid position string exactly.
    #[test]
    fn position_parse_print_round_trip(text in arb_position_string()) {
        let position: Position = text.parse().unwrap();
        prop_assert_eq!(position.to_string(), text.clone());
        let naive = Naive::from_position(&position);
        prop_assert_eq!(naive.to_notation(), text);
    }

    /// A valid string with one character inserted, removed or replaced is
    /// either rejected with a message or read as exactly what it says: the
    /// notation has one spelling per position.
    #[test]
    fn edited_position_strings_are_rejected_or_canonical(
        text in arb_position_string(),
        edit in 0usize..3,
        at in any::<prop::sample::Index>(),
        c in prop_oneof![
            Just('B'), Just('W'), Just('.'), Just('/'), Just(' '),
            Just('b'), Just('w'), Just('x'), Just('0'), Just('é'),
        ],
    ) {
        let mut chars: Vec<char> = text.chars().collect();
        let i = at.index(chars.len() + 1);
        match edit {
            0 => chars.insert(i, c),
            1 if i < chars.len() => {
                chars.remove(i);
            }
            _ if i < chars.len() => chars[i] = c,
            _ => chars.push(c),
        }
        let edited: String = chars.into_iter().collect();
        match edited.parse::<Position>() {
            Ok(position) => prop_assert_eq!(position.to_string(), edited),
            Err(err) => prop_assert!(err.to_string().starts_with("bad position: "), "{}", err),
        }
    }
}

proptest! {
    #![proptest_config(config(256, 0x0002))]

    /// Any move, legal or not, prints as the spec says and parses back.
    #[test]
    fn move_text_round_trip(
        size in arb_size(20, 20),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        jump in any::<bool>(),
    ) {
        let from = Cell(a.index(size.cells()) as u16);
        let to = Cell(b.index(size.cells()) as u16);
        let (mv, expected) = if jump {
            (Move::Jump { from, to }, format!("{}-{}", cell_name(size, from), cell_name(size, to)))
        } else {
            (Move::Remove(from), cell_name(size, from))
        };
        let text = mv.to_text(size);
        prop_assert_eq!(&text, &expected);
        let position = Position::start(size);
        prop_assert_eq!(position.parse_move(&text).unwrap(), mv);
        // A cell past the board edge does not parse.
        let off = format!("{}1", (b'a' + size.cols() as u8) as char);
        prop_assert!(position.parse_move(&off).is_err());
        let off = format!("a{}", size.rows() + 1);
        prop_assert!(position.parse_move(&off).is_err());
    }
}

proptest! {
    #![proptest_config(config(128, 0x0003))]

    /// Along a random game: every legal move's text parses back to it (and
    /// is legal), play/undo restores the position exactly, the hash kept
    /// incrementally equals the hash of the position rebuilt from its
    /// string, and each move removes exactly the stones it captures.
    #[test]
    fn moves_make_unmake_and_hash_along_random_games(
        size in arb_size(20, 20),
        seed in any::<u64>(),
    ) {
        let game = random_game(size, seed);
        for position in game.positions.iter().chain([&game.last]) {
            let rebuilt: Position = position.to_string().parse().unwrap();
            prop_assert_eq!(rebuilt.hash(), position.hash(), "{}", position);
            prop_assert_eq!(rebuilt, *position);
            let by_fn = Position::from_fn(size, position.side_to_move(), |c| position.stone_at(c));
            prop_assert_eq!(by_fn, *position);
            let stones = position.stone_count(Color::Black) + position.stone_count(Color::White);
            prop_assert_eq!(position.stones(), stones);
            for mv in position.moves() {
                let text = mv.to_text(size);
                prop_assert_eq!(position.parse_move(&text).unwrap(), mv);
                prop_assert_eq!(position.parse_legal_move(&text).unwrap(), mv);
                let mut child = *position;
                child.play_unchecked(mv);
                prop_assert_ne!(child, *position);
                prop_assert_eq!(child.side_to_move(), position.side_to_move().opposite());
                let scratch = Position::from_fn(size, child.side_to_move(), |c| child.stone_at(c));
                prop_assert_eq!(child.hash(), scratch.hash(), "{} after {}", position, text);
                let child_stones = child.stones();
                let removed = match mv {
                    Move::Remove(_) => 1,
                    Move::Jump { .. } => mv.captures(size) as u32,
                };
                prop_assert!(removed >= 1);
                prop_assert_eq!(child_stones + removed, stones, "{} after {}", position, text);
                child.undo_unchecked(mv);
                prop_assert_eq!(child, *position, "undo {} in {}", text, position);
                prop_assert_eq!(child.hash(), position.hash());
            }
        }
    }

    /// Every game ends within as many plies as the board has cells: each
    /// ply takes at least one stone off. The loser is the side to move.
    #[test]
    fn games_end_within_cells_plies(size in arb_size(20, 20), seed in any::<u64>()) {
        let game = random_game(size, seed);
        let last = game.last;
        prop_assert!(game.moves.len() + last.stones() as usize <= size.cells());
        prop_assert!(last.is_over());
        prop_assert_eq!(last.count_moves(), 0);
        prop_assert_eq!(last.winner(), Some(last.side_to_move().opposite()));
        let side = if game.moves.len().is_multiple_of(2) { Color::Black } else { Color::White };
        prop_assert_eq!(last.side_to_move(), side);
        prop_assert!(game.positions.iter().all(|p| !p.is_over()));
    }
}

/// Checks that `sym` maps `position`'s legal moves exactly onto those of
/// its image.
fn check_symmetry(position: &Position, sym: Symmetry) -> Result<(), TestCaseError> {
    let size = position.size();
    let image = sym.apply(position);
    prop_assert_eq!(image.size(), size);
    prop_assert_eq!(image.side_to_move(), position.side_to_move());
    prop_assert_eq!(image.phase(), position.phase(), "{:?} of {}", sym, position);
    for color in [Color::Black, Color::White] {
        prop_assert_eq!(image.stone_count(color), position.stone_count(color));
    }
    for cell in size.all_cells() {
        prop_assert_eq!(image.stone_at(sym.cell(size, cell)), position.stone_at(cell));
    }
    prop_assert_eq!(image.count_moves(), position.count_moves(), "{:?} of {}: {}", sym, position, image);
    let mapped = sorted(position.moves().into_iter().map(|mv| sym.apply_move(size, mv)));
    prop_assert_eq!(mapped, sorted(image.moves()), "{:?} of {}: {}", sym, position, image);
    prop_assert_eq!(sym.inverse().apply(&image), *position);
    Ok(())
}

proptest! {
    #![proptest_config(config(128, 0x0004))]

    /// Every symmetry of the board maps the legal moves of every position
    /// of a random game onto those of the transformed position, openings
    /// included (the middle and corner cells form a symmetric set).
    #[test]
    fn symmetries_map_legal_moves_along_random_games(
        size in arb_size(20, 20),
        seed in any::<u64>(),
    ) {
        let syms = Symmetry::of(size);
        prop_assert_eq!(syms.len(), if size.cols() == size.rows() { 8 } else { 4 });
        for position in game_positions(size, seed) {
            for &sym in syms {
                check_symmetry(&position, sym)?;
            }
        }
    }

    /// The same on arbitrary fillings, square boards half the time.
    #[test]
    fn symmetries_map_legal_moves_on_random_fillings(
        position in prop_oneof![arb_filling(20), (1usize..=20).prop_flat_map(|n| {
            (arb_side(), proptest::collection::vec(
                prop_oneof![Just(None), Just(Some(Color::Black)), Just(Some(Color::White))],
                n * n,
            ))
            .prop_map(move |(side, stones)| {
                Position::from_fn(Size::new(n, n).unwrap(), side, |c| stones[c.index()])
            })
        })],
    ) {
        for &sym in Symmetry::of(position.size()) {
            check_symmetry(&position, sym)?;
        }
    }
}

/// A position of a tiny board: a prefix of a random game, or (for a
/// third of the cases) an arbitrary filling.
fn arb_tiny_position() -> impl Strategy<Value = Position> {
    prop_oneof![
        2 => (arb_size(4, 4), any::<u64>(), any::<prop::sample::Index>()).prop_map(
            |(size, seed, at)| {
                let positions = game_positions(size, seed);
                positions[at.index(positions.len())]
            }
        ),
        1 => arb_filling(4),
    ]
}

/// A position at least 8 plies into a random 5x5 game.
fn arb_5x5_midgame() -> impl Strategy<Value = Position> {
    (any::<u64>(), any::<prop::sample::Index>()).prop_map(|(seed, at)| {
        let positions = game_positions(Size::new(5, 5).unwrap(), seed);
        let from = 8.min(positions.len() - 1);
        positions[from + at.index(positions.len() - from)]
    })
}

/// The solver's value and winning moves against plain minimax.
fn check_solver(solver: &mut Solver, position: &Position) -> Result<(), TestCaseError> {
    let solution = solver.solve(position);
    let expected = minimax_wins(position);
    prop_assert_eq!(solution.win, expected, "{}", position);
    let losing_children: BTreeSet<Move> = position
        .moves()
        .into_iter()
        .filter(|&mv| {
            let mut child = *position;
            child.play_unchecked(mv);
            !minimax_wins(&child)
        })
        .collect();
    let winning: BTreeSet<Move> = solution.winning_moves.iter().copied().collect();
    prop_assert_eq!(winning.len(), solution.winning_moves.len(), "duplicates");
    prop_assert_eq!(winning, losing_children, "{}", position);
    prop_assert_eq!(solver.wins(position).unwrap(), expected, "{}", position);
    Ok(())
}

proptest! {
    #![proptest_config(config(128, 0x0005))]

    /// On boards up to 4x4 the solver agrees with minimax, value and
    /// winning moves (a fresh solver each time, with a tiny table so that
    /// replacement is exercised).
    #[test]
    fn solver_agrees_with_minimax_on_tiny_boards(position in arb_tiny_position()) {
        let mut solver = Solver::new(4);
        check_solver(&mut solver, &position)?;
    }

    /// The same on 5x5 midgames, with the table keyed by symmetry class
    /// (the default) and without.
    #[test]
    fn solver_agrees_with_minimax_on_5x5_midgames(position in arb_5x5_midgame()) {
        let mut solver = Solver::new(12);
        check_solver(&mut solver, &position)?;
        solver.set_symmetry(false);
        check_solver(&mut solver, &position)?;
    }
}

/// Symmetric images share table entries: once a position is solved, each
/// of its images is solved from the table (one node per root move, each a
/// hit), with the same value and the images of the same winning moves; a
/// solver without the folding searches each image again.
#[test]
fn symmetric_images_are_solved_from_the_table() {
    for (size, seed) in [("5x5", 3), ("4x6", 5), ("6x6", 8)] {
        let size: Size = size.parse().unwrap();
        let positions = game_positions(size, seed);
        let position = positions[4.min(positions.len() - 1)];
        let mut folded = Solver::new(16);
        let mut plain = Solver::new(16);
        plain.set_symmetry(false);
        let solution = folded.solve(&position);
        let unfolded = plain.solve(&position);
        assert_eq!((solution.win, &solution.winning_moves), (unfolded.win, &unfolded.winning_moves), "{position}");
        for &symmetry in &Symmetry::of(size)[1..] {
            let image = symmetry.apply(&position);
            let moves = image.moves().len() as u64;
            let again = folded.solve(&image);
            assert_eq!(again.win, solution.win, "{symmetry:?} {image}");
            let mapped: BTreeSet<Move> =
                solution.winning_moves.iter().map(|&mv| symmetry.apply_move(size, mv)).collect();
            assert_eq!(again.winning_moves.iter().copied().collect::<BTreeSet<_>>(), mapped, "{symmetry:?}");
            assert_eq!(again.nodes, moves, "{symmetry:?} {image}: every child a table hit");
            if image != position {
                assert!(plain.solve(&image).nodes > moves, "{symmetry:?}: the plain table misses {image}");
            }
        }
    }
}

/// One solver, its table kept, over many positions of the same size.
#[test]
fn a_reused_solver_agrees_with_minimax() {
    let size = Size::new(4, 4).unwrap();
    let mut solver = Solver::new(10);
    let mut checked = 0;
    for seed in 0..40 {
        for position in game_positions(size, seed) {
            let solution = solver.solve(&position);
            assert_eq!(solution.win, minimax_wins(&position), "{position}");
            checked += 1;
        }
    }
    assert!(checked > 300, "{checked}");
}

proptest! {
    #![proptest_config(config(128, 0x0006))]

    /// A finished random game, recorded with its winner, prints and parses
    /// back to the same record, and replays to the same final position;
    /// every unfinished prefix round-trips without a result; the wrong
    /// winner is rejected.
    #[test]
    fn game_records_round_trip(
        size in arb_size(20, 20),
        seed in any::<u64>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let game = random_game(size, seed);
        let winner = game.last.winner().unwrap();
        let record = GameRecord { size, moves: game.moves.clone(), result: Some(winner) };
        let text = record.to_string();
        let mut expected = size.to_string();
        for mv in &game.moves {
            expected += " ";
            expected += &mv.to_text(size);
        }
        expected += if winner == Color::Black { " ; result B" } else { " ; result W" };
        prop_assert_eq!(&text, &expected);
        let parsed: GameRecord = text.parse().unwrap();
        prop_assert_eq!(&parsed, &record);
        prop_assert_eq!(parsed.to_string(), text.clone());
        prop_assert_eq!(parsed.final_position(), game.last);

        let wrong = GameRecord { result: Some(winner.opposite()), ..record.clone() };
        prop_assert!(wrong.to_string().parse::<GameRecord>().is_err(), "{}", wrong);

        let ply = cut.index(game.moves.len() + 1);
        let prefix = GameRecord { size, moves: game.moves[..ply].to_vec(), result: None };
        let parsed: GameRecord = prefix.to_string().parse().unwrap();
        prop_assert_eq!(&parsed, &prefix);
        let at = game.positions.get(ply).copied().unwrap_or(game.last);
        prop_assert_eq!(parsed.final_position(), at);
    }
}

/// Phases on every position of some games: the first two plies are the
/// openings, then capturing to the end (the spec's phase rules as seen
/// from a real game).
#[test]
fn phases_of_real_games() {
    for (i, (cols, rows)) in [(1, 1), (1, 2), (2, 2), (4, 4), (6, 7), (8, 8), (20, 20)].into_iter().enumerate() {
        let size = Size::new(cols, rows).unwrap();
        for seed in 0..5 {
            let positions = game_positions(size, 1000 * i as u64 + seed);
            for (ply, position) in positions.iter().enumerate() {
                let expected = match ply {
                    0 => Phase::BlackOpening,
                    1 => Phase::WhiteOpening,
                    _ => Phase::Capturing,
                };
                assert_eq!(position.phase(), expected, "{size} ply {ply}: {position}");
            }
        }
    }
}

/// One solver reused across boards of the same cell count but different
/// shapes: the 4x4 position below and the 2x8 position have stones on the
/// same cell indices but different values. The hash includes the board
/// size, so the shared transposition table keeps them apart (it once did not).
#[test]
fn a_solver_reused_across_board_shapes_stays_exact() {
    let square: Position = "BBB./W.W./.BWB/.W.W b".parse().unwrap();
    let tall: Position = "B./BB/W./W./WB/.B/.W/.W b".parse().unwrap();
    assert_ne!(square.hash(), tall.hash(), "the board size is part of the hash");
    assert!(minimax_wins(&square));
    assert!(!minimax_wins(&tall));
    let mut solver = Solver::new(10);
    assert!(solver.wins(&square).unwrap());
    assert!(!solver.wins(&tall).unwrap(), "{tall} is lost for black");
}

/// Threads sharing the table, root moves split by symmetry class, give
/// the serial solver's value and winning moves (on starts, whose root moves
/// fold into classes; on corner openings of square boards, whose two
/// replies are one class, so that the threads share one tree; and on
/// midgames, whose moves mostly do not fold), with the table's folding on
/// and off, on two threads and on three.
#[test]
fn a_parallel_solve_agrees_with_the_serial_one() {
    let mut positions: Vec<Position> =
        ["5x5", "4x6", "6x4", "5x6", "4x7"].iter().map(|s| Position::start(s.parse().unwrap())).collect();
    for n in [4, 5] {
        positions.push(corner_opening(n));
    }
    for seed in 0..16 {
        let size = if seed % 2 == 0 { Size::new(5, 5).unwrap() } else { Size::new(6, 5).unwrap() };
        let game = game_positions(size, seed);
        positions.push(game[(4 + seed as usize).min(game.len() - 1)]);
    }
    for symmetry in [true, false] {
        for position in &positions {
            let mut serial = Solver::new(14);
            serial.set_symmetry(symmetry);
            let expected = serial.solve(position);
            for threads in [2, 3] {
                let mut parallel = Solver::new(14);
                parallel.set_symmetry(symmetry);
                let reported = Mutex::new(Vec::new());
                let solution = parallel
                    .solve_each_parallel(position, threads, |mv, lost| reported.lock().unwrap().push((mv, lost)))
                    .unwrap();
                assert_eq!(
                    (solution.win, &solution.winning_moves),
                    (expected.win, &expected.winning_moves),
                    "{position}, {threads} threads"
                );
                let mut reported = reported.into_inner().unwrap();
                reported.sort();
                let mut all: Vec<(Move, bool)> =
                    position.moves().into_iter().map(|mv| (mv, expected.winning_moves.contains(&mv))).collect();
                all.sort();
                assert_eq!(reported, all, "{position}: every root move reported once with its value");
                let resolved = parallel.progress().resolved();
                assert!((resolved - 1.0).abs() < 1e-6, "{position}: all of the solve resolved, not {resolved}");
            }
        }
    }
}

/// The n x n board after black's opening removal of the a1 corner: white
/// to move, with two replies that the diagonal mirror maps onto each other.
fn corner_opening(n: usize) -> Position {
    let mut position = Position::start(Size::new(n, n).unwrap());
    position.play(position.parse_legal_move("a1").unwrap()).unwrap();
    position
}

/// A root whose moves are all one class (the 6x6 corner opening) still
/// keeps both threads searching: the second joins the first on its tree,
/// where the old split by root moves left it idle.
#[test]
fn a_thread_without_a_root_move_of_its_own_helps_another() {
    let position = corner_opening(6);
    assert_eq!(position.moves().len(), 2);
    let expected = Solver::new(18).solve(&position);
    assert_eq!(expected.threads, 1);
    let solution = Solver::new(18).solve_each_parallel(&position, 2, |_, _| {}).unwrap();
    assert_eq!((solution.win, &solution.winning_moves), (expected.win, &expected.winning_moves));
    assert_eq!(solution.threads, 2, "both threads searched: {solution:?}");
}

/// The progress a long solve shows: a finished root move counts its share,
/// the move being searched the share of its tree resolved so far,
/// and a solve cut off sooner never shows more than one cut off later (the
/// search is deterministic, so the shorter run is a prefix of the longer).
#[test]
fn a_solve_reports_the_share_it_has_resolved() {
    let position = Position::start(Size::new(6, 5).unwrap());
    let roots = position.moves().len() as f64;
    let mut solver = Solver::new(16);
    let progress = solver.progress();
    let mut seen = Vec::new();
    let total = solver.solve_each(&position, u64::MAX, |_, _| seen.push(progress.resolved())).unwrap().nodes;
    for (i, resolved) in seen.iter().enumerate() {
        assert!((resolved - (i + 1) as f64 / roots).abs() < 1e-9, "after root move {i}: {resolved}");
    }
    let (mut last, mut within_a_move, mut rises) = (0.0, false, 0);
    for step in 1..40 {
        let mut solver = Solver::new(16);
        let limit = total * step / 40;
        assert!(solver.solve_within(&position, limit).is_err(), "{limit} of {total} nodes is not enough");
        let resolved = solver.progress().resolved();
        assert!((last..1.0).contains(&resolved), "cut at {limit} nodes: {resolved} after {last}");
        within_a_move |= (resolved * roots).fract() > 1e-6;
        rises += usize::from(resolved > last);
        last = resolved;
    }
    assert!(within_a_move, "some cut fell inside a root move and counted its resolved share");
    // Every one of the 39 cuts but a few shows more than the one before:
    // the estimate follows the line searched, not just the root's replies.
    assert!(rises >= 30, "the estimate rose at {rises} of 39 cuts");
}

/// Scores each move by whether it wins, from a solve of its own: `best`
/// puts the winning moves first, otherwise last.
struct Oracle {
    best: bool,
    calls: Arc<AtomicUsize>,
    /// Copies made for other threads.
    forks: Arc<AtomicUsize>,
}

impl MoveOrder for Oracle {
    fn score(&mut self, position: &Position, moves: &[Move], scores: &mut Vec<f32>) -> bool {
        self.calls.fetch_add(1, Ordering::Relaxed);
        scores.extend(moves.iter().map(|&mv| {
            let mut child = *position;
            child.play_unchecked(mv);
            let wins = !Solver::new(12).solve(&child).win;
            if wins == self.best { 1.0 } else { 0.0 }
        }));
        true
    }

    fn fork(&self) -> Box<dyn MoveOrder> {
        self.forks.fetch_add(1, Ordering::Relaxed);
        Box::new(Oracle { best: self.best, calls: Arc::clone(&self.calls), forks: Arc::clone(&self.forks) })
    }
}

impl Oracle {
    fn new(best: bool) -> Oracle {
        Oracle { best, calls: Arc::default(), forks: Arc::default() }
    }
}

/// A move order changes how much the solver searches, never what it finds:
/// winning moves tried first search fewer nodes than winning moves tried
/// last, both give the plain solver's values, and the order is asked only
/// for the plies it was given. In a parallel solve every further thread
/// asks its own copy of the order.
#[test]
fn a_move_order_changes_the_work_but_not_the_values() {
    for size in ["5x5", "4x6", "5x6"] {
        let position = Position::start(size.parse().unwrap());
        let expected = Solver::new(14).solve(&position);
        let mut nodes = Vec::new();
        for best in [true, false] {
            let order = Oracle::new(best);
            let calls = Arc::clone(&order.calls);
            let mut solver = Solver::new(14);
            solver.set_move_order(4, Box::new(order));
            let solution = solver.solve(&position);
            assert_eq!((solution.win, &solution.winning_moves), (expected.win, &expected.winning_moves), "{size}");
            assert!(calls.load(Ordering::Relaxed) > 0, "{size}: the order was asked");
            nodes.push(solution.nodes);
        }
        assert!(nodes[0] < nodes[1], "{size}: winning moves first searched {} nodes, last {}", nodes[0], nodes[1]);
        // One ply: only the positions right after the root's moves.
        let order = Oracle::new(true);
        let calls = Arc::clone(&order.calls);
        let mut solver = Solver::new(14);
        solver.set_move_order(1, Box::new(order));
        solver.solve(&position);
        let calls = calls.load(Ordering::Relaxed);
        assert!((1..=position.moves().len()).contains(&calls), "{size}: {calls} calls for one ply");
        // Three threads: two copies, the same values.
        let order = Oracle::new(true);
        let forks = Arc::clone(&order.forks);
        let mut solver = Solver::new(14);
        solver.set_move_order(4, Box::new(order));
        let mut solution = solver.solve_each_parallel(&position, 3, |_, _| {}).unwrap();
        solution.winning_moves.sort_unstable();
        let mut winning = expected.winning_moves.clone();
        winning.sort_unstable();
        assert_eq!((solution.win, solution.winning_moves), (expected.win, winning), "{size}, three threads");
        assert_eq!(forks.load(Ordering::Relaxed), 2, "{size}: one copy of the order per further thread");
    }
}

/// The same for df-pn, where the order prices moves instead of sorting
/// them: the values of the plain solver whichever moves the order favours,
/// fewer nodes when it favours the winning ones, and no call below the
/// plies it was given.
#[test]
fn a_move_order_changes_the_work_of_proof_numbers_but_not_the_values() {
    for size in ["5x5", "4x6", "5x6"] {
        let position = Position::start(size.parse().unwrap());
        let expected = Solver::new(14).solve(&position);
        let mut nodes = Vec::new();
        for best in [true, false] {
            let order = Oracle::new(best);
            let calls = Arc::clone(&order.calls);
            let mut solver = DfpnSolver::new(14);
            solver.set_move_order(4, Box::new(order), 4.0);
            let solution = solver.solve(&position);
            assert_eq!((solution.win, &solution.winning_moves), (expected.win, &expected.winning_moves), "{size}");
            assert!(calls.load(Ordering::Relaxed) > 0, "{size}: the order was asked");
            nodes.push(solution.nodes);
        }
        assert!(nodes[0] < nodes[1], "{size}: winning moves cheap searched {} nodes, dear {}", nodes[0], nodes[1]);
        let order = Oracle::new(true);
        let calls = Arc::clone(&order.calls);
        let mut solver = DfpnSolver::new(14);
        solver.set_move_order(1, Box::new(order), 4.0);
        solver.solve(&position);
        let calls = calls.load(Ordering::Relaxed);
        assert!((1..=position.moves().len()).contains(&calls), "{size}: {calls} calls for one ply");
    }
}

/// A journal that stops taking records (a full disk) ends the solve as
/// unsolved, serial or parallel, even when the failing record is the
/// solve's very last, or comes while another thread has just solved the
/// root move it belongs to.
#[test]
fn a_failed_journal_fails_the_solve() {
    let position = Position::start(Size::new(5, 6).unwrap());
    let journalled = |accepted: usize| {
        let mut solver = Solver::new(16);
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        solver.set_journal(200, move |_| counted.fetch_add(1, Ordering::Relaxed) < accepted);
        (solver, calls)
    };
    let (mut solver, calls) = journalled(usize::MAX);
    assert!(solver.solve_each(&position, u64::MAX, |_, _| {}).is_ok());
    let records = calls.load(Ordering::Relaxed);
    assert!(records > 10, "{records} records");
    for accepted in [0, records / 2, records - 1] {
        let (mut solver, _) = journalled(accepted);
        assert!(solver.solve_each(&position, u64::MAX, |_, _| {}).is_err(), "serial, {accepted} of {records} taken");
    }
    for threads in [2, 3] {
        for accepted in [0, 1, records / 4] {
            let (mut solver, _) = journalled(accepted);
            let result = solver.solve_each_parallel(&position, threads, |_, _| {});
            assert!(result.is_err(), "{threads} threads, {accepted} records taken: {result:?}");
        }
    }
}
