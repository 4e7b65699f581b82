//! The arena: two players, many games in parallel, honest statistics.
//!
//! Games come in pairs that start from the same opening (black's and
//! white's removals) with colours swapped, and the pairs walk through every
//! legal opening of the board in a seeded order, so a result is not one
//! opening's accident. Every game is seeded from the match seed and its
//! index: with limits by depth, nodes or simulations a match replays exactly.
//!
//! A player that breaks a rule (an illegal move, no move where one exists, a
//! panic, a move far over its time) forfeits that game's score: the game is
//! reported as a fault. A player whose search fails ([`PlayerError`]: a
//! network whose outputs are not numbers) ends the whole match with an
//! error, since every further game would fail the same way.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use konane_rules::{Color, GameRecord, Move, Position, Size};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::{Limits, Player, PlayerError};

/// Threads per core a command may ask for: more only adds contention (and
/// memory, one search tree each).
pub const MAX_THREADS_PER_CORE: usize = 4;

/// The machine's cores (1 if unknown): the default for work split over
/// threads. Read once: the standard library asks the cgroup files each time.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The most threads a match, a search or a training run may use on this
/// machine: [`MAX_THREADS_PER_CORE`] per core.
pub fn max_threads() -> usize {
    MAX_THREADS_PER_CORE * cores()
}

/// Makes a fresh player for each game (its seed differs per game).
pub trait PlayerFactory: Sync {
    /// The player's name for reports.
    fn label(&self) -> String;
    /// A new player with this seed.
    fn build(&self, seed: u64) -> Box<dyn Player>;
}

/// How a match is played.
#[derive(Clone, Debug)]
pub struct MatchConfig {
    /// Board size.
    pub size: Size,
    /// Number of games (odd counts leave the last pair incomplete).
    pub games: usize,
    /// Worker threads (games run in parallel).
    pub threads: usize,
    /// Match seed: openings order and every player's seed derive from it.
    pub seed: u64,
}

/// Why a game was not scored.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GameFault {
    /// `A` or `B`.
    pub player: char,
    /// What happened.
    pub reason: String,
}

/// One finished (or faulted) game.
#[derive(Clone, Debug)]
pub struct GameResult {
    /// Index in the match.
    pub index: usize,
    /// A's colour.
    pub a_color: Color,
    /// The game's moves, openings included.
    pub record: GameRecord,
    /// Whether A won (meaningless when `fault` is set).
    pub a_won: bool,
    /// Set when a player failed; the game is then not scored.
    pub fault: Option<GameFault>,
    /// Thinking time and moves of A and of B.
    pub time: [Duration; 2],
    /// Moves played by A and by B.
    pub moves: [u32; 2],
}

/// A match could not be played to its end.
#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    /// The worker threads could not be started.
    #[error("starting {threads} match threads: {reason}")]
    Threads {
        /// Threads asked for.
        threads: usize,
        /// What the system said.
        reason: String,
    },
    /// A player's search failed; the match stopped.
    #[error("game {game}: player {player} failed: {error}")]
    Player {
        /// The game's index.
        game: usize,
        /// `A` or `B`.
        player: char,
        /// Why.
        error: PlayerError,
    },
}

/// Every opening of `size`, in a seeded order: the pairs (black's removal,
/// white's removal). On boards where white has no removal after black's,
/// the openings are black's removals alone, and where black has none (1x1)
/// the one empty opening, so every board has at least one.
pub fn openings(size: Size, seed: u64) -> Vec<Vec<Move>> {
    let start = Position::start(size);
    let mut all = Vec::new();
    for black in start.moves() {
        let mut after = start;
        after.play_unchecked(black);
        for white in after.moves() {
            all.push(vec![black, white]);
        }
    }
    if all.is_empty() {
        all = start.moves().iter().map(|&black| vec![black]).collect();
    }
    if all.is_empty() {
        all.push(Vec::new());
    }
    all.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    all
}

/// Seeds of game `index`'s two players, independent across games.
fn game_seeds(match_seed: u64, index: usize) -> [u64; 2] {
    let base = match_seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (index as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    [base, base ^ 0xA5A5_A5A5_5A5A_5A5A]
}

/// A move took far longer than its limit: twice the time plus half a second.
fn grossly_over(limits: &Limits, took: Duration) -> bool {
    limits.movetime.is_some_and(|t| took > t * 2 + Duration::from_millis(500))
}

/// Plays game `index` from `opening` (played as far as it is legal): A
/// takes black in even games, white in odd ones.
///
/// # Errors
/// A player's search failed ([`MatchError::Player`]).
pub fn play_game(
    a: &dyn PlayerFactory,
    b: &dyn PlayerFactory,
    config: &MatchConfig,
    opening: &[Move],
    index: usize,
) -> Result<GameResult, MatchError> {
    let seeds = game_seeds(config.seed, index);
    let a_color = if index.is_multiple_of(2) { Color::Black } else { Color::White };
    let mut result = GameResult {
        index,
        a_color,
        record: GameRecord::new(config.size),
        a_won: false,
        fault: None,
        time: [Duration::ZERO; 2],
        moves: [0; 2],
    };
    let mut position = Position::start(config.size);
    for &mv in opening {
        if position.play(mv).is_err() {
            break;
        }
        result.record.moves.push(mv);
    }
    let mut players = [a.build(seeds[0]), b.build(seeds[1])];
    let fault = |who: usize, reason: String| Some(GameFault { player: ['A', 'B'][who], reason });
    while !position.is_over() {
        let who = if position.side_to_move() == a_color { 0 } else { 1 };
        let player = &mut players[who];
        let limits = player.limits();
        let started = Instant::now();
        let choice = catch_unwind(AssertUnwindSafe(|| player.choose(&position, &limits)));
        let took = started.elapsed();
        result.time[who] += took;
        result.moves[who] += 1;
        let mv = match choice {
            Ok(Ok(Some(choice))) => choice.mv,
            Ok(Err(error)) => return Err(MatchError::Player { game: index, player: ['A', 'B'][who], error }),
            Ok(Ok(None)) => {
                result.fault = fault(who, format!("returned no move in {position}, which has legal moves"));
                break;
            }
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                result.fault = fault(who, format!("crashed: {message}"));
                break;
            }
        };
        if let Err(illegal) = position.play(mv) {
            result.fault = fault(who, illegal.to_string());
            break;
        }
        result.record.moves.push(mv);
        if grossly_over(&limits, took) {
            result.fault = fault(who, format!("took {took:?} for a move limited to {:?}", limits.movetime.unwrap()));
            break;
        }
    }
    if result.fault.is_none() {
        let winner = position.winner().expect("the loop ends only when the game is over");
        result.a_won = winner == a_color;
        result.record.result = Some(winner);
    }
    Ok(result)
}

/// Plays the whole match on `config.threads` threads, calling `on_game`
/// as each game ends (in completion order); results come back in game order.
///
/// # Errors
/// The thread pool could not be built, or a player's search failed (the
/// games not yet started are then not played).
pub fn play_match(
    a: &dyn PlayerFactory,
    b: &dyn PlayerFactory,
    config: &MatchConfig,
    on_game: &(dyn Fn(&GameResult) + Sync),
) -> Result<Vec<GameResult>, MatchError> {
    let openings = openings(config.size, config.seed);
    let threads = config.threads.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| MatchError::Threads { threads, reason: e.to_string() })?;
    let mut results: Vec<GameResult> = pool.install(|| {
        (0..config.games)
            .into_par_iter()
            .map(|index| {
                let opening = &openings[(index / 2) % openings.len()];
                let result = play_game(a, b, config, opening, index)?;
                on_game(&result);
                Ok(result)
            })
            .collect::<Result<_, MatchError>>()
    })?;
    results.sort_by_key(|r| r.index);
    Ok(results)
}

/// What a round robin found: every pair's games and the ratings they imply.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundRobin {
    /// `wins[i][j]`: games player `i` won against player `j`.
    pub wins: Vec<Vec<f64>>,
    /// Bradley–Terry Elo of each player, the first at 0.
    pub elo: Vec<f64>,
    /// Games not scored (a player broke a rule).
    pub faults: usize,
}

/// Every pair of `players` plays a match of `config.games` games (pair `p`,
/// counted row by row, from seed `config.seed ^ p`); `on_pairing(i, j,
/// summary)` sees each match as it ends. The players are rated together by
/// [`bradley_terry_elo`].
///
/// # Errors
/// As [`play_match`].
pub fn round_robin(
    players: &[&dyn PlayerFactory],
    config: &MatchConfig,
    on_pairing: &dyn Fn(usize, usize, &MatchSummary),
) -> Result<RoundRobin, MatchError> {
    let n = players.len();
    let mut wins = vec![vec![0.0; n]; n];
    let mut faults = 0;
    let mut pair = 0;
    for i in 0..n {
        for j in i + 1..n {
            let pairing = MatchConfig { seed: config.seed ^ pair, ..config.clone() };
            let results = play_match(players[i], players[j], &pairing, &|_| {})?;
            let summary = MatchSummary::new(players[i].label(), players[j].label(), config.size, &results);
            wins[i][j] += summary.a_wins as f64;
            wins[j][i] += summary.b_wins as f64;
            faults += summary.faults.len();
            on_pairing(i, j, &summary);
            pair += 1;
        }
    }
    let elo = if n > 1 { bradley_terry_elo(&wins) } else { vec![0.0; n] };
    Ok(RoundRobin { wins, elo, faults })
}

/// A 95% interval.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// The statistics of a match, from A's side.
#[derive(Clone, Debug, Serialize)]
pub struct MatchSummary {
    /// Player A.
    pub a: String,
    /// Player B.
    pub b: String,
    /// Board size.
    pub size: String,
    /// Games scored (faulted games excluded).
    pub games: usize,
    /// A's wins.
    pub a_wins: usize,
    /// B's wins.
    pub b_wins: usize,
    /// A's wins as black / games as black, and as white.
    pub a_wins_as_black: usize,
    /// A's wins as white.
    pub a_wins_as_white: usize,
    /// A's score in [0, 1].
    pub score: f64,
    /// Wilson 95% interval of the score.
    pub score_interval: Interval,
    /// Elo of A minus Elo of B (clamped at ±800 for perfect scores).
    pub elo: f64,
    /// 95% interval of the Elo difference.
    pub elo_interval: Interval,
    /// Mean plies per game, openings included.
    pub mean_game_length: f64,
    /// Mean thinking time per move of A and of B, in milliseconds.
    pub ms_per_move: [f64; 2],
    /// Games not scored, with the reason.
    pub faults: Vec<(usize, GameFault)>,
}

/// Wilson score interval at 95% for `wins` out of `n`.
pub fn wilson(wins: f64, n: f64) -> Interval {
    if n == 0.0 {
        return Interval { low: 0.0, high: 1.0 };
    }
    let z = 1.959_964;
    let p = wins / n;
    let denominator = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denominator;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denominator;
    Interval { low: (centre - half).max(0.0), high: (centre + half).min(1.0) }
}

/// Elo difference for an expected score, clamped to ±800.
pub fn elo(score: f64) -> f64 {
    let clamped = score.clamp(1e-4, 1.0 - 1e-4);
    (-400.0 * (1.0 / clamped - 1.0).log10()).clamp(-800.0, 800.0)
}

impl MatchSummary {
    /// Sums up `results`.
    pub fn new(a: String, b: String, size: Size, results: &[GameResult]) -> MatchSummary {
        let scored: Vec<&GameResult> = results.iter().filter(|r| r.fault.is_none()).collect();
        let games = scored.len();
        let a_wins = scored.iter().filter(|r| r.a_won).count();
        let wins_as = |c: Color| scored.iter().filter(|r| r.a_won && r.a_color == c).count();
        let score = if games == 0 { 0.5 } else { a_wins as f64 / games as f64 };
        let score_interval = wilson(a_wins as f64, games as f64);
        let total_time = |i: usize| results.iter().map(|r| r.time[i].as_secs_f64()).sum::<f64>();
        let total_moves = |i: usize| results.iter().map(|r| r.moves[i] as f64).sum::<f64>().max(1.0);
        MatchSummary {
            a,
            b,
            size: size.to_string(),
            games,
            a_wins,
            b_wins: games - a_wins,
            a_wins_as_black: wins_as(Color::Black),
            a_wins_as_white: wins_as(Color::White),
            score,
            score_interval,
            elo: elo(score),
            elo_interval: Interval { low: elo(score_interval.low), high: elo(score_interval.high) },
            mean_game_length: scored.iter().map(|r| r.record.moves.len() as f64).sum::<f64>() / games.max(1) as f64,
            ms_per_move: [0, 1].map(|i| 1000.0 * total_time(i) / total_moves(i)),
            faults: results.iter().filter_map(|r| r.fault.clone().map(|f| (r.index, f))).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Baseline, BaselineFactory};

    fn greedy() -> BaselineFactory {
        BaselineFactory::new(Baseline::Greedy, Limits::default(), "greedy")
    }

    fn random() -> BaselineFactory {
        BaselineFactory::new(Baseline::Random, Limits::default(), "random")
    }

    #[test]
    fn wilson_and_elo_behave() {
        let i = wilson(50.0, 100.0);
        assert!((i.low - 0.404).abs() < 0.002 && (i.high - 0.596).abs() < 0.002, "{i:?}");
        assert!((wilson(10.0, 10.0).high - 1.0).abs() < 1e-9);
        assert!(elo(0.5).abs() < 1e-9);
        assert!((elo(0.75) - 190.85).abs() < 0.1);
        assert_eq!(elo(1.0), 800.0);
    }

    #[test]
    fn openings_cover_every_legal_pair() {
        let size: Size = "6x6".parse().unwrap();
        let all = openings(size, 1);
        // 4 black removals; the corner ones have 2 white replies, the middle ones 4.
        assert_eq!(all.len(), 12);
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 12);
    }

    #[test]
    fn matches_are_reproducible_and_pairs_share_openings() {
        let config = MatchConfig { size: "6x6".parse().unwrap(), games: 8, threads: 2, seed: 3 };
        let a = greedy();
        let b = random();
        let first = play_match(&a, &b, &config, &|_| {}).unwrap();
        let second = play_match(&a, &b, &config, &|_| {}).unwrap();
        for (x, y) in first.iter().zip(&second) {
            assert_eq!(x.record, y.record);
        }
        for pair in first.chunks(2) {
            assert_eq!(pair[0].record.moves[..2], pair[1].record.moves[..2]);
            assert_ne!(pair[0].a_color, pair[1].a_color);
        }
        assert!(first.iter().all(|r| r.fault.is_none() && r.record.result.is_some()));
    }

    #[test]
    fn every_board_size_has_openings_and_plays_a_match() {
        let a = greedy();
        let b = random();
        for cols in 1..=4 {
            for rows in 1..=4 {
                let size = Size::new(cols, rows).unwrap();
                let all = openings(size, 7);
                assert!(!all.is_empty(), "{size}");
                for opening in &all {
                    let mut position = Position::start(size);
                    for &mv in opening {
                        position.play(mv).unwrap_or_else(|e| panic!("{size}: opening {opening:?}: {e}"));
                    }
                }
                let config = MatchConfig { size, games: 4, threads: 2, seed: 1 };
                let results = play_match(&a, &b, &config, &|_| {}).unwrap();
                assert_eq!(results.len(), 4, "{size}");
                for r in &results {
                    assert!(r.fault.is_none(), "{size}: {:?}", r.fault);
                    assert_eq!(r.record.final_position().winner(), r.record.result, "{size}");
                }
            }
        }
    }

    #[test]
    fn a_round_robin_plays_every_pair_and_rates_the_first_at_zero() {
        let deep = BaselineFactory::new(Baseline::AlphaBeta, Limits { depth: Some(3), ..Limits::default() }, "ab3");
        let (a, b) = (random(), greedy());
        let players: [&dyn PlayerFactory; 3] = [&a, &b, &deep];
        let config = MatchConfig { size: "5x5".parse().unwrap(), games: 6, threads: 2, seed: 4 };
        let seen = std::sync::Mutex::new(Vec::new());
        let table = round_robin(&players, &config, &|i, j, s| seen.lock().unwrap().push((i, j, s.games))).unwrap();
        assert_eq!(seen.into_inner().unwrap(), [(0, 1, 6), (0, 2, 6), (1, 2, 6)]);
        for i in 0..3 {
            for j in 0..3 {
                if i != j {
                    assert_eq!(table.wins[i][j] + table.wins[j][i], 6.0, "{i} vs {j}");
                }
            }
        }
        assert_eq!((table.elo[0], table.faults), (0.0, 0));
        assert!(table.elo[2] > table.elo[0], "depth 3 rates above random: {:?}", table.elo);
        assert_eq!(round_robin(&players, &config, &|_, _, _| {}).unwrap(), table, "seeded: the same again");
    }

    /// A player whose search always fails.
    #[derive(Default)]
    struct Broken;
    impl Player for Broken {
        fn name(&self) -> String {
            "broken".into()
        }
        fn limits(&self) -> Limits {
            Limits::default()
        }
        fn choose(&mut self, _: &Position, _: &Limits) -> Result<Option<crate::Choice>, crate::PlayerError> {
            Err(crate::PlayerError::new("broken", std::io::Error::other("its network gives NaN")))
        }
    }

    /// Builds a fresh `P` for every game.
    struct FactoryOf<P>(std::marker::PhantomData<fn() -> P>);
    impl<P: Player + Default + 'static> PlayerFactory for FactoryOf<P> {
        fn label(&self) -> String {
            P::default().name()
        }
        fn build(&self, _: u64) -> Box<dyn Player> {
            Box::new(P::default())
        }
    }
    fn factory_of<P>() -> FactoryOf<P> {
        FactoryOf(std::marker::PhantomData)
    }

    #[test]
    fn a_failing_search_ends_the_match_with_an_error() {
        let config = MatchConfig { size: "6x6".parse().unwrap(), games: 40, threads: 2, seed: 1 };
        let random = random();
        let played = std::sync::atomic::AtomicUsize::new(0);
        let error = play_match(&random, &factory_of::<Broken>(), &config, &|_| {
            played.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap_err();
        let text = error.to_string();
        assert!(text.contains("player B failed: broken: its network gives NaN"), "{text}");
        assert_eq!(played.into_inner(), 0, "no game finished: each reached the broken player");
    }

    #[derive(Default)]
    struct Cheater;
    impl Player for Cheater {
        fn name(&self) -> String {
            "cheater".into()
        }
        fn limits(&self) -> Limits {
            Limits::default()
        }
        fn choose(&mut self, position: &Position, _: &Limits) -> Result<Option<crate::Choice>, crate::PlayerError> {
            // Always tries the first cell as a removal, legal or not.
            Ok(Some(crate::Choice::plain(Move::Remove(position.size().cell(0, 0)))))
        }
    }

    #[test]
    fn faulty_players_are_reported_not_scored() {
        let config = MatchConfig { size: "6x6".parse().unwrap(), games: 4, threads: 1, seed: 1 };
        let random = random();
        let results = play_match(&factory_of::<Cheater>(), &random, &config, &|_| {}).unwrap();
        let summary = MatchSummary::new("cheater".into(), "random".into(), config.size, &results);
        assert_eq!(summary.faults.len(), 4);
        assert_eq!(summary.games, 0);
        assert!(summary.faults[0].1.reason.contains("illegal move a1"), "{:?}", summary.faults[0]);
    }
}

/// Elo ratings from a table of results, by the Bradley–Terry maximum
/// likelihood (minorisation–maximisation iterations). `wins[i][j]` is how
/// often player `i` beat player `j`. Every pair gets one virtual drawn game
/// (half a win each way) so a perfect score still has a finite rating.
/// Ratings are shifted so that player 0 (the anchor) is at 0.
pub fn bradley_terry_elo(wins: &[Vec<f64>]) -> Vec<f64> {
    let n = wins.len();
    let w = |i: usize, j: usize| if i == j { 0.0 } else { wins[i][j] + 0.5 };
    let mut strength = vec![1.0f64; n];
    for _ in 0..10_000 {
        let mut next = strength.clone();
        for i in 0..n {
            let won: f64 = (0..n).map(|j| w(i, j)).sum();
            let denominator: f64 =
                (0..n).filter(|&j| j != i).map(|j| (w(i, j) + w(j, i)) / (strength[i] + strength[j])).sum();
            if denominator > 0.0 {
                next[i] = won / denominator;
            }
        }
        let anchor = next[0];
        next.iter_mut().for_each(|s| *s /= anchor);
        let change = next.iter().zip(&strength).map(|(a, b)| (a.ln() - b.ln()).abs()).fold(0.0, f64::max);
        strength = next;
        if change < 1e-9 {
            break;
        }
    }
    strength.iter().map(|s| 400.0 * s.log10()).collect()
}

#[cfg(test)]
mod rating_tests {
    use super::*;

    #[test]
    fn bradley_terry_recovers_a_known_gap() {
        // B scores 75% against A, C 75% against B: about +191 Elo each step.
        let wins = vec![vec![0.0, 250.0, 100.0], vec![750.0, 0.0, 250.0], vec![900.0, 750.0, 0.0]];
        let elo = bradley_terry_elo(&wins);
        assert_eq!(elo[0], 0.0);
        assert!(elo[1] > 150.0 && elo[1] < 230.0, "{elo:?}");
        assert!(elo[2] > elo[1] + 150.0, "{elo:?}");
    }
}
