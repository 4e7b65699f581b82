//! Errors of the rules crate. Each says what is wrong and where, for a
//! person reading a log or a protocol answer.

use thiserror::Error;

/// A string in the notation that could not be read.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// A board size.
    #[error("bad size: {0}")]
    Size(String),
    /// A cell name.
    #[error("bad cell: {0}")]
    Cell(String),
    /// A position string.
    #[error("bad position: {0}")]
    Position(String),
    /// A move string.
    #[error("bad move: {0}")]
    Move(String),
    /// A game record.
    #[error("bad game record: {0}")]
    Record(String),
}

/// A well-formed move that the rules do not allow in this position.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("illegal move {mv} in {position}: {reason}")]
pub struct IllegalMove {
    /// The move as written.
    pub mv: String,
    /// The position string.
    pub position: String,
    /// Why it is illegal.
    pub reason: String,
}
