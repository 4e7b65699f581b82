//! A cache of network outputs in front of an evaluator.
//!
//! Self-play asks the same network about the same positions many times:
//! every game of an iteration searches the same opening positions, and
//! Kōnane's jumps in different parts of the board reach one position in
//! several orders. [`CachedEvaluator`] answers those from a table (lc0's
//! NN cache, KataGo's nnCache) and sends only the rest to the network.

use konane_rules::Position;

use crate::evaluator::{Batch, EvalError, Evaluator};

/// One remembered output: the position it belongs to (compared whole, so
/// a hash collision is never a wrong answer), its value and its priors.
#[derive(Clone, Debug, Default)]
struct Slot {
    position: Option<Position>,
    value: f32,
    priors: Vec<f32>,
}

/// Bytes of one slot of a [`CachedEvaluator`], besides its priors on the
/// heap: every slot is allocated when the cache is made, so a cache of `n`
/// takes `n` times this at once.
pub const SLOT_BYTES: usize = std::mem::size_of::<Slot>();

/// Where an output of the batch comes from.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// The cache slot holding it.
    Cached(usize),
    /// This position of the batch of misses.
    Evaluated(usize),
}

/// An [`Evaluator`] that remembers the outputs of the last positions it
/// saw, in a direct-mapped table of `capacity` slots (a new output
/// replaces whatever shared its slot). The outputs are the inner
/// evaluator's, copied: a cache in front of a network that answers each
/// position the same whatever the batch gives the same searches. The
/// table is allocated once and its priors buffers reused, so a cache in
/// steady state allocates nothing.
#[derive(Debug)]
pub struct CachedEvaluator<E> {
    inner: E,
    slots: Vec<Slot>,
    misses: Batch,
    sources: Vec<Source>,
    hits: u64,
}

impl<E: Evaluator> CachedEvaluator<E> {
    /// A cache of `capacity` outputs (rounded up to a power of two) in
    /// front of `inner`; 0 passes every position through.
    pub fn new(inner: E, capacity: usize) -> CachedEvaluator<E> {
        let slots = if capacity == 0 { 0 } else { capacity.next_power_of_two() };
        CachedEvaluator {
            inner,
            slots: vec![Slot::default(); slots],
            misses: Batch::new(),
            sources: Vec::new(),
            hits: 0,
        }
    }

    /// The evaluator behind the cache.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Positions answered from the cache (the rest went to the inner
    /// evaluator, which counts its own).
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Forgets every output (for a new network).
    pub fn clear(&mut self) {
        for slot in &mut self.slots {
            slot.position = None;
        }
    }

    fn slot_of(&self, position: &Position) -> usize {
        position.hash() as usize & (self.slots.len() - 1)
    }
}

impl<E: Evaluator> Evaluator for CachedEvaluator<E> {
    fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
        if self.slots.is_empty() {
            return self.inner.evaluate(batch);
        }
        self.misses.clear();
        self.sources.clear();
        for position in batch.positions() {
            let slot = self.slot_of(position);
            if self.slots[slot].position.as_ref() == Some(position) {
                self.sources.push(Source::Cached(slot));
            } else {
                self.sources.push(Source::Evaluated(self.misses.len()));
                self.misses.push(*position);
            }
        }
        self.hits += (batch.len() - self.misses.len()) as u64;
        if !self.misses.is_empty() {
            self.inner.evaluate(&mut self.misses)?;
            self.misses.check_complete("the evaluator behind the cache")?;
        }
        // Every output is copied out before any slot is overwritten: a
        // miss may share its slot with a hit of the same batch.
        batch.clear_outputs();
        for &source in &self.sources {
            let (value, priors) = match source {
                Source::Cached(slot) => (self.slots[slot].value, self.slots[slot].priors.as_slice()),
                Source::Evaluated(i) => self.misses.output(i),
            };
            batch.push_output(value, priors);
        }
        for i in 0..self.misses.len() {
            let position = self.misses.positions()[i];
            let slot = self.slot_of(&position);
            let (value, priors) = self.misses.output(i);
            let entry = &mut self.slots[slot];
            entry.position = Some(position);
            entry.value = value;
            entry.priors.clear();
            entry.priors.extend_from_slice(priors);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use konane_rules::Size;

    /// Positions along a game: some repeated, some new.
    fn positions(plies: usize) -> Vec<Position> {
        let mut position = Position::start(Size::new(6, 6).unwrap());
        let mut line = vec![position];
        for _ in 0..plies {
            let moves = position.moves();
            position.play_unchecked(moves[moves.len() / 2]);
            line.push(position);
        }
        line
    }

    /// An evaluator whose outputs depend on the position alone (the value
    /// on its hash, the priors on its move count), counting what reaches it.
    struct Counting {
        seen: usize,
    }

    impl Evaluator for Counting {
        fn evaluate(&mut self, batch: &mut Batch) -> Result<(), EvalError> {
            self.seen += batch.len();
            for i in 0..batch.len() {
                let position = batch.positions()[i];
                let moves = position.count_moves() as usize;
                batch.priors_mut().extend(std::iter::repeat_n(1.0 / moves as f32, moves));
                batch.finish_output((position.hash() % 1999) as f32 / 1999.0);
            }
            Ok(())
        }
    }

    fn counting() -> Counting {
        Counting { seen: 0 }
    }

    fn outputs(batch: &Batch) -> Vec<(f32, Vec<f32>)> {
        (0..batch.len()).map(|i| (batch.output(i).0, batch.output(i).1.to_vec())).collect()
    }

    /// The cache answers repeats without the inner evaluator, and its
    /// answers are the inner evaluator's, in the batch's order.
    #[test]
    fn repeats_are_answered_from_the_cache_with_the_same_outputs() {
        let line = positions(8);
        let mut cached = CachedEvaluator::new(counting(), 1024);
        let mut plain = counting();
        let mut first = Batch::new();
        line[..5].iter().for_each(|p| first.push(*p));
        cached.evaluate(&mut first).unwrap();
        assert_eq!((cached.inner().seen, cached.hits()), (5, 0));
        // Positions 3-8, in reverse: 3 and 4 are known.
        let mut second = Batch::new();
        line[3..].iter().rev().for_each(|p| second.push(*p));
        let mut expected = second.clone();
        cached.evaluate(&mut second).unwrap();
        plain.evaluate(&mut expected).unwrap();
        assert_eq!(outputs(&second), outputs(&expected));
        assert_eq!((cached.inner().seen, cached.hits()), (9, 2), "11 positions asked about");
        cached.clear();
        cached.evaluate(&mut second).unwrap();
        assert_eq!(cached.inner().seen, 15, "a cleared cache knows nothing");
    }

    /// Positions that share a slot replace each other and are never
    /// confused, even within one batch; capacity 0 passes through.
    #[test]
    fn a_shared_slot_never_gives_another_positions_output() {
        let line = positions(6);
        let mut one_slot = CachedEvaluator::new(counting(), 1);
        let mut plain = counting();
        for _ in 0..2 {
            let mut batch = Batch::new();
            line.iter().for_each(|p| batch.push(*p));
            let mut expected = batch.clone();
            one_slot.evaluate(&mut batch).unwrap();
            plain.evaluate(&mut expected).unwrap();
            assert_eq!(outputs(&batch), outputs(&expected));
        }
        // The last position of the first batch was kept; it is the only hit.
        assert_eq!((one_slot.inner().seen, one_slot.hits()), (13, 1), "14 positions asked about");
        let mut off = CachedEvaluator::new(counting(), 0);
        let mut batch = Batch::new();
        line.iter().for_each(|p| batch.push(*p));
        off.evaluate(&mut batch).unwrap();
        off.evaluate(&mut batch).unwrap();
        assert_eq!((off.inner().seen, off.hits()), (14, 0));
    }
}
