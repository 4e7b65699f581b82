//! Zobrist keys, generated at compile time so hashes are the same in every
//! build and every process (transposition tables, replay dedup, tests).

use crate::geometry::{Color, MAX_SIDE};

const CELLS: usize = MAX_SIDE as usize * MAX_SIDE as usize;

const fn splitmix64(state: u64) -> (u64, u64) {
    let state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (state, z ^ (z >> 31))
}

const fn make_keys(mut state: u64) -> [[u64; CELLS]; 2] {
    let mut keys = [[0u64; CELLS]; 2];
    let mut color = 0;
    while color < 2 {
        let mut cell = 0;
        while cell < CELLS {
            let (next, key) = splitmix64(state);
            state = next;
            keys[color][cell] = key;
            cell += 1;
        }
        color += 1;
    }
    keys
}

static STONE_KEYS: [[u64; CELLS]; 2] = make_keys(0x4B6F_6E61_6E65_2121); // "Konane!!"

/// A second, independent set: the solver's check hash, so that a table
/// entry is trusted only when 64 + 32 bits agree.
static CHECK_KEYS: [[u64; CELLS]; 2] = make_keys(0x5072_6F6F_6621_2121); // "Proof!!!"

/// Key of the side to move being white.
pub const WHITE_TO_MOVE: u64 = 0x2D35_8DCC_AA6C_78A5;

/// Key of a stone of `color` on cell index `cell`.
#[inline(always)]
pub fn stone(color: Color, cell: usize) -> u64 {
    STONE_KEYS[color.index()][cell]
}

/// Check key of a stone of `color` on cell index `cell` (see `CHECK_KEYS`).
#[inline(always)]
pub fn check_stone(color: Color, cell: usize) -> u32 {
    (CHECK_KEYS[color.index()][cell] >> 32) as u32
}

/// Check key of the side to move being white.
pub const CHECK_WHITE_TO_MOVE: u32 = 0x9E6C_63D0;

/// Key of the board size, so equal stone patterns on boards of equal cell
/// count but different shape (4x4 and 2x8) never share a hash.
pub fn size(size: crate::geometry::Size) -> u64 {
    splitmix64(((size.cols() as u64) << 8 | size.rows() as u64) ^ 0x5EED_0F5A_1E5E_ED00).1
}
