//! The PUCT player: strength against random play, limits, reuse between
//! moves, determinism and the raw-policy mode.

use std::time::{Duration, Instant};

use konane_mcts::{Evaluator, MctsPlayer, RolloutEvaluator, Search, SearchConfig, UniformEvaluator};
use konane_players::random::RandomPlayer;
use konane_players::{Limits, Player};
use konane_rules::{Color, Move, MoveList, Position, Size};

fn sims(n: u64) -> Limits {
    Limits { nodes: Some(n), ..Limits::default() }
}

fn rollout_player(simulations: u64, seed: u64) -> MctsPlayer<RolloutEvaluator> {
    MctsPlayer::new(RolloutEvaluator::new(seed), SearchConfig::default(), sims(simulations), seed, false)
}

/// Plays one game from the start of `size`; returns the winner and moves.
fn play(size: Size, black: &mut dyn Player, white: &mut dyn Player) -> (Color, Vec<Move>) {
    black.new_game();
    white.new_game();
    let mut position = Position::start(size);
    let mut record = Vec::new();
    loop {
        let player: &mut dyn Player = match position.side_to_move() {
            Color::Black => &mut *black,
            Color::White => &mut *white,
        };
        let limits = player.limits();
        match player.choose(&position, &limits).unwrap() {
            None => {
                assert!(position.is_over());
                return (position.side_to_move().opposite(), record);
            }
            Some(choice) => {
                position.play(choice.mv).expect("players play legal moves");
                record.push(choice.mv);
            }
        }
    }
}

#[test]
fn beats_random_on_6x6() {
    let size: Size = "6x6".parse().unwrap();
    let mut wins = 0;
    for game in 0..20u64 {
        let mut mcts = rollout_player(200, game);
        let mut random = RandomPlayer::new(1000 + game);
        let mcts_color = if game % 2 == 0 { Color::Black } else { Color::White };
        let (winner, _) = if mcts_color == Color::Black {
            play(size, &mut mcts, &mut random)
        } else {
            play(size, &mut random, &mut mcts)
        };
        wins += (winner == mcts_color) as u32;
    }
    assert!(wins >= 18, "won only {wins}/20");
}

#[test]
fn same_seed_same_game() {
    let size: Size = "6x6".parse().unwrap();
    let game = |seed| {
        let mut a = rollout_player(150, seed);
        let mut b = rollout_player(150, seed + 1);
        play(size, &mut a, &mut b).1
    };
    assert_eq!(game(3), game(3));
}

#[test]
fn choices_report_the_search() {
    let position = Position::start("6x6".parse().unwrap());
    let mut player = rollout_player(300, 1);
    let choice = player.choose(&position, &sims(300)).unwrap().unwrap();
    assert_eq!(choice.nodes, 300);
    let value = choice.value.unwrap();
    assert!((-1.0..=1.0).contains(&value));
    assert_eq!(Some(choice.mv), player.search().best_move());
    assert_eq!(value, player.search().root_value());
}

#[test]
fn the_tree_is_reused_after_the_reply() {
    let start = Position::start("6x6".parse().unwrap());
    let mut player = rollout_player(400, 2);
    let first = player.choose(&start, &sims(400)).unwrap().unwrap();
    // A twin search (same evaluator seed, config and budget) builds the same
    // tree, and shows the reply visited most with its visits.
    let mut twin = Search::new(SearchConfig::default(), 2);
    twin.set_root(start);
    twin.run(&mut RolloutEvaluator::new(2), 400, None).unwrap();
    assert_eq!(twin.best_move(), Some(first.mv));
    twin.advance(first.mv);
    let reply = twin.root_children().max_by_key(|c| c.visits).unwrap();
    assert!(reply.visits > 10);
    let mut position = start;
    position.play(first.mv).unwrap();
    position.play(reply.mv).unwrap();
    let second = player.choose(&position, &sims(100)).unwrap().unwrap();
    assert_eq!(second.nodes, 100);
    let total: u32 = player.search().root_visits().map(|(_, v)| v).sum();
    assert_eq!(total + 1, reply.visits + 100, "the reply's subtree was kept");
    player.new_game();
    assert_eq!(player.search().root_visits().count(), 0);
    assert_eq!(player.search().root_position(), None);
}

#[test]
fn movetime_alone_bounds_the_search() {
    let position = Position::start("8x8".parse().unwrap());
    let mut player = MctsPlayer::new(UniformEvaluator::default(), SearchConfig::default(), Limits::default(), 1, false);
    let limits = Limits { movetime: Some(Duration::from_millis(50)), ..Limits::default() };
    let start = Instant::now();
    let choice = player.choose(&position, &limits).unwrap().unwrap();
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(choice.nodes > 0);
    // Neither limit: the default simulation count.
    let choice = player.choose(&position, &Limits::default()).unwrap().unwrap();
    assert_eq!(choice.nodes, konane_mcts::player::DEFAULT_SIMULATIONS);
}

/// Prefers the last legal move: prior proportional to its index plus one.
struct LastMoveEvaluator {
    moves: MoveList,
}

impl Evaluator for LastMoveEvaluator {
    fn evaluate(&mut self, batch: &mut konane_mcts::Batch) -> Result<(), konane_mcts::EvalError> {
        for i in 0..batch.len() {
            batch.positions()[i].legal_moves(&mut self.moves);
            let n = self.moves.len();
            let total = (n * (n + 1) / 2) as f32;
            batch.priors_mut().extend((1..=n).map(|i| i as f32 / total));
            batch.finish_output(0.25);
        }
        Ok(())
    }
}

#[test]
fn raw_policy_plays_the_highest_prior() {
    let mut position = Position::start("6x6".parse().unwrap());
    let mut player =
        MctsPlayer::new(LastMoveEvaluator { moves: MoveList::new() }, SearchConfig::default(), sims(100), 1, true);
    for _ in 0..6 {
        let choice = player.choose(&position, &sims(100)).unwrap().unwrap();
        assert_eq!(Some(&choice.mv), position.moves().last());
        assert_eq!(choice.nodes, 0);
        assert_eq!(choice.value, Some(0.25));
        position.play(choice.mv).unwrap();
    }
}

#[test]
fn no_move_no_choice() {
    let position: Position = "WB/BW w".parse().unwrap();
    assert!(position.is_over());
    let mut player = rollout_player(100, 1);
    assert_eq!(player.choose(&position, &sims(100)).unwrap(), None);
}
