//! The replay window: the newest self-play samples, stored compactly, and
//! its versioned binary file.
//!
//! A sample keeps its position as two bits per cell (an 8x8 board is 16
//! bytes; float input planes would be 1.5 KB), the search's visit counts as
//! `(policy index, visits)` pairs of `u16`, the value target, and (for a
//! network with a reply policy output) the next search's visits the same
//! way. Input planes are built only for the batch being trained on.
//!
//! File layout, written atomically:
//!
//! ```text
//! "KONANE-REPLAY\n" | u32 version (LE) | u64 samples (LE) | samples... | u32 crc32 (LE)
//! ```
//!
//! Version 3 (written): each sample is a [`PackedSample`] in bincode's
//! standard encoding, decoded one at a time with a byte limit, so that a
//! damaged length inside a sample cannot claim more than a sample can hold.
//! Version 2 (read, for older runs): the same without the reply visits.
//! Version 1 (read): `u8 cols | u8 rows | u8 side |
//! ceil(2 * cells / 8) bytes of cells | u16 moves | moves x (u16 policy
//! index, u16 visits) | f32 value`. Every sample read is checked (its size,
//! cells, policy indices and value) before it is kept.

use std::collections::VecDeque;
use std::path::Path;

use konane_nn::encoding::{index_move, move_index};
use konane_nn::train::Sample;
use konane_rules::{Color, Position, Size, Symmetry};
use rand::seq::IndexedRandom;
use rand::{Rng, RngExt};

use thiserror::Error;

use crate::TrainError;

const MAGIC: &[u8] = b"KONANE-REPLAY\n";
/// The most bytes one sample's encoding may take: a 20x20 board's cells
/// (100 bytes) and visits of all its legal moves (at most 760) fit easily.
const MAX_SAMPLE_BYTES: usize = 1 << 16;

/// A replay file that could not be read.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ReplayError {
    /// Not a replay file.
    #[error("not a konane replay file (bad magic)")]
    Magic,
    /// Too short to hold its own header.
    #[error("truncated ({0} bytes)")]
    Truncated(usize),
    /// The checksum does not match.
    #[error("checksum mismatch: the file is damaged or truncated")]
    Checksum,
    /// A layout this build does not read.
    #[error("replay format version {0}, this build reads 1 to {REPLAY_VERSION}")]
    Version(u32),
    /// More samples claimed than the file could hold.
    #[error("claims {claimed} samples, room for at most {room}")]
    Count {
        /// Samples the header claims.
        claimed: u64,
        /// The most the file's bytes could hold.
        room: usize,
    },
    /// A sample that does not decode or is not a sample of a legal board.
    #[error("sample {index}: {reason}")]
    Sample {
        /// Its index in the file.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// Bytes after the last sample.
    #[error("trailing bytes after the last sample")]
    Trailing,
}
/// The smallest sample of either version: size and side (3 bytes), one
/// byte of cells, a move count (1 byte in bincode) and a value.
const MIN_SAMPLE_BYTES: usize = 3 + 1 + 1 + 4;
/// The longest replay file read: the largest window (10 million samples)
/// of the largest boards.
pub const MAX_REPLAY_BYTES: u64 = 16 << 30;
/// Version of the replay file layout this build writes.
pub const REPLAY_VERSION: u32 = 3;

/// One training sample, packed. Encoded with bincode's own derive rather
/// than serde: bincode then checks a decoded length against the sample
/// limit before it allocates, where serde's containers preallocate up to
/// 1 MiB for any claimed length (found by the replay fuzz target).
#[derive(Clone, Debug, PartialEq, bincode::Encode, bincode::Decode)]
pub struct PackedSample {
    cols: u8,
    rows: u8,
    white_to_move: bool,
    /// Two bits per cell, cell `i` at bits `2i..2i+2` of the byte string:
    /// 0 empty, 1 black, 2 white.
    cells: Box<[u8]>,
    /// `(policy index, visits)` of each root move searched.
    visits: Box<[(u16, u16)]>,
    /// Value target for the side to move, in [-1, 1].
    pub value: f32,
    /// The same of the opponent's root moves in the position the game went
    /// on to: the reply policy target. Empty when there was none, or when
    /// the run trains no reply output.
    reply: Box<[(u16, u16)]>,
}

/// A sample of the version 2 layout: a [`PackedSample`] without replies.
#[derive(bincode::Decode)]
struct PackedSampleV2 {
    cols: u8,
    rows: u8,
    white_to_move: bool,
    cells: Box<[u8]>,
    visits: Box<[(u16, u16)]>,
    value: f32,
}

impl From<PackedSampleV2> for PackedSample {
    fn from(old: PackedSampleV2) -> PackedSample {
        let PackedSampleV2 { cols, rows, white_to_move, cells, visits, value } = old;
        PackedSample { cols, rows, white_to_move, cells, visits, value, reply: Box::default() }
    }
}

/// Visit counts as `(policy index, visits)` pairs of a `size` board.
fn pack_visits(size: Size, visits: impl IntoIterator<Item = (konane_rules::Move, u32)>) -> Box<[(u16, u16)]> {
    visits.into_iter().map(|(mv, n)| (move_index(size, mv) as u16, n.min(u16::MAX as u32) as u16)).collect()
}

/// Packed visits as moves seen through `symmetry`, with their share of the
/// visits (an even share each if none were counted).
fn unpack_visits(size: Size, visits: &[(u16, u16)], symmetry: Symmetry) -> Vec<(konane_rules::Move, f32)> {
    let total: f32 = visits.iter().map(|&(_, n)| n as f32).sum();
    visits
        .iter()
        .map(|&(index, n)| {
            let mv = index_move(size, index as usize).expect("stored indices are on the board");
            let p = if total > 0.0 { n as f32 / total } else { 1.0 / visits.len() as f32 };
            (symmetry.apply_move(size, mv), p)
        })
        .collect()
}

impl PackedSample {
    /// Packs a position with its move visit counts and value target.
    pub fn new(position: &Position, visits: impl IntoIterator<Item = (konane_rules::Move, u32)>, value: f32) -> Self {
        let size = position.size();
        let mut cells = vec![0u8; (2 * size.cells()).div_ceil(8)].into_boxed_slice();
        for cell in size.all_cells() {
            let code = match position.stone_at(cell) {
                None => 0,
                Some(Color::Black) => 1,
                Some(Color::White) => 2,
            };
            let i = cell.index();
            cells[i / 4] |= code << (2 * (i % 4));
        }
        PackedSample {
            cols: size.cols() as u8,
            rows: size.rows() as u8,
            white_to_move: position.side_to_move() == Color::White,
            cells,
            visits: pack_visits(size, visits),
            value,
            reply: Box::default(),
        }
    }

    /// Sets the reply target: the search's visits of the opponent's moves
    /// in the position the game went on to.
    pub fn set_reply(&mut self, visits: impl IntoIterator<Item = (konane_rules::Move, u32)>) {
        self.reply = pack_visits(self.size(), visits);
    }

    /// The side to move, whom `value` is for.
    pub fn side_to_move(&self) -> Color {
        if self.white_to_move { Color::White } else { Color::Black }
    }

    /// The board size.
    pub fn size(&self) -> Size {
        Size::new_const(self.cols, self.rows)
    }

    /// The position.
    pub fn position(&self) -> Position {
        Position::from_fn(self.size(), self.side_to_move(), |cell| {
            let i = cell.index();
            match (self.cells[i / 4] >> (2 * (i % 4))) & 3 {
                1 => Some(Color::Black),
                2 => Some(Color::White),
                _ => None,
            }
        })
    }

    /// The training sample, seen through `symmetry`: the position and the
    /// visit distributions (normalised) transformed alike.
    pub fn unpack(&self, symmetry: Symmetry) -> Sample {
        let size = self.size();
        Sample {
            position: symmetry.apply(&self.position()),
            policy: unpack_visits(size, &self.visits, symmetry),
            value: self.value,
            reply: unpack_visits(size, &self.reply, symmetry),
        }
    }

    /// Bytes the sample takes in memory, roughly (for memory reports).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.cells.len() + 4 * (self.visits.len() + self.reply.len())
    }

    /// Checks a sample read from a file: a board size the rules know, its
    /// cells' bytes, policy indices on the board and a value in [-1, 1].
    fn check(&self) -> Result<(), String> {
        let size = Size::new(self.cols as usize, self.rows as usize).map_err(|e| format!("bad board size: {e}"))?;
        let cell_bytes = (2 * size.cells()).div_ceil(8);
        if self.cells.len() != cell_bytes {
            return Err(format!("{} bytes of cells for a {size} board, which needs {cell_bytes}", self.cells.len()));
        }
        let off_board = |visits: &[(u16, u16)]| {
            visits.iter().find(|&&(index, _)| index_move(size, index as usize).is_none()).map(|&(index, _)| index)
        };
        if let Some(index) = off_board(&self.visits).or(off_board(&self.reply)) {
            return Err(format!("policy index {index} is off a {size} board"));
        }
        if !(-1.0..=1.0).contains(&self.value) {
            return Err(format!("value {} outside [-1, 1]", self.value));
        }
        Ok(())
    }

    /// Reads a sample of the version 1 layout.
    fn read_v1(reader: &mut Reader<'_>) -> Result<PackedSample, String> {
        let (cols, rows, side) = (reader.u8()?, reader.u8()?, reader.u8()?);
        let size = Size::new(cols as usize, rows as usize).map_err(|e| format!("bad board size: {e}"))?;
        if side > 1 {
            return Err(format!("bad side to move {side}"));
        }
        let cells: Box<[u8]> = reader.bytes((2 * size.cells()).div_ceil(8))?.into();
        let moves = reader.u16()? as usize;
        let mut visits = Vec::with_capacity(moves.min(reader.remaining() / 4));
        for _ in 0..moves {
            visits.push((reader.u16()?, reader.u16()?));
        }
        let value = f32::from_le_bytes(reader.bytes(4)?.try_into().unwrap());
        let reply = Box::default();
        Ok(PackedSample { cols, rows, white_to_move: side == 1, cells, visits: visits.into(), value, reply })
    }
}

/// bincode's standard encoding, each sample at most [`MAX_SAMPLE_BYTES`].
fn sample_encoding() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_SAMPLE_BYTES>()
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.at)
    }
    fn bytes(&mut self, n: usize) -> Result<&[u8], String> {
        let slice = self.bytes.get(self.at..self.at + n).ok_or("truncated")?;
        self.at += n;
        Ok(slice)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.bytes(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().unwrap()))
    }
    /// One value in bincode's standard encoding, at most a sample's bytes.
    fn decode<T: bincode::Decode<()>>(&mut self) -> Result<T, String> {
        let rest = self.bytes.get(self.at..).unwrap_or_default();
        let (value, used) = bincode::decode_from_slice::<T, _>(rest, sample_encoding()).map_err(|e| e.to_string())?;
        self.at += used;
        Ok(value)
    }
}

/// `samples` in the file layout of the module documentation (what
/// [`ReplayBuffer::from_bytes`] reads).
pub fn encode<'a>(samples: impl IntoIterator<Item = &'a PackedSample, IntoIter: ExactSizeIterator>) -> Vec<u8> {
    let samples = samples.into_iter();
    let mut out = Vec::with_capacity(16 + samples.len() * 48);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&REPLAY_VERSION.to_le_bytes());
    out.extend_from_slice(&(samples.len() as u64).to_le_bytes());
    for sample in samples {
        bincode::encode_into_std_write(sample, &mut out, sample_encoding())
            .expect("a sample encodes into memory within its limit");
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Whether a training batch holds one board size or all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeMix {
    /// Every sample of a batch has the size of its first draw: a run of
    /// several sizes trains them one batch at a time.
    #[default]
    OneSize,
    /// Samples of every size, each drawn uniformly from the window.
    Mixed,
}

/// The newest `capacity` samples, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayBuffer {
    samples: VecDeque<PackedSample>,
    capacity: usize,
}

impl ReplayBuffer {
    /// An empty window of `capacity` samples.
    pub fn new(capacity: usize) -> ReplayBuffer {
        ReplayBuffer { samples: VecDeque::new(), capacity }
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether the window is empty.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The window size.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The samples, oldest first, taken out of the window.
    pub fn into_samples(self) -> Vec<PackedSample> {
        self.samples.into()
    }

    /// The samples, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &PackedSample> {
        self.samples.iter()
    }

    /// Appends samples, dropping the oldest beyond the window.
    pub fn extend(&mut self, samples: impl IntoIterator<Item = PackedSample>) {
        self.samples.extend(samples);
        self.trim();
    }

    fn trim(&mut self) {
        while self.samples.len() > self.capacity {
            self.samples.pop_front();
        }
    }

    /// Approximate memory held by the samples.
    pub fn heap_bytes(&self) -> usize {
        self.samples.iter().map(PackedSample::heap_bytes).sum()
    }

    /// A training batch of up to `batch_size` samples drawn uniformly (with
    /// replacement) from the window, all of one board size: the first draw
    /// picks the size, later draws of other sizes are redrawn. With
    /// `augment` each sample is seen through a random symmetry of its board.
    ///
    /// # Panics
    /// On an empty window.
    pub fn sample_batch<R: Rng + ?Sized>(&self, batch_size: usize, augment: bool, rng: &mut R) -> Vec<Sample> {
        self.sample_batch_with(batch_size, augment, None, SizeMix::OneSize, rng)
    }

    /// As [`ReplayBuffer::sample_batch`], with `n` of the `batch_size`
    /// samples drawn from `book` (those of the batch's size with
    /// [`SizeMix::OneSize`]; if it has none, the window gives them), and
    /// with `mix` deciding whether a batch is one size or every size in
    /// proportion to its share of the window. Without a book the draws are those of
    /// `sample_batch` (or of a plain uniform draw when mixed).
    ///
    /// # Panics
    /// On an empty window.
    pub fn sample_batch_with<R: Rng + ?Sized>(
        &self,
        batch_size: usize,
        augment: bool,
        book: Option<(&ReplayBuffer, usize)>,
        mix: SizeMix,
        rng: &mut R,
    ) -> Vec<Sample> {
        assert!(!self.samples.is_empty(), "sampling from an empty replay window");
        let first = &self.samples[rng.random_range(0..self.samples.len())];
        let size = match mix {
            SizeMix::OneSize => Some(first.size()),
            SizeMix::Mixed => None,
        };
        // A book without the batch's size (openings are solved only on the
        // boards that solve), or with nothing in it, leaves the whole batch
        // to the window.
        let from_book = book
            .filter(|(book, _)| book.iter().any(|s| size.is_none_or(|size| s.size() == size)))
            .map_or(0, |(_, n)| n.min(batch_size));
        let mut batch = Vec::with_capacity(batch_size);
        self.draw_into(&mut batch, batch_size - from_book, size, Some(first), augment, rng);
        if let Some((book, _)) = book.filter(|_| from_book > 0) {
            let wanted = batch.len() + from_book;
            book.draw_into(&mut batch, wanted, size, None, augment, rng);
        }
        batch
    }

    /// Draws samples (only of `size`, if given; `first` being the first
    /// draw, if given) until `batch` holds `wanted`, or 64 draws per wanted
    /// sample failed.
    fn draw_into<R: Rng + ?Sized>(
        &self,
        batch: &mut Vec<Sample>,
        wanted: usize,
        size: Option<Size>,
        mut first: Option<&PackedSample>,
        augment: bool,
        rng: &mut R,
    ) {
        let mut draws = 0;
        while batch.len() < wanted && draws < 64 * wanted {
            let sample = first.take().unwrap_or_else(|| &self.samples[rng.random_range(0..self.samples.len())]);
            draws += 1;
            if size.is_some_and(|size| sample.size() != size) {
                continue;
            }
            let symmetries = Symmetry::of(sample.size());
            let symmetry = if augment { *symmetries.choose(rng).expect("the identity") } else { Symmetry::Identity };
            batch.push(sample.unpack(symmetry));
        }
    }

    /// The window in the file layout of the module documentation.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(&self.samples)
    }

    /// Reads a window written by [`ReplayBuffer::to_bytes`], with room for
    /// `capacity` samples.
    ///
    /// # Errors
    /// A foreign, damaged, truncated or newer file, with the reason.
    pub fn from_bytes(bytes: &[u8], capacity: usize) -> Result<ReplayBuffer, ReplayError> {
        if !bytes.starts_with(MAGIC) {
            return Err(ReplayError::Magic);
        }
        if bytes.len() < MAGIC.len() + 16 {
            return Err(ReplayError::Truncated(bytes.len()));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(ReplayError::Checksum);
        }
        let at = MAGIC.len();
        let version = u32::from_le_bytes(body[at..at + 4].try_into().unwrap());
        if !(1..=REPLAY_VERSION).contains(&version) {
            return Err(ReplayError::Version(version));
        }
        let claimed = u64::from_le_bytes(body[at + 4..at + 12].try_into().unwrap());
        let mut reader = Reader { bytes: body, at: at + 12 };
        // Every sample takes at least MIN_SAMPLE_BYTES: a count the file
        // cannot hold is refused before anything is allocated for it.
        let room = reader.remaining() / MIN_SAMPLE_BYTES;
        if claimed > room as u64 {
            return Err(ReplayError::Count { claimed, room });
        }
        let count = claimed as usize;
        let mut samples = VecDeque::with_capacity(count.min(capacity));
        for index in 0..count {
            let sample = match version {
                1 => PackedSample::read_v1(&mut reader),
                2 => reader.decode::<PackedSampleV2>().map(PackedSample::from),
                _ => reader.decode::<PackedSample>(),
            };
            let sample = sample.and_then(|s| s.check().map(|()| s));
            samples.push_back(sample.map_err(|reason| ReplayError::Sample { index, reason })?);
            if samples.len() > capacity {
                samples.pop_front();
            }
        }
        if reader.at != body.len() {
            return Err(ReplayError::Trailing);
        }
        let mut buffer = ReplayBuffer { samples, capacity };
        buffer.trim();
        Ok(buffer)
    }

    /// Writes the window to `path` atomically.
    ///
    /// # Errors
    /// I/O failure.
    pub fn save(&self, path: &Path) -> Result<(), TrainError> {
        konane_files::write_atomically(path, &self.to_bytes())?;
        Ok(())
    }

    /// Reads a window from `path`.
    ///
    /// # Errors
    /// Missing, damaged or foreign file.
    pub fn load(path: &Path, capacity: usize) -> Result<ReplayBuffer, TrainError> {
        let bytes = konane_files::read_bounded(path, MAX_REPLAY_BYTES, "replay file")?;
        ReplayBuffer::from_bytes(&bytes, capacity)
            .map_err(|error| TrainError::Damaged { path: path.into(), reason: error.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// A random game's samples, each with the next one's visits as its
    /// reply (the last without).
    fn game_samples(size: &str, seed: u64) -> Vec<PackedSample> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut position = Position::start(size.parse().unwrap());
        let mut out: Vec<PackedSample> = Vec::new();
        while !position.is_over() {
            let moves = position.moves();
            let visits: Vec<_> = moves.iter().map(|&m| (m, rng.random_range(0..50u32))).collect();
            if let Some(last) = out.last_mut() {
                last.set_reply(visits.iter().copied());
            }
            out.push(PackedSample::new(&position, visits, if out.len().is_multiple_of(2) { 1.0 } else { -1.0 }));
            position.play_unchecked(moves[rng.random_range(0..moves.len())]);
        }
        out
    }

    #[test]
    fn packing_round_trips_positions_and_policies() {
        for size in ["4x4", "5x7", "6x6", "8x8", "11x11", "20x20"] {
            for sample in game_samples(size, 3) {
                let position = sample.position();
                assert_eq!(PackedSample::new(&position, [], 0.0).cells, sample.cells);
                let unpacked = sample.unpack(Symmetry::Identity);
                assert_eq!(unpacked.position, position);
                assert_eq!(sample.side_to_move(), position.side_to_move());
                let moves = position.moves();
                assert_eq!(unpacked.policy.len(), moves.len());
                assert!(unpacked.policy.iter().all(|(m, _)| moves.contains(m)));
                let total: f32 = unpacked.policy.iter().map(|p| p.1).sum();
                assert!((total - 1.0).abs() < 1e-4 || moves.is_empty());
            }
        }
    }

    #[test]
    fn symmetric_samples_have_legal_policies() {
        for sample in game_samples("6x6", 5) {
            for &sym in Symmetry::of(sample.size()) {
                let s = sample.unpack(sym);
                let moves = s.position.moves();
                assert!(s.policy.iter().all(|(m, _)| moves.contains(m)), "{sym:?}");
            }
        }
        // A reply is the opponent's moves in the next position, under the
        // same symmetry.
        let samples = game_samples("6x8", 6);
        for pair in samples.windows(2) {
            for &sym in Symmetry::of(pair[0].size()) {
                let (reply, next) = (pair[0].unpack(sym).reply, pair[1].unpack(sym));
                assert_eq!(reply, next.policy, "{sym:?}");
                assert_ne!(pair[0].unpack(sym).position, next.position);
            }
        }
        assert!(samples.last().unwrap().unpack(Symmetry::Identity).reply.is_empty());
    }

    #[test]
    fn file_round_trips_and_detects_damage() {
        let mut buffer = ReplayBuffer::new(100);
        for seed in 0..10 {
            buffer.extend(game_samples("6x6", seed));
            buffer.extend(game_samples("8x8", seed));
        }
        assert_eq!(buffer.len(), 100);
        let bytes = buffer.to_bytes();
        assert_eq!(ReplayBuffer::from_bytes(&bytes, 100).unwrap(), buffer);
        assert_eq!(ReplayBuffer::from_bytes(&bytes, 10).unwrap().len(), 10);
        assert_eq!(ReplayBuffer::from_bytes(&bytes[..bytes.len() - 9], 100), Err(ReplayError::Checksum));
        let mut flipped = bytes.clone();
        flipped[40] ^= 1;
        assert!(ReplayBuffer::from_bytes(&flipped, 100).is_err());
        assert_eq!(ReplayBuffer::from_bytes(b"hello", 100), Err(ReplayError::Magic));
    }

    /// The version 1 layout of `samples`, as earlier builds wrote it.
    fn version_1(samples: &[PackedSample]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&(samples.len() as u64).to_le_bytes());
        for s in samples {
            out.extend_from_slice(&[s.cols, s.rows, s.white_to_move as u8]);
            out.extend_from_slice(&s.cells);
            out.extend_from_slice(&(s.visits.len() as u16).to_le_bytes());
            for &(index, n) in &s.visits {
                out.extend_from_slice(&index.to_le_bytes());
                out.extend_from_slice(&n.to_le_bytes());
            }
            out.extend_from_slice(&s.value.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// The version 2 layout of `samples` (replies dropped), as earlier
    /// builds wrote it.
    fn version_2(samples: &[PackedSample]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&2u32.to_le_bytes());
        out.extend_from_slice(&(samples.len() as u64).to_le_bytes());
        for s in samples {
            let fields = (s.cols, s.rows, s.white_to_move, &s.cells, &s.visits, s.value);
            bincode::encode_into_std_write(fields, &mut out, sample_encoding()).unwrap();
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn files_of_versions_1_and_2_still_load_and_version_3_is_written() {
        let samples: Vec<PackedSample> = game_samples("6x6", 1).into_iter().chain(game_samples("5x7", 2)).collect();
        assert!(samples.iter().filter(|s| !s.reply.is_empty()).count() > samples.len() / 2);
        let without_replies: Vec<PackedSample> =
            samples.iter().map(|s| PackedSample { reply: Box::default(), ..s.clone() }).collect();
        for old in [version_1(&samples), version_2(&samples)] {
            let old = ReplayBuffer::from_bytes(&old, 1000).unwrap();
            assert_eq!(old.iter().cloned().collect::<Vec<_>>(), without_replies);
        }
        let mut window = ReplayBuffer::new(1000);
        window.extend(samples.iter().cloned());
        let new = window.to_bytes();
        assert_eq!(u32::from_le_bytes(new[MAGIC.len()..MAGIC.len() + 4].try_into().unwrap()), REPLAY_VERSION);
        assert_eq!(ReplayBuffer::from_bytes(&new, 1000).unwrap(), window);
        let without = ReplayBuffer::from_bytes(&version_1(&samples), 1000).unwrap().to_bytes();
        assert!(without.len() < version_1(&samples).len(), "bincode's varints pack smaller than fixed u16s");
        // A version of the future is refused by number.
        let mut future = new.clone();
        future[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&9u32.to_le_bytes());
        let end = future.len() - 4;
        let crc = crc32fast::hash(&future[..end]);
        future[end..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(ReplayBuffer::from_bytes(&future, 10), Err(ReplayError::Version(9)));
    }

    /// Ten games each of 6x6 and 5x5, interleaved.
    fn two_size_window() -> ReplayBuffer {
        let mut window = ReplayBuffer::new(10_000);
        for seed in 0..10 {
            window.extend(game_samples("6x6", seed));
            window.extend(game_samples("5x5", seed));
        }
        window
    }

    #[test]
    fn batches_are_of_one_size() {
        let buffer = two_size_window();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut sizes = std::collections::BTreeMap::<String, usize>::new();
        for _ in 0..40 {
            let batch = buffer.sample_batch(32, true, &mut rng);
            assert_eq!(batch.len(), 32);
            assert!(batch.iter().all(|s| s.position.size() == batch[0].position.size()));
            *sizes.entry(batch[0].position.size().to_string()).or_default() += 1;
        }
        // Both sizes get batches, each in rough proportion to its share of the window.
        assert_eq!(sizes.len(), 2, "{sizes:?}");
        assert!(sizes.values().all(|&n| n >= 8), "{sizes:?}");
    }

    #[test]
    fn mixed_batches_hold_every_size_in_proportion() {
        let window = two_size_window();
        let mut book = ReplayBuffer::new(10_000);
        book.extend(game_samples("4x4", 99).into_iter().map(|s| PackedSample { value: 0.5, ..s }));
        let share_6x6 =
            window.samples.iter().filter(|s| s.size().to_string() == "6x6").count() as f64 / window.len() as f64;
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let (mut drawn, mut of_6x6, mut mixed) = (0, 0, 0);
        for _ in 0..40 {
            let batch = window.sample_batch_with(64, true, Some((&book, 8)), SizeMix::Mixed, &mut rng);
            assert_eq!(batch.len(), 64);
            // The book's share comes last, whatever its size.
            assert!(batch[56..].iter().all(|s| s.value == 0.5 && s.position.size().to_string() == "4x4"));
            let window_part = &batch[..56];
            assert!(window_part.iter().all(|s| s.value != 0.5));
            let n = window_part.iter().filter(|s| s.position.size().to_string() == "6x6").count();
            mixed += usize::from(n > 0 && n < window_part.len());
            (drawn, of_6x6) = (drawn + window_part.len(), of_6x6 + n);
        }
        assert_eq!(mixed, 40, "every batch holds both sizes");
        let share = of_6x6 as f64 / drawn as f64;
        assert!((share - share_6x6).abs() < 0.05, "6x6 is {share:.3} of the draws, {share_6x6:.3} of the window");
    }

    #[test]
    fn an_empty_book_leaves_the_whole_batch_to_the_window() {
        let window = two_size_window();
        let empty = ReplayBuffer::new(16);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for mix in [SizeMix::Mixed, SizeMix::OneSize] {
            for _ in 0..10 {
                let batch = window.sample_batch_with(64, true, Some((&empty, 8)), mix, &mut rng);
                assert_eq!(batch.len(), 64, "{mix:?}: no sample owed to an empty book");
            }
        }
    }

    #[test]
    fn a_book_supplies_its_share_of_each_batch_in_the_batch_size() {
        let window = two_size_window();
        let mut book = ReplayBuffer::new(10_000);
        // The book holds 6x6 samples whose value (0.5) no game sample has.
        book.extend(game_samples("6x6", 99).into_iter().map(|s| PackedSample { value: 0.5, ..s }));
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let (mut with_6x6, mut with_5x5) = (0, 0);
        for _ in 0..40 {
            let batch = window.sample_batch_with(32, true, Some((&book, 8)), SizeMix::OneSize, &mut rng);
            let size = batch[0].position.size();
            assert!(batch.iter().all(|s| s.position.size() == size));
            let from_book = batch.iter().filter(|s| s.value == 0.5).count();
            if size == "6x6".parse().unwrap() {
                with_6x6 += 1;
                assert_eq!((batch.len(), from_book), (32, 8));
                assert!(batch[24..].iter().all(|s| s.value == 0.5), "book samples come last");
            } else {
                // No 5x5 openings in the book: the window gives the whole batch.
                with_5x5 += 1;
                assert_eq!((batch.len(), from_book), (32, 0));
            }
        }
        assert!(with_6x6 > 0 && with_5x5 > 0);
        // Without a book the draws are exactly those of `sample_batch`.
        let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(5), ChaCha8Rng::seed_from_u64(5));
        for _ in 0..5 {
            let plain: Vec<_> = window.sample_batch(16, true, &mut a).into_iter().map(|s| s.position).collect();
            let with: Vec<_> = window
                .sample_batch_with(16, true, None, SizeMix::OneSize, &mut b)
                .into_iter()
                .map(|s| s.position)
                .collect();
            assert_eq!(plain, with);
        }
    }
}
