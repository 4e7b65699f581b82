//! `konane play`: a game against the network in the terminal.
//!
//! The session reads one line at a time, so it works the same typed by a
//! person or piped from a script: moves in notation, or commands (`help`
//! lists them). Bad input (a wrong move, an unknown command, a line that is
//! not UTF-8 or is too long) gets a message and a new prompt; end of input
//! ends the session.

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::Context;
use konane_mcts::{Evaluator, MctsPlayer, SearchConfig, SearchPatch};
use konane_nn::player::{NetFactory, load_model};
use konane_nn::{Backend, shipped};
use konane_players::game::Game;
use konane_players::ktp::{MAX_LINE, read_line_bounded};
use konane_players::{Limits, Player};
use konane_rules::{Cell, Color, Move, Position, Size, Symmetry};

/// Arguments of `konane play`.
#[derive(clap::Args)]
pub struct Args {
    /// Network to play against: a network file, a directory with a LATEST
    /// pointer (`checkpoints/8x8`, a run), or `init` for untrained weights.
    /// Default: the shipped network for the board, built into the binary.
    #[arg(long, value_name = "PATH")]
    model: Option<String>,
    /// Board size; default: the first size the network was trained on
    /// (6x6 without `--model`).
    #[arg(long)]
    size: Option<Size>,
    /// The colour you play (black moves first).
    #[arg(long, default_value = "black", value_parser = parse_color)]
    color: Color,
    /// Simulations per network move, 0 to 100000000 (0: the raw policy, no search).
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    sims: u64,
    /// Solve search positions of at most this many stones exactly (0: off):
    /// the network then plays solved endgames perfectly.
    #[arg(long, default_value_t = SearchConfig::PLAYER_SOLVE_MAX_STONES, value_parser = clap::value_parser!(u32).range(0..=400))]
    solve: u32,
    /// Average every network evaluation over this many board symmetries
    /// (1-8; more is steadier play at that many times the cost).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=Symmetry::ALL.len() as i64))]
    sym: u32,
    /// Backend: native or flex (the native kernels either way) or ndarray.
    #[arg(long, default_value = "native")]
    backend: Backend,
    /// Cores the network's search uses (one evaluator each); default: all;
    /// at most four per core.
    #[arg(long, value_parser = super::parse_threads)]
    threads: Option<usize>,
    /// Seed of the network's symmetry draws (its play is deterministic for a seed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn parse_color(text: &str) -> Result<Color, String> {
    match text {
        "black" | "b" => Ok(Color::Black),
        "white" | "w" => Ok(Color::White),
        other => Err(format!("'{other}': expected black or white")),
    }
}

/// Loads the network and runs the session on stdin/stdout.
pub fn run(args: Args) -> anyhow::Result<()> {
    // Without a board named, the shipped networks open on 6x6, the quickest
    // game, and a named network on the first board it was trained on.
    const QUICKEST: Size = Size::new_const(6, 6);
    let backend = args.backend;
    let device = backend.device();
    let (net, header, label, size) = match args.model.as_deref() {
        None => {
            let size = args.size.unwrap_or(QUICKEST);
            let model = shipped::load_for(size, &device)?;
            let label = model.label();
            (model.net, Some(model.header), label, size)
        }
        Some(path) => {
            let (net, header, label) = load_model(path, &device, args.seed)?;
            let trained_size = header.as_ref().and_then(|h| h.sizes.first().copied());
            let size = args.size.or(trained_size).unwrap_or(QUICKEST);
            (net, header, label, size)
        }
    };
    let limits = Limits { nodes: Some(args.sims), ..Limits::default() };
    let patch = SearchPatch { solve_max_stones: Some(args.solve), ..SearchPatch::default() };
    let factory = NetFactory::tuned(net, backend, limits, patch, args.sym as usize, label.clone())?
        .with_evaluator_threads(args.threads.unwrap_or_else(super::cores));
    let engine = factory.build_player(args.seed);

    let stdin = io::stdin();
    let echo = !stdin.is_terminal();
    let mut out = super::stdout();
    let trained = header.map(|h| {
        let sizes: Vec<String> = h.sizes.iter().map(ToString::to_string).collect();
        format!(", trained on {} for {} iterations", sizes.join(" "), h.iteration)
    });
    writeln!(out, "konane play: you are {} on {size} against {label}{}", args.color, trained.unwrap_or_default())?;
    let mut session = Session::new(engine, args.sims == 0, size, args.color, echo);
    session.run(stdin.lock(), &mut out)
}

/// The commands, for `help` and the first prompt.
const HELP: &str = "\
moves are typed in notation: a removal `d4`, a jump `d4-d6` or `d4-d8`
  moves     list the legal moves
  hint      the network's choice for you, with its share of the visits
  eval      the network's estimate of your winning chances
  undo      take back your last move (and the network's reply)
  new [black|white]   start a new game (optionally switching colours)
  save FILE write the game record (notation.md) to FILE
  board     draw the board again
  quit      leave";

/// What the engine thinks of a position: moves with their share of the
/// visits (of the prior, for the raw policy) and the mover's value.
struct Analysis {
    moves: Vec<(Move, f32)>,
    value: f32,
    simulations: u64,
}

/// One game at a time between the user and a PUCT player.
struct Session<E: Evaluator> {
    engine: MctsPlayer<E>,
    raw_policy: bool,
    size: Size,
    human: Color,
    /// The game, from the start position of `size`.
    game: Game,
    echo: bool,
    /// The game-over message was printed for this position.
    announced: bool,
}

impl<E: Evaluator> Session<E> {
    fn new(engine: MctsPlayer<E>, raw_policy: bool, size: Size, human: Color, echo: bool) -> Session<E> {
        Session { engine, raw_policy, size, human, game: Game::new(Position::start(size)), echo, announced: false }
    }

    /// Plays until `quit` or the end of `input`.
    fn run(&mut self, mut input: impl BufRead, out: &mut impl Write) -> anyhow::Result<()> {
        writeln!(out, "type `help` for the commands")?;
        self.draw(out)?;
        let mut bytes = Vec::with_capacity(256);
        loop {
            if self.game.position().is_over() {
                if !self.announced {
                    let winner = self.game.position().winner().expect("a finished game has a winner");
                    let who = if winner == self.human { "you win" } else { "the network wins" };
                    writeln!(out, "{} has no move: {winner} wins, {who}.", self.game.position().side_to_move())?;
                    writeln!(out, "`new` for another game, `undo`, `save FILE` or `quit`")?;
                    self.announced = true;
                }
            } else if self.game.position().side_to_move() != self.human {
                self.engine_moves(out)?;
                continue;
            }
            let prompt =
                if self.game.position().is_over() { "game over".to_string() } else { format!("{} (you)", self.human) };
            write!(out, "{prompt}> ")?;
            out.flush()?;
            let Some(too_long) = read_line_bounded(&mut input, &mut bytes, MAX_LINE).context("reading input")? else {
                writeln!(out)?;
                return Ok(());
            };
            let line = String::from_utf8_lossy(&bytes);
            if self.echo {
                writeln!(out, "{}", line.trim_end())?;
            }
            if too_long {
                writeln!(out, "that line is longer than {MAX_LINE} bytes: not a move or a command")?;
            } else if std::str::from_utf8(&bytes).is_err() {
                writeln!(out, "that line is not valid UTF-8: type a move like d4 or d4-d6, or `help`")?;
            } else if !self.command(line.trim(), out)? {
                return Ok(());
            }
        }
    }

    /// Carries out one line; `false` to leave.
    fn command(&mut self, line: &str, out: &mut impl Write) -> anyhow::Result<bool> {
        let mut words = line.split_whitespace();
        let Some(word) = words.next() else { return Ok(true) };
        let rest: Vec<&str> = words.collect();
        match word {
            "quit" | "exit" | "q" => return Ok(false),
            "help" | "?" => writeln!(out, "{HELP}")?,
            "board" | "show" => self.draw(out)?,
            "moves" | "legal" => {
                let moves: Vec<String> = self.game.position().moves().iter().map(|m| m.to_text(self.size)).collect();
                if moves.is_empty() {
                    writeln!(out, "no legal moves: the game is over")?;
                } else {
                    writeln!(out, "legal ({}): {}", moves.len(), moves.join(" "))?;
                }
            }
            "hint" => match self.analyse()? {
                None => writeln!(out, "no legal moves: the game is over")?,
                Some(analysis) => {
                    let shown: Vec<String> = analysis
                        .moves
                        .iter()
                        .take(3)
                        .map(|&(mv, share)| format!("{} {:.0}%", mv.to_text(self.size), share * 100.0))
                        .collect();
                    let what = if self.raw_policy { "of the policy" } else { "of the visits" };
                    let others =
                        if shown.len() > 1 { format!("; then {}", shown[1..].join(", ")) } else { String::new() };
                    writeln!(out, "hint: {} ({what}{others})", shown[0])?;
                }
            },
            "eval" | "estimate" => match self.analyse()? {
                None => writeln!(out, "the game is over")?,
                Some(analysis) => {
                    let mut chance = (analysis.value + 1.0) / 2.0;
                    if self.game.position().side_to_move() != self.human {
                        chance = 1.0 - chance;
                    }
                    let basis = if self.raw_policy {
                        "the network's value".to_string()
                    } else {
                        format!("search of {} simulations", analysis.simulations)
                    };
                    writeln!(out, "your winning chances: {:.0}% ({basis})", chance * 100.0)?;
                }
            },
            "undo" | "takeback" => self.undo(out)?,
            "new" => {
                match rest.first().map(|c| parse_color(c)) {
                    Some(Err(e)) => {
                        writeln!(out, "{e}")?;
                        return Ok(true);
                    }
                    Some(Ok(color)) => self.human = color,
                    None => {}
                }
                self.game = Game::new(Position::start(self.size));
                self.announced = false;
                self.engine.new_game();
                writeln!(out, "new game: you are {}", self.human)?;
                self.draw(out)?;
            }
            "save" => match rest.as_slice() {
                [file] => {
                    let record = self.game.record().expect("play's games start at the start position");
                    match konane_files::write_atomically(Path::new(file), format!("{record}\n").as_bytes()) {
                        Ok(()) => writeln!(out, "saved to {file}: {record}")?,
                        Err(e) => writeln!(out, "could not save: {e}")?,
                    }
                }
                _ => writeln!(out, "usage: save FILE")?,
            },
            _ if self.game.position().is_over() => {
                writeln!(out, "'{line}': the game is over; `new`, `undo`, `save FILE` or `quit`")?;
            }
            _ => match self.game.play_text(line) {
                Ok(_) => {
                    self.announced = false;
                    self.draw(out)?;
                }
                Err(e) => writeln!(out, "'{line}': {e} (`moves` lists the legal moves, `help` the commands)")?,
            },
        }
        Ok(true)
    }

    fn play(&mut self, mv: Move) {
        self.game.play_legal(mv);
        self.announced = false;
    }

    /// The engine's move, with what it thinks of the game.
    fn engine_moves(&mut self, out: &mut impl Write) -> anyhow::Result<()> {
        let analysis = self.analyse()?.expect("the engine moves only in unfinished games");
        let (mv, share) = analysis.moves[0];
        self.play(mv);
        let what = if self.raw_policy { "policy" } else { "visits" };
        writeln!(
            out,
            "network plays {} ({:.0}% of {what}; it expects to win {:.0}%)",
            mv.to_text(self.size),
            share * 100.0,
            (analysis.value + 1.0) / 2.0 * 100.0
        )?;
        self.draw(out)
    }

    /// Searches the current position (the side to move's view), best first.
    /// The raw policy is one evaluation: its favourite move (the earliest on
    /// ties, as `MctsPlayer` plays it) and the priors shown come from the
    /// same call.
    ///
    /// # Errors
    /// The network failed (its outputs are not finite): the session cannot
    /// go on.
    fn analyse(&mut self) -> anyhow::Result<Option<Analysis>> {
        let position = *self.game.position();
        if position.is_over() {
            return Ok(None);
        }
        let (mut moves, value, simulations) = if self.raw_policy {
            let (value, priors) = self.engine.evaluate_raw(&position)?;
            let moves: Vec<(Move, f32)> = position.moves().iter().copied().zip(priors.iter().copied()).collect();
            (moves, value, 0)
        } else {
            let limits = self.engine.limits();
            let Some(choice) = self.engine.choose(&position, &limits)? else { return Ok(None) };
            let children: Vec<_> = self.engine.search().root_children().collect();
            let total = children.iter().map(|c| c.visits).sum::<u32>().max(1) as f32;
            let mut moves: Vec<(Move, f32)> = children.iter().map(|c| (c.mv, c.visits as f32 / total)).collect();
            // The search's choice (proven wins first) leads, whatever its share.
            let chosen = moves.iter().position(|m| m.0 == choice.mv).expect("the choice is a root move");
            moves.swap(0, chosen);
            (moves, choice.value.unwrap_or(0.0), choice.nodes)
        };
        // By share after the leader; the stable sort keeps legal-move order on ties.
        let start = usize::from(!self.raw_policy);
        moves[start..].sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(Some(Analysis { moves, value, simulations }))
    }

    /// Takes back the user's last move and any engine moves after it. Moves
    /// alternate strictly (there are no passes), so black made the even plies.
    fn undo(&mut self, out: &mut impl Write) -> anyhow::Result<()> {
        let first = usize::from(self.human == Color::White);
        let Some(since_first) = self.game.moves().len().checked_sub(first + 1) else {
            writeln!(out, "nothing to undo")?;
            return Ok(());
        };
        let taken = self.game.undo_to(first + since_first / 2 * 2);
        self.announced = false;
        writeln!(out, "took back {taken} {}", if taken == 1 { "ply" } else { "plies" })?;
        self.draw(out)
    }

    /// The board with the last move's cells marked.
    fn draw(&self, out: &mut impl Write) -> anyhow::Result<()> {
        let marked: Vec<Cell> = match self.game.last_move() {
            Some(Move::Remove(cell)) => vec![cell],
            Some(Move::Jump { from, to }) => vec![from, to],
            None => Vec::new(),
        };
        write!(out, "{}", self.game.position().pretty(&marked))?;
        if let Some(mv) = self.game.last_move() {
            writeln!(out, "last move: {} (ply {})", mv.to_text(self.size), self.game.moves().len())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use konane_mcts::UniformEvaluator;
    use konane_rules::GameRecord;

    use super::*;

    fn session(human: Color, sims: u64) -> Session<UniformEvaluator> {
        let limits = Limits { nodes: Some(sims), ..Limits::default() };
        let engine = MctsPlayer::new(UniformEvaluator::default(), SearchConfig::default(), limits, 7, sims == 0);
        Session::new(engine, sims == 0, Size::new_const(4, 4), human, true)
    }

    fn transcript(session: &mut Session<UniformEvaluator>, script: &str) -> String {
        let mut out = Vec::new();
        session.run(script.as_bytes(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn bad_input_gets_a_message_and_a_new_prompt() {
        let mut s = session(Color::Black, 16);
        let text = transcript(&mut s, "zz99\na1-a3\nb1\nnew purple\nsave\n\nfly\n");
        assert!(text.contains("'zz99':"), "{text}");
        assert!(text.contains("'a1-a3':"), "{text}");
        assert!(text.contains("'b1':"), "b1 is not a black removal cell on 4x4: {text}");
        assert!(text.contains("expected black or white"), "{text}");
        assert!(text.contains("usage: save FILE"), "{text}");
        assert!(text.contains("'fly':"), "{text}");
        // Nothing was played, and every line got a prompt back (plus the one at the end of input).
        assert!(s.game.moves().is_empty());
        assert_eq!(text.matches("black (you)> ").count(), 8, "{text}");
    }

    #[test]
    fn the_network_replies_and_undo_takes_back_both_plies() {
        let mut s = session(Color::Black, 16);
        let text = transcript(&mut s, "a1\n");
        assert!(text.contains("network plays"), "{text}");
        assert_eq!(s.game.moves().len(), 2, "black's removal and white's reply");
        assert!(text.contains("last move:"), "{text}");
        let text = transcript(&mut s, "undo\nundo\n");
        assert!(text.contains("took back 2 plies"), "{text}");
        assert!(text.contains("nothing to undo"), "{text}");
        assert!(s.game.moves().is_empty());
        assert_eq!(*s.game.position(), Position::start(s.size));
    }

    #[test]
    fn the_network_opens_when_the_user_is_white() {
        let mut s = session(Color::White, 0);
        let text = transcript(&mut s, "moves\nhint\neval\n");
        assert!(text.starts_with("type `help`"), "{text}");
        assert_eq!(s.game.moves().len(), 1, "black (the network) removed a stone");
        assert!(text.contains("of policy"), "{text}");
        let legal: Vec<String> = s.game.position().moves().iter().map(|m| m.to_text(s.size)).collect();
        assert!(text.contains(&format!("legal ({}): {}", legal.len(), legal.join(" "))), "{text}");
        let hint = text.lines().find(|l| l.starts_with("hint: ")).expect(&text);
        let hinted = hint["hint: ".len()..].split(' ').next().unwrap();
        assert!(legal.iter().any(|m| m == hinted), "hint {hinted} not among {legal:?}");
        assert!(text.contains("your winning chances: "), "{text}");
    }

    #[test]
    fn a_whole_game_ends_with_a_winner_and_saves_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("game.txt");
        let mut s = session(Color::Black, 8);
        let mut out = Vec::new();
        // The user always plays the first legal move.
        while !s.game.position().is_over() {
            if s.game.position().side_to_move() == s.human {
                let mv = s.game.position().moves()[0].to_text(s.size);
                assert!(s.command(&mv, &mut out).unwrap());
            } else {
                s.engine_moves(&mut out).unwrap();
            }
        }
        let text = transcript(&mut s, &format!("d4\nsave {}\nnew white\nquit\nmoves\n", file.display()));
        assert!(text.contains("has no move: "), "{text}");
        assert!(text.contains("the game is over;"), "{text}");
        let record: GameRecord = std::fs::read_to_string(&file).unwrap().trim().parse().unwrap();
        assert_eq!(record.final_position().winner(), record.result);
        assert!(record.result.is_some());
        assert_eq!(s.human, Color::White);
        assert!(text.trim_end().ends_with("white (you)> quit"), "quit ends the session: {text}");
    }
}
