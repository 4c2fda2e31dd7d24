//! The element types the matcher runs on: bytes for strings whose code points are all below 256
//! (most labels), `u32` code points (or dense ids of hashable elements) otherwise.

use std::hash::Hash;

pub trait Sym: Copy + Eq + Hash + Ord + Send + Sync + 'static {
    /// Whether the elements are bytes: each code is below 256 and is its own dense id (tables of
    /// 256, no interning), and the byte kernels apply (padded copies, SIMD compares, memchr).
    /// Wide elements (`false`) are interned into dense ids. A constant of the type, so every branch
    /// on it is decided at compile time.
    fn is_byte() -> bool;

    /// The element as a code point (or id); equal elements have equal codes.
    fn code(self) -> u32;

    /// Whether `needle` occurs in `haystack` as a contiguous run.
    fn contains(haystack: &[Self], needle: &[Self]) -> bool;
}

/// The longest haystack searched by first-byte scan instead of memmem, whose searcher construction
/// cost more than the whole search on label-length haystacks (perf: ~5% of a replay at 256). The
/// scan is O(haystack * needle) at worst, bounded by this length.
const FIRST_BYTE_SCAN_MAX: usize = 1024;

/// Below this many places a needle can start, `contains` tests each one directly.
///
/// Performance notes: on prefix-sharing label pairs (bench_instructions' sample) the first-byte
/// scan cost ~410 instructions of a ~3,760-instruction `labels_match` call: a memchr call per
/// occurrence of the first byte and a compare call per hit.
const FEW_STARTS: usize = 32;

impl Sym for u8 {
    #[inline(always)]
    fn is_byte() -> bool {
        true
    }

    #[inline]
    fn code(self) -> u32 {
        self as u32
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        // Performance notes: building memmem's searcher cost more than the search itself on labels
        // (measured: ~12% of a replay); haystacks up to FIRST_BYTE_SCAN_MAX take memchr's
        // first-byte scan plus a compare.
        match needle.first() {
            None => true,
            Some(_) if needle.len() > haystack.len() => false,
            Some(&first) if haystack.len() <= FIRST_BYTE_SCAN_MAX => {
                let (m, last_start) = (needle.len(), haystack.len() - needle.len());
                if last_start < FEW_STARTS {
                    // Labels of similar length: few places the needle can start, each tested on
                    // its first and last bytes before a whole compare.
                    let last = needle[m - 1];
                    return (0..=last_start).any(|at| {
                        haystack[at] == first
                            && haystack[at + m - 1] == last
                            && haystack[at..at + m] == *needle
                    });
                }
                memchr::memchr_iter(first, &haystack[..=last_start])
                    .any(|at| &haystack[at..at + m] == needle)
            }
            Some(_) => memchr::memmem::find(haystack, needle).is_some(),
        }
    }
}

impl Sym for u32 {
    #[inline(always)]
    fn is_byte() -> bool {
        false
    }

    #[inline]
    fn code(self) -> u32 {
        self
    }

    fn contains(haystack: &[u32], needle: &[u32]) -> bool {
        if needle.is_empty() {
            return true;
        }
        if needle.len() > haystack.len() {
            return false;
        }
        // memmem over the native-endian bytes; a hit counts only when it is aligned to a whole
        // code point (a misaligned byte match straddles two code points and is not a match).
        let hay = as_bytes(haystack);
        let pat = as_bytes(needle);
        memchr::memmem::find_iter(hay, pat).any(|offset| offset % 4 == 0)
    }
}

fn as_bytes(s: &[u32]) -> &[u8] {
    // SAFETY: u32 has no padding and any byte pattern is a valid u8; the length is in bytes.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_contains_ignores_misaligned_byte_hits() {
        // 0x0000_0100 followed by 0x0000_0001 contains the bytes of 0x0001_0000 at offset 2.
        let hay = [0x100u32, 0x1];
        assert!(!u32::contains(&hay, &[0x1_0000]));
        assert!(u32::contains(&hay, &[0x1]));
        assert!(u32::contains(&hay, &[0x100, 0x1]));
        assert!(!u32::contains(&hay, &[0x1, 0x100]));
    }

    #[test]
    fn narrow_contains() {
        assert!(u8::contains(
            b"uses pytest and ruff for python",
            b"pytest and ruff"
        ));
        assert!(!u8::contains(b"abc", b"abcd"));
    }

    /// Both search paths (few starts, first-byte scan) against windows compared one by one.
    #[test]
    fn narrow_contains_agrees_with_windows() {
        let mut rng = crate::test_rng::Rng(0x2545_F491_4F6C_DD1D);
        let mut next = |bound: usize| rng.below(bound);
        for _ in 0..20_000 {
            let hay: Vec<u8> = (0..next(90)).map(|_| b"abc"[next(3)]).collect();
            let needle: Vec<u8> = if next(2) == 0 && !hay.is_empty() {
                // A piece of the haystack, sometimes with one byte changed.
                let start = next(hay.len());
                let mut piece = hay[start..start + next(hay.len() - start + 1)].to_vec();
                if !piece.is_empty() && next(2) == 0 {
                    let at = next(piece.len());
                    piece[at] = b"abc"[next(3)];
                }
                piece
            } else {
                (0..next(12)).map(|_| b"abc"[next(3)]).collect()
            };
            let want = needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle);
            assert_eq!(u8::contains(&hay, &needle), want, "{hay:?} {needle:?}");
        }
    }
}
