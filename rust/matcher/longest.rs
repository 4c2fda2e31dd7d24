//! difflib's `find_longest_match` and the strategies that answer it: the row scan over position
//! lists or bitsets, the anchored extension, the sparse and dense (byte DP) searches.

use super::*;
use crate::simd::byte_dp::{dense_row, longest_run};
use crate::simd::bytes::first_equal_byte;
use crate::simd::ids::{common_prefix, common_suffix};

/// The bits of word `w` of a bitset over `b` that lie in `blo..bhi`.
#[inline]
fn window_mask(w: usize, blo: usize, bhi: usize) -> u64 {
    let lo = (w * 64).max(blo) - w * 64;
    let hi = (w * 64 + 64).min(bhi) - w * 64;
    (u64::MAX >> (64 - (hi - lo))) << lo
}

/// Eight bytes from `at`, little-endian.
#[inline]
fn load8(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

/// The columns where a row of ids equals `b`, ascending: from difflib's position lists, or from
/// `b`'s bitsets (word by word).
pub(super) enum RowHits<'b> {
    Positions(std::slice::Iter<'b, u32>),
    Bits {
        id: usize,
        word: usize,
        last_word: usize,
        bits: u64,
    },
}

impl<'b> RowHits<'b> {
    #[inline(always)]
    pub(super) fn new<T: Sym>(
        m: &Matcher,
        b: &'b BSide<T>,
        r: usize,
        blo: usize,
        bhi: usize,
        by_positions: bool,
    ) -> Self {
        let id = m.a_ids[r];
        if by_positions {
            let (start, end) = b.range_in(id, blo, bhi);
            return RowHits::Positions(b.positions[start..end].iter());
        }
        if id == NONE || blo >= bhi {
            return RowHits::Positions([].iter());
        }
        let word = blo / 64;
        RowHits::Bits {
            id: id as usize,
            word,
            last_word: (bhi - 1) / 64,
            bits: b.bit_word(id as usize, word) & window_mask(word, blo, bhi),
        }
    }

    #[inline(always)]
    pub(super) fn next<T: Sym>(&mut self, b: &BSide<T>, blo: usize, bhi: usize) -> Option<usize> {
        match self {
            RowHits::Positions(positions) => positions.next().map(|&j| j as usize),
            RowHits::Bits {
                id,
                word,
                last_word,
                bits,
            } => loop {
                if *bits != 0 {
                    let j = *word * 64 + bits.trailing_zeros() as usize;
                    *bits &= *bits - 1;
                    return Some(j);
                }
                if *word >= *last_word {
                    return None;
                }
                *word += 1;
                *bits = b.bit_word(*id, *word) & window_mask(*word, blo, bhi);
            },
        }
    }
}

/// Keep `run` (start row, start column, length) in `best` if longer, or as long and first in
/// (row, column) order: difflib's choice among longest runs.
#[inline(always)]
pub(super) fn keep_longest(best: &mut (usize, usize, usize), run: (usize, usize, usize)) {
    if run.2 > best.2 || (run.2 == best.2 && (run.0, run.1) < (best.0, best.1)) {
        *best = run;
    }
}

impl Matcher {
    /// difflib's `find_longest_match(alo, ahi, blo, bhi)` on the current `a` and `b`, in window `w`.
    pub fn find_longest_match<T: Sym>(&mut self, b: &BSide<T>, w: Window) -> (usize, usize, usize) {
        let Window { alo, ahi, blo, bhi } = w;
        let narrow = T::is_byte();
        let (rows, width, limit) = (w.rows(), w.width(), w.limit());
        let (besti, bestj, bestsize) = if b.all_indexed {
            // A run any strategy may start from: the common prefix or suffix of the two ranges
            // (only worth computing where it can reach ANCHOR_MIN_RUN).
            let mut known = 0;
            if limit >= ANCHOR_MIN_RUN {
                known = self.run_forward(b, alo, blo, limit);
                if known == limit {
                    // One side matches whole at the start: nothing is longer, and any other run
                    // of that length ends later in (row, column) order.
                    return (alo, blo, limit);
                }
                if known < ANCHOR_MIN_RUN {
                    known = known.max(self.run_backward(b, ahi, bhi, limit));
                }
            }
            if limit == 0 {
                (alo, blo, 0)
            } else if narrow && (rows == 1 || width == 1) {
                // One row or one column: the first equal pair, if any.
                let (a, bytes) = (&self.a_bytes[FRONT_PAD..], &b.bytes[FRONT_PAD..]);
                let found = if rows == 1 {
                    first_equal_byte(bytes, blo, bhi, a[alo]).map(|t| (alo, t))
                } else {
                    first_equal_byte(a, alo, ahi, bytes[blo]).map(|t| (t, blo))
                };
                found.map_or((alo, blo, 0), |(i, j)| (i, j, 1))
            } else if known >= ANCHOR_MIN_RUN {
                self.anchor_core(b, w, known)
            } else if narrow && width <= DENSE_MAX_WIDTH {
                // The DP held in registers where the range fits them, else row by row.
                let (a, bytes) = (&self.a_bytes[FRONT_PAD..], &b.bytes[FRONT_PAD..]);
                match longest_run(a, bytes, w.a_range(), w.b_range(), &self.cancel) {
                    Some(found) => found,
                    None => self.dense_core(b, w),
                }
            } else {
                // Wider than a byte can count, or wide text: anchors from the top (measured on
                // wide label pairs: fewer instructions than difflib's sparse search).
                self.anchor_core(b, w, known)
            }
        } else if narrow {
            // Byte strings with junk or popular elements (long text): the byte-row DPs.
            if width > 0 && width <= DENSE_MAX_WIDTH {
                self.dense_core(b, w)
            } else {
                self.sparse_core(b, w)
            }
        } else {
            // Ids (lines, wide text) with junk or popular elements: difflib's DP sees only indexed
            // pairs, so the known run is the common prefix (or suffix) of indexed equal pairs, and
            // anchors extend along those. With few equal pairs a row and long runs (lines),
            // anchors from the top visit a few rows where difflib's DP visits all of them.
            let (mut known, mut prefix) = (0, 0);
            if limit >= ANCHOR_MIN_RUN {
                prefix = self.run_forward(b, alo, blo, limit);
                known = prefix;
                if known < ANCHOR_MIN_RUN {
                    known = known.max(self.run_backward(b, ahi, bhi, limit));
                }
            }
            if limit > 0 && prefix == limit {
                // As above: a whole side matching at the start is the first longest run.
                (alo, blo, limit)
            } else {
                self.anchor_core(b, w, known)
            }
        };
        if b.all_indexed {
            return (besti, bestj, bestsize);
        }
        self.extend_longest(b, w, (besti, bestj, bestsize))
    }

    /// The end of `find_longest_match` when `b` has junk or popular elements: its DP's longest run
    /// `(besti, bestj, bestsize)` extended with equal non-junk elements (popular ones included),
    /// then with equal junk, as difflib does. (With every element indexed, the DP's run is maximal
    /// already; callers skip this, which stays out of line so the label searches stay small.)
    #[inline(never)]
    pub(super) fn extend_longest<T: Sym>(
        &self,
        b: &BSide<T>,
        w: Window,
        (mut besti, mut bestj, mut bestsize): (usize, usize, usize),
    ) -> (usize, usize, usize) {
        let Window { alo, ahi, blo, bhi } = w;
        let a = &self.a_ids;
        let bids = &b.ids;
        // Extend with equal non-junk elements (popular ones included), then with equal junk.
        while besti > alo
            && bestj > blo
            && !b.is_junk_at(bestj - 1)
            && a[besti - 1] == bids[bestj - 1]
        {
            besti -= 1;
            bestj -= 1;
            bestsize += 1;
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && !b.is_junk_at(bestj + bestsize)
            && a[besti + bestsize] == bids[bestj + bestsize]
        {
            bestsize += 1;
        }
        if b.any_junk {
            while besti > alo
                && bestj > blo
                && b.is_junk_at(bestj - 1)
                && a[besti - 1] == bids[bestj - 1]
            {
                besti -= 1;
                bestj -= 1;
                bestsize += 1;
            }
            while besti + bestsize < ahi
                && bestj + bestsize < bhi
                && b.is_junk_at(bestj + bestsize)
                && a[besti + bestsize] == bids[bestj + bestsize]
            {
                bestsize += 1;
            }
        }
        (besti, bestj, bestsize)
    }

    /// The DP part of `find_longest_match` when every element of `b` is indexed, without the DP.
    ///
    /// difflib keeps the first cell, in (i, j) order, that ends a longest run of equal elements inside
    /// the range: the longest run with the smallest start row, then the smallest start column. Any run
    /// of length >= g covers one of the rows `alo + g - 1, alo + 2g - 1, ...` ("anchor" rows), so
    /// extending every match on those rows both ways along its diagonal finds every such run whole. A
    /// round with stride g is therefore exact once the longest run it finds is >= g; otherwise the
    /// longest run is shorter than g and a smaller stride follows. Strides start at the whole range
    /// and halve, never going below a run already found, so a pair with a long match is decided from
    /// a handful of rows.
    ///
    /// Performance notes: a row DP visits every row of every sub-range of the matching-block
    /// recursion (~195 rows a pair on ~66-character labels, `examples/bench_pairs.rs`) where this
    /// visits a few (history: docs/perf.md).
    pub(super) fn anchor_core<T: Sym>(
        &mut self,
        b: &BSide<T>,
        w: Window,
        mut known: usize,
    ) -> (usize, usize, usize) {
        let Window { alo, ahi, blo, .. } = w;
        let limit = w.limit();
        if limit == 0 {
            return (alo, blo, 0);
        }
        let mut stride = if known > 0 { known } else { limit };
        let (mut work, mut next_poll, mut stop) = (0usize, RUN_LIST_POLL_WORK, false);
        loop {
            stride = stride.max(known).max(1);
            let mut best = (alo, blo, 0usize);
            // The last run found (start row, start column, end row): a later anchor on it would
            // find it again. Lines meet one run on many consecutive anchors; byte strings skip this.
            let mut last = (0usize, 0usize, 0usize);
            let mut r = alo + stride - 1;
            while r < ahi {
                if self.stopped() {
                    // An anchor row can scan all of `b`: stop at once (with any run, in bounds).
                    return best;
                }
                if T::is_byte() {
                    // Labels: no memo (one closure as small as the byte search needs inlined).
                    // A round with stride >= 2 returns a run of at least 2, and any shorter run it
                    // misses only lowers `known`, a lower bound either way.
                    // A row of one repeated byte meets a match in every column: poll within it.
                    self.each_match_in_row(b, r, w, stride >= 2, |m, j| {
                        if stop {
                            return;
                        }
                        if work >= next_poll {
                            next_poll = work + RUN_LIST_POLL_WORK;
                            stop = m.stopped();
                        }
                        let run = m.run_through(b, r, j, w);
                        work += 1 + run.2 / 4;
                        keep_longest(&mut best, run);
                    });
                } else {
                    // A row of equal lines meets a match in every column, each extended across
                    // the range: poll within the row too (every RUN_LIST_POLL_WORK steps).
                    self.each_match_in_row(b, r, w, false, |m, j| {
                        if stop || (r < last.2 && r - last.0 == j.wrapping_sub(last.1)) {
                            return;
                        }
                        if work >= next_poll {
                            next_poll = work + RUN_LIST_POLL_WORK;
                            stop = m.stopped();
                        }
                        let run = m.run_through(b, r, j, w);
                        work += 1 + run.2 / 4;
                        last = (run.0, run.1, run.0 + run.2);
                        keep_longest(&mut best, run);
                    });
                }
                if best.2 == limit {
                    // No run is longer, and runs first met on later anchor rows start after this one.
                    break;
                }
                r += stride;
            }
            let (si, sj, size) = best;
            if size >= stride || stride == 1 {
                return (si, sj, size);
            }
            if stride == known {
                // Every run of `known` or more covers an anchor row of this round, so there is
                // none: `known` was no lower bound. A caller's error, but it must not loop.
                debug_assert!(false, "anchor_core: no run of the known length {known}");
                known = size;
            }
            known = known.max(size);
            stride /= 2;
        }
    }

    /// The maximal run through the equal pair `(r, j)` inside window `w`: (start row, start
    /// column, length).
    #[inline(always)]
    pub(super) fn run_through<T: Sym>(
        &self,
        b: &BSide<T>,
        r: usize,
        j: usize,
        Window { alo, ahi, blo, bhi }: Window,
    ) -> (usize, usize, usize) {
        let back = self.run_backward(b, r, j, (r - alo).min(j - blo));
        let len = back + self.run_forward(b, r, j, (ahi - r).min(bhi - j));
        (r - back, j - back, len)
    }

    /// Call `f` with each column `j` of window `w`, ascending, where `b[j]` equals `a[r]`. Byte
    /// strings compare 16 columns a step; others read `b`'s bitsets.
    ///
    /// With `runs_only`, byte strings may skip a match whose diagonal neighbours (`(r - 1, j - 1)`
    /// and `(r + 1, j + 1)`) both differ: it lies on no run longer than 1, and every run of 2 or
    /// more keeps all its matches. (Neighbours are compared even outside the range, which can
    /// only keep a match, never skip one.)
    ///
    /// Performance notes: the anchor rows of a label pair's first range meet ~13 equal bytes, and
    /// only ~2.6 of them have an equal neighbour (the sample pairs of `examples/bench_pairs.rs`);
    /// each skipped one saves extending it both ways.
    #[inline(always)]
    pub(super) fn each_match_in_row<T: Sym>(
        &self,
        b: &BSide<T>,
        r: usize,
        w: Window,
        runs_only: bool,
        mut f: impl FnMut(&Self, usize),
    ) {
        #[cfg(target_arch = "x86_64")]
        if T::is_byte() {
            // Byte strings reach here only when all indexed: compared 16 or 32 columns a step.
            debug_assert!(b.all_indexed);
            crate::simd::bytes::each_equal_in_row(
                &self.a_bytes,
                &b.bytes,
                r,
                w.b_range(),
                runs_only,
                |j| f(self, j),
            );
            return;
        }
        // Position lists (difflib's own b2j) when only indexed pairs count, or when `b` has no
        // bitsets; else the bitsets. One call site of `f`, so the anchor search inlines it (with
        // two it did not: a wide `get_close_matches` took 6% more instructions under callgrind).
        let by_positions = !b.all_indexed || !b.has_bits;
        let (blo, bhi) = (w.blo, w.bhi);
        let mut hits = RowHits::new(self, b, r, blo, bhi, by_positions);
        while let Some(j) = hits.next(b, blo, bhi) {
            f(self, j);
        }
    }

    /// How many elements from `a[i]` and `b[j]` on are equal (and indexed in `b`: a run of
    /// difflib's DP), up to `max`.
    #[inline(always)]
    pub(super) fn run_forward<T: Sym>(
        &self,
        b: &BSide<T>,
        i: usize,
        j: usize,
        max: usize,
    ) -> usize {
        // Byte strings reach the run searches only when every element is indexed.
        if !T::is_byte() && !b.all_indexed {
            return self.indexed_run_forward(b, i, j, max);
        }
        if T::is_byte() {
            // Eight bytes a step: the first differing byte is the lowest set byte of the xor.
            let (a, bb) = (&self.a_bytes[FRONT_PAD..], &b.bytes[FRONT_PAD..]);
            let mut k = 0;
            while k < max {
                let x = load8(a, i + k) ^ load8(bb, j + k);
                if x != 0 {
                    return (k + x.trailing_zeros() as usize / 8).min(max);
                }
                k += 8;
            }
            max
        } else {
            common_prefix(&self.a_ids[i..i + max], &b.ids[j..j + max])
        }
    }

    /// How many elements before `a[i]` and `b[j]` (ending at `a[i - 1]`, `b[j - 1]`) are equal (and
    /// indexed in `b`), up to `max` (at most `min(i, j)`).
    #[inline(always)]
    pub(super) fn run_backward<T: Sym>(
        &self,
        b: &BSide<T>,
        i: usize,
        j: usize,
        max: usize,
    ) -> usize {
        if !T::is_byte() && !b.all_indexed {
            return self.indexed_run_backward(b, i, j, max);
        }
        if T::is_byte() {
            // The bytes padded in front make the eight bytes before any position readable.
            let mut k = 0;
            while k < max {
                let x = load8(&self.a_bytes, FRONT_PAD + i - k - 8)
                    ^ load8(&b.bytes, FRONT_PAD + j - k - 8);
                if x != 0 {
                    return (k + x.leading_zeros() as usize / 8).min(max);
                }
                k += 8;
            }
            max
        } else {
            common_suffix(&self.a_ids[i - max..i], &b.ids[j - max..j])
        }
    }

    /// `run_forward` when `b` has junk or popular elements (kept out of line: the label paths
    /// inline `run_forward`, and this branch made it too large to inline, +12% instructions a ratio).
    #[inline(never)]
    pub(super) fn indexed_run_forward<T: Sym>(
        &self,
        b: &BSide<T>,
        i: usize,
        j: usize,
        max: usize,
    ) -> usize {
        common_prefix(&self.a_ids[i..i + max], &b.run_ids[j..j + max])
    }

    /// `run_backward` when `b` has junk or popular elements.
    #[inline(never)]
    pub(super) fn indexed_run_backward<T: Sym>(
        &self,
        b: &BSide<T>,
        i: usize,
        j: usize,
        max: usize,
    ) -> usize {
        common_suffix(&self.a_ids[i - max..i], &b.run_ids[j - max..j])
    }

    /// The DP part of `find_longest_match` over `b2j`, as difflib runs it: for each row, only the
    /// positions where `a[i]` occurs in `b`.
    pub(super) fn sparse_core<T: Sym>(&mut self, b: &BSide<T>, w: Window) -> (usize, usize, usize) {
        let Window { alo, ahi, blo, bhi } = w;
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        let stride = self.stride;
        // Row r (counted from alo) writes its j2len into buffer r % 2 and reads the other one. A buffer
        // is all zero except what the row before last wrote (`written`: a range of `b.positions`),
        // which is cleared before the buffer is reused and at the end, so a read needs no check: an
        // entry the previous row did not write reads as 0, as difflib's `j2len.get(j - 1, 0)` does.
        let mut written = [(0usize, 0usize); 2];
        let limit = w.limit();
        debug_assert!(self.cells.len() >= 2 * stride && b.len() < stride);
        let cells = self.cells.as_mut_ptr();
        for i in alo..ahi {
            if self.cancel.is_cancelled() {
                break; // (the buffers are cleared below all the same)
            }
            let parity = (i - alo) & 1;
            let (cur, prev) = if parity == 0 {
                (0, stride)
            } else {
                (stride, 0)
            };
            let (start, end) = written[parity];
            let (next_start, next_end) = b.range_in(self.a_ids[i], blo, bhi);
            written[parity] = (next_start, next_end);
            // SAFETY: every position j is below len(b) = stride - 1, and cur, prev are 0 or stride, so
            // each index is below 2 * stride <= cells.len() (checked in set_a).
            unsafe {
                for &j in b.positions.get_unchecked(start..end) {
                    *cells.add(cur + j as usize + 1) = 0;
                }
                for &j in b.positions.get_unchecked(next_start..next_end) {
                    let j = j as usize;
                    let k = *cells.add(prev + j) as usize + 1;
                    *cells.add(cur + j + 1) = k as u32;
                    if k > bestsize {
                        besti = i + 1 - k;
                        bestj = j + 1 - k;
                        bestsize = k;
                    }
                }
            }
            if bestsize == limit {
                // Nothing longer exists, and later rows only replace on strictly longer runs.
                break;
            }
        }
        for (parity, &(start, end)) in written.iter().enumerate() {
            let buf = if parity == 0 { 0 } else { stride };
            for &j in &b.positions[start..end] {
                self.cells[buf + j as usize + 1] = 0;
            }
        }
        (besti, bestj, bestsize)
    }

    /// The same DP over a byte string's whole row at once: `cur[j + 1] = (prev[j] + 1) & eq[j]`, where
    /// `eq[j]` is all ones when `b[j]` equals `a[i]` and is indexed (not junk, not popular). A row is a
    /// few SIMD steps with no branches (`dense_row`); the winner is the first row whose maximum beats
    /// the best so far, at the first column holding that maximum: the cell difflib's `k > bestsize`
    /// test keeps.
    /// Run lengths fit a byte because the range is at most `DENSE_MAX_WIDTH` wide.
    pub(super) fn dense_core<T: Sym>(&mut self, b: &BSide<T>, w: Window) -> (usize, usize, usize) {
        let Window { alo, ahi, blo, .. } = w;
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        let (width, limit) = (w.width(), w.limit());
        let bytes = &b.bytes[FRONT_PAD + blo..];
        let indexed = &b.indexed_mask[blo..];
        self.dense.clear();
        self.dense.resize(2 * (width + 1 + BACK_PAD), 0);
        let (mut prev, mut cur) = self.dense.split_at_mut(width + 1 + BACK_PAD);
        for i in alo..ahi {
            if (i - alo) % POLL_ROWS == 0 && self.cancel.is_cancelled() {
                break;
            }
            let x = self.a_bytes[FRONT_PAD + i];
            let row_max = dense_row(prev, &mut cur[1..], bytes, indexed, x, width) as usize;
            if row_max > bestsize {
                let t = cur[1..=width]
                    .iter()
                    .position(|&v| v as usize == row_max)
                    .unwrap_or(0);
                bestsize = row_max;
                besti = i + 1 - row_max;
                bestj = blo + t + 1 - row_max;
                if bestsize == limit {
                    break;
                }
            }
            std::mem::swap(&mut prev, &mut cur);
        }
        (besti, bestj, bestsize)
    }
}
