//! Proofs of solved positions: what the prover writes, the naive checker
//! accepts, and the values it reports agree with plain minimax; a proof
//! that has been tampered with either fails or still tells the truth; and
//! the committed proof of 6x6 from the start checks.

mod common;

use common::played;
use konane_rules::dfpn::DfpnSolver;
use konane_rules::proof::{self, MAX_DEPTH, Proof, ProofError, Report};
use konane_rules::solver::{Solver, minimax_wins};
use konane_rules::{Move, Position, Size};

/// The report minimax gives `position` at depth 2: its value, each move's
/// and each winning reply.
fn minimax_report(position: &Position) -> (bool, Vec<(Move, bool, Vec<Move>)>) {
    let mut moves: Vec<Move> = position.moves().into_iter().collect();
    moves.sort();
    let values: Vec<(Move, bool, Vec<Move>)> = moves
        .into_iter()
        .map(|mv| {
            let mut child = *position;
            child.play_unchecked(mv);
            let mut replies: Vec<Move> = child.moves().into_iter().collect();
            replies.sort();
            let winning = replies
                .into_iter()
                .filter(|&reply| {
                    let mut grandchild = child;
                    grandchild.play_unchecked(reply);
                    !minimax_wins(&grandchild)
                })
                .collect();
            (mv, !minimax_wins(&child), winning)
        })
        .collect();
    (values.iter().any(|v| v.1), values)
}

fn summary(report: &Report) -> (bool, Vec<(Move, bool, Vec<Move>)>) {
    (report.win, report.moves.iter().map(|v| (v.mv, v.wins, v.winning_replies.clone())).collect())
}

#[test]
fn proofs_of_small_boards_check_and_agree_with_minimax() {
    for size in ["3x3", "4x3", "3x4", "4x4", "5x3", "3x5", "5x4", "4x5", "6x3"] {
        let size: Size = size.parse().unwrap();
        let start = Position::start(size);
        let expected = minimax_report(&start);
        let mut solver = Solver::new(12);
        let (proof, proven) = proof::prove(&mut solver, &start, MAX_DEPTH).unwrap();
        assert_eq!(summary(&proven), expected, "{size}: the prover");
        let bytes = proof.to_bytes();
        let read = Proof::from_bytes(&bytes).unwrap();
        assert_eq!(read, proof, "{size}: the file form");
        let checked = proof::verify(&read).unwrap();
        assert_eq!(summary(&checked), expected, "{size}: the checker");
        assert_eq!(checked.positions, proven.positions, "{size}: both walks show the same positions");
    }
}

/// A proof made from df-pn's table checks, tells what minimax tells, and
/// is smaller than the alpha-beta solver's: df-pn's table holds the small
/// proof its search found, alpha-beta's every position it searched.
#[test]
fn proofs_from_proof_number_search_check_and_are_smaller() {
    for size in ["4x4", "5x4", "4x5", "5x5", "6x4", "6x5", "5x6"] {
        let start = Position::start(size.parse().unwrap());
        let mut dfpn = DfpnSolver::new(17);
        let solved = dfpn.solve(&start);
        let (proof, proven) = proof::prove(&mut dfpn, &start, MAX_DEPTH).unwrap();
        assert_eq!(proven.win, solved.win, "{size}");
        let checked = proof::verify(&Proof::from_bytes(&proof.to_bytes()).unwrap()).unwrap();
        assert_eq!(summary(&checked), summary(&proven), "{size}: the checker");
        if size.len() == 3 && size.as_bytes()[0] <= b'5' && size.as_bytes()[2] <= b'5' {
            assert_eq!(summary(&checked), minimax_report(&start), "{size}: minimax");
        }
        let mut solver = Solver::new(18);
        solver.solve(&start);
        let (_, alphabeta) = proof::prove(&mut solver, &start, MAX_DEPTH).unwrap();
        assert_eq!(summary(&alphabeta), summary(&proven), "{size}: the two provers");
        if size == "6x5" || size == "5x6" {
            assert!(
                proven.positions * 2 < alphabeta.positions,
                "{size}: df-pn's proof holds {} positions, alpha-beta's {}",
                proven.positions,
                alphabeta.positions
            );
        }
    }
}

#[test]
fn proofs_of_midgame_positions_at_every_depth_check() {
    let mut checked = 0;
    for seed in 0..12 {
        // 8x8 has more than 63 cells: the checker's keys are bytes there.
        for (size, plies) in [("5x5", 6), ("6x5", 10), ("6x6", 14), ("8x8", 40)] {
            let position = played(size.parse().unwrap(), plies, seed);
            let mut solver = Solver::new(14);
            let value = solver.solve(&position).win;
            for depth in 0..=MAX_DEPTH {
                let (proof, proven) = proof::prove(&mut solver, &position, depth).unwrap();
                let report = proof::verify(&Proof::from_bytes(&proof.to_bytes()).unwrap()).unwrap();
                assert_eq!(report.win, value, "{position} depth {depth}");
                assert_eq!(summary(&report), summary(&proven), "{position} depth {depth}");
                assert_eq!(report.moves.is_empty(), depth == 0 || position.moves().is_empty());
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 12 * 4 * 3);
}

/// Every single-byte change to a proof's stream, and every cut, either
/// fails the check or leaves the values true: a proof cannot lie.
#[test]
fn a_tampered_proof_fails_or_tells_the_truth() {
    let start = Position::start("5x4".parse().unwrap());
    let truth = minimax_report(&start);
    let (proof, _) = proof::prove(&mut Solver::new(12), &start, MAX_DEPTH).unwrap();
    let bytes = proof.to_bytes();
    let header = bytes.len() - proof.stream_len();
    let (mut failed, mut held) = (0, 0);
    for at in header..bytes.len() {
        for change in [1u8, 0x80, 0xFF] {
            let mut tampered = bytes.clone();
            tampered[at] ^= change;
            match Proof::from_bytes(&tampered).and_then(|p| proof::verify(&p)) {
                Ok(report) => {
                    assert_eq!(summary(&report), truth, "byte {at} ^ {change:#x}");
                    held += 1;
                }
                Err(_) => failed += 1,
            }
        }
    }
    assert!(failed > 0 && failed + held == 3 * proof.stream_len(), "{failed} failed, {held} held");
    for cut in header..bytes.len() {
        assert!(Proof::from_bytes(&bytes[..cut]).and_then(|p| proof::verify(&p)).is_err(), "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(proof::verify(&Proof::from_bytes(&longer).unwrap()), Err(ProofError::Trailing(1)));
    let mut other = bytes.clone();
    other[0] ^= 1;
    assert_eq!(Proof::from_bytes(&other), Err(ProofError::Header));
    let mut deep = bytes.clone();
    deep[header - 1] = MAX_DEPTH + 1;
    assert_eq!(Proof::from_bytes(&deep), Err(ProofError::Depth(MAX_DEPTH + 1)));
}

/// The claimed value of a position is checked, not believed: the proof of
/// a won position with its claim flipped to "lost" fails.
#[test]
fn a_false_claim_fails() {
    let position = played("5x5".parse().unwrap(), 6, 4);
    let mut solver = Solver::new(14);
    let value = solver.solve(&position).win;
    let (proof, _) = proof::prove(&mut solver, &position, 0).unwrap();
    let mut bytes = proof.to_bytes();
    let claim = bytes.len() - proof.stream_len();
    assert_eq!(bytes[claim], u8::from(value));
    bytes[claim] ^= 1;
    assert!(proof::verify(&Proof::from_bytes(&bytes).unwrap()).is_err(), "{position}: a flipped claim held");
}

/// `solves/6x6/proof`, written by `konane solve 6x6 --save solves/6x6`:
/// black to move loses from the start of 6x6, and the naive rules check
/// every opening's winning white replies.
#[test]
fn the_committed_proof_of_6x6_checks() {
    let (proof, report) = committed_proof("6x6");
    assert_eq!(proof.position, Position::start(Size::new(6, 6).unwrap()));
    assert!(!report.win, "black to move loses 6x6");
    assert_eq!(winning_replies(&proof, &report), ["a1 b1 a2", "c3 d3 c4", "d4 d3 c4", "f6 f5 e6"]);
}

/// The committed proof that black's centre opening wins 7x7 (from
/// `konane solve ... --dfpn --save solves/7x7-d4`): white, to remove a
/// stone next to the hole, loses with each of the four, and the naive
/// rules check black's one winning jump after each.
#[test]
fn the_committed_proof_of_7x7s_centre_opening_checks() {
    let (proof, report) = committed_proof("7x7-d4");
    assert_eq!(proof.position, seven_by_seven_after("d4"));
    assert!(!report.win, "white to move loses 7x7 after the centre opening");
    assert_eq!(winning_replies(&proof, &report), ["d3 d6-d4", "c4 f4-d4", "e4 b4-d4", "d5 d2-d4"]);
}

/// The committed proof that black's corner openings win 7x7 (the four
/// corners are one symmetry class; from `konane solve ... --dfpn --save
/// solves/7x7-a1`): with the centre's, every opening of 7x7 is proven.
#[test]
#[ignore = "40 s in release, minutes in the dev profile: cargo test --release -- --ignored"]
fn the_committed_proof_of_7x7s_corner_openings_checks() {
    let (proof, report) = committed_proof("7x7-a1");
    assert_eq!(proof.position, seven_by_seven_after("a1"));
    assert!(!report.win, "white to move loses 7x7 after a corner opening");
    assert_eq!(winning_replies(&proof, &report), ["b1 a3-a1", "a2 c1-a1"]);
}

/// The committed proof of 7x7 from the start (df-pn, `solves/7x7`): black
/// wins with every opening, and every white reply loses.
#[test]
#[ignore = "45 s in release, minutes in the dev profile: cargo test --release -- --ignored"]
fn the_committed_proof_of_7x7_checks() {
    let (proof, report) = committed_proof("7x7");
    assert_eq!(proof.position, Position::start(Size::new(7, 7).unwrap()));
    assert!(report.win, "black to move wins 7x7");
    let replies = winning_replies(&proof, &report);
    assert_eq!(replies, ["a1 ", "g1 ", "d4 ", "a7 ", "g7 "], "every opening wins, no white reply does");
}

/// The proof in `solves/DIR/proof`, and what the naive rules check it shows.
fn committed_proof(dir: &str) -> (Proof, proof::Report) {
    let path = format!("{}/../../solves/{dir}/proof", env!("CARGO_MANIFEST_DIR"));
    let proof = Proof::from_bytes(&std::fs::read(path).unwrap()).unwrap();
    let report = proof::verify(&proof).unwrap();
    (proof, report)
}

/// The start of 7x7 after black's opening `removal`, white to move.
fn seven_by_seven_after(removal: &str) -> Position {
    let mut position = Position::start(Size::new(7, 7).unwrap());
    position.play(position.parse_move(removal).unwrap()).unwrap();
    position
}

/// Each move of a report, then the opponent's winning replies to it.
fn winning_replies(proof: &Proof, report: &proof::Report) -> Vec<String> {
    let size = proof.position.size();
    report
        .moves
        .iter()
        .map(|v| {
            let replies: Vec<String> = v.winning_replies.iter().map(|m| m.to_text(size)).collect();
            format!("{} {}", v.mv.to_text(size), replies.join(" "))
        })
        .collect()
}

/// When the table has lost the losing child of a won position (a bigger
/// search took its slot), the prover solves the position itself rather
/// than trying its moves in turn, each wrong one a whole disproof: from a
/// table far too small for the solve, the proof stays about as small as
/// from a roomy one, and costs less search than the solve did twice over.
/// (Trying the moves in turn: 6x5's proof held 1.8 times the positions
/// and cost 3.1 times the solve's nodes, 5x6's 1.5 and 2.0.)
#[test]
fn proofs_from_an_overfull_proof_number_table_stay_small() {
    for size in ["6x5", "5x6"] {
        let start = Position::start(size.parse().unwrap());
        let roomy = {
            let mut dfpn = DfpnSolver::new(17);
            dfpn.solve(&start);
            proof::prove(&mut dfpn, &start, MAX_DEPTH).unwrap().1.positions
        };
        // 2^10 sets of two entries, against hundreds of thousands of nodes.
        let mut dfpn = DfpnSolver::new(10);
        let solved = dfpn.solve(&start);
        let solve_nodes = dfpn.nodes();
        let (proof, proven) = proof::prove(&mut dfpn, &start, MAX_DEPTH).unwrap();
        let prove_nodes = dfpn.nodes() - solve_nodes;
        let checked = proof::verify(&Proof::from_bytes(&proof.to_bytes()).unwrap()).unwrap();
        assert_eq!((checked.win, proven.win), (solved.win, solved.win), "{size}");
        assert!(
            proven.positions * 10 < roomy * 14,
            "{size}: {} positions from the small table, {roomy} from the roomy one",
            proven.positions
        );
        assert!(
            prove_nodes * 10 < solve_nodes * 19,
            "{size}: proving took {prove_nodes} nodes, the solve {solve_nodes}"
        );
    }
}
