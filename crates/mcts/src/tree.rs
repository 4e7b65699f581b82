//! The search tree: one arena of nodes, the children of a node being one
//! contiguous block of it.
//!
//! A node holds the statistics of the edge that leads to it (move, prior,
//! visits, value sum) as well as its own children's block, so a parent scans
//! its children in one pass over adjacent memory when it selects. Children
//! are created all at once, in the order [`Position::legal_moves`] lists the
//! moves, when their parent is expanded; the arena is cleared, never freed,
//! so a search in steady state allocates nothing.
//!
//! Values are stored from the point of view of the player who moved *into*
//! the node (the side to move at its parent): the parent then reads its
//! children's means directly when it selects.
//!
//! [`Position::legal_moves`]: konane_rules::Position::legal_moves

use konane_rules::{Cell, Move};

/// Index of the root in the arena.
pub(crate) const ROOT: u32 = 0;

/// "No node": the root's parent.
pub(crate) const NONE: u32 = u32::MAX;

/// What the search knows about a node's children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Not evaluated yet (or not expanded because the arena is full).
    Unexpanded,
    /// Handed to the evaluator by the current gather; not back yet.
    Pending,
    /// Children created (none if the side to move has no move).
    Expanded,
}

/// Whether a node's game-theoretic value is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proof {
    /// Not known.
    Unknown,
    /// The player who moved into the node wins with best play.
    MoverWins,
    /// The player who moved into the node loses with best play.
    MoverLoses,
}

/// Bytes of one node of a search tree: what `SearchConfig::max_nodes`
/// and a training config's memory estimate count in.
pub const NODE_BYTES: usize = std::mem::size_of::<Node>();

// The arena's documented sizes (SearchConfig::max_nodes: 2^26 nodes are
// 2.5 GiB) assume this.
const _: () = assert!(NODE_BYTES <= 40, "a search-tree node outgrew 40 bytes");

/// One node of the arena, with the statistics of the edge into it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    /// Sum of the backed-up values, for the player who moved into the node.
    /// f64: long searches add millions of values in [-1, 1].
    pub value_sum: f64,
    /// The evaluator's prior for the move into the node (noised at the root).
    pub prior: f32,
    /// Completed simulations through the node (its own evaluation included).
    pub visits: u32,
    /// Descents through the node not yet backed up (virtual loss).
    pub in_flight: u32,
    /// The parent's index, [`NONE`] for the root.
    pub parent: u32,
    /// Index of the first child (meaningful once expanded).
    pub first_child: u32,
    /// Number of children (at most `MAX_MOVES` = 760).
    pub num_children: u16,
    /// The move into the node (a placeholder at the root).
    pub mv: Move,
    /// Expansion state.
    pub state: State,
    /// Proof state.
    pub proof: Proof,
}

impl Node {
    /// A fresh, unvisited node for `mv` under `parent`.
    pub fn new(mv: Move, prior: f32, parent: u32) -> Node {
        Node {
            value_sum: 0.0,
            prior,
            visits: 0,
            in_flight: 0,
            parent,
            first_child: 0,
            num_children: 0,
            mv,
            state: State::Unexpanded,
            proof: Proof::Unknown,
        }
    }

    /// The arena indices of the children (empty until expanded).
    #[inline]
    pub fn children(&self) -> std::ops::Range<usize> {
        let first = self.first_child as usize;
        first..first + self.num_children as usize
    }

    /// Mean value for the player who moved into the node (0 if unvisited).
    #[inline]
    pub fn mean(&self) -> f64 {
        if self.visits == 0 { 0.0 } else { self.value_sum / self.visits as f64 }
    }
}

/// The placeholder move stored at the root, which no move leads to.
pub(crate) const ROOT_MOVE: Move = Move::Remove(Cell(0));

/// The arena, and a spare one that re-rooting copies into (and swaps).
#[derive(Default)]
pub(crate) struct Tree {
    pub nodes: Vec<Node>,
    spare: Vec<Node>,
}

impl Tree {
    /// Empties the tree down to a fresh, unvisited root.
    pub fn reset(&mut self) {
        self.nodes.clear();
        self.nodes.push(Node::new(ROOT_MOVE, 1.0, NONE));
    }

    #[inline]
    pub fn root(&self) -> &Node {
        &self.nodes[ROOT as usize]
    }

    /// Creates the children of `node`, one per move, with the given priors.
    pub fn expand(&mut self, node: u32, moves: &[Move], priors: impl Iterator<Item = f32>) {
        let first = self.nodes.len() as u32;
        self.nodes.extend(moves.iter().zip(priors).map(|(&mv, prior)| Node::new(mv, prior, node)));
        debug_assert_eq!(self.nodes.len() - first as usize, moves.len());
        let n = &mut self.nodes[node as usize];
        n.first_child = first;
        n.num_children = moves.len() as u16;
        n.state = State::Expanded;
    }

    /// Adds `value` (for the player who moved into `leaf`) to the leaf and,
    /// negated at each step, to its ancestors; clears one in-flight descent.
    pub fn backup(&mut self, leaf: u32, mut value: f64) {
        let mut node = leaf;
        while node != NONE {
            let n = &mut self.nodes[node as usize];
            n.visits += 1;
            n.value_sum += value;
            n.in_flight -= 1;
            value = -value;
            node = n.parent;
        }
    }

    /// Undoes the virtual loss of a descent that stopped at `leaf` without
    /// a result (a collision with a leaf already being evaluated).
    pub fn revert(&mut self, leaf: u32) {
        let mut node = leaf;
        while node != NONE {
            let n = &mut self.nodes[node as usize];
            n.in_flight -= 1;
            node = n.parent;
        }
    }

    /// Spreads the proof just set on `node` to its ancestors (MCTS-solver):
    /// a parent with a child won for its mover is lost for its own mover;
    /// a parent whose children are all lost for their mover is won.
    pub fn propagate_proof(&mut self, node: u32) {
        let mut child = node;
        loop {
            let parent = self.nodes[child as usize].parent;
            if parent == NONE || self.nodes[parent as usize].proof != Proof::Unknown {
                return;
            }
            let proof = match self.nodes[child as usize].proof {
                Proof::MoverWins => Proof::MoverLoses,
                Proof::MoverLoses => {
                    let p = &self.nodes[parent as usize];
                    if !self.nodes[p.children()].iter().all(|c| c.proof == Proof::MoverLoses) {
                        return;
                    }
                    Proof::MoverWins
                }
                Proof::Unknown => return,
            };
            self.nodes[parent as usize].proof = proof;
            child = parent;
        }
    }

    /// Makes `child` (a child of the root) the root, keeping its subtree and
    /// dropping the rest. The subtree is copied breadth first into the spare
    /// arena, which then becomes the tree: every node keeps its statistics,
    /// children stay contiguous, and the arena holds no dead nodes, so a long
    /// game of reuse never grows memory beyond one search's worth.
    pub fn reroot(&mut self, child: u32) {
        let spare = &mut self.spare;
        spare.clear();
        let mut root = self.nodes[child as usize];
        root.parent = NONE;
        spare.push(root);
        let mut next = 0;
        while next < spare.len() {
            let old = spare[next];
            if old.num_children > 0 {
                let first = spare.len() as u32;
                for c in old.children() {
                    let mut n = self.nodes[c];
                    n.parent = next as u32;
                    spare.push(n);
                }
                spare[next].first_child = first;
            }
            next += 1;
        }
        std::mem::swap(&mut self.nodes, &mut self.spare);
    }
}
