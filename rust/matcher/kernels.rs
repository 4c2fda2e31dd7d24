//! The byte kernels of the longest-match searches: bit masks, 16-byte compares, the dense DP rows
//! (scalar and AVX2).

/// Zero bytes past the end of every byte buffer the dense DP reads, so its last 16-column step can
/// load a whole vector.
pub(super) const DENSE_PAD: usize = 32;

/// The bits of word `w` of a bitset over `b` that lie in `blo..bhi`.
#[inline]
pub(super) fn window_mask(w: usize, blo: usize, bhi: usize) -> u64 {
    let lo = (w * 64).max(blo) - w * 64;
    let hi = (w * 64 + 64).min(bhi) - w * 64;
    (u64::MAX >> (64 - (hi - lo))) << lo
}

/// Eight bytes from `at`, little-endian.
#[inline]
pub(super) fn load8(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

/// Bit `t` set where `bytes[at + t] == x`, for `t` in `0..16` (`bytes` holds them all).
#[inline(always)]
pub(super) fn eq_mask16(bytes: &[u8], at: usize, x: u8) -> u32 {
    let window = &bytes[at..at + 16];
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is in the x86_64 baseline; `window` holds 16 bytes.
        unsafe {
            let splat = _mm_loadu_si128(SPLAT[x as usize].as_ptr().cast());
            let v = _mm_loadu_si128(window.as_ptr().cast());
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, splat)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        window
            .iter()
            .enumerate()
            .fold(0, |m, (t, &y)| m | (((y == x) as u32) << t))
    }
}

/// The first `t` in `from..to` where `bytes[t] == x`. `bytes` (a padded byte copy, from its first
/// element) extends at least 15 bytes past `to`: 16 bytes are compared a step.
#[inline]
pub(super) fn first_equal_byte(bytes: &[u8], from: usize, to: usize, x: u8) -> Option<usize> {
    let mut c = from;
    while c < to {
        let hits = eq_mask16(bytes, c, x);
        if hits != 0 {
            let t = c + hits.trailing_zeros() as usize;
            return (t < to).then_some(t);
        }
        c += 16;
    }
    None
}

/// Whether this CPU has AVX2 (detected once; the standard library caches the answer).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(super) fn has_avx2() -> bool {
    #[cfg(test)]
    if super::tests::SSE2_ONLY.with(|only| only.get()) {
        return false;
    }
    std::is_x86_feature_detected!("avx2")
}

/// `Matcher::each_match_in_row` on byte strings (`a_bytes` and `b_bytes` are the padded copies, from
/// their first byte), 32 columns a step.
///
/// Performance notes: the anchor rows of a label pair's first range compare ~5 blocks of 16 columns
/// a row, three compares each with `runs_only`; with 32 a step, half the blocks
/// (`examples/bench_pairs.rs` under callgrind, one round: 10.65M -> 10.20M instructions).
///
/// # Safety
/// The CPU must support AVX2. (Every load reads a bounds-checked slice.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn each_byte_match_avx2(
    a_bytes: &[u8],
    b_bytes: &[u8],
    r: usize,
    blo: usize,
    bhi: usize,
    runs_only: bool,
    mut f: impl FnMut(usize),
) {
    use std::arch::x86_64::*;
    let row = FRONT_PAD + r;
    let x = _mm256_set1_epi8(a_bytes[row] as i8);
    // Rows r - 1 and r + 1 (a pad byte where r is a's first or last row: it can only keep a match).
    let above = _mm256_set1_epi8(a_bytes[row - 1] as i8);
    let below = _mm256_set1_epi8(a_bytes[row + 1] as i8);
    let mut c = blo;
    while c < bhi {
        // `b_bytes` holds FRONT_PAD bytes before `b` and DENSE_PAD (32) after it: the 32 bytes
        // from any column c - 1, c or c + 1 (c < len(b)) are inside.
        let at = FRONT_PAD + c;
        // SAFETY: each load reads the 32 bytes of a bounds-checked slice.
        let v = unsafe { _mm256_loadu_si256(b_bytes[at..at + 32].as_ptr().cast()) };
        let mut hits = _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, x)) as u32;
        if runs_only && hits != 0 {
            // SAFETY: as above.
            let left = unsafe { _mm256_loadu_si256(b_bytes[at - 1..at + 31].as_ptr().cast()) };
            // SAFETY: as above.
            let right = unsafe { _mm256_loadu_si256(b_bytes[at + 1..at + 33].as_ptr().cast()) };
            let before = _mm256_movemask_epi8(_mm256_cmpeq_epi8(left, above)) as u32;
            let after = _mm256_movemask_epi8(_mm256_cmpeq_epi8(right, below)) as u32;
            hits &= before | after;
        }
        if bhi - c < 32 {
            hits &= (1u32 << (bhi - c)) - 1;
        }
        while hits != 0 {
            f(c + hits.trailing_zeros() as usize);
            hits &= hits - 1;
        }
        c += 32;
    }
}

/// The most rows `dense_rows_avx2` takes: it keeps each column's row as a byte offset, and 255
/// marks "no row".
pub(super) const LANE_ROWS_MAX: usize = 255;

/// `Matcher::dense_regs_n` with `N` AVX2 vectors of 32 columns (a range at most `32 * N` wide and
/// at most `LANE_ROWS_MAX` rows). `a` and `bytes` (holding `b`) start at element 0; `bytes` extends
/// `DENSE_PAD` (32) bytes past `b`, so every load of `32 * N` bytes from `blo` stays inside
/// (`32 * N < width + 32`).
///
/// No branch depends on the data: each column keeps the longest run that ended in it so far and
/// the row where that length was first reached; after the last row, the longest of those is the
/// match, and among equals the first in (row, column) order, the run difflib's `k > bestsize`
/// keeps. `TRANSPOSED` when the caller swapped the sequences (and the range's bounds) so that
/// difflib's rows are the columns here: among equals, the first in (column, row) order then.
///
/// Performance notes: one AVX2 vector per 32 columns halves the vector operations of the SSE2 rows
/// for the 17-64-column ranges most sub-ranges of the recursion are (measured with callgrind on
/// label pairs, examples/bench_pairs.rs). An earlier version tested every row against the best so
/// far and searched the row when it beat it; perf put a third of this function's time on that
/// branch, which depends on the text and mispredicts.
///
/// # Safety
/// The CPU must support AVX2. (The loads past the asserts below stay inside `bytes` and `a`.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn dense_rows_avx2<const N: usize, const TRANSPOSED: bool>(
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
    assert!(width <= 32 * N && bytes.len() >= 32 * N && a.len() >= ahi);
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
    for i in alo..ahi {
        // SAFETY: i < ahi <= a.len() (asserted above).
        let x = _mm256_set1_epi8(unsafe { *a.get_unchecked(i) } as i8);
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
pub(super) fn hmax_epu8(v: std::arch::x86_64::__m256i) -> u8 {
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
pub(super) fn hmin_epu8(v: std::arch::x86_64::__m256i) -> u8 {
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

/// Each byte value repeated across a vector, for loading instead of building a broadcast (SSE2 has
/// no one-instruction byte broadcast).
pub(super) static SPLAT: [[u8; 16]; 256] = {
    let mut table = [[0u8; 16]; 256];
    let mut v = 0;
    while v < 256 {
        table[v] = [v as u8; 16];
        v += 1;
    }
    table
};

/// Bytes before the first element of the byte copies of `a` and `b`, so a match can be extended
/// backwards eight elements at a time with one unaligned load.
pub(super) const FRONT_PAD: usize = 8;

/// One row of the byte DP over `width` columns: `cur[t] = (prev[t] + 1) & (bytes[t] == x ? indexed[t] :
/// 0)`; returns the row's maximum. Every slice extends at least `DENSE_PAD` bytes past `width`.
#[inline]
pub(super) fn dense_row(
    prev: &[u8],
    cur: &mut [u8],
    bytes: &[u8],
    indexed: &[u8],
    x: u8,
    width: usize,
) -> u8 {
    debug_assert!([prev.len(), cur.len(), bytes.len(), indexed.len()]
        .iter()
        .all(|&l| l >= width + DENSE_PAD));
    #[cfg(target_arch = "x86_64")]
    {
        // SSE2 is part of the x86_64 baseline: 16 columns a step. Measured: LLVM left the scalar
        // loop below unvectorised, and this one takes 4-5x fewer instructions per pair.
        use std::arch::x86_64::*;
        // SAFETY: each step reads and writes [t, t + 16) with t < width, inside every slice (each is
        // at least width + 16 long); lanes at or past `width` are masked to zero.
        unsafe {
            let xv = _mm_set1_epi8(x as i8);
            let one = _mm_set1_epi8(1);
            let lane = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            let mut maxv = _mm_setzero_si128();
            let mut t = 0;
            while t < width {
                let left = (width - t).min(16) as i8;
                let in_range = _mm_cmplt_epi8(lane, _mm_set1_epi8(left));
                let p = _mm_loadu_si128(prev.as_ptr().add(t).cast());
                let b = _mm_loadu_si128(bytes.as_ptr().add(t).cast());
                let ind = _mm_and_si128(_mm_loadu_si128(indexed.as_ptr().add(t).cast()), in_range);
                let v = _mm_and_si128(
                    _mm_add_epi8(p, one),
                    _mm_and_si128(_mm_cmpeq_epi8(b, xv), ind),
                );
                _mm_storeu_si128(cur.as_mut_ptr().add(t).cast(), v);
                maxv = _mm_max_epu8(maxv, v);
                t += 16;
            }
            maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 8));
            maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 4));
            maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 2));
            maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 1));
            (_mm_cvtsi128_si32(maxv) & 0xFF) as u8
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut row_max = 0u8;
        for t in 0..width {
            let v = prev[t].wrapping_add(1) & 0u8.wrapping_sub((bytes[t] == x) as u8) & indexed[t];
            cur[t] = v;
            row_max = row_max.max(v);
        }
        row_max
    }
}
