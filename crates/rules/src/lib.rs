//! Exact Kōnane rules for every board from 1x1 to 20x20.
//!
//! The notation (`docs/spec/notation.md`) is binding: positions, moves
//! and game records print and parse exactly as it says. Move generation is
//! bitboard based and never allocates; [`Position`] hides the board width,
//! and [`Board`] exposes it for monomorphic inner loops.
//!
//! ```
//! use konane_rules::{Position, Size};
//! let size: Size = "6x6".parse().unwrap();
//! let mut position = Position::start(size);
//! let opening = position.parse_legal_move("c3").unwrap();
//! position.play(opening).unwrap();
//! assert_eq!(position.count_moves(), 4); // white removes b3, d3, c2 or c4
//! ```
#![deny(missing_docs)]

pub mod bits;
pub mod board;
pub mod dfpn;
mod error;
mod geometry;
mod moves;
pub mod naive;
pub mod perft;
mod position;
pub mod proof;
mod record;
pub mod regions;
pub mod sample;
pub mod solver;
mod symmetry;
mod zobrist;

pub use bits::Bits;
pub use board::{Board, Phase};
pub use error::{IllegalMove, ParseError};
pub use geometry::{Cell, CellName, Color, MAX_SIDE, Size};
pub use moves::{MAX_MOVES, Move, MoveList, MoveText};
pub use position::{BoardVisitor, MoveError, Position};
pub use record::GameRecord;
pub use solver::{Solution, Solver};
pub use symmetry::Symmetry;
