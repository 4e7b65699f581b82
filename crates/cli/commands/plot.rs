//! `konane plot RUN_DIR [--out FILE.png|.svg]`: training curves of a run.

use std::io::Write;
use std::path::PathBuf;

use konane_plot::XAxis;

/// Arguments of `konane plot`.
#[derive(clap::Args)]
pub struct Args {
    /// The run directory (holding `metrics.jsonl`).
    run_dir: PathBuf,
    /// The image to write, `.png` or `.svg` (default `RUN_DIR/curves.png`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Draw against training hours (summed iteration wall time) instead of iterations.
    #[arg(long)]
    hours: bool,
}

/// Draws the curves and says where they went.
pub fn run(args: Args) -> anyhow::Result<()> {
    let axis = if args.hours { XAxis::Hours } else { XAxis::Iterations };
    let out = args.out.unwrap_or_else(|| args.run_dir.join("curves.png"));
    let iterations = konane_plot::plot_run(&args.run_dir, &out, axis)?;
    writeln!(super::stdout(), "{}: {iterations} iterations", out.display())?;
    Ok(())
}
