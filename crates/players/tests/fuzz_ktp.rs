//! Fuzz target for the KTP engine: random sessions mixing commands of the
//! protocol (with sizes, positions, moves and limits near and past their
//! bounds) with garbage lines: binary, not UTF-8, longer than a line may be.
//!
//! Properties: the engine never panics; every line that is not blank or a
//! comment gets exactly one answer, `=` or `?`, on one line; a `?` changes
//! nothing (position and limits as before); `show` answers the position.
//! Runs `KONANE_FUZZ_CASES` sessions (default 500) from `KONANE_FUZZ_SEED`.

use konane_fuzzing::fuzz;
use konane_players::ktp::{KtpEngine, MAX_LINE};
use konane_players::{Baseline, BaselineFactory, Limits, PlayerFactory};
use proptest::prelude::*;

fn engine() -> KtpEngine {
    KtpEngine::new(BaselineFactory::new(Baseline::Random, Limits::default(), "random").build(1))
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..30).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        Just("99999999999999999999999".to_string()),
        Just("-1".to_string()),
        Just("1.5".to_string()),
        Just("+3".to_string()),
        Just("nan".to_string()),
        Just(String::new()),
    ]
}

fn size() -> impl Strategy<Value = String> {
    prop_oneof![
        (0usize..23, 0usize..23).prop_map(|(c, r)| format!("{c}x{r}")),
        Just("20x20".to_string()),
        Just("1x1".to_string()),
        Just("8X8".to_string()),
        Just("x".to_string()),
        any::<String>(),
    ]
}

fn cell() -> impl Strategy<Value = String> {
    (prop::sample::select(b"abcdhstz".to_vec()), 0u32..23).prop_map(|(c, r)| format!("{}{r}", c as char))
}

fn position() -> impl Strategy<Value = String> {
    let rows = proptest::collection::vec(
        proptest::collection::vec(prop::sample::select(vec!['W', 'B', '.', 'x']), 1..8),
        1..8,
    );
    (rows, prop::sample::select(vec!["b", "w", "", "q"])).prop_map(|(rows, side)| {
        let rows: Vec<String> = rows.into_iter().map(|r| r.into_iter().collect()).collect();
        format!("{} {side}", rows.join("/"))
    })
}

/// One command line of text.
fn command() -> impl Strategy<Value = String> {
    let body = prop_oneof![
        4 => Just("genmove".to_string()),
        2 => Just("legal".to_string()),
        2 => Just("show".to_string()),
        2 => Just("undo".to_string()),
        1 => Just("ktp".to_string()),
        1 => Just("name".to_string()),
        1 => Just("version".to_string()),
        1 => Just("genmove b".to_string()),
        3 => size().prop_map(|s| format!("newgame {s}")),
        1 => Just("newgame".to_string()),
        3 => position().prop_map(|p| format!("position {p}")),
        4 => cell().prop_map(|c| format!("play {c}")),
        4 => (cell(), cell()).prop_map(|(a, b)| format!("play {a}-{b}")),
        1 => Just("play".to_string()),
        2 => (prop::sample::select(vec!["nodes", "movetime", "depth", "speed"]), number())
            .prop_map(|(kind, n)| format!("limit {kind} {n}")),
        1 => Just("limit".to_string()),
        1 => any::<String>(),
    ];
    (prop_oneof![4 => Just(String::new()), 1 => number().prop_map(|n| format!("{n} "))], body)
        .prop_map(|(id, body)| format!("{id}{body}"))
}

/// One line of input as bytes: a command, or garbage.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        12 => command().prop_map(|c| c.replace('\n', " ").into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..40)
            .prop_map(|bytes| bytes.into_iter().filter(|&b| b != b'\n').collect()),
        1 => Just(b"\xff\xfe genmove".to_vec()),
        1 => (0usize..3).prop_map(|k| vec![b'7'; MAX_LINE + k * 1000]),
        1 => Just(b"# a comment".to_vec()),
        1 => Just(Vec::new()),
        1 => Just(b"   \r".to_vec()),
    ]
}

/// Whether a line of text gets an answer: not blank, not a comment.
fn answered(text: &str) -> bool {
    let trimmed = text.trim();
    !trimmed.is_empty() && !trimmed.starts_with('#')
}

#[test]
fn command_by_command_a_failure_changes_nothing() {
    let session = proptest::collection::vec(command(), 1..40);
    fuzz("ktp-commands", 500, session, |lines| {
        let mut engine = engine();
        for line in &lines {
            let (position, limits) = (*engine.position(), engine.limits());
            let answer = engine.handle_line(line);
            prop_assert_eq!(answer.is_some(), answered(line), "{:?}", line);
            let Some(answer) = answer else { continue };
            let text = answer.to_string();
            prop_assert!(text.starts_with('=') || text.starts_with('?'), "{:?} -> {:?}", line, text);
            prop_assert!(text.ends_with("\n\n") && text.matches('\n').count() == 2, "{:?} -> {:?}", line, text);
            match answer.outcome() {
                Err(_) => {
                    prop_assert_eq!(*engine.position(), position, "a failed {:?} moved the game", line);
                    prop_assert_eq!(engine.limits(), limits, "a failed {:?} changed the limits", line);
                }
                Ok(shown) if line.split_whitespace().last() == Some("show") => {
                    prop_assert_eq!(shown, engine.position().to_string());
                }
                Ok(_) => {}
            }
        }
        Ok(())
    });
}

#[test]
fn byte_streams_get_one_answer_per_line() {
    let session = proptest::collection::vec(line(), 1..30);
    fuzz("ktp-bytes", 300, session, |lines| {
        let lines: Vec<Vec<u8>> = lines.into_iter().filter(|l| !String::from_utf8_lossy(l).contains("quit")).collect();
        let mut input = lines.join(&b'\n');
        input.push(b'\n');
        let mut output = Vec::new();
        let mut engine = engine();
        engine.run(&input[..], &mut output).unwrap();
        let expected = lines
            .iter()
            .filter(|l| {
                let text = String::from_utf8_lossy(&l[..l.len().min(MAX_LINE)]);
                l.len() > MAX_LINE && !text.trim_start().starts_with('#') || answered(&text)
            })
            .count();
        let output = String::from_utf8(output).expect("answers are UTF-8");
        let answers: Vec<&str> = output.split_terminator("\n\n").collect();
        prop_assert_eq!(answers.len(), expected, "{}", output);
        for answer in answers {
            prop_assert!(answer.starts_with('=') || answer.starts_with('?'), "{:?}", answer);
            prop_assert!(!answer.contains('\n'), "{:?}", answer);
        }
        Ok(())
    });
}
