//! The longest run of equal bytes in a range of two byte strings: difflib's `find_longest_match`
//! DP on bytes, as the matcher's dense searches run it. A range that fits registers is searched
//! there whole (AVX2 lanes, or SSE2 registers), a wider one row by row ([`dense_row`]); plain code
//! off x86_64. Every form gives the same answer. The strings are padded copies
//! ([`super::bytes`]), read from their first byte.

use std::ops::Range;

#[cfg(doc)]
use super::bytes::BACK_PAD;
use super::bytes::SPLAT;
use crate::cancel::Cancel;

/// The most rows the AVX2 DP ([`longest_run`]) takes: it keeps each column's row as a byte offset,
/// and 255 marks "no row".
pub const LANE_ROWS_MAX: usize = 255;

/// The widest range the register DP holds in SSE2 registers (8 vectors of 16 columns), and the
/// most lanes the AVX2 DP takes (4 vectors of 32).
pub const REG_COLUMNS_MAX: usize = 128;

/// Rows a DP searches between polls of its [`Cancel`] where a row is a few vector steps.
pub const POLL_ROWS: usize = 1024;

/// difflib's longest run of equal bytes in `a[rows]` x `b[cols]` when every byte of `b` is
/// indexed (no junk, no popular byte): `(i, j, size)` of the first longest run in (row, column)
/// order, or `(rows.start, cols.start, 0)` (an empty range's answer). `a` and `b` are views from
/// the first byte. None when
/// the range fits no register DP: over [`REG_COLUMNS_MAX`] columns, and with AVX2 also too wide
/// for it transposed; the caller then runs the DP row by row ([`dense_row`]). Polls `cancel` every
/// [`POLL_ROWS`] rows (once cancelled, the answer means nothing).
///
/// With AVX2, ranges at most [`REG_COLUMNS_MAX`] wide and [`LANE_ROWS_MAX`] tall, or transposed
/// (at most [`REG_COLUMNS_MAX`] rows and [`LANE_ROWS_MAX`] columns), take the branch-free lane DP,
/// whichever way round takes fewer vector steps; others take the SSE2 register DP (plain code
/// off x86_64).
///
/// The ranges must lie inside the strings (each start at most its end) and `b` must extend
/// [`BACK_PAD`] bytes past `cols`; otherwise this panics or answers nothing meaningful, but never
/// reads outside the slices.
///
/// Performance notes: a range taller than wide took one step per row; transposed it takes one per
/// column. Over the sample pairs' sub-ranges (`examples/bench_pairs.rs`) that is 170 -> 130 vector
/// steps a pair, and the rare ranges of 129-255 columns leave the row-by-row DP (~5% of a ratio's
/// instructions on the sample) when they are at most 128 rows tall.
#[inline]
pub fn longest_run(
    a: &[u8],
    b: &[u8],
    rows: Range<usize>,
    cols: Range<usize>,
    cancel: &Cancel,
) -> Option<(usize, usize, usize)> {
    let (alo, ahi, blo, bhi) = (rows.start, rows.end, cols.start, cols.end);
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2() {
        // SAFETY: the CPU has AVX2 (checked above).
        if let Some(found) = unsafe { longest_run_lanes(a, b, alo, ahi, blo, bhi) } {
            return Some(found);
        }
    }
    if bhi - blo > REG_COLUMNS_MAX {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    let found = longest_run_regs(a, b, alo, ahi, blo, bhi, cancel);
    #[cfg(not(target_arch = "x86_64"))]
    let found = longest_run_scalar(a, b, alo, ahi, blo, bhi, cancel);
    Some(found)
}

/// The AVX2 lane DP ([`longest_run_lanes_avx2`]) for a non-empty range that fits it as it is or
/// transposed (the fewer vector steps when both), else None.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn longest_run_lanes(
    a: &[u8],
    b: &[u8],
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> Option<(usize, usize, usize)> {
    let (rows, width) = (ahi - alo, bhi - blo);
    let steps = |lanes: usize, rows: usize| {
        (lanes <= REG_COLUMNS_MAX && rows <= LANE_ROWS_MAX).then(|| rows * lanes.div_ceil(32))
    };
    let transpose = match (steps(width, rows), steps(rows, width)) {
        (None, None) => return None,
        (Some(straight), Some(transposed)) => transposed < straight,
        (_, transposed) => transposed.is_some(),
    };
    // SAFETY: the CPU has AVX2 (this function's contract); the lanes (at most 128) match the
    // vector counts, the rows are at most LANE_ROWS_MAX; the kernel asserts that what it reads is
    // inside the slices.
    Some(unsafe {
        if transpose {
            let (i, j, k) = match rows.div_ceil(32) {
                0 | 1 => longest_run_lanes_avx2::<1, true>(b, a, blo, bhi, alo, ahi),
                2 => longest_run_lanes_avx2::<2, true>(b, a, blo, bhi, alo, ahi),
                3 => longest_run_lanes_avx2::<3, true>(b, a, blo, bhi, alo, ahi),
                _ => longest_run_lanes_avx2::<4, true>(b, a, blo, bhi, alo, ahi),
            };
            (j, i, k)
        } else {
            match width.div_ceil(32) {
                0 | 1 => longest_run_lanes_avx2::<1, false>(a, b, alo, ahi, blo, bhi),
                2 => longest_run_lanes_avx2::<2, false>(a, b, alo, ahi, blo, bhi),
                3 => longest_run_lanes_avx2::<3, false>(a, b, alo, ahi, blo, bhi),
                _ => longest_run_lanes_avx2::<4, false>(a, b, alo, ahi, blo, bhi),
            }
        }
    })
}

/// The byte DP with `N` AVX2 vectors of 32 columns (a range at most `32 * N` wide and at most
/// [`LANE_ROWS_MAX`] rows). `a` and `bytes` (holding `b`) are views from the first byte; `bytes`
/// extends [`BACK_PAD`] (32) bytes past `b`, so every load of `32 * N` bytes from `blo` stays
/// inside (`32 * N < width + 32`).
///
/// No branch depends on the data: each column keeps the longest run that ended in it so far and
/// the row where that length was first reached; after the last row, the longest of those is the
/// match, and among equals the first in (row, column) order, the run difflib's `k > bestsize`
/// keeps. `TRANSPOSED` when the caller swapped the sequences (and the range's bounds) so that
/// difflib's rows are the columns here: among equals, the first in (column, row) order then.
///
/// Performance notes: one AVX2 vector per 32 columns halves the vector operations of the SSE2
/// rows for the 17-64-column ranges most sub-ranges of the recursion are (callgrind on label
/// pairs, `examples/bench_pairs.rs`). No per-row test against the best so far: that branch
/// depends on the text and mispredicts (perf; history in docs/perf.md).
///
/// # Safety
/// The CPU must support AVX2. (The loads past the asserts below stay inside `bytes` and `a`.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn longest_run_lanes_avx2<const N: usize, const TRANSPOSED: bool>(
    a: &[u8],
    bytes: &[u8],
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    use std::arch::x86_64::*;
    let width = bhi - blo;
    let bytes = &bytes[blo..];
    assert!(width <= 32 * N && bytes.len() >= 32 * N && alo <= ahi && a.len() >= ahi);
    assert!(ahi - alo <= LANE_ROWS_MAX);
    let lane = _mm256_setr_epi8(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31,
    );
    let ones = _mm256_set1_epi8(-1);
    let zero = _mm256_setzero_si256();
    let mut bv = [zero; N];
    for (k, v) in bv.iter_mut().enumerate() {
        // SAFETY: `bytes` holds at least 32 * N bytes (asserted above): 32 from 32 * k are inside.
        *v = unsafe { _mm256_loadu_si256(bytes.as_ptr().add(32 * k).cast()) };
    }
    // Lanes past the range (in the last vector only) never feed lower lanes; they are masked out of
    // the per-column bests after the last row.
    let left = (width - 32 * (N - 1)) as i8;
    let last_mask = _mm256_cmpgt_epi8(_mm256_set1_epi8(left), lane);
    let mut prev = [zero; N];
    // Per column: the longest run ending in it so far, and the row (offset from alo) where a run
    // of that length first ended.
    let mut longest = [zero; N];
    let mut first_row = [zero; N];
    let mut row = zero;
    for &x in &a[alo..ahi] {
        let x = _mm256_set1_epi8(x as i8);
        for k in 0..N {
            // prev shifted up one byte across the whole vector, the byte below it carried in
            // (prev[k - 1] is still the previous row's: cur overwrites prev in descending k).
            let k = N - 1 - k;
            let below = if k == 0 { zero } else { prev[k - 1] };
            let spliced = _mm256_permute2x128_si256(prev[k], below, 0x03);
            let shifted = _mm256_alignr_epi8(prev[k], spliced, 15);
            let eq = _mm256_cmpeq_epi8(bv[k], x);
            let cur = _mm256_and_si256(_mm256_sub_epi8(shifted, ones), eq);
            let longer = _mm256_max_epu8(longest[k], cur);
            let kept = _mm256_cmpeq_epi8(longer, longest[k]);
            first_row[k] = _mm256_blendv_epi8(row, first_row[k], kept);
            longest[k] = longer;
            prev[k] = cur;
        }
        row = _mm256_sub_epi8(row, ones);
    }
    // Lanes past the range kept runs of their own (which never reach lower lanes): dropped once here
    // rather than masked on every row.
    longest[N - 1] = _mm256_and_si256(longest[N - 1], last_mask);
    let mut top = longest[0];
    for v in &longest[1..] {
        top = _mm256_max_epu8(top, *v);
    }
    let size = hmax_epu8(top) as usize;
    if size == 0 {
        return (alo, blo, 0);
    }
    let target = _mm256_set1_epi8(size as i8);
    if TRANSPOSED {
        // Columns here are difflib's rows: the first column holding a run of `size`, then the
        // first row that run length was reached in.
        for (k, v) in longest.iter().enumerate() {
            let hits = _mm256_movemask_epi8(_mm256_cmpeq_epi8(*v, target)) as u32;
            if hits != 0 {
                let lane = hits.trailing_zeros() as usize;
                let mut offsets = [0u8; 32];
                // SAFETY: stores 32 bytes into a local array of 32.
                unsafe { _mm256_storeu_si256(offsets.as_mut_ptr().cast(), first_row[k]) };
                let (end_i, end_j) = (alo + offsets[lane] as usize, blo + 32 * k + lane);
                return (end_i + 1 - size, end_j + 1 - size, size);
            }
        }
    }
    // The first row a run of `size` ended in, then the first column of that row holding one.
    let mut rows = [ones; N];
    let mut earliest = ones;
    for k in 0..N {
        rows[k] = _mm256_blendv_epi8(ones, first_row[k], _mm256_cmpeq_epi8(longest[k], target));
        earliest = _mm256_min_epu8(earliest, rows[k]);
    }
    let r = hmin_epu8(earliest);
    let at = _mm256_set1_epi8(r as i8);
    let mut column = 0;
    for (k, v) in rows.iter().enumerate() {
        let hits = _mm256_movemask_epi8(_mm256_cmpeq_epi8(*v, at)) as u32;
        if hits != 0 {
            column = 32 * k + hits.trailing_zeros() as usize;
            break;
        }
    }
    let (end_i, end_j) = (alo + r as usize, blo + column);
    (end_i + 1 - size, end_j + 1 - size, size)
}

/// The largest byte of `v`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn hmax_epu8(v: std::arch::x86_64::__m256i) -> u8 {
    use std::arch::x86_64::*;
    let mut m = _mm_max_epu8(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 8));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 4));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 2));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 1));
    (_mm_cvtsi128_si32(m) & 0xFF) as u8
}

/// The smallest byte of `v`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn hmin_epu8(v: std::arch::x86_64::__m256i) -> u8 {
    use std::arch::x86_64::*;
    // Each step folds the upper half of what is left onto the lower; the zeros the shifts bring in
    // land above it and never reach byte 0.
    let mut m = _mm_min_epu8(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_min_epu8(m, _mm_srli_si128(m, 8));
    m = _mm_min_epu8(m, _mm_srli_si128(m, 4));
    m = _mm_min_epu8(m, _mm_srli_si128(m, 2));
    m = _mm_min_epu8(m, _mm_srli_si128(m, 1));
    (_mm_cvtsi128_si32(m) & 0xFF) as u8
}

/// The register DP for a range at most [`REG_COLUMNS_MAX`] wide.
#[cfg(target_arch = "x86_64")]
fn longest_run_regs(
    a: &[u8],
    b: &[u8],
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
    cancel: &Cancel,
) -> (usize, usize, usize) {
    // SAFETY: SSE2 is in the x86_64 baseline.
    unsafe {
        match (bhi - blo).div_ceil(16) {
            0 => (alo, blo, 0),
            1 => longest_run_regs_n::<1>(a, b, alo, ahi, blo, bhi, cancel),
            2 => longest_run_regs_n::<2>(a, b, alo, ahi, blo, bhi, cancel),
            3 => longest_run_regs_n::<3>(a, b, alo, ahi, blo, bhi, cancel),
            4 => longest_run_regs_n::<4>(a, b, alo, ahi, blo, bhi, cancel),
            5 => longest_run_regs_n::<5>(a, b, alo, ahi, blo, bhi, cancel),
            6 => longest_run_regs_n::<6>(a, b, alo, ahi, blo, bhi, cancel),
            7 => longest_run_regs_n::<7>(a, b, alo, ahi, blo, bhi, cancel),
            _ => longest_run_regs_n::<8>(a, b, alo, ahi, blo, bhi, cancel),
        }
    }
}

/// `N` SSE2 vectors of 16 columns: `cur[t] = (prev[t - 1] + 1) & (b[blo + t] == a[i])`. A row is
/// tested against the best so far with one compare; only a row that beats it is searched lane by
/// lane, for its maximum and the first column holding it (the cell difflib's `k > bestsize` keeps).
///
/// # Safety
/// The CPU must support SSE2 (every x86_64 CPU does). (Loads stay inside `b`: asserted below.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
unsafe fn longest_run_regs_n<const N: usize>(
    a: &[u8],
    b: &[u8],
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
    cancel: &Cancel,
) -> (usize, usize, usize) {
    use std::arch::x86_64::*;
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
    let width = bhi - blo;
    let limit = (ahi - alo).min(width);
    // Every load below reads 16 * N bytes of `bytes` (`b` is padded by BACK_PAD past its end).
    let bytes = &b[blo..];
    assert!(width <= 16 * N && bytes.len() >= 16 * N);
    let lane = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let ones = _mm_set1_epi8(-1); // x - (-1) is x + 1
    let zero = _mm_setzero_si128();
    let mut bv = [zero; N];
    for (k, v) in bv.iter_mut().enumerate() {
        // SAFETY: 16 bytes from 16 * k < 16 * N <= bytes.len() (asserted above).
        *v = unsafe { _mm_loadu_si128(bytes.as_ptr().add(16 * k).cast()) };
    }
    // Lanes past the range (only ever in the last vector) compute runs of their own, which never
    // flow into lower lanes (a run moves up one lane a row); they are masked out of the maximum.
    let left = (width - 16 * (N - 1)) as i8;
    let last_mask = _mm_cmplt_epi8(lane, _mm_set1_epi8(left));
    let mut prev = [zero; N];
    let splat = |v: usize| {
        // SAFETY: 16 bytes of an array of 16.
        unsafe { _mm_loadu_si128(SPLAT[v].as_ptr().cast()) }
    };
    let mut over = _mm_set1_epi8(1); // bestsize + 1, the least value that beats it
    for (i, &x) in a[..ahi].iter().enumerate().skip(alo) {
        if (i - alo) % POLL_ROWS == 0 && cancel.is_cancelled() {
            break;
        }
        let x = splat(x as usize);
        let mut cur = [zero; N];
        let mut carry = zero;
        let mut rmax = zero;
        for k in 0..N {
            let shifted = _mm_or_si128(_mm_slli_si128(prev[k], 1), carry);
            carry = _mm_srli_si128(prev[k], 15);
            let eq = _mm_cmpeq_epi8(bv[k], x);
            cur[k] = _mm_and_si128(_mm_sub_epi8(shifted, ones), eq);
            if k + 1 < N {
                rmax = _mm_max_epu8(rmax, cur[k]);
            } else {
                rmax = _mm_max_epu8(rmax, _mm_and_si128(cur[k], last_mask));
            }
        }
        if _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(rmax, over), rmax)) != 0 {
            // The row's maximum in every lane, then the first lane holding it.
            rmax = _mm_max_epu8(rmax, _mm_srli_si128(rmax, 8));
            rmax = _mm_max_epu8(rmax, _mm_srli_si128(rmax, 4));
            rmax = _mm_max_epu8(rmax, _mm_srli_si128(rmax, 2));
            rmax = _mm_max_epu8(rmax, _mm_srli_si128(rmax, 1));
            let row_max = (_mm_cvtsi128_si32(rmax) & 0xFF) as usize;
            let target = splat(row_max);
            let mut t = 0;
            cur[N - 1] = _mm_and_si128(cur[N - 1], last_mask);
            for (k, v) in cur.iter().enumerate() {
                let hits = _mm_movemask_epi8(_mm_cmpeq_epi8(*v, target));
                if hits != 0 {
                    t = 16 * k + hits.trailing_zeros() as usize;
                    break;
                }
            }
            bestsize = row_max;
            besti = i + 1 - row_max;
            bestj = blo + t + 1 - row_max;
            if bestsize == limit {
                break;
            }
            over = splat(bestsize + 1);
        }
        prev = cur;
    }
    (besti, bestj, bestsize)
}

/// The register DP's answer one byte at a time (a range at most [`REG_COLUMNS_MAX`] wide).
#[cfg(any(test, not(target_arch = "x86_64")))]
fn longest_run_scalar(
    a: &[u8],
    b: &[u8],
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
    cancel: &Cancel,
) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
    let width = bhi - blo;
    let limit = (ahi - alo).min(width);
    let bytes = &b[blo..bhi];
    let mut row = [0u8; REG_COLUMNS_MAX];
    let mut prev = [0u8; REG_COLUMNS_MAX + 1];
    for (i, &x) in a[..ahi].iter().enumerate().skip(alo) {
        if (i - alo) % POLL_ROWS == 0 && cancel.is_cancelled() {
            break;
        }
        for t in 0..width {
            row[t] = if bytes[t] == x { prev[t] + 1 } else { 0 };
        }
        let row_max = *row[..width].iter().max().unwrap_or(&0) as usize;
        if row_max > bestsize {
            let t = row[..width]
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
        prev[1..=width].copy_from_slice(&row[..width]);
    }
    (besti, bestj, bestsize)
}

/// One row of the byte DP over `width` columns: `cur[t] = (prev[t] + 1) & (bytes[t] == x ?
/// indexed[t] : 0)`; returns the row's maximum. Every slice must extend at least 16 bytes past
/// `width` (a padded copy's [`BACK_PAD`] does): 16 columns a step.
///
/// Performance notes: LLVM left the plain loop unvectorised, and 16 columns a step (SSE2) took
/// 4-5x fewer instructions per pair.
#[inline]
pub fn dense_row(
    prev: &[u8],
    cur: &mut [u8],
    bytes: &[u8],
    indexed: &[u8],
    x: u8,
    width: usize,
) -> u8 {
    assert!([prev.len(), cur.len(), bytes.len(), indexed.len()]
        .iter()
        .all(|&l| l >= width + 16));
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is in the x86_64 baseline; the slices' lengths are asserted above.
        unsafe { dense_row_sse2(prev, cur, bytes, indexed, x, width) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        dense_row_scalar(prev, cur, bytes, indexed, x, width)
    }
}

/// [`dense_row`] 16 columns a step.
///
/// # Safety
/// The CPU must support SSE2 (every x86_64 CPU does), and every slice must extend at least 16
/// bytes past `width`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
unsafe fn dense_row_sse2(
    prev: &[u8],
    cur: &mut [u8],
    bytes: &[u8],
    indexed: &[u8],
    x: u8,
    width: usize,
) -> u8 {
    use std::arch::x86_64::*;
    let xv = _mm_set1_epi8(x as i8);
    let one = _mm_set1_epi8(1);
    let lane = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let mut maxv = _mm_setzero_si128();
    let mut t = 0;
    while t < width {
        let left = (width - t).min(16) as i8;
        let in_range = _mm_cmplt_epi8(lane, _mm_set1_epi8(left));
        // SAFETY: each step reads and writes [t, t + 16) with t < width, inside every slice (each
        // is at least width + 16 long: this function's contract); lanes at or past `width` are
        // masked to zero.
        unsafe {
            let p = _mm_loadu_si128(prev.as_ptr().add(t).cast());
            let b = _mm_loadu_si128(bytes.as_ptr().add(t).cast());
            let ind = _mm_and_si128(_mm_loadu_si128(indexed.as_ptr().add(t).cast()), in_range);
            let v = _mm_and_si128(
                _mm_add_epi8(p, one),
                _mm_and_si128(_mm_cmpeq_epi8(b, xv), ind),
            );
            _mm_storeu_si128(cur.as_mut_ptr().add(t).cast(), v);
            maxv = _mm_max_epu8(maxv, v);
        }
        t += 16;
    }
    maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 8));
    maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 4));
    maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 2));
    maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 1));
    (_mm_cvtsi128_si32(maxv) & 0xFF) as u8
}

/// [`dense_row`] one column at a time.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn dense_row_scalar(
    prev: &[u8],
    cur: &mut [u8],
    bytes: &[u8],
    indexed: &[u8],
    x: u8,
    width: usize,
) -> u8 {
    let mut row_max = 0u8;
    for t in 0..width {
        let v = prev[t].wrapping_add(1) & 0u8.wrapping_sub((bytes[t] == x) as u8) & indexed[t];
        cur[t] = v;
        row_max = row_max.max(v);
    }
    row_max
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::bytes::tests::{length, padded, text};
    use crate::simd::bytes::FRONT_PAD;
    use crate::test_rng::Rng;

    /// difflib's DP with every element indexed: the first longest run in (row, column) order.
    fn difflib_run(
        a: &[u8],
        b: &[u8],
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> (usize, usize, usize) {
        let mut best = (rows.start, cols.start, 0);
        let mut prev = vec![0usize; b.len() + 1];
        for i in rows {
            let mut cur = vec![0usize; b.len() + 1];
            for j in cols.clone() {
                if a[i] == b[j] {
                    cur[j + 1] = prev[j] + 1;
                    let k = cur[j + 1];
                    if k > best.2 {
                        best = (i + 1 - k, j + 1 - k, k);
                    }
                }
            }
            prev = cur;
        }
        best
    }

    #[test]
    fn longest_run_kernels_agree_with_difflib() {
        let mut rng = Rng(0x1046_1046);
        let never = Cancel::never();
        for case in 0..4000 {
            let (la, lb) = (length(&mut rng), length(&mut rng));
            let (mut a, mut b) = (text(&mut rng, la), text(&mut rng, lb));
            if case % 3 == 0 && la > 0 && lb > 0 {
                // A planted run, ending on a's last row: ties and whole-side matches.
                let k = 1 + rng.below(la.min(lb));
                let at = rng.below(lb - k + 1);
                a[la - k..].fill(b'z');
                b[at..at + k].fill(b'z');
            }
            let (pa, pb) = (padded(&a), padded(&b));
            let (va, vb) = (&pa[FRONT_PAD..], &pb[FRONT_PAD..]);
            let (x, y) = (rng.below(la + 1), rng.below(la + 1));
            let (u, v) = (rng.below(lb + 1), rng.below(lb + 1));
            let (rows, cols) = (x.min(y)..x.max(y), u.min(v)..u.max(v));
            let want = difflib_run(&a, &b, rows.clone(), cols.clone());
            let what = format!("{a:?} {b:?} {rows:?} {cols:?}");
            let got = longest_run(va, vb, rows.clone(), cols.clone(), &never);
            if cols.len() <= REG_COLUMNS_MAX {
                assert_eq!(got, Some(want), "{what}");
            } else if let Some(got) = got {
                assert_eq!(got, want, "{what}");
            }
            let (alo, ahi, blo, bhi) = (rows.start, rows.end, cols.start, cols.end);
            if cols.len() <= REG_COLUMNS_MAX {
                let scalar = longest_run_scalar(va, vb, alo, ahi, blo, bhi, &never);
                assert_eq!(scalar, want, "scalar: {what}");
                #[cfg(target_arch = "x86_64")]
                assert_eq!(
                    longest_run_regs(va, vb, alo, ahi, blo, bhi, &never),
                    want,
                    "regs: {what}"
                );
            }
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") && !rows.is_empty() && !cols.is_empty() {
                // SAFETY: the CPU has AVX2 (checked above).
                if let Some(lanes) = unsafe { longest_run_lanes(va, vb, alo, ahi, blo, bhi) } {
                    assert_eq!(lanes, want, "lanes: {what}");
                }
            }
        }
    }

    #[test]
    fn dense_row_kernels_agree() {
        let mut rng = Rng(0xD012_D012);
        for _ in 0..3000 {
            let width = length(&mut rng);
            let n = width + 16;
            let prev: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
            let bytes = text(&mut rng, n);
            let indexed: Vec<u8> = (0..n)
                .map(|_| if rng.below(5) == 0 { 0 } else { 0xFF })
                .collect();
            let x = bytes[rng.below(n)];
            let (mut want, mut got) = (vec![7u8; n], vec![7u8; n]);
            let max = dense_row_scalar(&prev, &mut want, &bytes, &indexed, x, width);
            assert_eq!(dense_row(&prev, &mut got, &bytes, &indexed, x, width), max);
            assert_eq!(got[..width], want[..width], "{width}");
        }
    }
}
