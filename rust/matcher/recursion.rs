//! difflib's recursion over sub-ranges (`get_matching_blocks`), the listed-run shortcut, and the
//! answers built on it: matches, blocks, threshold decisions, `quick_ratio`.

use super::*;
use crate::simd::bytes::first_equal_byte;

impl Matcher {
    /// Process one pending window: find its longest match, queue the windows either side.
    /// Returns the match size and the change in the pending bound (what the new windows could add).
    pub(super) fn step<T: Sym>(&mut self, b: &BSide<T>, packed: PackedWindow) -> (usize, usize) {
        let w = Window::from(packed);
        let listed = if !T::is_byte() && self.runs_listed {
            self.longest_listed_run(w)
        } else {
            (w.alo, w.blo, 0)
        };
        let (i, j, k) = if !T::is_byte() && listed.2 >= RUN_LIST_STRIDE {
            // Exact: every run of the range this long is a listed run cut to the range.
            if b.all_indexed {
                listed
            } else {
                self.extend_longest(b, w, listed)
            }
        } else {
            self.find_longest_match(b, w)
        };
        if T::is_byte() && k == 1 && b.all_indexed {
            return (self.single_matches_from(b, w, i, j), 0);
        }
        let mut added = 0;
        if k > 0 {
            self.blocks.push((i as u32, j as u32, k as u32));
            let [before, after] = w.split_at((i, j, k));
            if let Some(before) = before {
                self.queue.push(before.into());
                added += before.limit();
            }
            if let Some(after) = after {
                self.queue.push(after.into());
                added += after.limit();
            }
        }
        (k, added)
    }

    /// The blocks difflib's recursion finds in a byte window `w` whose longest match is one
    /// element, the first being `(i, j)`; returns how many there are.
    ///
    /// With every element indexed the recursion below such a match is greedy: the range above and
    /// left of `(i, j)` holds no equal pair (it is the first in row-major order, the cell difflib
    /// keeps among runs of 1), and the range below and right again has runs of at most 1, so its
    /// block is its first equal pair. So each later row takes the first equal byte right of the
    /// last block, if any. (With junk or popular elements a block can grow past its DP run, and
    /// a sub-range's longest match exceed its parent's: not taken there.)
    ///
    /// Performance notes: on the sample label pairs of `examples/bench_pairs.rs`, 46% of the byte
    /// DP's searches found a longest match of 1, and 4,508 of all 12,048 DP searches (plus 3,104
    /// one-row or one-column ones) lay inside such a range; one byte search a row replaces them
    /// (callgrind, one round: 11.63M -> 10.65M instructions).
    pub(super) fn single_matches_from<T: Sym>(
        &mut self,
        b: &BSide<T>,
        w: Window,
        i: usize,
        j: usize,
    ) -> usize {
        debug_assert!(T::is_byte() && b.all_indexed);
        let (ahi, bhi) = (w.ahi, w.bhi);
        self.blocks.push((i as u32, j as u32, 1));
        let (a, bytes) = (&self.a_bytes[FRONT_PAD..], &b.bytes[FRONT_PAD..]);
        let (mut found, mut from) = (1, j + 1);
        let mut r = i + 1;
        while r < ahi && from < bhi {
            if (r - i) % POLL_ROWS == 0 && self.cancel.is_cancelled() {
                break;
            }
            if let Some(t) = first_equal_byte(bytes, from, bhi, a[r]) {
                self.blocks.push((r as u32, t as u32, 1));
                found += 1;
                from = t + 1;
            }
            r += 1;
        }
        found
    }

    pub(super) fn start<T: Sym>(&mut self, b: &BSide<T>) {
        self.queue.clear();
        self.blocks.clear();
        self.queue
            .push(Window::whole(self.a_ids.len(), b.len()).into());
        self.runs_listed = !T::is_byte()
            && self.a_ids.len() >= RUN_LIST_MIN_ROWS
            && b.len() >= RUN_LIST_STRIDE
            && self.list_runs(b);
    }

    /// Fill `runs` for the whole `a` x `b`; false when it stopped at a limit (too many runs or
    /// steps: then every range is searched on its own).
    ///
    /// Every maximal run of length >= RUN_LIST_STRIDE covers one of the anchor rows (every
    /// RUN_LIST_STRIDE-th row, from row RUN_LIST_STRIDE - 1); each match on those rows is extended
    /// both ways along its diagonal, unless it lies on a run already extended from an earlier one.
    ///
    /// Performance notes: the matching-block recursion searches each sub-range anew; on line diffs
    /// of real files (~125 lines between edits) that visited each line ~5 times, and the anchor
    /// search of a sub-range re-extended the same long runs on each halving of its stride. A
    /// sub-range's longest run is now read from this list (the longest listed run cut to the range,
    /// exact once it is >= RUN_LIST_STRIDE), and only ranges with no such run are searched.
    pub(super) fn list_runs<T: Sym>(&mut self, b: &BSide<T>) -> bool {
        let (la, lb) = (self.a_ids.len(), b.len());
        let mut runs = std::mem::take(&mut self.runs);
        let mut open = std::mem::take(&mut self.open_runs);
        runs.clear();
        open.clear();
        let budget = RUN_LIST_WORK_PER_ELEMENT * (la + lb);
        let mut work = 0usize;
        let (mut next_poll, mut stop) = (RUN_LIST_POLL_WORK, false);
        let mut r = RUN_LIST_STRIDE - 1;
        while r < la && work <= budget && runs.len() <= RUN_LIST_MAX_RUNS {
            if self.cancel.is_cancelled() {
                break; // (incomplete: the ranges are then searched one by one, and stop too)
            }
            open.retain(|&(_, end)| end > r);
            self.each_match_in_row(b, r, Window::whole(la, lb), false, |m, j| {
                // One row can hold a match in every column, each extended across the whole
                // sequences (equal lines): past the budget, or once cancelled, the rest of the row
                // is skipped, so a poll comes every RUN_LIST_POLL_WORK steps, not once a row.
                if stop || work > budget {
                    return;
                }
                if work >= next_poll {
                    next_poll = work + RUN_LIST_POLL_WORK;
                    stop = m.stopped();
                }
                let diagonal = j + la - r;
                work += 1 + open.len();
                if open.iter().any(|&(d, _)| d == diagonal) {
                    return;
                }
                let back = m.run_backward(b, r, j, r.min(j));
                let len = back + m.run_forward(b, r, j, (la - r).min(lb - j));
                work += len / 4;
                if len >= RUN_LIST_STRIDE {
                    runs.push(((r - back) as u32, (j - back) as u32, len as u32));
                    open.push((diagonal, r - back + len));
                }
            });
            r += RUN_LIST_STRIDE;
        }
        let complete = r >= la && work <= budget && runs.len() <= RUN_LIST_MAX_RUNS;
        runs.sort_unstable();
        self.longest_run = runs.iter().map(|r| r.2 as usize).max().unwrap_or(0);
        self.runs = runs;
        self.open_runs = open;
        complete
    }

    /// The longest listed run cut to window `w` (first in (i, j) order among equals), as
    /// `find_longest_match`'s DP would pick it: exact when its length is >= RUN_LIST_STRIDE, as any
    /// run that long in the window lies on a listed run, which cut to the window is that run.
    pub(super) fn longest_listed_run(&self, w: Window) -> (usize, usize, usize) {
        let Window { alo, ahi, blo, bhi } = w;
        let mut best = (alo, blo, 0usize);
        // Only runs starting in rows [alo - longest_run, ahi) can reach the range's rows.
        let lowest = alo.saturating_sub(self.longest_run);
        let first = self.runs.partition_point(|r| (r.0 as usize) < lowest);
        for &(i0, j0, len) in &self.runs[first..] {
            let (i0, j0, len) = (i0 as usize, j0 as usize, len as usize);
            if i0 >= ahi {
                break;
            }
            let from = alo.saturating_sub(i0).max(blo.saturating_sub(j0));
            let to = len.min(ahi.saturating_sub(i0)).min(bhi.saturating_sub(j0));
            if to > from {
                let (i, j, k) = (i0 + from, j0 + from, to - from);
                if k > best.2 || (k == best.2 && (i, j) < (best.0, best.1)) {
                    best = (i, j, k);
                }
            }
        }
        best
    }

    /// Total size of difflib's matching blocks (`M` in `2M / (len(a) + len(b))`).
    pub fn matches<T: Sym>(&mut self, b: &BSide<T>) -> usize {
        self.start(b);
        let mut found = 0;
        while let Some(w) = self.queue.pop() {
            if self.cancel.is_cancelled() {
                break;
            }
            found += self.step(b, w).0;
        }
        found
    }

    /// difflib's `get_matching_blocks()`, without the `(len(a), len(b), 0)` sentinel.
    pub fn matching_blocks<T: Sym>(&mut self, b: &BSide<T>) -> Vec<(usize, usize, usize)> {
        self.start(b);
        while let Some(w) = self.queue.pop() {
            if self.cancel.is_cancelled() {
                break;
            }
            self.step(b, w);
        }
        self.blocks.sort_unstable();
        let mut out: Vec<(usize, usize, usize)> = Vec::with_capacity(self.blocks.len());
        for &(i, j, k) in &self.blocks {
            let (i, j, k) = (i as usize, j as usize, k as usize);
            if let Some(last) = out.last_mut() {
                if last.0 + last.2 == i && last.1 + last.2 == j {
                    last.2 += k;
                    continue;
                }
            }
            out.push((i, j, k));
        }
        out
    }

    /// `ratio() >= threshold`, deciding as early as the matches found so far allow.
    pub fn ratio_at_least<T: Sym>(&mut self, b: &BSide<T>, threshold: f64) -> bool {
        let length = self.a_ids.len() + b.len();
        let mut pending = self.a_ids.len().min(b.len());
        if !(ratio_of(pending, length) >= threshold) {
            return false;
        }
        self.start(b);
        let mut found = 0;
        while let Some(w) = self.queue.pop() {
            if self.cancel.is_cancelled() {
                return false;
            }
            pending -= Window::from(w).limit();
            let (k, added) = self.step(b, w);
            found += k;
            pending += added;
            if ratio_of(found, length) >= threshold {
                return true;
            }
            if !(ratio_of(found + pending, length) >= threshold) {
                return false;
            }
        }
        ratio_of(found, length) >= threshold
    }

    /// The multiset intersection size behind difflib's `quick_ratio`.
    pub fn quick_matches<T: Sym>(&mut self, b: &BSide<T>) -> usize {
        self.avail.clear();
        if b.has_positions {
            self.avail.extend_from_slice(&b.counts);
        } else {
            self.avail.resize(b.counts.len(), 0);
            for &id in &b.ids {
                self.avail[id as usize] += 1;
            }
        }
        let mut matches = 0;
        for &id in &self.a_ids {
            if id != NONE {
                let slot = &mut self.avail[id as usize];
                if *slot > 0 {
                    *slot -= 1;
                    matches += 1;
                }
            }
        }
        matches
    }

    pub fn a_len(&self) -> usize {
        self.a_ids.len()
    }
}
