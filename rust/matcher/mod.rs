//! difflib's `SequenceMatcher`, element for element: the same `b2j` index, junk and popular rules,
//! longest-match tie-breaks and matching blocks, so every ratio is bit-identical to Python's.
//!
//! Elements are first mapped to dense ids by the second sequence (`b`): an element of `a` that never
//! occurs in `b` gets [`NONE`] and can match nothing. `b2j` is a CSR array over those ids.
//!
//! Performance notes (measured on ~60-character label pairs, see benches/bench_core.py):
//! - difflib's per-row `j2len` dict becomes two arrays (`cells`) alternated by row parity; only the
//!   entries a row wrote are cleared (two rows later), so a row allocates nothing and a read needs no
//!   branch (what was tried before: docs/perf.md, "Issue 28: the matcher's kernels").
//! - Bytes (strings with every code point below 256) index their tables directly; wider text is
//!   interned into dense ids first.
//! - `BSide` and `Matcher` keep their buffers between calls (thread-local in the bindings), so a call
//!   allocates nothing once warm.
//! - Threshold decisions stop as soon as the matches found so far accept, or found + the best the
//!   pending sub-ranges could still add rejects (`Matcher::ratio_at_least`).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::alloc;
use crate::cancel::Cancel;
use crate::error::Result;
use crate::sym::Sym;

mod bside;
mod hasher;
mod longest;
mod recursion;
mod remap;
mod window;

use crate::simd::byte_dp::POLL_ROWS;
use crate::simd::bytes::{BACK_PAD, FRONT_PAD};
pub use bside::BSide;
pub use hasher::IdHasher;
use hasher::IdMap;
pub use remap::ByteRemap;
use window::PackedWindow;
pub use window::Window;

/// The id of an element of `a` that does not occur in `b`.
pub const NONE: u32 = u32::MAX;
/// A junk or popular position of `b` in `BSide::run_ids`: equal to no id of `a` (not even [`NONE`]).
const UNINDEXED: u32 = u32::MAX - 1;

/// The widest `b` range the byte-row DP takes (its run lengths are bytes).
const DENSE_MAX_WIDTH: usize = 255;

/// A range whose known common run (prefix or suffix) is at least this long is searched from anchor
/// rows (`anchor_core`) instead of row by row.
const ANCHOR_MIN_RUN: usize = 8;

/// `b2j` is also kept as bitsets (ids x words of 64 positions) only up to this many words (512 KiB):
/// the layout grows as distinct elements times length, which for 50,000 distinct lines was 1.3 GB.
const BITSET_MAX_WORDS: usize = 1 << 16;

/// Sequences of ids (lines) with at least this many elements in `a` list the runs of
/// their whole `a` x `b` once (`Matcher::list_runs`) for every sub-range of the recursion to reuse.
const RUN_LIST_MIN_ROWS: usize = 256;
/// The listed runs are every maximal run at least this long: each one crosses a row of this stride.
const RUN_LIST_STRIDE: usize = 8;
/// Listing stops (and the ranges are searched one by one) past this many runs, or past
/// `RUN_LIST_WORK_PER_ELEMENT` steps per element of `a` and `b`: it pays only where runs are few
/// and long, as in line diffs.
const RUN_LIST_MAX_RUNS: usize = 1024;
const RUN_LIST_WORK_PER_ELEMENT: usize = 16;
/// Steps of run extension (a step: ~4 elements compared) between polls of the [`Cancel`] inside
/// one row of a run search: a row of equal lines meets a match in every column, each extended
/// across the whole sequences.
const RUN_LIST_POLL_WORK: usize = 1 << 18;

/// difflib's `_calculate_ratio`: `2.0 * matches / length`, and 1.0 for two empty sequences.
#[inline]
pub fn ratio_of(matches: usize, length: usize) -> f64 {
    if length == 0 {
        1.0
    } else {
        2.0 * matches as f64 / length as f64
    }
}

/// An edit of difflib's `get_opcodes()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Replace,
    Delete,
    Insert,
    Equal,
}

/// difflib's `get_opcodes()` from matching blocks that end with the `(len(a), len(b), 0)` sentinel.
pub fn opcodes(blocks: &[(usize, usize, usize)]) -> Vec<(Tag, usize, usize, usize, usize)> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(2 * blocks.len());
    for &(ai, bj, size) in blocks {
        let tag = match (i < ai, j < bj) {
            (true, true) => Some(Tag::Replace),
            (true, false) => Some(Tag::Delete),
            (false, true) => Some(Tag::Insert),
            (false, false) => None,
        };
        if let Some(tag) = tag {
            out.push((tag, i, ai, j, bj));
        }
        (i, j) = (ai + size, bj + size);
        if size > 0 {
            out.push((Tag::Equal, ai, i, bj, j));
        }
    }
    out
}

/// Work buffers for matching one `a` against a prepared `b`; reuse one per thread.
#[derive(Default, Clone)]
pub struct Matcher {
    a_ids: Vec<u32>,
    /// Two rows of difflib's `j2len` (alternated by row parity), entry `j + 1` for `j`; all zero
    /// between calls.
    cells: Vec<u32>,
    stride: usize,
    /// The windows the matching-block recursion has still to search.
    queue: Vec<PackedWindow>,
    blocks: Vec<(u32, u32, u32)>,
    avail: Vec<u32>,
    /// `a` as bytes and two byte rows, for the dense DP on byte strings.
    a_bytes: Vec<u8>,
    dense: Vec<u8>,
    /// When `runs_listed`: every maximal run of difflib's DP (equal, indexed pairs along a
    /// diagonal) of length >= RUN_LIST_STRIDE in the whole `a` x `b`, as (i, j, length).
    runs: Vec<(u32, u32, u32)>,
    runs_listed: bool,
    /// The longest listed run's length (runs are sorted by start row).
    longest_run: usize,
    /// Runs being extended across anchor rows while listing: (diagonal, end row).
    open_runs: Vec<(usize, usize)>,
    /// Polled by every loop whose work grows with the sequences (a row, a sub-range); once it is
    /// cancelled the search stops early and its results mean nothing (the caller drops them).
    cancel: Cancel,
}

impl Matcher {
    pub fn new() -> Self {
        Matcher::default()
    }

    /// Poll `cancel` from now on (a clone of it: call again, with [`Cancel::never`], to stop).
    pub fn set_cancel(&mut self, cancel: &Cancel) {
        self.cancel = cancel.clone();
    }

    /// Whether the caller's cancellation stopped this search: its results are then meaningless.
    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Reserve, fallibly, what [`Matcher::set_a`] fills for an `a` of `a_len` elements against a
    /// `b` of `b_len`: `a`'s ids (and for byte strings its padded copy), and the two DP rows over
    /// `b` (`cells`). After it, `set_a` allocates nothing sized by the input.
    pub fn reserve_for<T: Sym>(&mut self, a_len: usize, b_len: usize) -> Result<()> {
        alloc::reserve_total(&mut self.a_ids, a_len)?;
        if T::is_byte() {
            let padded = alloc::sum(a_len, FRONT_PAD + BACK_PAD, "a sequence")?;
            alloc::reserve_total(&mut self.a_bytes, padded)?;
        }
        let cells = alloc::product(2, alloc::sum(b_len, 1, "a sequence")?, "a sequence")?;
        alloc::reserve_total(&mut self.cells, cells)
    }

    /// [`ratio_with`] with the buffers reserved fallibly first.
    pub fn try_ratio_with<T: Sym>(
        &mut self,
        side: &mut BSide<T>,
        a: &[T],
        b: &[T],
        autojunk: bool,
    ) -> Result<f64> {
        side.reserve_for(b.len())?;
        self.reserve_for::<T>(a.len(), b.len())?;
        Ok(ratio_with(self, side, a, b, autojunk))
    }

    /// Map `a` onto `b`'s ids; every other method works on the last `a` set here.
    pub fn set_a<T: Sym>(&mut self, a: &[T], b: &BSide<T>) {
        self.a_ids.clear();
        self.a_ids.extend(a.iter().map(|&x| b.id_of(x)));
        if T::is_byte() {
            self.a_bytes.clear();
            self.a_bytes.resize(FRONT_PAD, 0);
            self.a_bytes.extend(a.iter().map(|&x| x.code() as u8));
            self.a_bytes.resize(self.a_bytes.len() + BACK_PAD, 0);
        }
        let stride = b.len() + 1;
        if self.cells.len() < 2 * stride {
            self.cells.clear();
            self.cells.resize(2 * stride, 0);
        }
        self.stride = stride;
    }
}

/// One-shot helpers over two sequences, for tests and simple callers.
pub fn ratio<T: Sym>(a: &[T], b: &[T], autojunk: bool) -> f64 {
    ratio_with(&mut Matcher::new(), &mut BSide::default(), a, b, autojunk)
}

/// difflib's ratio of `a` against `b` (indexed into `side`), reusing the buffers of `m` and `side`.
pub fn ratio_with<T: Sym>(
    m: &mut Matcher,
    side: &mut BSide<T>,
    a: &[T],
    b: &[T],
    autojunk: bool,
) -> f64 {
    side.rebuild(b, autojunk, None);
    m.set_a(a, side);
    ratio_of(m.matches(side), a.len() + b.len())
}

/// difflib's `quick_ratio()` (its buffers reserved fallibly: the sequences come from the caller).
pub fn quick_ratio<T: Sym>(a: &[T], b: &[T]) -> Result<f64> {
    let side = BSide::try_new(b, false)?;
    let mut m = Matcher::new();
    m.reserve_for::<T>(a.len(), b.len())?;
    m.set_a(a, &side);
    Ok(ratio_of(m.quick_matches(&side), a.len() + b.len()))
}

pub fn real_quick_ratio(la: usize, lb: usize) -> f64 {
    ratio_of(la.min(lb), la + lb)
}

pub fn matching_blocks<T: Sym>(a: &[T], b: &[T], autojunk: bool) -> Vec<(usize, usize, usize)> {
    let side = BSide::new(b, autojunk);
    let mut m = Matcher::new();
    m.set_a(a, &side);
    m.matching_blocks(&side)
}

#[cfg(test)]
mod tests;
