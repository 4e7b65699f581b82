//! Where did player A throw a game away? For each game of a
//! `konane eval --records FILE` file that A lost (A is black in the even
//! games, counting from 0), walks back from the end to the last position
//! where A was to move and the solver says A was winning: the ply and the
//! stones left there, i.e. how small an endgame A misplayed. If a position
//! on the way back cannot be solved within the node budget, the mistake
//! lies further back and the line says so.
//!
//!     cargo run --release -p konane-rules --example last_win -- [NODES] < FILE

use std::io::{BufRead, Write};

use konane_rules::{Color, GameRecord, Position, Solver};

fn main() {
    let budget: u64 = match std::env::args().nth(1).map(|text| text.parse()) {
        Some(Ok(nodes)) => nodes,
        Some(Err(_)) => {
            eprintln!("usage: last_win [NODES] < RECORDS (NODES: the solver's budget per position, a whole number)");
            std::process::exit(2);
        }
        None => 3_000_000,
    };
    let mut solver = Solver::new(22); // as `konane solve`: 128 MB
    for (index, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.unwrap_or_else(|e| {
            eprintln!("reading the records: {e}");
            std::process::exit(1);
        });
        let record: GameRecord = match line.parse() {
            Ok(record) => record,
            Err(e) => {
                eprintln!("line {}: {e}", index + 1);
                std::process::exit(1);
            }
        };
        let a = if index % 2 == 0 { Color::Black } else { Color::White };
        if record.result != Some(a.opposite()) {
            continue;
        }
        let mut position = Position::start(record.size);
        let mut before = Vec::with_capacity(record.moves.len());
        for &mv in &record.moves {
            before.push(position);
            position.play_unchecked(mv);
        }
        let opening: Vec<String> = record.moves.iter().take(2).map(|m| m.display(record.size).to_string()).collect();
        let mut verdict = String::from("A never had a win it could see");
        for (ply, position) in before.iter().enumerate().rev().filter(|(_, p)| p.side_to_move() == a) {
            match solver.wins_within(position, budget) {
                Ok(true) => {
                    verdict = format!("last won position: ply {} with {} stones", ply + 1, position.stones());
                    break;
                }
                Ok(false) => {}
                Err(_) => {
                    verdict =
                        format!("unsolved at ply {} ({} stones): the mistake is earlier", ply + 1, position.stones());
                    break;
                }
            }
        }
        let line =
            format!("game {index}: A {a:?}, opening {}, {} plies; {verdict}", opening.join(" "), record.moves.len());
        if writeln!(std::io::stdout(), "{line}").is_err() {
            return; // the reader went away (`| head`)
        }
    }
}
