//! The network as a batched [`Evaluator`] for the search.

use burn::tensor::{Device, Tensor, TensorData};
use konane_mcts::Evaluator;
use konane_rules::{MoveList, Position};

use crate::encoding::{INPUT_PLANES, move_index, policy_len, write_planes};
use crate::model::Net;

/// Runs a [`Net`] on batches of positions. Positions of different sizes in
/// one call are evaluated in runs of equal size (the tower is shared, the
/// tensors are not).
pub struct NetEvaluator {
    net: Net,
    device: Device,
    planes: Vec<f32>,
    moves: MoveList,
    batches: u64,
    positions: u64,
}

impl NetEvaluator {
    /// Evaluates with `net` on `device` (a plain, non-autodiff device).
    pub fn new(net: Net, device: Device) -> NetEvaluator {
        NetEvaluator { net, device, planes: Vec::new(), moves: MoveList::new(), batches: 0, positions: 0 }
    }

    /// Network calls made and positions evaluated so far (mean batch size
    /// = positions / batches).
    pub fn counts(&self) -> (u64, u64) {
        (self.batches, self.positions)
    }

    /// Raw network outputs for positions of one size: policy logits
    /// (`policy_len(size)` per position) and values.
    pub fn forward(&mut self, positions: &[Position]) -> (Vec<f32>, Vec<f32>) {
        let size = positions[0].size();
        let cells = size.cells();
        let stride = INPUT_PLANES * cells;
        self.planes.clear();
        self.planes.resize(positions.len() * stride, 0.0);
        for (position, out) in positions.iter().zip(self.planes.chunks_exact_mut(stride)) {
            debug_assert_eq!(position.size(), size, "one size per forward call");
            write_planes(position, out);
        }
        let shape = [positions.len(), INPUT_PLANES, size.rows(), size.cols()];
        let data = TensorData::new(std::mem::take(&mut self.planes), shape);
        let input = Tensor::<4>::from_data(data, &self.device);
        let (policy, value) = self.net.forward(input);
        self.batches += 1;
        self.positions += positions.len() as u64;
        let policy = policy.into_data().try_to_vec::<f32>().expect("f32 policy");
        let value = value.into_data().try_to_vec::<f32>().expect("f32 value");
        debug_assert_eq!(policy.len(), positions.len() * policy_len(size));
        (policy, value)
    }
}

impl Evaluator for NetEvaluator {
    fn evaluate(&mut self, positions: &[Position], values: &mut Vec<f32>, priors: &mut Vec<f32>) {
        let mut start = 0;
        while start < positions.len() {
            let size = positions[start].size();
            let end = start + positions[start..].iter().take_while(|p| p.size() == size).count();
            let (logits, run_values) = self.forward(&positions[start..end]);
            let per = policy_len(size);
            for (i, position) in positions[start..end].iter().enumerate() {
                values.push(run_values[i]);
                position.legal_moves(&mut self.moves);
                let row = &logits[i * per..(i + 1) * per];
                push_softmax(row, &self.moves, size, priors);
            }
            start = end;
        }
    }
}

/// Softmax of the logits of the legal moves only (illegal moves are masked
/// out before normalising), appended to `priors`.
pub fn push_softmax(logits: &[f32], moves: &MoveList, size: konane_rules::Size, priors: &mut Vec<f32>) {
    let first = priors.len();
    let max = moves.iter().map(|&m| logits[move_index(size, m)]).fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for &mv in moves {
        let p = (logits[move_index(size, mv)] - max).exp();
        total += p;
        priors.push(p);
    }
    for p in &mut priors[first..] {
        *p /= total;
    }
}
