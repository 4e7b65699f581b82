//! End-to-end tests of `konane ktp`: the real binary, driven over its
//! stdin and stdout as a referee or front end would (`docs/spec/ktp.md`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::thread;
use std::time::Duration;

use konane_rules::Position;

/// The player behind these tests. Any player works: the tests only check
/// that `genmove` answers legal moves (switch to `alphabeta:depth=2` freely).
const PLAYER: [&str; 4] = ["--player", "random", "--seed", "3"];

const START_8X8: &str = "WBWBWBWB/BWBWBWBW/WBWBWBWB/BWBWBWBW/WBWBWBWB/BWBWBWBW/WBWBWBWB/BWBWBWBW b";

/// How long any one answer may take before the test gives up.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

fn konane() -> Command {
    konane_command()
}

/// Writes all of `input` to a fresh engine, closes its stdin, and returns
/// its stdout once it has exited (successfully).
fn session(input: &[u8]) -> String {
    let mut child = konane()
        .arg("ktp")
        .args(PLAYER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start konane ktp");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // Write from another thread so that a large output cannot deadlock us.
    let writer = thread::spawn(move || {
        // The engine may exit at `quit` before reading everything.
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(output.status.success(), "konane ktp failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("answers are UTF-8")
}

/// Each answer of a session, without the empty line that ends it.
fn answers(stdout: &str) -> Vec<&str> {
    assert!(stdout.is_empty() || stdout.ends_with("\n\n"), "{stdout:?}");
    stdout.split_terminator("\n\n").collect()
}

/// What a line of a scripted session should be answered with.
enum Expect {
    /// Nothing: blank lines and comments.
    Silent,
    /// Exactly this answer line.
    Exact(String),
    /// `= ` and these moves, in any order.
    Moves(&'static [&'static str]),
    /// `? ` and a reason containing this.
    Refused(&'static str),
}

use Expect::{Exact, Moves, Refused, Silent};

use crate::common::konane_command;

fn exact(answer: &str) -> Expect {
    Exact(answer.to_string())
}

#[test]
fn a_scripted_session_with_bad_lines_answers_exactly() {
    let script: Vec<(&[u8], Expect)> = vec![
        (b"ktp", exact("= 1")),
        (b"# a comment", Silent),
        (b"", Silent),
        (b"name", exact("= konane random")),
        (b"version", Exact(format!("= {}", env!("CARGO_PKG_VERSION")))),
        (b"show", Exact(format!("= {START_8X8}"))),
        (b"newgame 4x4", exact("=")),
        (b"7 show", exact("=7 WBWB/BWBW/WBWB/BWBW b")),
        (b"legal", Moves(&["a1", "b2", "c3", "d4"])),
        (b"frobnicate", exact("? unknown command")),
        (b"play b1", Refused("illegal move b1 in WBWB/BWBW/WBWB/BWBW b: no black stone on b1")),
        (b"undo", exact("? no move to take back since the last newgame or position")),
        (b"play b2", exact("=")),
        (b"show", exact("= WBWB/BWBW/W.WB/BWBW w")),
        (b"position WBWB/BWXW/WBWB/BWBW b", Refused("bad position: 'WBWB/BWXW/WBWB/BWBW b': 'X' at c3")),
        (b"show", exact("= WBWB/BWBW/W.WB/BWBW w")),
        (b"limit nodes 0", exact("? limit nodes 0: the value must be a whole number of at least 1")),
        (b"limit nodes 5000", exact("=")),
        (b"12 limit movetime 250", exact("=12")),
        (b"genmove b", exact("? genmove takes no arguments, found 'b'")),
        (b"undo", exact("=")),
        (b"show", exact("= WBWB/BWBW/WBWB/BWBW b")),
        (b"undo", exact("? no move to take back since the last newgame or position")),
        (b"position WB/BW w", exact("=")),
        (b"legal", exact("=")),
        (b"42 genmove", exact("=42 none")),
        (b"\xff\xfe garbage \x00", exact("? unknown command")),
        (&[b'x'; 10_000], exact("? line too long: more than 4096 bytes")),
        (b"show\r", exact("= WB/BW w")),
        (b"quit", exact("=")),
        (b"show", Silent),
    ];
    let mut input = Vec::new();
    for (line, _) in &script {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    let stdout = session(&input);
    let got = answers(&stdout);
    let expected: Vec<(&[u8], &Expect)> =
        script.iter().filter(|(_, e)| !matches!(e, Silent)).map(|(l, e)| (*l, e)).collect();
    assert_eq!(got.len(), expected.len(), "{stdout}");
    for (answer, (line, expect)) in got.iter().zip(expected) {
        let line = String::from_utf8_lossy(&line[..line.len().min(40)]);
        match expect {
            Silent => unreachable!(),
            Exact(text) => assert_eq!(answer, text, "answer to {line:?}"),
            Moves(moves) => {
                let mut listed: Vec<&str> = answer.strip_prefix("= ").unwrap_or("").split(' ').collect();
                listed.sort_unstable();
                assert_eq!(listed, *moves, "answer to {line:?}: {answer}");
            }
            Refused(reason) => {
                assert!(answer.starts_with("? ") && answer.contains(reason), "answer to {line:?}: {answer}");
                assert!(!answer.contains('\n'), "{answer:?}");
            }
        }
    }
}

#[test]
fn end_of_input_ends_the_session_without_quit() {
    assert_eq!(session(b"ktp\n3 newgame 6x6"), "= 1\n\n=3\n\n");
    assert_eq!(session(b""), "");
}

/// An engine driven one command at a time, checking that every answer
/// arrives (is flushed) before the next command is sent.
struct Engine {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Engine {
    fn start() -> Engine {
        let mut child = konane()
            .arg("ktp")
            .args(PLAYER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start konane ktp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = channel();
        thread::spawn(move || {
            for line in stdout.lines() {
                if sender.send(line.expect("read stdout")).is_err() {
                    break;
                }
            }
        });
        Engine { child, stdin, lines }
    }

    /// The answer line to `command`.
    fn ask(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        let next =
            || self.lines.recv_timeout(ANSWER_TIMEOUT).unwrap_or_else(|e| panic!("no answer to {command:?}: {e}"));
        let answer = next();
        assert_eq!(next(), "", "answer to {command:?} is one line then an empty one");
        answer
    }

    /// The answer to `command`, which must succeed.
    fn ok(&mut self, command: &str) -> String {
        let answer = self.ask(command);
        match answer.strip_prefix('=') {
            Some(text) => text.strip_prefix(' ').unwrap_or(text).to_string(),
            None => panic!("{command:?} failed: {answer}"),
        }
    }

    fn quit(mut self) {
        assert_eq!(self.ask("quit"), "=");
        assert!(self.child.wait().unwrap().success());
    }
}

#[test]
fn a_full_game_of_genmoves_plays_legal_moves_until_none() {
    let mut engine = Engine::start();
    let mut replay: Position = engine.ok("show").parse().unwrap();
    assert_eq!(replay.to_string(), START_8X8);
    let mut plies = 0;
    loop {
        let legal = engine.ok("legal");
        let mv = engine.ok("genmove");
        if mv == "none" {
            assert_eq!(legal, "", "genmove answered none with legal moves left");
            break;
        }
        assert!(legal.split(' ').any(|m| m == mv), "genmove {mv} is not among the legal moves {legal}");
        replay.play(replay.parse_legal_move(&mv).unwrap()).unwrap();
        plies += 1;
        assert!(plies <= 64, "an 8x8 game has at most 64 plies");
    }
    let end: Position = engine.ok("show").parse().unwrap();
    assert_eq!(end, replay, "the engine's position is the moves it answered");
    assert!(end.is_over(), "{end} still has legal moves");
    assert!(plies >= 2, "both sides open before anyone can be stuck");
    assert_eq!(engine.ok("legal"), "");
    assert_eq!(engine.ask("5 genmove"), "=5 none");
    // The whole game can be taken back, one move at a time.
    for _ in 0..plies {
        assert_eq!(engine.ask("undo"), "=");
    }
    assert_eq!(engine.ok("show"), START_8X8);
    assert!(engine.ask("undo").starts_with("? "));
    engine.quit();
}

#[test]
fn a_bad_player_spec_exits_with_a_message_naming_it() {
    let output = konane().args(["ktp", "--player", "bogus"]).stdin(Stdio::null()).output().unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "no protocol answers: {:?}", output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bogus"), "{stderr}");
    assert!(stderr.contains("unknown player"), "{stderr}");
}

/// Without `--player` the engine plays the shipped networks, each board
/// with the one chosen for its size, at the `limit` it is given.
#[test]
fn the_default_engine_plays_every_size_with_the_shipped_networks() {
    let mut engine = konane_command()
        .args(["ktp", "--threads", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start konane ktp");
    let mut stdin = engine.stdin.take().unwrap();
    let script = "name\nlimit nodes 32\nnewgame 10x10\ngenmove\nshow\nnewgame 6x6\ngenmove\nshow\nnewgame 5x7\ngenmove\nshow\nquit\n";
    stdin.write_all(script.as_bytes()).unwrap();
    let output = engine.wait_with_output().unwrap();
    assert!(output.status.success());
    let answers: Vec<String> =
        String::from_utf8(output.stdout).unwrap().split("\n\n").map(|a| a.trim().to_string()).collect();
    assert_eq!(answers[0], "= konane net:shipped,sims=800", "{answers:?}");
    for (size, at) in [("10x10", 4), ("6x6", 7), ("5x7", 10)] {
        // Black's opening removal was played: the shown position is white's turn on that board.
        let mv = answers[at - 1].strip_prefix("= ").unwrap_or_else(|| panic!("{size}: {answers:?}"));
        let shown: Position = answers[at].strip_prefix("= ").unwrap().parse().unwrap();
        assert_eq!(shown.size().to_string(), size, "{mv}");
        assert_eq!(shown.side_to_move(), konane_rules::Color::White, "{size} after {mv}");
        assert_eq!(shown.stones() as usize, shown.size().cells() - 1, "{size} after {mv}");
    }
}
