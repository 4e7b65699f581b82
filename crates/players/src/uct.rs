//! Pure Monte Carlo tree search (UCT) with uniformly random playouts.
//!
//! Each simulation walks the tree from the root by UCB1, expands the leaf it
//! reaches, plays a uniformly random game to the end from there and adds the
//! result (+1 win, -1 loss) to every node on the path, with the sign of the
//! player who moved into that node.
//!
//! * **Tree.** An arena (`Vec<Node>`): the children of a node are one
//!   contiguous block, `first_child .. first_child + child_count`. The arena
//!   is cleared, not freed, between searches, so a search in steady state
//!   allocates nothing.
//! * **Expansion.** A node is expanded, all of its children at once, the
//!   second time a simulation reaches it (the first time it is a leaf that
//!   the playout starts from). The children are pushed in a seeded random
//!   order and unvisited children are tried first, in that order; so a
//!   simulation adds one visited node to the tree. Past [`MAX_TREE_NODES`]
//!   nodes the tree stops growing and playouts start at the leaves.
//! * **Selection.** UCB1, `mean + c * sqrt(ln N_parent / n_child)`; ties go
//!   to the earlier child.
//! * **Solver.** Games always end (every capture removes a stone) and a side
//!   with no move has lost, so a node whose side to move has no move is a
//!   proven win for the player who moved into it. Proofs propagate up
//!   (MCTS-solver): a node with a proven-winning move is won for its side to
//!   move, a node whose moves are all proven losses is lost. Selection skips
//!   proven losses and the search stops once the root is proven.
//! * **Final move.** A proven win if there is one; otherwise the most
//!   visited child that is not a proven loss (ties: larger value sum, then
//!   the earlier child).
//! * **Limits.** `nodes` counts simulations, `movetime` is a deadline checked
//!   every 64 simulations; with neither set a search runs
//!   [`DEFAULT_SIMULATIONS`], and never more than [`MAX_SIMULATIONS`]. For
//!   a given seed and simulation limit the player is deterministic; its RNG
//!   carries over from move to move.

use std::time::Instant;

use konane_rules::{Bits, Board, BoardVisitor, MAX_MOVES, Move, MoveList, Position};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Choice, Limits, Player, PlayerError};

/// Simulations per move when neither `nodes` nor `movetime` is set.
pub const DEFAULT_SIMULATIONS: u64 = 1000;

/// The most simulations one move runs, whatever its limits say: a node's
/// visits (`u32`) and value sum (`i32`, one unit a simulation) must not
/// wrap, and a root gets one visit per simulation.
pub const MAX_SIMULATIONS: u64 = i32::MAX as u64 - 1;

/// The tree stops growing before this many nodes (24 bytes each, ~100 MB);
/// a search at several hundred thousand simulations a second on 8x8 reaches
/// it after some seconds.
pub const MAX_TREE_NODES: usize = 1 << 22;

/// Simulations between two looks at the clock.
const CLOCK_INTERVAL: u64 = 64;

/// Not proven either way.
const UNPROVEN: i8 = 0;
/// The player who moved into the node wins with best play.
const PROVEN_WIN: i8 = 1;
/// The player who moved into the node loses with best play.
const PROVEN_LOSS: i8 = -1;

/// One node of the arena. Values are from the perspective of the player
/// who moved into the node.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Index of the first child (meaningful once expanded).
    first_child: u32,
    /// Simulations through this node.
    visits: u32,
    /// Sum of the results (+1/-1) of those simulations.
    value: i32,
    /// The move into this node (unused at the root).
    mv: Move,
    /// Number of children (meaningful once expanded).
    child_count: u16,
    /// [`UNPROVEN`], [`PROVEN_WIN`] or [`PROVEN_LOSS`].
    proven: i8,
    expanded: bool,
}

impl Node {
    fn new(mv: Move) -> Node {
        Node { first_child: 0, visits: 0, value: 0, mv, child_count: 0, proven: UNPROVEN, expanded: false }
    }

    fn children(&self) -> std::ops::Range<usize> {
        let first = self.first_child as usize;
        first..first + self.child_count as usize
    }

    /// Mean result for the player who moved into the node, in [-1, 1].
    fn mean(&self) -> f64 {
        if self.visits == 0 { 0.0 } else { self.value as f64 / self.visits as f64 }
    }
}

/// UCT with uniformly random playouts.
pub struct UctPlayer {
    limits: Limits,
    exploration: f64,
    seed: u64,
    rng: ChaCha8Rng,
    /// The arena; index 0 is the root.
    tree: Vec<Node>,
    /// Node indices from the root to the current leaf.
    path: Vec<u32>,
}

impl UctPlayer {
    /// Allowed exploration constants (`mcts:c=X`): beyond 100 the playouts
    /// no longer steer the search.
    pub const EXPLORATION: std::ops::RangeInclusive<f64> = 0.0..=100.0;

    /// A UCT player with default limits, exploration constant and seed.
    pub fn new(limits: Limits, exploration: f64, seed: u64) -> UctPlayer {
        UctPlayer {
            limits,
            exploration,
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            tree: Vec::new(),
            path: Vec::new(),
        }
    }
}

impl Player for UctPlayer {
    fn name(&self) -> String {
        format!("mcts(c={},seed={})", self.exploration, self.seed)
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn choose(&mut self, position: &Position, limits: &Limits) -> Result<Option<Choice>, PlayerError> {
        let start = Instant::now();
        Ok(position.visit(Search { player: self, limits, start }))
    }
}

/// One search, run on the concrete board so the loops are monomorphic.
struct Search<'a> {
    player: &'a mut UctPlayer,
    limits: &'a Limits,
    start: Instant,
}

impl BoardVisitor for Search<'_> {
    type Output = Option<Choice>;

    fn visit<B: Bits>(self, root: &Board<B>) -> Option<Choice> {
        let Search { player, limits, start } = self;
        let UctPlayer { exploration, rng, tree, path, .. } = player;
        let mut moves = MoveList::new();
        root.generate(&mut moves);
        if moves.is_empty() {
            return None;
        }
        tree.clear();
        tree.push(Node::new(moves[0]));
        tree[0].visits = 1;
        expand(tree, 0, &mut moves, rng);

        let max_sims = match (limits.nodes, limits.movetime) {
            (Some(n), _) => n.max(1),
            (None, Some(_)) => u64::MAX,
            (None, None) => DEFAULT_SIMULATIONS,
        }
        .min(MAX_SIMULATIONS);
        let deadline = limits.deadline(start);
        let mut sims = 0;
        while sims < max_sims && tree[0].proven == UNPROVEN {
            simulate(root, tree, path, &mut moves, rng, *exploration);
            sims += 1;
            if sims % CLOCK_INTERVAL == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }

        let best = best_child(tree);
        let node = &tree[best];
        let value = match node.proven {
            PROVEN_WIN => 1.0,
            PROVEN_LOSS => -1.0,
            _ => node.mean() as f32,
        };
        Some(Choice { mv: node.mv, nodes: sims, depth: 0, value: Some(value) })
    }
}

/// Pushes the children of `node`, whose moves are in `moves`, in a random order.
fn expand(tree: &mut Vec<Node>, node: usize, moves: &mut MoveList, rng: &mut ChaCha8Rng) {
    moves.shuffle(rng);
    let first = tree.len();
    tree.extend(moves.iter().map(|&mv| Node::new(mv)));
    let parent = &mut tree[node];
    parent.first_child = first as u32;
    parent.child_count = moves.len() as u16;
    parent.expanded = true;
}

/// The child of `node` to descend into: the first unvisited one, else the
/// best by UCB1 among those not proven lost for the mover.
fn select(tree: &[Node], node: usize, exploration: f64) -> usize {
    let parent = &tree[node];
    let scale = exploration * (parent.visits as f64).ln().sqrt();
    let mut best = usize::MAX;
    let mut best_score = f64::NEG_INFINITY;
    for index in parent.children() {
        let child = &tree[index];
        if child.visits == 0 {
            return index;
        }
        if child.proven == PROVEN_LOSS {
            continue;
        }
        let score = child.mean() + scale / (child.visits as f64).sqrt();
        if score > best_score {
            best_score = score;
            best = index;
        }
    }
    debug_assert!(best != usize::MAX, "an unproven node has an unproven child");
    best
}

/// One simulation: select, expand, play out, back up.
fn simulate<B: Bits>(
    root: &Board<B>,
    tree: &mut Vec<Node>,
    path: &mut Vec<u32>,
    moves: &mut MoveList,
    rng: &mut ChaCha8Rng,
    exploration: f64,
) {
    let mut board = *root;
    let mut node = 0;
    path.clear();
    path.push(0);
    loop {
        if !tree[node].expanded {
            if tree[node].visits == 0 || tree.len() + MAX_MOVES > MAX_TREE_NODES {
                break;
            }
            board.generate(moves);
            if moves.is_empty() {
                // Defensive: a node without moves is proven on its first
                // visit and never selected again.
                break;
            }
            expand(tree, node, moves, rng);
        }
        node = select(tree, node, exploration);
        board.play_unchecked(tree[node].mv);
        path.push(node as u32);
    }

    // Random playout from the leaf; the side to move at the end has lost.
    let mut plies = 0;
    loop {
        board.generate(moves);
        if moves.is_empty() {
            break;
        }
        let mv = moves[rng.random_range(0..moves.len())];
        board.play_unchecked(mv);
        plies += 1;
    }
    if plies == 0 {
        // The side to move at the leaf has no move: exact.
        tree[node].proven = PROVEN_WIN;
    }

    // Back up, +1 where the player who moved into a node won. The mover into
    // the node at depth d is the root's side for odd d, the other side for
    // even d (at the root nobody moved; the sign just keeps alternating).
    let winner = board.side_to_move().opposite();
    let root_side = root.side_to_move();
    let leaf_mover = if (path.len() - 1).is_multiple_of(2) { root_side.opposite() } else { root_side };
    let mut result: i32 = if winner == leaf_mover { 1 } else { -1 };
    for &index in path.iter().rev() {
        let n = &mut tree[index as usize];
        n.visits += 1;
        n.value += result;
        result = -result;
    }

    // Propagate proofs up the path while they keep deciding the parent.
    for pair in (0..path.len() - 1).rev() {
        let (parent, child) = (path[pair] as usize, path[pair + 1] as usize);
        match tree[child].proven {
            PROVEN_WIN => tree[parent].proven = PROVEN_LOSS,
            PROVEN_LOSS => {
                let all_lost = tree[parent].children().all(|c| tree[c].proven == PROVEN_LOSS);
                if !all_lost {
                    break;
                }
                tree[parent].proven = PROVEN_WIN;
            }
            _ => break,
        }
    }
}

/// The root child to play: a proven win, else the most visited child that is
/// not a proven loss (ties: larger value sum, then the earlier child), else
/// (everything lost) the most visited child.
fn best_child(tree: &[Node]) -> usize {
    let children = tree[0].children();
    if let Some(win) = children.clone().find(|&c| tree[c].proven == PROVEN_WIN) {
        return win;
    }
    let key = |c: usize| (tree[c].visits, tree[c].value);
    let pick = |filter: &dyn Fn(usize) -> bool| {
        let mut best: Option<usize> = None;
        for c in children.clone().filter(|&c| filter(c)) {
            if best.is_none_or(|b| key(c) > key(b)) {
                best = Some(c);
            }
        }
        best
    };
    pick(&|c| tree[c].proven != PROVEN_LOSS).or_else(|| pick(&|_| true)).expect("the root has children")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use konane_rules::{Color, Size, Solver};

    use super::*;
    use crate::random::RandomPlayer;

    fn sims(n: u64) -> Limits {
        Limits { nodes: Some(n), ..Limits::default() }
    }

    /// Plays a game between `black` and `white` from the start of `size`;
    /// returns the winner and the moves.
    fn play_game(size: Size, black: &mut dyn Player, white: &mut dyn Player) -> (Color, Vec<Move>) {
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
                    assert!(position.is_legal(choice.mv), "illegal {:?}", choice.mv);
                    position.play_unchecked(choice.mv);
                    record.push(choice.mv);
                }
            }
        }
    }

    #[test]
    fn finds_the_one_move_win() {
        // White to move with 11 moves, exactly one of which leaves black
        // without a jump.
        let position: Position = "....W./BWBWB./..W.W./BWB.B./WB.B../BWBWBW w".parse().unwrap();
        let moves = position.moves();
        let immediate: Vec<Move> = moves
            .iter()
            .copied()
            .filter(|&mv| {
                let mut child = position;
                child.play_unchecked(mv);
                child.is_over()
            })
            .collect();
        assert_eq!(moves.len(), 11);
        assert_eq!(immediate.len(), 1, "exactly one move wins at once");
        let solution = Solver::new(16).solve(&position);
        assert!(solution.winning_moves.contains(&immediate[0]));

        for seed in 0..5 {
            let mut player = UctPlayer::new(sims(200), 1.0, seed);
            let choice = player.choose(&position, &sims(200)).unwrap().unwrap();
            assert_eq!(choice.mv, immediate[0], "seed {seed}");
            assert_eq!(choice.value, Some(1.0));
            // The solver stops the search as soon as the win is proven.
            assert!(choice.nodes <= moves.len() as u64 + 1, "{}", choice.nodes);
        }
    }

    #[test]
    fn nodes_stay_small() {
        assert_eq!(std::mem::size_of::<Node>(), 24);
    }

    #[test]
    fn returns_none_when_the_game_is_over() {
        let over: Position = "WB/BW w".parse().unwrap();
        assert!(over.is_over());
        let mut player = UctPlayer::new(sims(10), 1.0, 1);
        assert_eq!(player.choose(&over, &sims(10)).unwrap(), None);
    }

    #[test]
    fn counts_simulations_and_defaults_to_a_thousand() {
        let size: Size = "8x8".parse().unwrap();
        let position = Position::start(size);
        let mut player = UctPlayer::new(Limits::default(), 1.0, 3);
        let choice = player.choose(&position, &Limits::default()).unwrap().unwrap();
        assert_eq!(choice.nodes, DEFAULT_SIMULATIONS);
        let choice = player.choose(&position, &sims(37)).unwrap().unwrap();
        assert_eq!(choice.nodes, 37);
        let value = choice.value.unwrap();
        assert!((-1.0..=1.0).contains(&value), "{value}");
    }

    #[test]
    fn is_deterministic_for_a_seed() {
        let size: Size = "6x6".parse().unwrap();
        let game = |seed: u64| {
            let mut black = UctPlayer::new(sims(100), 1.0, seed);
            let mut white = UctPlayer::new(sims(100), 1.4, seed + 1);
            play_game(size, &mut black, &mut white)
        };
        let first = game(11);
        assert_eq!(first, game(11));
        assert!(first.1.len() > 2);
        let other = game(12);
        assert_ne!(first.1, other.1, "different seeds, different games");
    }

    #[test]
    fn beats_random_on_6x6() {
        let size: Size = "6x6".parse().unwrap();
        let mut wins = 0;
        for game in 0..20u64 {
            let mut uct = UctPlayer::new(sims(200), 1.0, 100 + game);
            let mut random = RandomPlayer::new(200 + game);
            let uct_color = if game % 2 == 0 { Color::Black } else { Color::White };
            let (winner, _) = match uct_color {
                Color::Black => play_game(size, &mut uct, &mut random),
                Color::White => play_game(size, &mut random, &mut uct),
            };
            wins += (winner == uct_color) as u32;
        }
        assert!(wins >= 18, "UCT won only {wins} of 20");
    }

    #[test]
    fn respects_a_movetime() {
        let size: Size = "8x8".parse().unwrap();
        let mut position = Position::start(size);
        position.play(position.parse_legal_move("d4").unwrap()).unwrap();
        position.play(position.parse_legal_move("d5").unwrap()).unwrap();
        let limits = Limits { movetime: Some(Duration::from_millis(20)), ..Limits::default() };
        let mut player = UctPlayer::new(Limits::default(), 1.0, 5);
        let started = Instant::now();
        let choice = player.choose(&position, &limits).unwrap().unwrap();
        assert!(choice.nodes >= 1);
        assert!(position.is_legal(choice.mv));
        // Very loose: only catches a search that ignores the clock.
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn stops_at_the_first_of_two_limits() {
        let size: Size = "6x6".parse().unwrap();
        let position = Position::start(size);
        let limits = Limits { nodes: Some(50), movetime: Some(Duration::from_secs(60)), ..Limits::default() };
        let mut player = UctPlayer::new(Limits::default(), 1.0, 5);
        assert_eq!(player.choose(&position, &limits).unwrap().unwrap().nodes, 50);
    }

    #[test]
    fn plays_on_in_a_lost_position() {
        // Find a position that the solver says is lost for the side to move
        // but not over, and check the player still answers with a legal move.
        let size: Size = "5x5".parse().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut solver = Solver::new(16);
        let mut found = 0;
        for _ in 0..200 {
            let mut position = Position::start(size);
            while !position.is_over() {
                if position.phase() == konane_rules::Phase::Capturing && !solver.solve(&position).win {
                    let mut player = UctPlayer::new(sims(300), 1.0, 1);
                    let choice = player.choose(&position, &sims(300)).unwrap().unwrap();
                    assert!(position.is_legal(choice.mv));
                    let value = choice.value.unwrap();
                    assert!((-1.0..=1.0).contains(&value), "{value}");
                    found += 1;
                    break;
                }
                let moves = position.moves();
                let mv = moves[rng.random_range(0..moves.len())];
                position.play_unchecked(mv);
            }
        }
        assert!(found > 0);
    }

    #[test]
    fn proofs_agree_with_the_solver() {
        // On small boards the search often proves the root before its
        // budget runs out; a proof must match the exact solver.
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut solver = Solver::new(18);
        let mut proofs = 0;
        for size in ["4x4", "5x5", "4x6"] {
            let size: Size = size.parse().unwrap();
            for _ in 0..30 {
                let mut position = Position::start(size);
                while !position.is_over() {
                    let mut player = UctPlayer::new(sims(5000), 1.0, 1);
                    let choice = player.choose(&position, &sims(5000)).unwrap().unwrap();
                    if choice.nodes < 5000 {
                        proofs += 1;
                        let solution = solver.solve(&position);
                        match choice.value {
                            Some(1.0) => assert!(
                                solution.winning_moves.contains(&choice.mv),
                                "{position}: {:?} proven but not winning",
                                choice.mv
                            ),
                            Some(-1.0) => assert!(!solution.win, "{position}: proven lost"),
                            other => panic!("{position}: stopped early with {other:?}"),
                        }
                    }
                    let moves = position.moves();
                    let mv = moves[rng.random_range(0..moves.len())];
                    position.play_unchecked(mv);
                }
            }
        }
        assert!(proofs > 50, "{proofs} proofs");
    }
}
