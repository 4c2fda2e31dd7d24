//! The sub-range a longest-match search covers: difflib's `(alo, ahi, blo, bhi)`, which
//! `find_longest_match` searches and `get_matching_blocks` splits around each match it finds.

use std::ops::Range;

/// Rows `alo..ahi` of `a` against columns `blo..bhi` of `b`. A window with `ahi <= alo` or
/// `bhi <= blo` is empty (it holds no match), as difflib's loops over it run no step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub alo: usize,
    pub ahi: usize,
    pub blo: usize,
    pub bhi: usize,
}

impl Window {
    /// difflib's `(alo, ahi, blo, bhi)`.
    pub const fn new(alo: usize, ahi: usize, blo: usize, bhi: usize) -> Self {
        Window { alo, ahi, blo, bhi }
    }

    /// All of an `a` of `la` elements against all of a `b` of `lb`: where the recursion starts.
    pub const fn whole(la: usize, lb: usize) -> Self {
        Window::new(0, la, 0, lb)
    }

    /// The number of rows (0 when empty that way).
    #[inline]
    pub fn rows(self) -> usize {
        self.ahi.saturating_sub(self.alo)
    }

    /// The number of columns (0 when empty that way).
    #[inline]
    pub fn width(self) -> usize {
        self.bhi.saturating_sub(self.blo)
    }

    /// The longest a run inside can be: the fewer of rows and columns. (It is also what a
    /// pending window can still add to the matches: `Matcher::ratio_at_least`'s bound.)
    #[inline]
    pub fn limit(self) -> usize {
        self.rows().min(self.width())
    }

    /// The rows, as a range of `a`.
    #[inline]
    pub fn a_range(self) -> Range<usize> {
        self.alo..self.ahi
    }

    /// The columns, as a range of `b`.
    #[inline]
    pub fn b_range(self) -> Range<usize> {
        self.blo..self.bhi
    }

    /// The windows difflib's `get_matching_blocks` queues around the match `(i, j, k)` found in
    /// this one (`k > 0`): above and left of it, and below and right of it, each only when it
    /// has rows and columns both.
    #[inline]
    pub fn split_at(self, (i, j, k): (usize, usize, usize)) -> [Option<Window>; 2] {
        let before = (self.alo < i && self.blo < j).then(|| Window::new(self.alo, i, self.blo, j));
        let after = (i + k < self.ahi && j + k < self.bhi)
            .then(|| Window::new(i + k, self.ahi, j + k, self.bhi));
        [before, after]
    }
}

/// A [`Window`] as the recursion's queue keeps it and `Matcher::step` takes it: four `u32`s, as
/// the matcher's positions are (`b2j`, the blocks), in 16 bytes (two registers) where a `Window`
/// takes 32 (passed through memory).
///
/// Performance notes: with `Window`s in the queue and `step`'s argument, a label pair's `ratio`
/// took ~4% more instructions (`examples/bench_pairs.rs` under callgrind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PackedWindow([u32; 4]);

impl From<Window> for PackedWindow {
    #[inline(always)]
    fn from(w: Window) -> Self {
        debug_assert!([w.alo, w.ahi, w.blo, w.bhi]
            .iter()
            .all(|&x| x <= u32::MAX as usize));
        PackedWindow([w.alo as u32, w.ahi as u32, w.blo as u32, w.bhi as u32])
    }
}

impl From<PackedWindow> for Window {
    #[inline(always)]
    fn from(PackedWindow([alo, ahi, blo, bhi]): PackedWindow) -> Self {
        Window::new(alo as usize, ahi as usize, blo as usize, bhi as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_only_windows_with_rows_and_columns() {
        let w = Window::new(2, 10, 3, 12);
        assert_eq!(
            w.split_at((4, 6, 2)),
            [
                Some(Window::new(2, 4, 3, 6)),
                Some(Window::new(6, 10, 8, 12))
            ]
        );
        // A match at the window's first row, or ending on its last column, leaves one side.
        assert_eq!(
            w.split_at((2, 6, 2)),
            [None, Some(Window::new(4, 10, 8, 12))]
        );
        assert_eq!(
            w.split_at((4, 10, 2)),
            [Some(Window::new(2, 4, 3, 10)), None]
        );
        assert_eq!((w.rows(), w.width(), w.limit()), (8, 9, 8));
        let empty = Window::new(5, 3, 0, 4);
        assert_eq!((empty.rows(), empty.limit()), (0, 0));
    }
}
