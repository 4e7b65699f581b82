//! `konane plot RUN_DIR [RUN_DIR...] [--out FILE.png|.svg]`: a run's
//! training curves, or several runs' Elo and strength on shared axes.

use std::io::Write;
use std::path::PathBuf;

use konane_plot::XAxis;

/// Arguments of `konane plot`.
#[derive(clap::Args)]
pub struct Args {
    /// The run directory (holding `metrics.jsonl`); several draw a comparison.
    #[arg(required = true, num_args = 1..=8)]
    run_dirs: Vec<PathBuf>,
    /// The image to write, `.png` or `.svg` (default `RUN_DIR/curves.png`; for a comparison, `compare.png`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Draw against training hours (summed iteration wall time) instead of iterations.
    #[arg(long)]
    hours: bool,
}

/// Draws the curves and says where they went.
pub fn run(args: Args) -> anyhow::Result<()> {
    let axis = if args.hours { XAxis::Hours } else { XAxis::Iterations };
    if let [run_dir] = &args.run_dirs[..] {
        let out = args.out.unwrap_or_else(|| run_dir.join("curves.png"));
        let iterations = konane_plot::plot_run(run_dir, &out, axis)?;
        writeln!(super::stdout(), "{}: {iterations} iterations", out.display())?;
    } else {
        let out = args.out.unwrap_or_else(|| PathBuf::from("compare.png"));
        konane_plot::plot_comparison(&args.run_dirs, &out, axis)?;
        writeln!(super::stdout(), "{}: {} runs", out.display(), args.run_dirs.len())?;
    }
    Ok(())
}
