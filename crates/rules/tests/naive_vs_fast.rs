//! The bitboard engine against the naive reference (`konane_rules::naive`):
//! perft on every size up to 8x8 and the traditional large boards, and
//! legal-move sets on random game positions and random non-game fillings.

use std::time::Instant;

use konane_rules::naive::{Naive, NaivePhase};
use konane_rules::perft::perft;
use konane_rules::{Color, Move, Phase, Position, Size};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Every rectangle from 1x1 to 8x8 plus the traditional and large boards.
fn sizes() -> Vec<Size> {
    let mut sizes = Vec::new();
    for cols in 1..=8 {
        for rows in 1..=8 {
            sizes.push(Size::new(cols, rows).unwrap());
        }
    }
    for (cols, rows) in [(6, 7), (8, 9), (10, 10), (9, 13), (14, 17), (13, 20), (20, 20)] {
        sizes.push(Size::new(cols, rows).unwrap());
    }
    sizes
}

fn sorted_moves(position: &Position) -> Vec<Move> {
    let mut moves = position.moves().to_vec();
    moves.sort();
    moves
}

fn texts(size: Size, moves: &[Move]) -> Vec<String> {
    moves.iter().map(|mv| mv.to_text(size)).collect()
}

/// Asserts that the two implementations agree on everything observable
/// about `fast`: phase, stones, legal moves (as sets, with counts and
/// game-over), and the position after each legal move.
fn assert_agree(fast: &Position, naive: &Naive, context: &str) {
    let size = fast.size();
    let text = fast.to_string();
    assert_eq!(text, naive.to_notation(), "{context}: position strings");
    let phase = match naive.phase() {
        NaivePhase::BlackOpening => Phase::BlackOpening,
        NaivePhase::WhiteOpening => Phase::WhiteOpening,
        NaivePhase::Capturing => Phase::Capturing,
    };
    assert_eq!(fast.phase(), phase, "{context}: phase of {text}");
    for color in [Color::Black, Color::White] {
        assert_eq!(fast.stone_count(color) as usize, naive.stones(color), "{context}: {color} stones in {text}");
    }
    let fast_moves = sorted_moves(fast);
    let naive_moves = naive.moves();
    assert_eq!(texts(size, &fast_moves), texts(size, &naive_moves), "{context}: legal moves of {text}");
    assert_eq!(fast.moves().len(), fast_moves.len(), "{context}: duplicate moves in {text}");
    assert_eq!(fast.count_moves() as usize, naive_moves.len(), "{context}: count_moves of {text}");
    assert_eq!(fast.is_over(), naive_moves.is_empty(), "{context}: is_over of {text}");
    let winner = naive_moves.is_empty().then(|| naive.side.opposite());
    assert_eq!(fast.winner(), winner, "{context}: winner of {text}");
    for &mv in &naive_moves {
        assert!(fast.is_legal(mv), "{context}: {mv:?} legal in {text}");
        let mut fast_child = *fast;
        fast_child.play_unchecked(mv);
        let mut naive_child = naive.clone();
        naive_child.play(mv);
        assert_eq!(Naive::from_position(&fast_child), naive_child, "{context}: after {} from {text}", mv.to_text(size));
    }
}

/// Walks down from `position` to the first position where the move lists
/// differ, for a readable failure message when perft counts disagree.
fn find_disagreement(position: &Position, depth: u32) -> String {
    let size = position.size();
    let naive = Naive::from_position(position);
    let (fast_moves, naive_moves) = (sorted_moves(position), naive.moves());
    if fast_moves != naive_moves {
        return format!("{position}: fast {:?} naive {:?}", texts(size, &fast_moves), texts(size, &naive_moves));
    }
    for mv in naive_moves {
        let mut child = *position;
        child.play_unchecked(mv);
        let mut naive_child = naive.clone();
        naive_child.play(mv);
        if Naive::from_position(&child) != naive_child {
            return format!("{position}: {} plays differently", mv.to_text(size));
        }
        if depth > 1 && perft(&child, depth - 1) != naive_child.perft(depth - 1) {
            return find_disagreement(&child, depth - 1);
        }
    }
    "no disagreement found".into()
}

/// The naive rules (and the engine) on the spec's own examples and settled
/// edge cases, worked out by hand.
#[test]
fn both_implementations_follow_the_spec_examples() {
    let size = |text: &str| text.parse::<Size>().unwrap();
    // (position, legal moves in notation, sorted by cell index)
    let start = |s: &str| Position::start(size(s)).to_string();
    let cases: Vec<(String, Vec<&str>)> = vec![
        ("WBWB/BWBW/WBWB/BWBW b".into(), vec!["a1", "b2", "c3", "d4"]),
        // Middles d4 e5 (black) and d5 e4 (white); corners a1 h8 black.
        (start("8x8"), vec!["a1", "d4", "e5", "h8"]),
        // One middle (c3) and four black corners.
        (start("5x5"), vec!["a1", "e1", "c3", "a5", "e5"]),
        // 6x7: middle columns c d, middle row 4: c4 (2,3) and d4 (3,3);
        // only d4 is black; of the corners a1 and a7 are black.
        (start("6x7"), vec!["a1", "d4", "a7"]),
        (start("1x1"), vec!["a1"]),
        // 1x4: middles a2 (white) a3 (black), ends a1 (black) a4 (white).
        (start("1x4"), vec!["a1", "a3"]),
        // A full board with white to move: white has lost.
        ("WB/BW w".into(), vec![]),
        // One hole, white to move: white removes a stone next to it.
        ("W./BW w".into(), vec!["b1", "a2"]),
        // One hole, black to move: capturing, and black cannot jump.
        ("W./BW b".into(), vec![]),
        // Multi-jumps stop at any capture; no jump over two stones in a row.
        ("BW.W.W. b".into(), vec!["a1-c1", "a1-e1", "a1-g1"]),
        ("BW.WW.. b".into(), vec!["a1-c1"]),
        (".WBW. b".into(), vec!["c1-a1", "c1-e1"]),
        // Vertical multi-jump for white, and no move for black.
        (".../.B./.../.B./.W. w".into(), vec!["b1-b3", "b1-b5"]),
        (".../.B./.../.B./.W. b".into(), vec![]),
        // Stones do not jump their own colour or empty cells.
        ("BB..B.W b".into(), vec![]),
    ];
    for (text, expected) in cases {
        let fast: Position = text.parse().unwrap();
        let size = fast.size();
        let mut expected: Vec<Move> = expected.iter().map(|m| fast.parse_move(m).unwrap()).collect();
        expected.sort();
        let naive = Naive::from_position(&fast);
        assert_eq!(naive.to_notation(), text);
        assert_eq!(texts(size, &naive.moves()), texts(size, &expected), "naive moves of {text}");
        assert_agree(&fast, &naive, &text);
    }
    // The 6x6 example of the crate docs: after black removes c3, white
    // removes b3, d3, c2 or c4.
    let mut naive = Naive::start(6, 6);
    naive.play(Move::Remove(Size::new(6, 6).unwrap().parse_cell("c3").unwrap()));
    let names = texts(size("6x6"), &naive.moves());
    assert_eq!(names, ["c2", "b3", "d3", "c4"]);
}

/// A size goes one ply deeper while the naive perft has at most this many
/// leaves per cell (the naive generator's cost grows with the board), so
/// every size finishes in well under a second at opt-level 1.
const CELL_LEAF_BUDGET: u64 = 6_400_000;

#[test]
fn perft_agrees_with_the_naive_rules_on_every_size() {
    let started = Instant::now();
    let mut report = Vec::new();
    for size in sizes() {
        let size_started = Instant::now();
        let start = Position::start(size);
        let naive = Naive::start(size.cols(), size.rows());
        assert_eq!(Naive::from_position(&start), naive, "{size} start");
        let mut depth = 0;
        let exhausted = loop {
            depth += 1;
            let expected = naive.perft(depth);
            let actual = perft(&start, depth);
            assert_eq!(actual, expected, "{size} perft {depth}: {}", find_disagreement(&start, depth));
            if expected == 0 {
                break true;
            }
            if expected * size.cells() as u64 > CELL_LEAF_BUDGET {
                break false;
            }
        };
        // Every board has at least the two openings to check, and boards
        // with captures get at least one ply of captures.
        assert!(exhausted || depth >= 3, "{size}: only depth {depth} checked");
        let elapsed = size_started.elapsed();
        report.push(format!(
            "{size}: depth {depth}{} in {elapsed:.2?}",
            if exhausted { " (whole game tree)" } else { "" }
        ));
    }
    println!("{}\ntotal {:.2?}", report.join("\n"), started.elapsed());
}

/// Plays `games` random games on `size` from `seed`, comparing both
/// implementations at every position; returns the positions compared.
fn compare_playouts(size: Size, games: usize, seed: u64) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut compared = 0;
    for game in 0..games {
        let mut fast = Position::start(size);
        let mut naive = Naive::start(size.cols(), size.rows());
        let mut plies = 0;
        loop {
            let context = format!("{size} game {game} (seed {seed}) ply {plies}");
            assert_agree(&fast, &naive, &context);
            compared += 1;
            let moves = naive.moves();
            if moves.is_empty() {
                break;
            }
            let mv = moves[rng.random_range(0..moves.len())];
            fast.play(mv).unwrap();
            naive.play(mv);
            plies += 1;
            assert!(plies <= size.cells(), "{context}: game too long");
        }
    }
    compared
}

#[test]
fn move_sets_agree_along_random_games_on_every_size() {
    let mut compared = 0;
    for (i, size) in sizes().into_iter().enumerate() {
        // Small boards have short games: play more of them.
        let games = if size.cells() <= 64 { 12 } else { 3 };
        compared += compare_playouts(size, games, 0x5EED_0000 + i as u64);
    }
    println!("{compared} game positions compared");
    assert!(compared >= 5_000, "only {compared} positions");
}

/// A random arrangement that need not come from a game: any stones, any
/// side to move, including full boards and boards with one hole.
fn random_filling(rng: &mut ChaCha8Rng) -> Naive {
    let cols = rng.random_range(1..=20usize);
    let rows = rng.random_range(1..=20usize);
    let cells = cols * rows;
    let p_black = rng.random_range(0.0..=1.0);
    let p_empty = match rng.random_range(0..10) {
        0 | 1 => 0.0,
        2 => 1.0 / cells as f64,
        3 => 0.05,
        _ => rng.random_range(0.0..=1.0),
    };
    let mut stones: Vec<Option<Color>> = (0..cells)
        .map(|_| {
            if rng.random_bool(p_empty) {
                None
            } else if rng.random_bool(p_black) {
                Some(Color::Black)
            } else {
                Some(Color::White)
            }
        })
        .collect();
    if rng.random_range(0..8) == 0 {
        // Exactly one hole: the white-opening rule on arbitrary colourings.
        stones.iter_mut().for_each(|s| {
            s.get_or_insert(Color::White);
        });
        stones[rng.random_range(0..cells)] = None;
    }
    let side = if rng.random_bool(0.5) { Color::Black } else { Color::White };
    Naive { cols, rows, cells: stones, side }
}

#[test]
fn move_sets_agree_on_random_fillings() {
    let mut rng = ChaCha8Rng::seed_from_u64(0xF111_1265);
    let mut phases = [0usize; 3];
    let mut most_moves = 0;
    for i in 0..3_000 {
        let naive = random_filling(&mut rng);
        let size = naive.size();
        let fast = Position::from_fn(size, naive.side, |cell| naive.cells[cell.index()]);
        assert_eq!(fast, naive.to_position());
        phases[fast.phase() as usize] += 1;
        most_moves = most_moves.max(naive.moves().len());
        assert_agree(&fast, &naive, &format!("filling {i}"));
    }
    println!("phases {phases:?}, most moves {most_moves}");
    assert!(phases.iter().all(|&n| n >= 50), "too few of some phase: {phases:?}");
}

/// Hand-built boards that stress the edges: jumps that would wrap from one
/// row into the next if the engine forgot the board edge, long multi-jumps
/// across the widest boards, and the densest move counts.
#[test]
fn move_sets_agree_on_edge_stress_boards() {
    let mut checked = 0;
    for size in sizes() {
        let (cols, rows) = (size.cols(), size.rows());
        // Alternating stone/empty along every row and column: long
        // multi-jumps everywhere, for both sides.
        for side in [Color::Black, Color::White] {
            for pattern in 0..5 {
                let fast = Position::from_fn(size, side, |cell| {
                    let (c, r) = (size.col(cell), size.row(cell));
                    match pattern {
                        // Rows of B W B W ... with every other row empty.
                        0 => (r % 2 == 0).then_some(if (c + r / 2) % 2 == 0 { Color::Black } else { Color::White }),
                        // Black on the right edge, white on the left edge,
                        // empty between: a black jump east (or white jump
                        // west) would wrap into the next (previous) row.
                        1 => {
                            if c + 1 == cols {
                                Some(Color::Black)
                            } else if c == 0 {
                                Some(Color::White)
                            } else {
                                None
                            }
                        }
                        // Black next to the right edge and white on it, the
                        // rest empty: wrap bait for a black jump east.
                        2 => {
                            if c + 2 == cols {
                                Some(Color::Black)
                            } else if c + 1 == cols {
                                Some(Color::White)
                            } else {
                                None
                            }
                        }
                        // Stones on squares of one colour only, coloured by
                        // column: no jump anywhere.
                        3 => ((c + r) % 2 == 0).then_some(if c % 2 == 0 { Color::Black } else { Color::White }),
                        // own, enemy, empty, enemy along every row and column:
                        // every empty cell can be reached from all four sides,
                        // one of the densest patterns.
                        _ => match (c + r) % 4 {
                            0 => Some(side),
                            2 => None,
                            _ => Some(side.opposite()),
                        },
                    }
                });
                let naive = Naive::from_position(&fast);
                assert_agree(&fast, &naive, &format!("{size} pattern {pattern}"));
                if pattern == 4 && cols >= 3 && rows >= 3 {
                    assert!(fast.count_moves() > 0, "{size}: {fast}");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, sizes().len() * 10);
}
