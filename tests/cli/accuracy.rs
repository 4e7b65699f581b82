//! `konane accuracy` end to end on a board the solver finishes at once: a
//! deep search scores every won position, random play does not, and the
//! JSON lists each miss with a legal, losing move.

use konane_rules::Position;

use crate::common::konane_command;

#[test]
fn scores_players_against_the_solver_and_lists_their_misses() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("accuracy.json");
    let out = konane_command()
        .args(["accuracy", "--players", "alphabeta:depth=30;random", "--size", "5x4", "--positions", "40"])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("start konane accuracy");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();

    let won = report["won"].as_u64().unwrap();
    assert_eq!(won + report["lost"].as_u64().unwrap(), 40, "{report}");
    let [deep, random] = [0, 1].map(|i| &report["results"][i]);
    assert_eq!(deep["correct"].as_u64(), Some(won), "depth 30 solves 5x4: {deep}");
    assert_eq!(deep["misses"].as_array().map(Vec::len), Some(0));
    assert!(text.contains(&format!("| `alphabeta:depth=30` | {won}/{won} | 100.0% |")), "{text}");

    let misses = random["misses"].as_array().unwrap();
    assert!(!misses.is_empty(), "random play misses some of {won} won positions");
    assert_eq!(random["correct"].as_u64().unwrap() + misses.len() as u64, won);
    assert!(text.contains("`random` missed with these stone counts"), "{text}");
    for miss in misses {
        let position: Position = miss["position"].as_str().unwrap().parse().unwrap();
        let chosen = position.parse_legal_move(miss["chosen"].as_str().unwrap()).expect("a legal move");
        let winning = miss["winning_moves"].as_array().unwrap();
        assert!(!winning.is_empty(), "{miss}");
        assert!(!winning.iter().any(|w| w.as_str() == Some(&chosen.to_text(position.size()))), "{miss}");
        assert_eq!(miss["stones"].as_u64(), Some(position.stones() as u64));
    }
}

/// A `net:` player solves endgames by default: on 5x4 every position is
/// within the solver's 30 stones, so even an untrained network keeps every
/// win, where its search alone (`solve=0`) does not.
#[test]
fn a_network_player_solves_endgames_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("accuracy.json");
    let out = konane_command()
        .args(["accuracy", "--players", "net:init,sims=16;net:init,sims=16,solve=0", "--size", "5x4"])
        .args(["--positions", "40", "--json"])
        .arg(&json)
        .output()
        .expect("start konane accuracy");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let won = report["won"].as_u64().unwrap();
    let [default, plain] = [0, 1].map(|i| report["results"][i]["correct"].as_u64().unwrap());
    assert!(won > 0, "{report}");
    assert_eq!(default, won, "the default spec's leaf solver keeps every win: {report}");
    assert!(plain < won, "the untrained network's search alone misses some: {report}");
}
