//! Stand-in for the plotting module when the `plot` feature is off.

use std::path::Path;

use crate::TrainError;

/// What the curves would be drawn against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XAxis {
    /// Training iterations.
    Iterations,
    /// Hours of training.
    Hours,
}

/// Always fails: this build has no plotting.
///
/// # Errors
/// Always.
pub fn plot_run(_run_dir: &Path, _out: &Path, _axis: XAxis) -> Result<usize, TrainError> {
    Err(TrainError::Other("this konane was built without the `plot` feature of konane-trainer".into()))
}
