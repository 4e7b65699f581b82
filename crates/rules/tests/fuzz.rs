//! Fuzz targets for the notation parsers: positions, moves, sizes and game
//! records, from random text and from random mutations of valid text.
//!
//! Each target runs `KONANE_FUZZ_CASES` inputs (default 2,000, the bounded
//! run of CI) from the seed `KONANE_FUZZ_SEED` (default fixed), and prints
//! how many it ran; `scripts/fuzz.sh` runs them long. The properties: no
//! parser panics, and whatever parses prints back to text that parses to
//! the same thing.

mod common;

use common::played;
use konane_rules::{GameRecord, Position, Size};
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Runs `property` on `KONANE_FUZZ_CASES` inputs (default 2,000).
fn fuzz<S: Strategy>(name: &str, strategy: S, property: impl Fn(S::Value)) {
    konane_fuzzing::fuzz(name, 2_000, strategy, |value| {
        property(value);
        Ok(())
    });
}

fn arb_size() -> impl Strategy<Value = Size> {
    (1usize..=20, 1usize..=20).prop_map(|(c, r)| Size::new(c, r).unwrap())
}

fn arb_position() -> impl Strategy<Value = Position> {
    (arb_size(), 0usize..60, any::<u64>()).prop_map(|(size, plies, seed)| played(size, plies, seed))
}

/// Text close to `valid`: characters replaced, inserted, deleted or
/// repeated, with the notation's own alphabet and arbitrary characters.
fn mutated(valid: String) -> impl Strategy<Value = String> {
    let edit = (any::<prop::sample::Index>(), 0u8..5, any::<char>(), prop::sample::select(ALPHABET.to_vec()));
    proptest::collection::vec(edit, 0..6).prop_map(move |edits| {
        let mut chars: Vec<char> = valid.chars().collect();
        for (at, kind, wild, tame) in edits {
            let i = if chars.is_empty() { 0 } else { at.index(chars.len()) };
            match kind {
                0 if !chars.is_empty() => chars[i] = tame,
                1 => chars.insert(i, tame),
                2 if !chars.is_empty() => {
                    chars.remove(i);
                }
                3 => chars.insert(i, wild),
                _ if !chars.is_empty() => {
                    let run = chars[i..].iter().take(8).copied().collect::<Vec<_>>();
                    for c in run.into_iter().rev() {
                        chars.insert(i, c);
                    }
                }
                _ => {}
            }
        }
        chars.into_iter().collect()
    })
}

const ALPHABET: &[char] =
    &['W', 'B', 'w', 'b', '.', '/', ' ', '-', 'x', '0', '1', '2', '9', 'a', 'd', 'z', ';', '\n', '\u{0}', 'é'];

/// Random text: from the notation's alphabet, or any characters at all.
fn noise() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(prop::sample::select(ALPHABET.to_vec()), 0..120)
            .prop_map(|c| c.into_iter().collect()),
        any::<String>(),
    ]
}

#[test]
fn position_strings() {
    let text = prop_oneof![arb_position().prop_flat_map(|p| mutated(p.to_string())), noise()];
    fuzz("position", text, |text| {
        if let Ok(position) = text.parse::<Position>() {
            let again: Position = position.to_string().parse().expect("a printed position parses");
            assert_eq!(again, position, "{text:?}");
            assert_eq!(position.moves().len(), position.count_moves() as usize);
        }
    });
}

#[test]
fn sizes() {
    let text = prop_oneof![arb_size().prop_flat_map(|s| mutated(s.to_string())), noise()];
    fuzz("size", text, |text| {
        if let Ok(size) = text.parse::<Size>() {
            assert_eq!(size.to_string().parse::<Size>().unwrap(), size, "{text:?}");
            assert!(size.cols() <= 20 && size.rows() <= 20);
        }
    });
}

#[test]
fn moves() {
    let case = arb_position().prop_flat_map(|position| {
        let legal: Vec<String> = position.moves().iter().map(|m| m.to_text(position.size())).collect();
        let seed = if legal.is_empty() { "d4".to_string() } else { legal[legal.len() / 2].clone() };
        (Just(position), prop_oneof![mutated(seed), noise()])
    });
    fuzz("move", case, |(position, text)| {
        match position.parse_legal_move(&text) {
            Ok(mv) => {
                assert!(position.is_legal(mv), "{text:?} in {position}");
                let printed = mv.to_text(position.size());
                assert_eq!(position.parse_legal_move(&printed).unwrap(), mv);
            }
            Err(_) => {
                // Parsing as notation alone must not panic either.
                let _ = position.parse_move(&text);
            }
        }
    });
}

#[test]
fn game_records() {
    let record = (arb_size(), 0usize..40, any::<u64>()).prop_map(|(size, plies, seed)| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut record = GameRecord::new(size);
        let mut position = Position::start(size);
        for _ in 0..plies {
            let moves = position.moves();
            if moves.is_empty() {
                break;
            }
            let mv = moves[rng.random_range(0..moves.len())];
            position.play_unchecked(mv);
            record.moves.push(mv);
        }
        record.result = position.winner();
        record.to_string()
    });
    let text = prop_oneof![record.prop_flat_map(mutated), noise()];
    fuzz("record", text, |text| {
        if let Ok(record) = text.parse::<GameRecord>() {
            let again: GameRecord = record.to_string().parse().expect("a printed record parses");
            assert_eq!(again, record, "{text:?}");
            let end = record.final_position();
            if let Some(winner) = record.result {
                assert_eq!(end.winner(), Some(winner));
            }
        }
    });
}
