//! Training curves from `metrics.jsonl`: losses, win rates and Elo, drawn
//! with plotters to PNG or SVG.
//!
//! Text needs a TrueType font. plotters' `ab_glyph` backend renders it from
//! font bytes registered at run time, so no fontconfig or system font
//! library is linked: the font is read from `$KONANE_FONT` or, failing that,
//! the first DejaVu/Liberation/Noto sans font under the usual system font
//! directories (Debian's `fonts-dejavu-core` provides one).
#![deny(missing_docs)]

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use konane_trainer::TrainError;
use konane_trainer::metrics::{self, IterationMetrics};
use konane_trainer::strength::{self, StrengthRecord};
use thiserror::Error;

/// A plot that could not be drawn.
#[derive(Debug, Error)]
pub enum PlotError {
    /// The run's records could not be read.
    #[error(transparent)]
    Run(#[from] TrainError),
    /// The run has no iteration yet.
    #[error("{0}: no iterations recorded yet")]
    Empty(String),
    /// No font for the text.
    #[error(
        "no TrueType font found for the plot's text: set KONANE_FONT=/path/to/font.ttf (or install fonts-dejavu-core)"
    )]
    NoFont,
    /// The image's name says neither PNG nor SVG.
    #[error("{0}: the plot is written as .png or .svg")]
    Format(String),
    /// plotters failed.
    #[error("drawing {file}: {reason}")]
    Drawing {
        /// The image.
        file: String,
        /// What plotters said.
        reason: String,
    },
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn font_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(path) = std::env::var_os("KONANE_FONT") {
        out.push(PathBuf::from(path));
    }
    for known in [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
        "/Library/Fonts/Arial.ttf",
        "/System/Library/Fonts/Supplemental/Arial.ttf",
        "C:\\Windows\\Fonts\\arial.ttf",
    ] {
        out.push(PathBuf::from(known));
    }
    // Any TrueType font at all, as a last resort.
    let mut stack = vec![PathBuf::from("/usr/share/fonts")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("ttf")) {
                out.push(path);
            }
        }
    }
    out
}

/// The largest font file read: the largest CJK fonts are about 20 MB.
const MAX_FONT_BYTES: u64 = 64 << 20;

/// Registers a font for plotters' "sans-serif" family, once.
fn ensure_font() -> Result<PathBuf, PlotError> {
    static FONT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FONT.get_or_init(|| {
        for path in font_candidates() {
            // A font is a few MB; a larger file (or a device) is skipped.
            let Ok(bytes) = konane_files::read_bounded(&path, MAX_FONT_BYTES, "font") else { continue };
            // plotters keeps the font for the process's lifetime.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return Some(path);
            }
        }
        None
    })
    .clone()
    .ok_or(PlotError::NoFont)
}

/// What the plots draw of one run: its iterations' records, the time
/// spent before its first iteration, and its strength curve if rated.
#[derive(Clone, Debug, Default)]
pub struct RunData {
    /// The run's name (its directory's).
    pub title: String,
    /// `metrics.jsonl`.
    pub history: Vec<IterationMetrics>,
    /// Seconds before the first iteration (the teacher bootstrap).
    pub start_seconds: f64,
    /// `strength.jsonl` (`konane rate`).
    pub strength: Vec<StrengthRecord>,
}

impl RunData {
    /// Reads the run in `run_dir`.
    ///
    /// # Errors
    /// Unreadable records, or a run without iterations.
    pub fn load(run_dir: &Path) -> Result<RunData, PlotError> {
        let history = metrics::read(&run_dir.join("metrics.jsonl"))?;
        if history.is_empty() {
            return Err(PlotError::Empty(run_dir.display().to_string()));
        }
        let title = run_dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        // The teacher bootstrap is training time too: the hours start after it.
        let start_seconds = konane_trainer::run::latest_dir(run_dir)
            .and_then(|dir| konane_trainer::run::read_state(&dir).ok())
            .and_then(|state| state.bootstrap)
            .map_or(0.0, |b| b.label_seconds + b.train_seconds);
        let strength = strength::read(run_dir)?;
        Ok(RunData { title, history, start_seconds, strength })
    }

    /// Where iteration `iteration` ends on `axis` (iteration 0: the start,
    /// after the bootstrap); `None` for an iteration not in the history.
    pub fn x(&self, iteration: u64, axis: XAxis) -> Option<f64> {
        match axis {
            XAxis::Iterations => Some(iteration as f64),
            XAxis::Hours if iteration == 0 => Some(self.start_seconds / 3600.0),
            XAxis::Hours => {
                let at = self.history.iter().position(|m| m.iteration == iteration)?;
                training_hours(&self.history, self.start_seconds).get(at).copied()
            }
        }
    }

    /// Every opponent the run's evaluations met (`previous` included), in
    /// the order first met.
    fn opponents(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for result in self.history.iter().flat_map(|m| &m.evaluation) {
            if !names.contains(&result.opponent) {
                names.push(result.opponent.clone());
            }
        }
        names
    }

    /// The run's own evaluation scores against `opponent`, each point
    /// `(x, score)`.
    fn scores_against(&self, opponent: &str, axis: XAxis) -> Vec<(f64, f64)> {
        self.history
            .iter()
            .filter_map(|m| {
                let result = m.evaluation.iter().find(|r| r.opponent == opponent)?;
                Some((self.x(m.iteration, axis)?, result.score))
            })
            .collect()
    }

    /// The strength curves (one per opponent and search), each point
    /// `(x, score)`.
    fn strength_series(&self, axis: XAxis, prefix: &str) -> Vec<Series> {
        let mut curves: Vec<String> = Vec::new();
        for r in &self.strength {
            if !curves.contains(&r.curve()) {
                curves.push(r.curve());
            }
        }
        curves
            .into_iter()
            .map(|curve| {
                let points = self
                    .strength
                    .iter()
                    .filter(|r| r.curve() == curve)
                    .filter_map(|r| Some((self.x(r.iteration, axis)?, r.score)))
                    .collect();
                (format!("{prefix}{curve}"), points)
            })
            .collect()
    }
}

/// Draws the curves of the run in `run_dir` to `out` (`.png` or `.svg`);
/// returns the iterations drawn.
///
/// # Errors
/// Unreadable metrics, no font, an unknown extension or a drawing failure.
pub fn plot_run(run_dir: &Path, out: &Path, axis: XAxis) -> Result<usize, PlotError> {
    let run = RunData::load(run_dir)?;
    plot_metrics(&run, out, axis)?;
    Ok(run.history.len())
}

/// Draws several runs' Elo and strength curves on shared axes, to compare
/// recipes by training hours.
///
/// # Errors
/// As [`plot_run`], for any of the runs.
pub fn plot_comparison(run_dirs: &[PathBuf], out: &Path, axis: XAxis) -> Result<(), PlotError> {
    let runs = run_dirs.iter().map(|dir| RunData::load(dir)).collect::<Result<Vec<_>, _>>()?;
    render(out, (1000, 900), &Comparison { runs: &runs, axis })
}

/// What the curves are drawn against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XAxis {
    /// Training iterations.
    Iterations,
    /// Hours of training: the summed wall time of the iterations (after
    /// the teacher bootstrap's, if the run had one), so a run resumed across
    /// sessions is measured by the work it took.
    Hours,
}

/// Draws one run to `out` (`.png` or `.svg`).
///
/// # Errors
/// No font, an unknown extension or a drawing failure.
pub fn plot_metrics(run: &RunData, out: &Path, axis: XAxis) -> Result<(), PlotError> {
    let panels = if run.strength.is_empty() { 3 } else { 4 };
    render(out, (1000, 400 * panels as u32), &RunFigure { run, axis, panels })
}

/// A figure drawn the same way on either backend.
trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static;
}

/// One run's panels.
struct RunFigure<'a> {
    run: &'a RunData,
    axis: XAxis,
    panels: usize,
}

impl Figure for RunFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        draw(root, self.run, self.axis, self.panels)
    }
}

/// Several runs on shared axes.
struct Comparison<'a> {
    runs: &'a [RunData],
    axis: XAxis,
}

impl Figure for Comparison<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        draw_comparison(root, self.runs, self.axis)
    }
}

/// Renders `figure` to `out`, PNG or SVG by its extension.
fn render(out: &Path, size: (u32, u32), figure: &impl Figure) -> Result<(), PlotError> {
    ensure_font()?;
    let fail = |reason: String| PlotError::Drawing { file: out.display().to_string(), reason };
    match out.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("png") => {
            let root = BitMapBackend::new(out, size).into_drawing_area();
            figure.draw(&root).map_err(fail)?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        Some("svg") => {
            let root = SVGBackend::new(out, size).into_drawing_area();
            figure.draw(&root).map_err(fail)?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        _ => Err(PlotError::Format(out.display().to_string())),
    }
}

type Series = (String, Vec<(f64, f64)>);

/// The training hours at the end of each iteration of `history`: the
/// iterations' summed wall time after `start_seconds`.
pub fn training_hours(history: &[IterationMetrics], start_seconds: f64) -> Vec<f64> {
    history
        .iter()
        .scan(start_seconds, |seconds, m| {
            *seconds += m.timing.total_seconds;
            Some(*seconds / 3600.0)
        })
        .collect()
}

fn x_label(axis: XAxis, bootstrap: bool) -> &'static str {
    match axis {
        XAxis::Iterations => "iteration",
        XAxis::Hours if bootstrap => "training hours (teacher bootstrap included)",
        XAxis::Hours => "training hours",
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunData,
    axis: XAxis,
    panels: usize,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let panels = titled_panels(root, &run.title, 28, panels)?;
    let history = &run.history;
    let x = |m: &IterationMetrics| run.x(m.iteration, axis).expect("an iteration of the history");
    let x_desc = x_label(axis, run.start_seconds > 0.0);

    let trained: Vec<&IterationMetrics> = history.iter().filter(|m| m.train_steps > 0).collect();
    let losses: Vec<Series> = vec![
        ("policy loss".into(), trained.iter().map(|m| (x(m), m.policy_loss)).collect()),
        ("value loss (MSE)".into(), trained.iter().map(|m| (x(m), m.value_loss)).collect()),
        ("policy entropy".into(), trained.iter().map(|m| (x(m), m.policy_entropy)).collect()),
        (
            "target entropy (policy loss floor)".into(),
            trained.iter().filter(|m| m.target_entropy > 0.0).map(|m| (x(m), m.target_entropy)).collect(),
        ),
    ];
    panel(&panels[0], "losses", x_desc, "loss", &losses, None)?;

    let rates: Vec<Series> =
        run.opponents().into_iter().map(|o| (format!("vs {o}"), run.scores_against(&o, axis))).collect();
    panel(&panels[1], "win rate of the network", x_desc, "win rate", &rates, Some((0.0, 1.0)))?;

    let elo: Vec<Series> = vec![
        ("Elo vs anchors".into(), history.iter().filter_map(|m| m.elo.map(|v| (x(m), v))).collect()),
        (
            "Elo chain (vs previous)".into(),
            history.iter().filter(|m| !m.evaluation.is_empty()).map(|m| (x(m), m.elo_chain)).collect(),
        ),
    ];
    panel(&panels[2], "Elo (first opponent = 0)", x_desc, "Elo", &elo, None)?;
    if let Some(area) = panels.get(3) {
        let strength = run.strength_series(axis, "");
        panel(area, "strength (konane rate): score of each checkpoint", x_desc, "score", &strength, Some((0.0, 1.0)))?;
    }
    Ok(())
}

/// A white figure titled "konane training: `title`", cut into `count`
/// panels stacked vertically.
fn titled_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    font_size: u32,
    count: usize,
) -> Result<Vec<DrawingArea<DB, Shift>>, String>
where
    DB::ErrorType: 'static,
{
    let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled(&format!("konane training: {title}"), ("sans-serif", font_size)).map_err(e)?;
    Ok(root.split_evenly((count, 1)))
}

fn draw_comparison<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    runs: &[RunData],
    axis: XAxis,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let names: Vec<&str> = runs.iter().map(|r| r.title.as_str()).collect();
    let rated = runs.iter().any(|r| !r.strength.is_empty());
    let shared = shared_opponent(runs);
    let count = 1 + usize::from(shared.is_some()) + usize::from(rated);
    let panels = titled_panels(root, &names.join(" / "), 24, count)?;
    let x_desc = x_label(axis, runs.iter().any(|r| r.start_seconds > 0.0));
    let elo: Vec<Series> = runs
        .iter()
        .map(|run| {
            let points =
                run.history.iter().filter_map(|m| Some((run.x(m.iteration, axis)?, m.elo?))).collect::<Vec<_>>();
            (run.title.clone(), points)
        })
        .collect();
    panel(&panels[0], "Elo against each run's anchors (first opponent = 0)", x_desc, "Elo", &elo, None)?;
    let mut next = 1;
    if let Some(opponent) = &shared {
        let scores: Vec<Series> =
            runs.iter().map(|run| (run.title.clone(), run.scores_against(opponent, axis))).collect();
        let caption = format!("score against {opponent} (training's own evaluations)");
        panel(&panels[next], &caption, x_desc, "score", &scores, Some((0.0, 1.0)))?;
        next += 1;
    }
    if rated {
        let strength: Vec<Series> =
            runs.iter().flat_map(|run| run.strength_series(axis, &format!("{}: ", run.title))).collect();
        panel(&panels[next], "strength (konane rate)", x_desc, "score", &strength, Some((0.0, 1.0)))?;
    }
    Ok(())
}

/// The first baseline every run evaluated against (in the first run's
/// order): runs with different anchor sets still share a curve on it.
fn shared_opponent(runs: &[RunData]) -> Option<String> {
    let (first, rest) = runs.split_first()?;
    let others: Vec<Vec<String>> = rest.iter().map(RunData::opponents).collect();
    first.opponents().into_iter().find(|name| name != "previous" && others.iter().all(|o| o.contains(name)))
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    y_range: Option<(f64, f64)>,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
    let points = series.iter().flat_map(|s| s.1.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if let Some(range) = y_range {
        (y0, y1) = range;
    }
    if x1 - x0 < 1e-3 {
        x1 = x0 + 1.0;
    }
    let pad = ((y1 - y0) * 0.08).max(1e-3);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
        .map_err(e)?;
    chart.configure_mesh().x_desc(x_label).y_desc(y_label).draw().map_err(e)?;
    for (i, (name, points)) in series.iter().enumerate() {
        if points.is_empty() {
            continue;
        }
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
            .map_err(e)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(e)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use konane_trainer::metrics::Timing;

    #[test]
    fn training_hours_add_up_after_the_start() {
        let history: Vec<IterationMetrics> = [1800.0, 3600.0, 900.0]
            .iter()
            .enumerate()
            .map(|(i, &total_seconds)| IterationMetrics {
                iteration: i as u64 + 1,
                timing: Timing { total_seconds, ..Timing::default() },
                ..IterationMetrics::default()
            })
            .collect();
        assert_eq!(training_hours(&history, 0.0), vec![0.5, 1.5, 1.75]);
        assert_eq!(training_hours(&history, 1800.0), vec![1.0, 2.0, 2.25]);
    }
}

#[cfg(test)]
mod drawing_tests {
    use super::*;
    use konane_trainer::metrics::{MatchResult, Timing};

    fn synthetic_run(title: &str, minutes: f64) -> RunData {
        let history: Vec<IterationMetrics> = (1..=4)
            .map(|i| IterationMetrics {
                iteration: i,
                policy_loss: 2.0 / i as f64,
                value_loss: 0.5 / i as f64,
                elo: Some(100.0 * i as f64),
                evaluation: vec![MatchResult {
                    opponent: "random".into(),
                    games: 10,
                    wins: 5 + i as usize,
                    score: (5 + i) as f64 / 10.0,
                    elo_diff: 0.0,
                }],
                timing: Timing { total_seconds: 60.0 * minutes, ..Timing::default() },
                ..IterationMetrics::default()
            })
            .collect();
        RunData { title: title.into(), history, start_seconds: 0.0, strength: Vec::new() }
    }

    fn rated(iteration: u64, score: f64) -> StrengthRecord {
        StrengthRecord {
            iteration,
            search: "sims=800".into(),
            opponent: "alphabeta:ms=1000".into(),
            size: "8x8".into(),
            seed: 1,
            games: 10,
            scored: 10,
            wins: (10.0 * score) as usize,
            score,
            score_low: 0.0,
            score_high: 1.0,
            elo: 0.0,
        }
    }

    /// Draws synthetic curves to both formats: needs a font (`.ci/run`
    /// installs fonts-dejavu-core where there is none).
    #[test]
    fn both_formats_are_drawn_with_their_axes() {
        let run = synthetic_run("test run", 15.0);
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("curves.svg");
        plot_metrics(&run, &svg, XAxis::Hours).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg") && text.contains("training hours") && text.contains("test run"), "{text}");
        assert!(!text.contains("konane rate"), "no strength panel without ratings");
        let png = dir.path().join("curves.png");
        plot_metrics(&run, &png, XAxis::Iterations).unwrap();
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
        let error = plot_metrics(&run, &dir.path().join("curves.gif"), XAxis::Iterations).unwrap_err();
        assert!(error.to_string().contains(".png or .svg"), "{error}");
    }

    /// A rated run gets a strength panel; iteration 0 sits at the end of
    /// the bootstrap on the hours axis, later ones at their summed times.
    #[test]
    fn strength_points_sit_at_their_checkpoints_hours() {
        let mut run = synthetic_run("rated", 30.0);
        run.start_seconds = 900.0;
        let on_10x10 = StrengthRecord { size: "10x10".into(), ..rated(4, 0.7) };
        run.strength = vec![rated(0, 0.1), rated(2, 0.5), on_10x10, rated(4, 0.9)];
        let series = run.strength_series(XAxis::Hours, "");
        assert_eq!(series.len(), 2, "one curve per board");
        assert_eq!(series[0].0, "sims=800 vs alphabeta:ms=1000 on 8x8");
        assert_eq!(series[0].1, vec![(0.25, 0.1), (1.25, 0.5), (2.25, 0.9)]);
        assert_eq!(series[1].0, "sims=800 vs alphabeta:ms=1000 on 10x10");
        assert_eq!(series[1].1, vec![(2.25, 0.7)]);
        assert_eq!(run.x(9, XAxis::Hours), None, "no such iteration");
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("curves.svg");
        plot_metrics(&run, &svg, XAxis::Hours).unwrap();
        assert!(std::fs::read_to_string(&svg).unwrap().contains("konane rate"));
    }

    /// Runs with different anchor sets share a curve on the first
    /// baseline they all met; "previous" never counts.
    #[test]
    fn the_shared_opponent_is_the_first_one_all_runs_met() {
        let result = |opponent: &str, score: f64| MatchResult {
            opponent: opponent.into(),
            games: 10,
            wins: (10.0 * score) as usize,
            score,
            elo_diff: 0.0,
        };
        let mut old = synthetic_run("old", 10.0);
        old.history[1].evaluation =
            vec![result("previous", 0.5), result("random", 1.0), result("alphabeta:depth=5", 0.4)];
        let mut new = synthetic_run("new", 5.0);
        for m in &mut new.history {
            m.evaluation = Vec::new();
        }
        new.history[3].evaluation = vec![result("previous", 0.6), result("alphabeta:depth=5", 0.9)];
        let runs = [old.clone(), new.clone()];
        assert_eq!(shared_opponent(&runs).as_deref(), Some("alphabeta:depth=5"));
        assert_eq!(new.scores_against("alphabeta:depth=5", XAxis::Iterations), vec![(4.0, 0.9)]);
        assert_eq!(old.scores_against("alphabeta:depth=5", XAxis::Hours), vec![(20.0 / 60.0, 0.4)]);
        new.history[3].evaluation = vec![result("greedy", 0.6)];
        assert_eq!(shared_opponent(&[old, new]), None);
    }

    /// The comparison names every run in its legend.
    #[test]
    fn a_comparison_draws_every_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = Vec::new();
        for (name, minutes) in [("fast-recipe", 5.0), ("plain-recipe", 20.0)] {
            let run_dir = dir.path().join(name);
            std::fs::create_dir_all(&run_dir).unwrap();
            metrics::rewrite(&run_dir.join("metrics.jsonl"), &synthetic_run(name, minutes).history).unwrap();
            runs.push(run_dir);
        }
        strength::record(&runs[0], rated(4, 0.75)).unwrap();
        let svg = dir.path().join("compare.svg");
        plot_comparison(&runs, &svg, XAxis::Hours).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        for needle in ["fast-recipe", "plain-recipe", "fast-recipe: sims=800 vs alphabeta:ms=1000 on 8x8"] {
            assert!(text.contains(needle), "{needle} missing");
        }
        assert!(text.contains("score against random"), "both runs evaluated against random");
        let error = plot_comparison(&[dir.path().join("nothing")], &svg, XAxis::Hours).unwrap_err();
        assert!(error.to_string().contains("nothing"), "{error}");
    }
}
