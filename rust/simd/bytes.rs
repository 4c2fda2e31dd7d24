//! Which bytes of a byte string equal one byte: the row scans of the matcher's longest-match
//! searches, 16 bytes a step (SSE2, the x86_64 baseline) or 32 (AVX2 where the CPU has it), plain
//! code elsewhere; every form gives the same answer. (The byte DP's kernels: [`super::byte_dp`].)
//!
//! The searches read *padded copies* of the two strings: [`FRONT_PAD`] zero bytes, the string,
//! then [`BACK_PAD`] zero bytes, so a vector load from any position of the string, or one before
//! or after it, stays inside. A function that takes a padded copy says so; one that takes a view
//! "from the first byte" takes the copy without its front pad (still padded at the back).

use std::ops::Range;

/// Zero bytes before the first byte of a padded copy (so a run can be extended backwards eight
/// bytes a step with one unaligned load; at least 1 for the row before the first).
pub const FRONT_PAD: usize = 8;

/// Zero bytes after the last byte of a padded copy: the 32-column steps load a whole AVX2 vector
/// from the last column, or the one after it.
pub const BACK_PAD: usize = 32;

/// Bit `t` set where `bytes[at + t] == x`, for `t` in `0..16` (`bytes` must hold them all).
#[inline(always)]
pub fn eq_mask16(bytes: &[u8], at: usize, x: u8) -> u32 {
    let window: &[u8; 16] = bytes[at..at + 16].try_into().expect("sixteen bytes");
    #[cfg(target_arch = "x86_64")]
    {
        eq_mask16_sse2(window, x)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        eq_mask16_scalar(window, x)
    }
}

/// [`eq_mask16`] with SSE2 (in the x86_64 baseline).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn eq_mask16_sse2(window: &[u8; 16], x: u8) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: both loads read 16 bytes of an array of 16 (SSE2 is in the x86_64 baseline).
    unsafe {
        let splat = _mm_loadu_si128(SPLAT[x as usize].as_ptr().cast());
        let v = _mm_loadu_si128(window.as_ptr().cast());
        _mm_movemask_epi8(_mm_cmpeq_epi8(v, splat)) as u32
    }
}

/// [`eq_mask16`] one byte at a time.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn eq_mask16_scalar(window: &[u8; 16], x: u8) -> u32 {
    window
        .iter()
        .enumerate()
        .fold(0, |m, (t, &y)| m | (((y == x) as u32) << t))
}

/// The first `t` in `from..to` where `bytes[t] == x`. `bytes` (a view from the first byte) must
/// extend at least 15 bytes past `to`: 16 bytes are compared a step.
#[inline]
pub fn first_equal_byte(bytes: &[u8], from: usize, to: usize, x: u8) -> Option<usize> {
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

/// Call `f` with each column `j` in `cols`, ascending, where `b[j] == a[r]`; `a` and `b` are
/// padded copies. With `runs_only`, a match whose diagonal neighbours (`a[r - 1]` vs `b[j - 1]`,
/// `a[r + 1]` vs `b[j + 1]`) both differ is skipped: it lies on no run longer than 1. Neighbours
/// are compared even outside the range (a pad byte where `r` or `j` is first or last), which can
/// only keep a match, never skip one. 32 columns a step with AVX2, else 16.
///
/// Panics if `r` is not a row of `a` or `cols` not columns of `b` (padded as said above).
///
/// Performance notes: the anchor rows of a label pair's first range compare ~5 blocks of 16
/// columns a row, three compares each with `runs_only`; 32 a step halves the blocks
/// (`examples/bench_pairs.rs` under callgrind).
#[inline(always)]
pub fn each_equal_in_row(
    a: &[u8],
    b: &[u8],
    r: usize,
    cols: Range<usize>,
    runs_only: bool,
    f: impl FnMut(usize),
) {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2() {
        // SAFETY: the CPU has AVX2 (checked above).
        unsafe { each_equal_in_row_avx2(a, b, r, cols, runs_only, f) };
        return;
    }
    each_equal_in_row_16(a, b, r, cols, runs_only, f);
}

/// [`each_equal_in_row`] 16 columns a step ([`eq_mask16`]).
#[inline(always)]
fn each_equal_in_row_16(
    a: &[u8],
    b: &[u8],
    r: usize,
    cols: Range<usize>,
    runs_only: bool,
    mut f: impl FnMut(usize),
) {
    let row = FRONT_PAD + r;
    let (x, above, below) = (a[row], a[row - 1], a[row + 1]);
    let (blo, bhi) = (cols.start, cols.end);
    let mut c = blo;
    while c < bhi {
        // `b` holds FRONT_PAD (>= 1) bytes before the string and BACK_PAD (>= 17) after it: the
        // 16 bytes from any column c - 1, c or c + 1 (c < len(b)) are inside.
        let at = FRONT_PAD + c;
        let mut hits = eq_mask16(b, at, x);
        if runs_only && hits != 0 {
            hits &= eq_mask16(b, at - 1, above) | eq_mask16(b, at + 1, below);
        }
        if bhi - c < 16 {
            hits &= (1u32 << (bhi - c)) - 1;
        }
        while hits != 0 {
            f(c + hits.trailing_zeros() as usize);
            hits &= hits - 1;
        }
        c += 16;
    }
}

/// [`each_equal_in_row`] 32 columns a step.
///
/// # Safety
/// The CPU must support AVX2. (The loads stay inside `b`: asserted on entry.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn each_equal_in_row_avx2(
    a: &[u8],
    b: &[u8],
    r: usize,
    cols: Range<usize>,
    runs_only: bool,
    mut f: impl FnMut(usize),
) {
    use std::arch::x86_64::*;
    let row = FRONT_PAD + r;
    let x = _mm256_set1_epi8(a[row] as i8);
    // Rows r - 1 and r + 1 (a pad byte where r is a's first or last row: it can only keep a match).
    let above = _mm256_set1_epi8(a[row - 1] as i8);
    let below = _mm256_set1_epi8(a[row + 1] as i8);
    let (blo, bhi) = (cols.start, cols.end);
    // The loads below read the 32 bytes from FRONT_PAD + c - 1, FRONT_PAD + c and FRONT_PAD + c + 1
    // for columns c < bhi: all inside `b` when it extends BACK_PAD (32) bytes past column bhi - 1
    // (and FRONT_PAD >= 1 bytes before column 0).
    assert!(bhi
        .checked_add(FRONT_PAD + BACK_PAD)
        .is_some_and(|end| end <= b.len()));
    let p = b.as_ptr();
    let mut c = blo;
    while c < bhi {
        let at = FRONT_PAD + c;
        // SAFETY: at + 32 <= FRONT_PAD + bhi - 1 + 32 < b.len() (asserted above).
        let v = unsafe { _mm256_loadu_si256(p.add(at).cast()) };
        let mut hits = _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, x)) as u32;
        if runs_only && hits != 0 {
            // SAFETY: at - 1 >= 0 (FRONT_PAD >= 1), and at - 1 + 32 < b.len() as above.
            let left = unsafe { _mm256_loadu_si256(p.add(at - 1).cast()) };
            // SAFETY: at + 1 + 32 <= FRONT_PAD + bhi + 32 <= b.len() (asserted above).
            let right = unsafe { _mm256_loadu_si256(p.add(at + 1).cast()) };
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// `s` as a padded copy.
    pub(in crate::simd) fn padded(s: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; FRONT_PAD];
        out.extend_from_slice(s);
        out.resize(out.len() + BACK_PAD, 0);
        out
    }

    /// Random bytes from a small alphabet (runs and ties), sometimes with a zero (the pad byte).
    pub(in crate::simd) fn text(rng: &mut Rng, n: usize) -> Vec<u8> {
        let alphabet = [1, 2, 3, 5, 40][rng.below(5)];
        (0..n)
            .map(|_| match rng.below(40) {
                0 => 0,
                _ => b'a' + rng.below(alphabet) as u8,
            })
            .collect()
    }

    /// Lengths either side of the vector widths (16, 32) and of their multiples.
    pub(in crate::simd) fn length(rng: &mut Rng) -> usize {
        let around = [
            0, 1, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128, 129, 200, 255,
        ];
        (around[rng.below(around.len())] + rng.below(3)).saturating_sub(1)
    }

    #[test]
    fn eq_mask16_kernels_agree() {
        let mut rng = Rng(0xE916_E916);
        for _ in 0..2000 {
            let bytes = text(&mut rng, 16);
            let window: &[u8; 16] = bytes[..].try_into().unwrap();
            let x = bytes[rng.below(16)].wrapping_add(rng.below(2) as u8);
            let want = eq_mask16_scalar(window, x);
            assert_eq!(eq_mask16(&bytes, 0, x), want, "{bytes:?} {x}");
            #[cfg(target_arch = "x86_64")]
            assert_eq!(eq_mask16_sse2(window, x), want, "{bytes:?} {x}");
            let first = (0..16).find(|&t| bytes[t] == x);
            let mut long = bytes.clone();
            long.extend([0; 15]);
            assert_eq!(first_equal_byte(&long, 0, 16, x), first);
        }
    }

    #[test]
    fn each_equal_in_row_kernels_agree() {
        let mut rng = Rng(0x0EAC_0EAC);
        for _ in 0..3000 {
            let (la, lb) = (1 + length(&mut rng), length(&mut rng));
            let (a, b) = (text(&mut rng, la), text(&mut rng, lb));
            let (pa, pb) = (padded(&a), padded(&b));
            let r = rng.below(la);
            let (u, v) = (rng.below(lb + 1), rng.below(lb + 1));
            let cols = u.min(v)..u.max(v);
            let runs_only = rng.below(2) == 0;
            // In padded positions: the row's byte, and the neighbours on both diagonals.
            let (row, x) = (FRONT_PAD + r, pa[FRONT_PAD + r]);
            let want: Vec<usize> = cols
                .clone()
                .filter(|&j| pb[FRONT_PAD + j] == x)
                .filter(|&j| {
                    let at = FRONT_PAD + j;
                    !runs_only || pa[row - 1] == pb[at - 1] || pa[row + 1] == pb[at + 1]
                })
                .collect();
            let mut got = Vec::new();
            each_equal_in_row(&pa, &pb, r, cols.clone(), runs_only, |j| got.push(j));
            assert_eq!(got, want, "{a:?} {b:?} {r} {cols:?} {runs_only}");
            got.clear();
            each_equal_in_row_16(&pa, &pb, r, cols.clone(), runs_only, |j| got.push(j));
            assert_eq!(got, want, "16: {a:?} {b:?} {r} {cols:?} {runs_only}");
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                got.clear();
                // SAFETY: the CPU has AVX2 (checked above).
                unsafe {
                    each_equal_in_row_avx2(&pa, &pb, r, cols.clone(), runs_only, |j| got.push(j))
                };
                assert_eq!(got, want, "avx2: {a:?} {b:?} {r} {cols:?} {runs_only}");
            }
        }
    }
}
