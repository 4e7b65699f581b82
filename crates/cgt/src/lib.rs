//! Short partizan games in canonical form: the arithmetic that decides a
//! sum of independent games from the values of its parts.
//!
//! A game is its Left options and its Right options, each a game. Two
//! players alternate; whoever cannot move loses (normal play). When a
//! position falls apart into regions that can never interact, it is the
//! *sum* of the regions (a move is a move in any one of them), and whether
//! the side to move wins depends on the sum's value, not on the parts'
//! winners alone: `*` (`{0|0}`) is a first-player win, and so is `* + ↑`,
//! yet `* + *` is a loss for whoever moves first. Combinatorial game theory
//! (Conway, *On Numbers and Games*; Siegel, *Combinatorial Game Theory*)
//! gives every short game one simplest equal form, its canonical form, with
//! dominated options removed and reversible ones bypassed. Equal games have
//! the same canonical form, so [`Games`] interns them: a [`Game`] is an
//! index, equality is `==`, and sums and comparisons are memoised by index.
//!
//! ```
//! use konane_cgt::Games;
//! let mut games = Games::new();
//! let zero = games.zero();
//! let star = games.form(vec![zero], vec![zero]); // {0|0}
//! let up = games.form(vec![zero], vec![star]); // {0|*}
//! assert!(games.left_wins_moving_first(star) && games.right_wins_moving_first(star));
//! assert_eq!(games.add(star, star), zero);
//! let up_star = games.add(up, star);
//! assert!(games.left_wins_moving_first(up_star) && games.right_wins_moving_first(up_star));
//! let double_up = games.add(up, up);
//! assert!(games.left_wins_moving_first(double_up) && !games.right_wins_moving_first(double_up));
//! ```
#![deny(missing_docs)]

use std::fmt;

use rustc_hash::FxHashMap as HashMap;

/// A game in a [`Games`] store: equal games (in canonical form) have equal
/// indices.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Game(u32);

/// The options of one stored form, sorted by index without repeats (also
/// the key that finds a canonical form's index).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Form {
    left: Box<[Game]>,
    right: Box<[Game]>,
}

/// Sorts `options` and drops repeats: the order forms are stored and
/// compared in.
fn normalise(options: &mut Vec<Game>) {
    options.sort_unstable();
    options.dedup();
}

/// Interned canonical forms, with memoised comparisons and sums.
///
/// The store also holds the non-canonical forms that canonicalisation
/// compares against (one per [`Games::form`] call of a new game that
/// simplifies) and the memos; [`Games::len`] counts them all, and callers bound memory by
/// calling [`Games::clear`] when it grows past their budget.
pub struct Games {
    forms: Vec<Form>,
    canonical: HashMap<Form, Game>,
    le: HashMap<(Game, Game), bool>,
    sums: HashMap<(Game, Game), Game>,
    negatives: HashMap<Game, Game>,
}

impl Default for Games {
    fn default() -> Games {
        Games::new()
    }
}

impl Games {
    /// A store holding only `0`, the game with no options.
    pub fn new() -> Games {
        let mut games = Games {
            forms: Vec::new(),
            canonical: HashMap::default(),
            le: HashMap::default(),
            sums: HashMap::default(),
            negatives: HashMap::default(),
        };
        games.intern(Vec::new(), Vec::new());
        games
    }

    /// Drops every game but `0`: indices handed out before are void.
    pub fn clear(&mut self) {
        *self = Games::new();
    }

    /// Entries held: forms (canonical or not) and memoised comparisons,
    /// sums and negatives, each some tens of bytes; the measure of memory
    /// a caller bounds.
    pub fn len(&self) -> usize {
        self.forms.len() + self.le.len() + self.sums.len() + self.negatives.len()
    }

    /// Whether the store holds only `0`.
    pub fn is_empty(&self) -> bool {
        self.len() == 1
    }

    /// `0`: no options for either player; whoever is to move loses.
    pub fn zero(&self) -> Game {
        Game(0)
    }

    /// Left's options of `game`'s canonical form.
    pub fn left(&self, game: Game) -> &[Game] {
        &self.forms[game.0 as usize].left
    }

    /// Right's options of `game`'s canonical form.
    pub fn right(&self, game: Game) -> &[Game] {
        &self.forms[game.0 as usize].right
    }

    /// The index of the canonical form with these (normalised) options,
    /// stored if new.
    fn intern(&mut self, left: Vec<Game>, right: Vec<Game>) -> Game {
        let form = Form { left: left.into(), right: right.into() };
        if let Some(&game) = self.canonical.get(&form) {
            return game;
        }
        let game = self.push(form.clone());
        self.canonical.insert(form, game);
        game
    }

    fn push(&mut self, form: Form) -> Game {
        let game = Game(u32::try_from(self.forms.len()).expect("fewer than 2^32 forms"));
        self.forms.push(form);
        game
    }

    /// The canonical form of `{left | right}` (the options being games of
    /// this store): dominated options dropped, reversible ones bypassed.
    pub fn form(&mut self, mut left: Vec<Game>, mut right: Vec<Game>) -> Game {
        normalise(&mut left);
        normalise(&mut right);
        let given = Form { left: left.as_slice().into(), right: right.as_slice().into() };
        if let Some(&game) = self.canonical.get(&given) {
            return game;
        }
        // The game as given: every simplification keeps its value, so the
        // reversibility tests compare with it throughout.
        let given = self.push(given);
        loop {
            self.drop_dominated(&mut left, true);
            self.drop_dominated(&mut right, false);
            let (bypassed_left, left_changed) = self.bypass_reversible(&left, given, true);
            let (bypassed_right, right_changed) = self.bypass_reversible(&right, given, false);
            (left, right) = (bypassed_left, bypassed_right);
            normalise(&mut left);
            normalise(&mut right);
            if !(left_changed || right_changed) {
                break;
            }
        }
        // Already canonical as given: that form is the one to intern, not a
        // second copy of it.
        let form = &self.forms[given.0 as usize];
        if *form.left == *left && *form.right == *right {
            self.canonical.insert(form.clone(), given);
            return given;
        }
        self.intern(left, right)
    }

    /// One player's `options` of `given` with the reversible ones
    /// bypassed, and whether there were any. A Left option GL is reversible
    /// through a Right reply GLR <= G (Left's move there is as good as
    /// GLR's Left options); a Right option through a Left reply >= G.
    fn bypass_reversible(&mut self, options: &[Game], given: Game, for_left: bool) -> (Vec<Game>, bool) {
        fn replies_of(games: &Games, option: Game, for_left: bool) -> &[Game] {
            if for_left { games.right(option) } else { games.left(option) }
        }
        let mut bypassed = Vec::with_capacity(options.len());
        let mut changed = false;
        for &option in options {
            let reverse = (0..replies_of(self, option, for_left).len()).find_map(|i| {
                let reply = replies_of(self, option, for_left)[i];
                let reverses = if for_left { self.le(reply, given) } else { self.le(given, reply) };
                reverses.then_some(reply)
            });
            match reverse {
                Some(reply) => {
                    bypassed.extend_from_slice(if for_left { self.left(reply) } else { self.right(reply) });
                    changed = true;
                }
                None => bypassed.push(option),
            }
        }
        (bypassed, changed)
    }

    /// Removes the options their player has a better one than: for Left a
    /// smaller one, for Right a bigger one. (The options are distinct
    /// canonical forms, so distinct values: of two, at most one dominates.)
    fn drop_dominated(&mut self, options: &mut Vec<Game>, for_left: bool) {
        let mut kept: Vec<Game> = Vec::with_capacity(options.len());
        'each: for &option in options.iter() {
            for &other in options.iter().filter(|&&other| other != option) {
                let dominated = if for_left { self.le(option, other) } else { self.le(other, option) };
                if dominated {
                    continue 'each;
                }
            }
            kept.push(option);
        }
        *options = kept;
    }

    /// Whether `a <= b`: Right, moving second in `a - b`, wins. By
    /// definition: no Left option of `a` is `>= b`, and no Right option of
    /// `b` is `<= a`.
    pub fn le(&mut self, a: Game, b: Game) -> bool {
        if a == b {
            return true;
        }
        if let Some(&known) = self.le.get(&(a, b)) {
            return known;
        }
        let result = (0..self.left(a).len()).all(|i| {
            let option = self.left(a)[i];
            !self.le(b, option)
        }) && (0..self.right(b).len()).all(|i| {
            let option = self.right(b)[i];
            !self.le(option, a)
        });
        self.le.insert((a, b), result);
        result
    }

    /// The sum `a + b` in canonical form: a move in it is a move in either.
    pub fn add(&mut self, a: Game, b: Game) -> Game {
        let zero = self.zero();
        if a == zero {
            return b;
        }
        if b == zero {
            return a;
        }
        let key = (a.min(b), a.max(b));
        if let Some(&sum) = self.sums.get(&key) {
            return sum;
        }
        let (mut left, mut right) = (Vec::new(), Vec::new());
        for (this, other) in [(a, b), (b, a)] {
            for i in 0..self.left(this).len() {
                let option = self.left(this)[i];
                left.push(self.add(option, other));
            }
            for i in 0..self.right(this).len() {
                let option = self.right(this)[i];
                right.push(self.add(option, other));
            }
        }
        let sum = self.form(left, right);
        self.sums.insert(key, sum);
        sum
    }

    /// `-game`: the players' roles swapped.
    pub fn neg(&mut self, game: Game) -> Game {
        if let Some(&negative) = self.negatives.get(&game) {
            return negative;
        }
        let (theirs_left, theirs_right) = (self.left(game).to_vec(), self.right(game).to_vec());
        let left = theirs_right.into_iter().map(|g| self.neg(g)).collect();
        let right = theirs_left.into_iter().map(|g| self.neg(g)).collect();
        let negative = self.form(left, right);
        self.negatives.insert(game, negative);
        negative
    }

    /// Whether Left, moving first, wins: `game` is positive or fuzzy
    /// (not `<= 0`).
    pub fn left_wins_moving_first(&mut self, game: Game) -> bool {
        let zero = self.zero();
        !self.le(game, zero)
    }

    /// Whether Right, moving first, wins: `game` is negative or fuzzy
    /// (not `>= 0`).
    pub fn right_wins_moving_first(&mut self, game: Game) -> bool {
        let zero = self.zero();
        !self.le(zero, game)
    }

    /// The integer `n`: `n` free moves for Left (for Right if negative).
    pub fn integer(&mut self, n: i32) -> Game {
        let mut game = self.zero();
        for _ in 0..n.unsigned_abs() {
            game = if n > 0 { self.form(vec![game], vec![]) } else { self.form(vec![], vec![game]) };
        }
        game
    }

    /// A printable view of `game` (`{L|R}` with `0` for the empty game).
    pub fn show(&self, game: Game) -> Shown<'_> {
        Shown { games: self, game }
    }
}

/// `{L|R}` text of a stored game; see [`Games::show`].
pub struct Shown<'a> {
    games: &'a Games,
    game: Game,
}

impl Shown<'_> {
    fn write_options(&self, f: &mut fmt::Formatter<'_>, options: &[Game]) -> fmt::Result {
        for (i, &option) in options.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", self.games.show(option))?;
        }
        Ok(())
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (left, right) = (self.games.left(self.game), self.games.right(self.game));
        if left.is_empty() && right.is_empty() {
            return f.write_str("0");
        }
        f.write_str("{")?;
        self.write_options(f, left)?;
        f.write_str("|")?;
        self.write_options(f, right)?;
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn star(games: &mut Games) -> Game {
        let zero = games.zero();
        games.form(vec![zero], vec![zero])
    }

    #[test]
    fn numbers_add_like_numbers() {
        let mut games = Games::new();
        let (one, two, minus_one) = (games.integer(1), games.integer(2), games.integer(-1));
        assert_eq!(games.add(one, one), two);
        assert_eq!(games.add(one, minus_one), games.zero());
        // 1/2 = {0|1}: two halves make one.
        let zero = games.zero();
        let half = games.form(vec![zero], vec![one]);
        assert_eq!(games.add(half, half), one);
        assert!(games.le(half, one) && !games.le(one, half));
        // {0, 1 |} is 2: Left's 0 is dominated by 1.
        assert_eq!(games.form(vec![zero, one], vec![]), two);
        assert_eq!(games.show(half).to_string(), "{0|{0|}}");
    }

    #[test]
    fn stars_and_ups_decide_who_wins() {
        let mut games = Games::new();
        let zero = games.zero();
        let star = star(&mut games);
        let up = games.form(vec![zero], vec![star]);
        assert_eq!(games.add(star, star), zero);
        // * is fuzzy: whoever moves first wins; so is up + *.
        assert!(games.left_wins_moving_first(star) && games.right_wins_moving_first(star));
        let up_star = games.add(up, star);
        assert!(games.left_wins_moving_first(up_star) && games.right_wins_moving_first(up_star));
        // Up is positive but smaller than every positive number.
        assert!(games.left_wins_moving_first(up) && !games.right_wins_moving_first(up));
        let one = games.integer(1);
        let half = games.form(vec![zero], vec![one]);
        let quarter = games.form(vec![zero], vec![half]);
        assert!(games.le(up, quarter) && !games.le(quarter, up));
        // up + * = {0, * | 0}: the sum's Left options up and *+... reduce to these.
        let canonical_up_star = games.form(vec![zero, star], vec![zero]);
        assert_eq!(up_star, canonical_up_star);
        // A hot game: {1|-1} is fuzzy and its negative is itself.
        let minus_one = games.integer(-1);
        let hot = games.form(vec![one], vec![minus_one]);
        assert!(games.left_wins_moving_first(hot) && games.right_wins_moving_first(hot));
        assert_eq!(games.neg(hot), hot);
        let sum = games.add(hot, hot);
        assert!(games.le(sum, zero) && games.le(zero, sum), "{{1|-1}} + {{1|-1}} = 0, got {}", games.show(sum));
    }

    /// A game tree given as nested option lists, built without simplifying.
    #[derive(Clone, Debug)]
    struct Tree(Vec<Tree>, Vec<Tree>);

    fn trees() -> impl Strategy<Value = Tree> {
        let leaf = Just(Tree(vec![], vec![]));
        leaf.prop_recursive(4, 24, 3, |inner| {
            (prop::collection::vec(inner.clone(), 0..3), prop::collection::vec(inner, 0..3))
                .prop_map(|(left, right)| Tree(left, right))
        })
    }

    /// The tree stored as given, every node raw (never canonicalised).
    fn raw(games: &mut Games, tree: &Tree) -> Game {
        let mut left: Vec<Game> = tree.0.iter().map(|t| raw(games, t)).collect();
        let mut right: Vec<Game> = tree.1.iter().map(|t| raw(games, t)).collect();
        normalise(&mut left);
        normalise(&mut right);
        games.push(Form { left: left.into(), right: right.into() })
    }

    fn canonical(games: &mut Games, tree: &Tree) -> Game {
        let left = tree.0.iter().map(|t| canonical(games, t)).collect();
        let right = tree.1.iter().map(|t| canonical(games, t)).collect();
        games.form(left, right)
    }

    /// The outcome by playing the raw tree out (no theory at all).
    fn first_player_wins(tree: &Tree, left_moves: bool) -> bool {
        let options = if left_moves { &tree.0 } else { &tree.1 };
        options.iter().any(|option| !first_player_wins(option, !left_moves))
    }

    fn sum_of(a: &Tree, b: &Tree) -> Tree {
        let mut left: Vec<Tree> = a.0.iter().map(|al| sum_of(al, b)).collect();
        left.extend(b.0.iter().map(|bl| sum_of(a, bl)));
        let mut right: Vec<Tree> = a.1.iter().map(|ar| sum_of(ar, b)).collect();
        right.extend(b.1.iter().map(|br| sum_of(a, br)));
        Tree(left, right)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The canonical form equals the game as given, and is the same
        /// form whichever equal game it came from.
        #[test]
        fn canonical_forms_keep_the_value(tree in trees()) {
            let mut games = Games::new();
            let given = raw(&mut games, &tree);
            let form = canonical(&mut games, &tree);
            prop_assert!(games.le(given, form) && games.le(form, given));
            let negated = games.neg(form);
            prop_assert_eq!(games.add(form, negated), games.zero());
        }

        /// A sum's outcome from the parts' canonical forms is the outcome of
        /// playing the sum out move by move.
        #[test]
        fn sums_decide_like_play(a in trees(), b in trees()) {
            let mut games = Games::new();
            let (ga, gb) = (canonical(&mut games, &a), canonical(&mut games, &b));
            let sum = games.add(ga, gb);
            let played = sum_of(&a, &b);
            prop_assert_eq!(games.left_wins_moving_first(sum), first_player_wins(&played, true));
            prop_assert_eq!(games.right_wins_moving_first(sum), first_player_wins(&played, false));
        }
    }
}
