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

/// Registers a font for plotters' "sans-serif" family, once.
fn ensure_font() -> Result<PathBuf, PlotError> {
    static FONT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FONT.get_or_init(|| {
        for path in font_candidates() {
            let Ok(bytes) = std::fs::read(&path) else { continue };
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

/// Draws the curves of the run in `run_dir` to `out` (`.png` or `.svg`).
///
/// # Errors
/// Unreadable metrics, no font, an unknown extension or a drawing failure.
pub fn plot_run(run_dir: &Path, out: &Path, axis: XAxis) -> Result<usize, PlotError> {
    let history = metrics::read(&run_dir.join("metrics.jsonl"))?;
    if history.is_empty() {
        return Err(PlotError::Empty(run_dir.display().to_string()));
    }
    let title = run_dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    // The teacher bootstrap is training time too: the hours start after it.
    let start_seconds = match axis {
        XAxis::Hours => konane_trainer::run::latest_dir(run_dir)
            .and_then(|dir| konane_trainer::run::read_state(&dir).ok())
            .and_then(|state| state.bootstrap)
            .map_or(0.0, |b| b.label_seconds + b.train_seconds),
        XAxis::Iterations => 0.0,
    };
    plot_metrics(&history, &title, out, axis, start_seconds)?;
    Ok(history.len())
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

/// Draws `history` to `out` (`.png` or `.svg`); on the hours axis the first
/// iteration starts at `start_seconds` (time spent before it, such as the
/// teacher bootstrap).
///
/// # Errors
/// No font, an unknown extension or a drawing failure.
pub fn plot_metrics(
    history: &[IterationMetrics],
    title: &str,
    out: &Path,
    axis: XAxis,
    start_seconds: f64,
) -> Result<(), PlotError> {
    ensure_font()?;
    let size = (1000, 1200);
    let fail = |reason: String| PlotError::Drawing { file: out.display().to_string(), reason };
    match out.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("png") => {
            let root = BitMapBackend::new(out, size).into_drawing_area();
            draw(&root, history, title, axis, start_seconds).map_err(fail)?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        Some("svg") => {
            let root = SVGBackend::new(out, size).into_drawing_area();
            draw(&root, history, title, axis, start_seconds).map_err(fail)?;
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

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    history: &[IterationMetrics],
    title: &str,
    axis: XAxis,
    start_seconds: f64,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled(&format!("konane training: {title}"), ("sans-serif", 28)).map_err(e)?;
    let panels = root.split_evenly((3, 1));
    let hours: std::collections::HashMap<u64, f64> =
        history.iter().map(|m| m.iteration).zip(training_hours(history, start_seconds)).collect();
    let x = |m: &IterationMetrics| match axis {
        XAxis::Iterations => m.iteration as f64,
        XAxis::Hours => hours[&m.iteration],
    };
    let x_desc = match axis {
        XAxis::Iterations => "iteration",
        XAxis::Hours if start_seconds > 0.0 => "training hours (teacher bootstrap included)",
        XAxis::Hours => "training hours",
    };

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

    let mut opponents: Vec<String> = Vec::new();
    for m in history {
        for r in &m.evaluation {
            if !opponents.contains(&r.opponent) {
                opponents.push(r.opponent.clone());
            }
        }
    }
    let rates: Vec<Series> = opponents
        .iter()
        .map(|o| {
            let points = history
                .iter()
                .filter_map(|m| m.evaluation.iter().find(|r| &r.opponent == o).map(|r| (x(m), r.score)))
                .collect();
            (format!("vs {o}"), points)
        })
        .collect();
    panel(&panels[1], "win rate of the network", x_desc, "win rate", &rates, Some((0.0, 1.0)))?;

    let elo: Vec<Series> = vec![
        ("Elo vs anchors".into(), history.iter().filter_map(|m| m.elo.map(|v| (x(m), v))).collect()),
        (
            "Elo chain (vs previous)".into(),
            history.iter().filter(|m| !m.evaluation.is_empty()).map(|m| (x(m), m.elo_chain)).collect(),
        ),
    ];
    panel(&panels[2], "Elo (first opponent = 0)", x_desc, "Elo", &elo, None)
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

    /// Draws synthetic curves to both formats: needs a font (`.ci/run`
    /// installs fonts-dejavu-core where there is none).
    #[test]
    fn both_formats_are_drawn_with_their_axes() {
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
                timing: Timing { total_seconds: 900.0, ..Timing::default() },
                ..IterationMetrics::default()
            })
            .collect();
        let dir = std::env::temp_dir().join(format!("konane-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let svg = dir.join("curves.svg");
        plot_metrics(&history, "test run", &svg, XAxis::Hours, 0.0).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg") && text.contains("training hours") && text.contains("test run"), "{text}");
        let png = dir.join("curves.png");
        plot_metrics(&history, "test run", &png, XAxis::Iterations, 0.0).unwrap();
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
        let error = plot_metrics(&history, "test run", &dir.join("curves.gif"), XAxis::Iterations, 0.0).unwrap_err();
        assert!(error.to_string().contains(".png or .svg"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
