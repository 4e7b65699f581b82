//! The KTP engine: one [`Player`] behind the Kōnane Text Protocol
//! (`docs/spec/ktp.md`), read line by line from any reader and answered
//! on any writer.
//!
//! ```
//! use konane_players::ktp::KtpEngine;
//! use konane_players::{Baseline, BaselineFactory, Limits, PlayerFactory};
//!
//! let player = BaselineFactory::new(Baseline::Random, Limits::default(), "random").build(1);
//! let mut engine = KtpEngine::new(player);
//! let mut output = Vec::new();
//! engine.run("newgame 4x4\n7 show\nquit\n".as_bytes(), &mut output).unwrap();
//! assert_eq!(String::from_utf8(output).unwrap(), "=\n\n=7 WBWB/BWBW/WBWB/BWBW b\n\n=\n\n");
//! ```
//!
//! Choices where the spec leaves room:
//! - Commands and limit kinds are lowercase; a command that takes no
//!   arguments refuses extra ones (`genmove b` is an error, not `genmove`).
//! - An id is the leading digits of a line followed by whitespace, and is
//!   repeated exactly as written (`007 show` answers `=007 ...`); an id with no
//!   command after it is an error.
//! - `limit movetime 0` is refused like `limit nodes 0`, matching player
//!   specs (`ms=N` is at least 1). Limits persist across `newgame`.
//! - Extension: `limit depth N` (1..=200) bounds a depth-first search.
//! - `name` answers `konane` and the player's name (`konane random`).
//! - Lines longer than [`MAX_LINE`] bytes are answered with `?` (with the id
//!   if the kept start of the line has one) and otherwise ignored; invalid
//!   UTF-8 is read lossily, so it ends up as an unknown command or a bad
//!   argument.
//! - A player that panics, finds no move where one exists or picks an illegal
//!   one makes `genmove` fail; the engine keeps running and the position is
//!   unchanged.

use std::any::Any;
use std::fmt;
use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use konane_rules::{Position, Size};

use crate::game::Game;
use crate::{Limits, Player};

/// The longest line read, in bytes. A 20x20 position command is about 450
/// bytes, so anything longer is not a command; keeping only this much bounds
/// memory whatever the input.
pub const MAX_LINE: usize = 4096;

/// The protocol version answered to `ktp`.
pub const PROTOCOL_VERSION: &str = "1";

/// The answer to one command: `=` or `?`, the id if any, and the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    id: Option<String>,
    outcome: Result<String, String>,
}

impl Response {
    /// A success with `answer` (may be empty).
    pub fn success(id: Option<&str>, answer: impl Into<String>) -> Response {
        Response { id: id.map(str::to_string), outcome: Ok(answer.into()) }
    }

    /// A failure with a reason, which is kept to one line.
    pub fn failure(id: Option<&str>, reason: impl Into<String>) -> Response {
        let reason: String = reason.into();
        let reason = reason.replace(['\n', '\r'], " ");
        Response { id: id.map(str::to_string), outcome: Err(reason) }
    }

    /// The id the command carried.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The answer on success, the reason on failure.
    pub fn outcome(&self) -> Result<&str, &str> {
        match &self.outcome {
            Ok(answer) => Ok(answer),
            Err(reason) => Err(reason),
        }
    }
}

impl fmt::Display for Response {
    /// The exact protocol text, with the empty line that ends it:
    /// `=7 d4-d6\n\n`, `=\n\n`, `? unknown command\n\n`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (mark, text) = match &self.outcome {
            Ok(answer) => ('=', answer),
            Err(reason) => ('?', reason),
        };
        write!(f, "{mark}{}", self.id.as_deref().unwrap_or(""))?;
        if !text.is_empty() {
            write!(f, " {text}")?;
        }
        f.write_str("\n\n")
    }
}

/// A KTP engine: the game so far, the player that answers `genmove`, and
/// the limits set with `limit`.
pub struct KtpEngine {
    /// The game since the last `newgame` or `position`.
    game: Game,
    player: Box<dyn Player>,
    /// Limits from `limit` commands, over the player's own.
    overrides: Limits,
    quit: bool,
}

impl KtpEngine {
    /// An engine holding the 8x8 start position, answering with `player`.
    pub fn new(player: Box<dyn Player>) -> KtpEngine {
        KtpEngine {
            game: Game::new(Position::start(Size::new_const(8, 8))),
            player,
            overrides: Limits::default(),
            quit: false,
        }
    }

    /// The current position.
    pub fn position(&self) -> &Position {
        self.game.position()
    }

    /// The limits the next `genmove` searches under: the player's own, with
    /// those set by `limit` taking precedence.
    pub fn limits(&self) -> Limits {
        self.player.limits().merged(self.overrides)
    }

    /// Whether `quit` has been answered.
    pub fn has_quit(&self) -> bool {
        self.quit
    }

    /// Answers one line of input (without its line ending); `None` for blank
    /// lines and comments, which get no answer.
    pub fn handle_line(&mut self, line: &str) -> Option<Response> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let (id, command_line) = split_id(line);
        let (command, arguments) = match command_line.split_once(char::is_whitespace) {
            Some((command, arguments)) => (command, arguments.trim()),
            None => (command_line, ""),
        };
        let outcome = self.execute(command, arguments);
        Some(match outcome {
            Ok(answer) => Response::success(id, answer),
            Err(reason) => Response::failure(id, reason),
        })
    }

    /// Answers commands from `input` on `output` until `quit` (answered
    /// first) or the end of input, flushing after each answer.
    ///
    /// # Errors
    /// Reading the input or writing the output failed.
    pub fn run<R: BufRead, W: Write>(&mut self, mut input: R, mut output: W) -> io::Result<()> {
        let mut line = Vec::with_capacity(256);
        while !self.quit {
            let Some(too_long) = read_line_bounded(&mut input, &mut line, MAX_LINE)? else {
                break;
            };
            let text = String::from_utf8_lossy(&line);
            let response = if too_long { too_long_response(&text) } else { self.handle_line(&text) };
            if let Some(response) = response {
                write!(output, "{response}")?;
                output.flush()?;
            }
        }
        Ok(())
    }

    /// Runs one command; the answer, or why it failed having changed nothing.
    fn execute(&mut self, command: &str, arguments: &str) -> Result<String, String> {
        let no_arguments = || -> Result<(), String> {
            if arguments.is_empty() {
                Ok(())
            } else {
                Err(format!("{command} takes no arguments, found '{arguments}'"))
            }
        };
        match command {
            "" => Err("missing command after the id".into()),
            "ktp" => no_arguments().map(|()| PROTOCOL_VERSION.into()),
            "name" => no_arguments().map(|()| format!("konane {}", self.player.name())),
            "version" => no_arguments().map(|()| env!("CARGO_PKG_VERSION").into()),
            "newgame" => self.newgame(arguments),
            "position" => self.set_position(arguments),
            "play" => self.play(arguments),
            "genmove" => no_arguments().and_then(|()| self.genmove()),
            "legal" => no_arguments().map(|()| self.legal()),
            "undo" => no_arguments().and_then(|()| self.undo()),
            "show" => no_arguments().map(|()| self.game.position().to_string()),
            "limit" => self.limit(arguments),
            "quit" => no_arguments().map(|()| {
                self.quit = true;
                String::new()
            }),
            _ => Err("unknown command".into()),
        }
    }

    fn newgame(&mut self, arguments: &str) -> Result<String, String> {
        if arguments.is_empty() {
            return Err("newgame needs a board size like 8x8 (COLSxROWS)".into());
        }
        let size: Size = arguments.parse().map_err(|e| format!("{e}"))?;
        self.start_game(Position::start(size));
        Ok(String::new())
    }

    fn set_position(&mut self, arguments: &str) -> Result<String, String> {
        if arguments.is_empty() {
            return Err("position needs a position string like WBWB/BWBW/WBWB/BWBW b".into());
        }
        let position: Position = arguments.parse().map_err(|e| format!("{e}"))?;
        self.start_game(position);
        Ok(String::new())
    }

    fn start_game(&mut self, position: Position) {
        self.game = Game::new(position);
        self.player.new_game();
    }

    fn play(&mut self, arguments: &str) -> Result<String, String> {
        if arguments.is_empty() {
            return Err("play needs a move like d4 or d4-d6".into());
        }
        self.game.play_text(arguments).map_err(|e| format!("{e}"))?;
        Ok(String::new())
    }

    fn genmove(&mut self) -> Result<String, String> {
        let position = *self.game.position();
        if position.is_over() {
            return Ok("none".into());
        }
        let limits = self.limits();
        let player = &mut self.player;
        // A player is a search that others may still be writing: if it
        // panics, the game and the engine carry on and the client learns why.
        let choice = panic::catch_unwind(AssertUnwindSafe(|| player.choose(&position, &limits)))
            .map_err(|payload| format!("the {} player failed: {}", self.player.name(), panic_text(&*payload)))?
            .map_err(|error| format!("the {} player failed: {error}", self.player.name()))?;
        let size = position.size();
        let choice = choice.ok_or_else(|| {
            format!(
                "the {} player chose no move, but {} has {} legal moves",
                self.player.name(),
                position.side_to_move(),
                position.count_moves()
            )
        })?;
        if !position.is_legal(choice.mv) {
            return Err(format!(
                "the {} player chose {}, which is illegal in {position}",
                self.player.name(),
                choice.mv.to_text(size)
            ));
        }
        tracing::debug!(
            mv = %choice.mv.display(size),
            nodes = choice.nodes,
            depth = choice.depth,
            value = ?choice.value,
            "genmove"
        );
        self.game.play_legal(choice.mv);
        Ok(choice.mv.to_text(size))
    }

    fn legal(&self) -> String {
        let position = self.game.position();
        let moves: Vec<String> = position.moves().iter().map(|mv| mv.to_text(position.size())).collect();
        moves.join(" ")
    }

    fn undo(&mut self) -> Result<String, String> {
        self.game.undo().ok_or("no move to take back since the last newgame or position")?;
        Ok(String::new())
    }

    fn limit(&mut self, arguments: &str) -> Result<String, String> {
        const USAGE: &str = "limit nodes N, limit movetime MS or limit depth N";
        let words: Vec<&str> = arguments.split_whitespace().collect();
        let [kind, value] = words[..] else {
            return Err(format!("limit takes a kind and a value: {USAGE}"));
        };
        // The bounds of the player-spec options of the same meaning.
        let positive = |max: u64| -> Result<u64, String> {
            match value.parse::<u64>() {
                Ok(n) if n > max && value.bytes().all(|b| b.is_ascii_digit()) => {
                    Err(format!("limit {kind} {value}: at most {max}"))
                }
                Ok(n) if n >= 1 && value.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
                _ => Err(format!("limit {kind} {value}: the value must be a whole number of at least 1")),
            }
        };
        match kind {
            "nodes" => self.overrides.nodes = Some(positive(Limits::MAX_NODES)?),
            "movetime" => self.overrides.movetime = Some(Duration::from_millis(positive(Limits::MAX_MOVETIME_MS)?)),
            "depth" => self.overrides.depth = Some(positive(u64::from(Limits::MAX_DEPTH))? as u32),
            other => return Err(format!("unknown limit '{other}': {USAGE}")),
        }
        Ok(String::new())
    }
}

/// Splits a leading numeric id (digits, then whitespace) from the command.
fn split_id(line: &str) -> (Option<&str>, &str) {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &line[digits..];
    if digits > 0 && rest.chars().next().is_none_or(char::is_whitespace) {
        (Some(&line[..digits]), rest.trim_start())
    } else {
        (None, line)
    }
}

/// The answer to a line cut at [`MAX_LINE`] bytes: none for a comment,
/// else a failure carrying the id if the kept start has one.
fn too_long_response(start: &str) -> Option<Response> {
    let start = start.trim_start();
    if start.starts_with('#') {
        return None;
    }
    let (id, _) = split_id(start);
    Some(Response::failure(id, format!("line too long: more than {MAX_LINE} bytes")))
}

/// Reads one line into `line` (without its `\n`), keeping at most `max`
/// bytes and skipping the rest. `None` at the end of input, else whether
/// the line was cut.
pub fn read_line_bounded<R: BufRead>(input: &mut R, line: &mut Vec<u8>, max: usize) -> io::Result<Option<bool>> {
    line.clear();
    let mut read_any = false;
    let mut too_long = false;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(read_any.then_some(too_long));
        }
        read_any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        let room = max - line.len();
        if chunk.len() > room {
            too_long = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = newline.map_or(available.len(), |at| at + 1);
        input.consume(used);
        if newline.is_some() {
            return Ok(Some(too_long));
        }
    }
}

/// The message of a panic, on one line.
fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panicked".into()
    }
}

#[cfg(test)]
mod tests {
    use konane_rules::Move;

    use super::*;
    use crate::{Baseline, BaselineFactory, Choice, PlayerFactory};

    /// The player behind most tests: any real player works, since the tests
    /// check only that `genmove` answers a legal move.
    const TEST_PLAYER: Baseline = Baseline::Greedy;

    const START_4X4: &str = "WBWB/BWBW/WBWB/BWBW b";
    const START_8X8: &str = "WBWBWBWB/BWBWBWBW/WBWBWBWB/BWBWBWBW/WBWBWBWB/BWBWBWBW/WBWBWBWB/BWBWBWBW b";

    fn engine() -> KtpEngine {
        KtpEngine::new(BaselineFactory::new(TEST_PLAYER, Limits::default(), "greedy").build(7))
    }

    /// The full protocol text answered to `line`.
    fn ask(engine: &mut KtpEngine, line: &str) -> String {
        engine.handle_line(line).unwrap_or_else(|| panic!("no answer to {line:?}")).to_string()
    }

    /// The answer to `line`, which must succeed.
    fn ok(engine: &mut KtpEngine, line: &str) -> String {
        match engine.handle_line(line).unwrap().outcome() {
            Ok(answer) => answer.to_string(),
            Err(reason) => panic!("{line:?} failed: {reason}"),
        }
    }

    /// The reason `line` failed, checking that it changed nothing.
    fn fails(engine: &mut KtpEngine, line: &str) -> String {
        let before = (engine.game.clone(), engine.overrides, engine.quit);
        let response = engine.handle_line(line).unwrap();
        let after = (engine.game.clone(), engine.overrides, engine.quit);
        assert_eq!(before, after, "{line:?} failed but changed the engine");
        let reason = response.outcome().expect_err(line).to_string();
        assert!(!reason.is_empty() && !reason.contains('\n'), "{line:?}: {reason:?}");
        reason
    }

    fn sorted(answer: &str) -> Vec<&str> {
        let mut moves: Vec<&str> = answer.split_whitespace().collect();
        moves.sort_unstable();
        moves
    }

    /// A player whose `choose` is given by a closure.
    struct Scripted<F>(F);

    impl<F: FnMut(&Position, &Limits) -> Option<Choice> + Send> Player for Scripted<F> {
        fn name(&self) -> String {
            "scripted".into()
        }
        fn limits(&self) -> Limits {
            Limits { depth: Some(3), ..Limits::default() }
        }
        fn choose(&mut self, position: &Position, limits: &Limits) -> Result<Option<Choice>, crate::PlayerError> {
            Ok((self.0)(position, limits))
        }
    }

    fn scripted(choose: impl FnMut(&Position, &Limits) -> Option<Choice> + Send + 'static) -> KtpEngine {
        KtpEngine::new(Box::new(Scripted(choose)))
    }

    #[test]
    fn responses_print_exactly() {
        assert_eq!(Response::success(None, "1").to_string(), "= 1\n\n");
        assert_eq!(Response::success(Some("7"), "d4-d6").to_string(), "=7 d4-d6\n\n");
        assert_eq!(Response::success(None, "").to_string(), "=\n\n");
        assert_eq!(Response::success(Some("3"), "").to_string(), "=3\n\n");
        assert_eq!(Response::failure(None, "unknown command").to_string(), "? unknown command\n\n");
        assert_eq!(Response::failure(Some("12"), "a\nb").to_string(), "?12 a b\n\n");
    }

    #[test]
    fn identity_commands() {
        let mut engine = engine();
        assert_eq!(ask(&mut engine, "ktp"), "= 1\n\n");
        assert_eq!(ok(&mut engine, "name"), "konane greedy");
        assert_eq!(ok(&mut engine, "version"), env!("CARGO_PKG_VERSION"));
        assert!(fails(&mut engine, "ktp 2").contains("takes no arguments"));
    }

    #[test]
    fn blank_lines_and_comments_get_no_answer() {
        let mut engine = engine();
        for line in ["", "   ", "\t\r", "# newgame 4x4", "  #comment"] {
            assert_eq!(engine.handle_line(line), None, "{line:?}");
        }
        assert_eq!(ok(&mut engine, "show"), START_8X8);
    }

    #[test]
    fn ids_are_repeated_on_success_and_failure() {
        let mut engine = engine();
        assert_eq!(ask(&mut engine, "7 ktp"), "=7 1\n\n");
        assert_eq!(ask(&mut engine, "  42\tnewgame 4x4  "), "=42\n\n");
        assert_eq!(ask(&mut engine, "007 show"), format!("=007 {START_4X4}\n\n"));
        assert_eq!(ask(&mut engine, "9 frobnicate"), "?9 unknown command\n\n");
        assert_eq!(ask(&mut engine, "5"), "?5 missing command after the id\n\n");
        // Digits not followed by whitespace are no id.
        assert_eq!(ask(&mut engine, "5show"), "? unknown command\n\n");
    }

    #[test]
    fn unknown_commands() {
        let mut engine = engine();
        for line in ["frobnicate", "SHOW", "genmove\u{FFFD}", "\u{FFFD}\u{FFFD} x", "-1 show"] {
            assert_eq!(ask(&mut engine, line), "? unknown command\n\n", "{line:?}");
        }
    }

    #[test]
    fn newgame_sets_the_start_and_clears_history() {
        let mut engine = engine();
        assert_eq!(ok(&mut engine, "show"), START_8X8);
        ok(&mut engine, "play d4");
        assert_eq!(ok(&mut engine, "newgame 4x4"), "");
        assert_eq!(ok(&mut engine, "show"), START_4X4);
        assert!(fails(&mut engine, "undo").contains("no move to take back"));
        ok(&mut engine, "newgame 6x7");
        assert_eq!(engine.position().size().to_string(), "6x7");
        assert!(fails(&mut engine, "newgame").contains("needs a board size"));
        assert!(fails(&mut engine, "newgame 0x5").contains("bad size"));
        assert!(fails(&mut engine, "newgame 21x5").contains("21x5"));
        assert!(fails(&mut engine, "newgame 8x8 4x4").contains("bad size"));
        assert!(fails(&mut engine, "newgame eight").contains("'eight'"));
    }

    #[test]
    fn position_sets_any_position_and_clears_history() {
        let mut engine = engine();
        ok(&mut engine, "play d4");
        let text = "WBWB/B.BW/W..B/BWBW w";
        assert_eq!(ok(&mut engine, &format!("position {text}")), "");
        assert_eq!(ok(&mut engine, "show"), text);
        assert!(fails(&mut engine, "undo").contains("no move to take back"));
        assert!(fails(&mut engine, "position").contains("needs a position string"));
        assert!(fails(&mut engine, "position WBWB/BWBW").contains("missing side"));
        assert!(fails(&mut engine, "position WBXB/BWBW b").contains("'X' at c2"));
        assert!(fails(&mut engine, "position WBWB/BWB b").contains("row 1 has 3 cells"));
        assert!(fails(&mut engine, "position WBWB/BWBW  b").contains("b or w"));
        assert_eq!(ok(&mut engine, "show"), text);
    }

    #[test]
    fn play_checks_legality_and_changes_nothing_when_refused() {
        let mut engine = engine();
        ok(&mut engine, "newgame 4x4");
        assert!(fails(&mut engine, "play b1").contains("no black stone on b1"));
        assert!(fails(&mut engine, "play a3").contains("neither a middle nor a corner"));
        assert!(fails(&mut engine, "play a1-a3").contains("removing"));
        assert!(fails(&mut engine, "play z9").contains("bad move"));
        assert!(fails(&mut engine, "play B2").contains("bad move"));
        assert!(fails(&mut engine, "play").contains("needs a move"));
        assert!(fails(&mut engine, "play b2 c2").contains("bad move"));
        assert_eq!(ok(&mut engine, "play b2"), "");
        assert_eq!(ok(&mut engine, "show"), "WBWB/BWBW/W.WB/BWBW w");
        ok(&mut engine, "play c2");
        assert_eq!(ok(&mut engine, "show"), "WBWB/BWBW/W..B/BWBW b");
    }

    #[test]
    fn legal_lists_every_move_or_nothing() {
        let mut engine = engine();
        ok(&mut engine, "newgame 4x4");
        assert_eq!(sorted(&ok(&mut engine, "legal")), ["a1", "b2", "c3", "d4"]);
        ok(&mut engine, "play b2");
        assert_eq!(sorted(&ok(&mut engine, "legal")), ["a2", "b1", "b3", "c2"]);
        ok(&mut engine, "position WB/BW w");
        assert_eq!(ask(&mut engine, "3 legal"), "=3\n\n");
        assert!(fails(&mut engine, "legal b").contains("takes no arguments"));
    }

    #[test]
    fn genmove_plays_a_legal_move_until_none() {
        let mut engine = engine();
        ok(&mut engine, "newgame 6x6");
        let mut plies = 0;
        loop {
            let legal = ok(&mut engine, "legal");
            let mv = ok(&mut engine, "genmove");
            if mv == "none" {
                assert_eq!(legal, "");
                break;
            }
            assert!(legal.split(' ').any(|m| m == mv), "{mv} not in {legal}");
            plies += 1;
        }
        assert!(engine.position().is_over());
        assert_eq!(engine.game.moves().len(), plies);
        // `none` changes nothing, however often it is asked.
        let over = *engine.position();
        assert_eq!(ok(&mut engine, "genmove"), "none");
        assert_eq!(*engine.position(), over);
        assert_eq!(engine.game.moves().len(), plies);
        for _ in 0..plies {
            ok(&mut engine, "undo");
        }
        assert_eq!(ok(&mut engine, "show"), Position::start("6x6".parse().unwrap()).to_string());
        assert!(fails(&mut engine, "genmove b").contains("takes no arguments"));
    }

    #[test]
    fn undo_takes_back_moves_in_order() {
        let mut engine = engine();
        assert!(fails(&mut engine, "undo").contains("no move to take back"));
        ok(&mut engine, "newgame 4x4");
        ok(&mut engine, "play b2");
        let after_one = ok(&mut engine, "show");
        ok(&mut engine, "genmove");
        assert_eq!(ok(&mut engine, "undo"), "");
        assert_eq!(ok(&mut engine, "show"), after_one);
        ok(&mut engine, "undo");
        assert_eq!(ok(&mut engine, "show"), START_4X4);
        assert!(fails(&mut engine, "undo").contains("no move to take back"));
        assert!(fails(&mut engine, "undo 2").contains("takes no arguments"));
    }

    #[test]
    fn limits_parse_strictly_and_override_the_players() {
        let mut engine = engine();
        assert_eq!(engine.limits(), Limits::default());
        assert_eq!(ok(&mut engine, "limit nodes 5000"), "");
        assert_eq!(ok(&mut engine, "limit movetime 250"), "");
        assert_eq!(
            engine.limits(),
            Limits { depth: None, nodes: Some(5000), movetime: Some(Duration::from_millis(250)) }
        );
        ok(&mut engine, "limit nodes 10");
        ok(&mut engine, "limit depth 6");
        assert_eq!(engine.limits().nodes, Some(10));
        assert_eq!(engine.limits().depth, Some(6));
        for (line, expected) in [
            ("limit nodes 0", "at least 1"),
            ("limit movetime 0", "at least 1"),
            ("limit nodes -5", "at least 1"),
            ("limit nodes +5", "at least 1"),
            ("limit nodes five", "limit nodes five"),
            ("limit nodes 99999999999999999999999", "at least 1"),
            ("limit movetime 1.5", "at least 1"),
            ("limit depth 201", "at most 200"),
            ("limit speed 5", "unknown limit 'speed'"),
            ("limit nodes", "a kind and a value"),
            ("limit", "a kind and a value"),
            ("limit nodes 5 6", "a kind and a value"),
        ] {
            let reason = fails(&mut engine, line);
            assert!(reason.contains(expected), "{line}: {reason}");
        }
        // Limits are settings, not game state.
        ok(&mut engine, "newgame 4x4");
        assert_eq!(engine.limits().nodes, Some(10));
    }

    #[test]
    fn genmove_passes_the_merged_limits() {
        let mut engine = scripted(|position, limits| {
            assert_eq!(limits.depth, Some(3), "the player's own limit");
            assert_eq!(limits.nodes, Some(77), "the override");
            Some(Choice::plain(position.moves()[0]))
        });
        ok(&mut engine, "limit nodes 77");
        assert_ne!(ok(&mut engine, "genmove"), "none");
    }

    #[test]
    fn a_failing_player_fails_genmove_and_changes_nothing() {
        let mut engine = scripted(|_, _| None);
        assert!(fails(&mut engine, "genmove").contains("chose no move, but black has 4 legal moves"));
        let mut engine = scripted(|_, _| Some(Choice::plain(Move::Remove(konane_rules::Cell(1)))));
        assert!(fails(&mut engine, "genmove").contains("chose b1, which is illegal"));
        let mut engine = scripted(|_, _| panic!("not yet\nwritten"));
        let reason = fails(&mut engine, "7 genmove");
        assert!(reason.contains("the scripted player failed: not yet written"), "{reason}");
        // The engine still answers, and `none` needs no player at all.
        ok(&mut engine, "position WB/BW w");
        assert_eq!(ok(&mut engine, "genmove"), "none");
    }

    #[test]
    fn quit_answers_then_stops_the_loop() {
        let mut engine = engine();
        let input = "ktp\nquit\nshow\n";
        let mut output = Vec::new();
        engine.run(input.as_bytes(), &mut output).unwrap();
        assert_eq!(String::from_utf8(output).unwrap(), "= 1\n\n=\n\n");
        assert!(engine.has_quit());
        assert!(fails(&mut engine, "quit now").contains("takes no arguments"));
    }

    #[test]
    fn run_reads_to_the_end_and_survives_garbage() {
        let mut engine = engine();
        let mut input = b"# session\r\n\r\n1 newgame 4x4\r\n".to_vec();
        input.extend_from_slice(b"\xff\xfe\x00 nonsense\n");
        input.extend_from_slice(&vec![b'x'; 3 * MAX_LINE]);
        input.extend_from_slice(b"\n12 ");
        input.extend_from_slice(&vec![b'y'; MAX_LINE]);
        input.extend_from_slice(b"\n#");
        input.extend_from_slice(&vec![b'z'; MAX_LINE]);
        input.extend_from_slice(b"\nplay b2\n2 show"); // no final newline
        let mut output = Vec::new();
        engine.run(&input[..], &mut output).unwrap();
        let too_long = format!("line too long: more than {MAX_LINE} bytes");
        let expected =
            format!("=1\n\n? unknown command\n\n? {too_long}\n\n?12 {too_long}\n\n=\n\n=2 WBWB/BWBW/W.WB/BWBW w\n\n");
        assert_eq!(String::from_utf8(output).unwrap(), expected);
        assert!(!engine.has_quit());
    }

    #[test]
    fn bounded_reads_keep_the_start_and_skip_the_rest() {
        // A reader that hands out three bytes at a time.
        let data = b"abcdefgh\nij\n\nk";
        let mut input = io::BufReader::with_capacity(3, &data[..]);
        let mut line = Vec::new();
        let mut lines = Vec::new();
        while let Some(cut) = read_line_bounded(&mut input, &mut line, 4).unwrap() {
            lines.push((String::from_utf8(line.clone()).unwrap(), cut));
        }
        let expected = [("abcd", true), ("ij", false), ("", false), ("k", false)];
        let expected: Vec<(String, bool)> = expected.iter().map(|&(s, c)| (s.to_string(), c)).collect();
        assert_eq!(lines, expected);
    }
}
