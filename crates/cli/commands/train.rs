//! `konane train [CONFIG] [--run-dir DIR] [--resume DIR] [--override KEYS]
//! [--init-from NET] [--iterations N] [--role both|learner] [--exchange LOCATION]`:
//! self-play training (the loop lives in konane-trainer).

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use konane_trainer::trainer::Role;
use konane_trainer::{Phase, RunObserver, TrainConfig, TrainOptions};

use crate::memory;

/// Arguments of `konane train`.
#[derive(clap::Args)]
pub struct Args {
    /// A config file (`configs/6x6.toml`); without one, a new run uses the
    /// embedded `configs/6x6-quick.toml` and `--resume` the run's own config.
    config: Option<PathBuf>,
    /// The run directory (default `runs/<name>-<YYYYMMDD-HHMM>`).
    #[arg(long, conflicts_with = "resume")]
    run_dir: Option<PathBuf>,
    /// Continue the run in this directory from its newest intact checkpoint.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Start the new run from this network (a `.knet` file or a model
    /// directory such as `checkpoints/6x6`) instead of fresh weights, with
    /// a fresh optimizer and an empty replay window.
    #[arg(long, conflicts_with = "resume")]
    init_from: Option<PathBuf>,
    /// Config keys allowed to differ from the run's on resume, comma
    /// separated (`training.lr,evaluation.games`; a table name covers its keys).
    #[arg(long, value_delimiter = ',', requires = "resume")]
    r#override: Vec<String>,
    /// Total iterations of the run, 1 to 1000000 (overrides the config's `iterations`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    iterations: Option<u64>,
    /// No progress bars.
    #[arg(long)]
    quiet: bool,
    /// `both`: self-play, training and evaluation in this process;
    /// `learner`: self-play by `konane selfplay` workers sharing the run's
    /// storage, this process trains, evaluates and publishes networks
    /// (docs/cluster.md).
    #[arg(long, value_enum, default_value = "both")]
    role: RoleArg,
    /// With `--role learner`: the storage shared with the workers, a
    /// directory or (in a build with `--features cloud`) an s3://, gs:// or
    /// az:// URL; default: the run directory.
    #[arg(long)]
    exchange: Option<String>,
}

/// `--role`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum RoleArg {
    Both,
    Learner,
}

/// A stop flag raised by Ctrl-C (the work stops at its next safe point); a
/// second Ctrl-C exits at once, after `what_survives` is said.
pub fn stop_on_ctrl_c(what_survives: &'static str) -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            let _ = writeln!(std::io::stderr(), "\nsecond Ctrl-C: exiting now ({what_survives})");
            std::process::exit(130);
        }
        let _ = writeln!(std::io::stderr(), "\nCtrl-C: stopping at the next safe point (Ctrl-C again to exit at once)");
    })
    .context("installing the Ctrl-C handler")?;
    Ok(stop)
}

/// Validates the arguments, installs the Ctrl-C handler and trains.
pub fn run(args: Args) -> anyhow::Result<()> {
    let role = match args.role {
        RoleArg::Both => Role::Both,
        RoleArg::Learner => Role::Learner,
    };
    if args.exchange.is_some() && role != Role::Learner {
        anyhow::bail!("--exchange names the storage a learner shares with its workers: it needs --role learner");
    }
    let config = match &args.config {
        Some(path) => Some(TrainConfig::load(path)?),
        None => None,
    };
    let stop = stop_on_ctrl_c("the last complete checkpoint stays usable")?;
    let bars = !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let options = TrainOptions {
        config,
        run_dir: args.run_dir,
        resume: args.resume,
        init_from: args.init_from,
        overrides: args.r#override,
        iterations: args.iterations,
        observer: Arc::new(Console { bars, bar: Mutex::new(None) }),
        stop,
        role,
        exchange: args.exchange,
        ..TrainOptions::default()
    };
    let outcome = konane_trainer::train(options)?;
    let run = outcome.run_dir.display();
    let mut out = super::stdout();
    writeln!(out, "run: {run}")?;
    writeln!(
        out,
        "iterations completed: {}{}",
        outcome.iterations,
        if outcome.stopped { " (stopped early)" } else { "" }
    )?;
    let Some(net) = &outcome.net else {
        writeln!(out, "no checkpoint yet; start the run again: konane train --resume {run}")?;
        return Ok(());
    };
    writeln!(out, "network: {}", net.display())?;
    writeln!(out, "wall time: {:.1} s", outcome.seconds)?;
    if let Some(m) = &outcome.last {
        for r in &m.evaluation {
            writeln!(out, "  vs {:<24} {:>3}/{:<3} won ({:.0}%)", r.opponent, r.wins, r.games, 100.0 * r.score)?;
        }
        if let Some(elo) = m.elo {
            writeln!(out, "  Elo vs anchors: {elo:.0}")?;
        }
    }
    let size = konane_trainer::config::TrainConfig::load(&outcome.run_dir.join("config.toml"))
        .ok()
        .and_then(|c| c.sizes.first().map(ToString::to_string))
        .unwrap_or_else(|| "6x6".into());
    if outcome.stopped {
        writeln!(out, "continue:  konane train --resume {run}")?;
    }
    writeln!(out, "evaluate:  konane eval --a net:{run},sims=200 --b greedy --size {size} --games 100")?;
    writeln!(out, "play:      konane play --model {run} --size {size}")?;
    writeln!(out, "engine:    konane ktp --player net:{run},sims=400")?;
    writeln!(out, "curves:    konane plot {run}")?;
    Ok(())
}

/// What `konane train` does with the run's events: a progress bar per
/// phase on a terminal (none with `--quiet` or when standard error is a
/// file), and the program's memory policy between phases.
struct Console {
    bars: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl RunObserver for Console {
    fn phase_started(&self, phase: Phase) {
        if !self.bars {
            return;
        }
        let bar = ProgressBar::new(0);
        let template =
            format!("{:>10} {{bar:30}} {{pos}}/{{len}} {{msg}} [{{elapsed_precise}} < {{eta_precise}}]", phase.name());
        bar.set_style(ProgressStyle::with_template(&template).expect("a valid template"));
        *self.bar.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar);
    }

    fn progress(&self, _: Phase, done: u64, total: u64, status: &str) {
        if let Some(bar) = &*self.bar.lock().unwrap_or_else(|e| e.into_inner()) {
            bar.set_length(total);
            bar.set_position(done);
            if !status.is_empty() {
                bar.set_message(status.to_string());
            }
        }
    }

    fn phase_ended(&self, _: Phase, finished: bool) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take() {
            if finished { bar.finish_and_clear() } else { bar.abandon() }
        }
    }

    fn iteration_started(&self) {
        memory::reset_peak_memory();
    }

    fn between_phases(&self) {
        memory::release_free_memory();
    }

    fn memory_mib(&self) -> (f64, f64) {
        memory::memory_mib()
    }
}
