//! Label normalisation's common case 16 bytes a step: an ASCII label already split and joined
//! (single spaces between words, none at either end, no other whitespace), lower-cased as it is
//! checked.

/// `Some(false)` when `s` is not ASCII; `Some(true)` with `out` = `s` lower-cased when `s` is ASCII
/// with no byte below 0x20, no two spaces in a row and none at either end (already split and
/// joined: most labels); else `None` (`out` then holds nothing useful: the caller runs the general
/// path). Bytes below 0x20 include every ASCII whitespace but the space; other control bytes only
/// send a label to the general path. `out` is replaced.
///
/// Performance notes: the plain checks and lower-casing take ~9 instructions a character (~1,200
/// of a ~5,200-instruction `labels_match` call on ~66-character labels, under callgrind); the
/// last block overlaps the one before rather than ending in a byte-at-a-time tail, which took
/// ~250 of ~3,760 (history in docs/perf.md).
#[inline]
pub fn lower_collapsed(s: &[u8], out: &mut Vec<u8>) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is in the x86_64 baseline.
        unsafe { lower_collapsed_sse2(s, out) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        lower_collapsed_scalar(s, out)
    }
}

/// ASCII lower-casing of one byte, without a branch.
#[inline(always)]
fn lower(c: u8) -> u8 {
    c | (((c.wrapping_sub(b'A') < 26) as u8) << 5)
}

/// [`lower_collapsed`] 16 bytes a step (SSE2, in the x86_64 baseline), the last block overlapping
/// the one before; strings under 16 bytes one byte at a time.
///
/// # Safety
/// The CPU must support SSE2 (every x86_64 CPU does).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
unsafe fn lower_collapsed_sse2(s: &[u8], out: &mut Vec<u8>) -> Option<bool> {
    use std::arch::x86_64::*;
    let n = s.len();
    out.clear();
    // Room for the n bytes written below (no allocation when the caller reserved it).
    out.reserve(n);
    let (Some(&first), Some(&last)) = (s.first(), s.last()) else {
        return Some(true);
    };
    let mut bad = (first == b' ') | (last == b' ');
    let dst = &mut out.spare_capacity_mut()[..n];
    let (space, below_a, above_z, control) = (
        _mm_set1_epi8(b' ' as i8),
        _mm_set1_epi8(b'A' as i8 - 1),
        _mm_set1_epi8(b'Z' as i8 + 1),
        _mm_set1_epi8(0x20),
    );
    // The 16 bytes at `at` (at + 16 <= n): false when one is not ASCII; else flags bad ones
    // (below 0x20, or a space followed by a space: the next byte read past the block while
    // `at + 17 <= n`, else within it) and stores them lower-cased into `dst[at..at + 16]`.
    let mut block = |at: usize| -> bool {
        let src = &s[at..at + 16];
        // SAFETY: reads the 16 bytes of `src`.
        let v = unsafe { _mm_loadu_si128(src.as_ptr().cast()) };
        if _mm_movemask_epi8(v) != 0 {
            return false;
        }
        // ASCII bytes are non-negative, so signed compares order them.
        let mut flags = _mm_movemask_epi8(_mm_cmplt_epi8(v, control));
        let spaces = _mm_cmpeq_epi8(v, space);
        let next_spaces = if at + 17 <= n {
            let next = &s[at + 1..at + 17];
            // SAFETY: reads the 16 bytes of `next`.
            _mm_cmpeq_epi8(unsafe { _mm_loadu_si128(next.as_ptr().cast()) }, space)
        } else {
            // Lane t holds lane t + 1; the last lane (the string's last byte) gets zero.
            _mm_srli_si128::<1>(spaces)
        };
        flags |= _mm_movemask_epi8(_mm_and_si128(spaces, next_spaces));
        bad |= flags != 0;
        let upper = _mm_and_si128(_mm_cmpgt_epi8(v, below_a), _mm_cmplt_epi8(v, above_z));
        let lowered = _mm_or_si128(v, _mm_and_si128(upper, control));
        let to = &mut dst[at..at + 16];
        // SAFETY: writes 16 bytes into `to`, 16 (uninitialised) bytes of `out`'s spare capacity.
        unsafe { _mm_storeu_si128(to.as_mut_ptr().cast(), lowered) };
        true
    };
    let mut k = 0;
    while k + 16 <= n {
        if !block(k) {
            return Some(false);
        }
        k += 16;
    }
    if k < n && n >= 16 {
        // The last 16 bytes, overlapping the block before: no byte-at-a-time tail.
        if !block(n - 16) {
            return Some(false);
        }
        k = n;
    }
    for i in k..n {
        let c = s[i];
        if c >= 0x80 {
            return Some(false);
        }
        bad |= c < 0x20 || (c == b' ' && i + 1 < n && s[i + 1] == b' ');
        dst[i].write(lower(c));
    }
    if bad {
        return None;
    }
    // SAFETY: the blocks and the tail above wrote every byte of dst = out's spare capacity
    // [0, n) (the blocks cover [0, k), the tail [k, n)), and out's length was 0.
    unsafe { out.set_len(n) };
    Some(true)
}

/// [`lower_collapsed`] one byte at a time.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn lower_collapsed_scalar(s: &[u8], out: &mut Vec<u8>) -> Option<bool> {
    out.clear();
    if !s.is_ascii() {
        return Some(false);
    }
    let edge = s.first() == Some(&b' ') || s.last() == Some(&b' ');
    let control = s.iter().any(|&c| c < 0x20);
    let double = s.windows(2).any(|w| w == b"  ");
    if edge || control || double {
        return None;
    }
    out.extend(s.iter().map(|&c| lower(c)));
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// The kernel against the plain rule, on lengths around the vector width and its multiples,
    /// with every byte that changes the answer (whitespace, other control bytes, double and edge
    /// spaces, non-ASCII anywhere).
    #[test]
    fn kernel_agrees_with_the_plain_rule() {
        let mut rng = Rng(0xA5C1_1A5C);
        let special = b"aZz .!\t\x1c\x01\x7f\xc3\x80Q@[`{";
        for _ in 0..40_000 {
            let len = [0, 1, 5, 15, 16, 17, 31, 32, 33, 47, 48, 49, 64][rng.below(13)];
            let s: Vec<u8> = (0..len)
                .map(|_| match rng.below(12) {
                    0..=8 => b"abcXYZ mq"[rng.below(9)],
                    _ => special[rng.below(special.len())],
                })
                .collect();
            let (mut want, mut got) = (Vec::new(), vec![1, 2, 3]);
            let answer = lower_collapsed_scalar(&s, &mut want);
            assert_eq!(lower_collapsed(&s, &mut got), answer, "{s:?}");
            if answer == Some(true) {
                assert_eq!(got, want, "{s:?}");
                assert_eq!(got, s.to_ascii_lowercase(), "{s:?}");
            }
        }
    }
}
