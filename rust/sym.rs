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
        let (m, last_start) = (needle.len(), haystack.len() - needle.len());
        if last_start < FEW_STARTS {
            // Few places the needle can start: each tested directly (at most FEW_STARTS * m
            // compares, linear in the needle).
            let (first, last) = (needle[0], needle[m - 1]);
            return (0..=last_start).any(|at| {
                haystack[at] == first
                    && haystack[at + m - 1] == last
                    && haystack[at..at + m] == *needle
            });
        }
        two_way_contains(haystack, needle)
    }
}

/// Whether `needle` (not empty, not longer than `haystack`) occurs in `haystack`, by the two-way
/// algorithm of Crochemore and Perrin (1991): O(haystack + needle) compares in the worst case,
/// constant extra space, over whole elements (so no hit can straddle two code points).
///
/// The needle is split at a critical factorisation `u v` (`crit`, from the larger of the two
/// maximal suffixes, one per order). A window is tested right part first: a mismatch at `v[i]`
/// shifts by `i + 1`; a mismatch in `u` shifts by the needle's period when `u` is a suffix of
/// `u`'s continuation with that period (then the compared prefix of the next window is
/// remembered, so no element is read twice), else by more than half the needle.
///
/// Performance notes: this replaced memmem over the code points' native bytes, which had to
/// filter misaligned hits and, yielding non-overlapping hits only, missed an aligned occurrence
/// overlapped by a misaligned one (issue 37: `"\x00"` in `"ж\x00ж"`).
fn two_way_contains<T: Copy + Ord>(haystack: &[T], needle: &[T]) -> bool {
    let m = needle.len();
    let (crit_lt, period_lt) = maximal_suffix(needle, false);
    let (crit_gt, period_gt) = maximal_suffix(needle, true);
    let (crit, period) = if crit_lt > crit_gt {
        (crit_lt, period_lt)
    } else {
        (crit_gt, period_gt)
    };
    // Periodic needle: `needle[..crit]` recurs `period` later; shifts by the period keep the
    // overlap compared (`memory`).
    let periodic = crit + period <= m && needle[..crit] == needle[period..period + crit];
    let period = if periodic {
        period
    } else {
        crit.max(m - crit) + 1
    };
    let mut pos = 0usize;
    let mut memory = 0usize;
    'window: while pos + m <= haystack.len() {
        let window = &haystack[pos..pos + m];
        let start = if periodic { crit.max(memory) } else { crit };
        for i in start..m {
            if needle[i] != window[i] {
                pos += i - crit + 1;
                memory = 0;
                continue 'window;
            }
        }
        let stop = if periodic { memory } else { 0 };
        for i in (stop..crit).rev() {
            if needle[i] != window[i] {
                pos += period;
                if periodic {
                    memory = m - period;
                }
                continue 'window;
            }
        }
        return true;
    }
    false
}

/// The start and period of the maximal suffix of `s` (not empty) under the element order, or
/// under its reverse with `reversed` (Crochemore and Perrin's computation, linear).
fn maximal_suffix<T: Copy + Ord>(s: &[T], reversed: bool) -> (usize, usize) {
    let (mut left, mut right, mut offset, mut period) = (0usize, 1usize, 0usize, 1usize);
    while let Some(&a) = s.get(right + offset) {
        let b = s[left + offset];
        if (a < b) != reversed && a != b {
            // The suffix at `right` loses: everything compared so far joins the period.
            right += offset + 1;
            offset = 0;
            period = right - left;
        } else if a == b {
            if offset + 1 == period {
                right += offset + 1;
                offset = 0;
            } else {
                offset += 1;
            }
        } else {
            // The suffix at `right` wins: it is the new candidate.
            left = right;
            right += 1;
            offset = 0;
            period = 1;
        }
    }
    (left, period)
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

    /// Issue 37: a run of low code points inside wide text. The old byte search's misaligned hit
    /// (the `00 00 00` of U+0436's high bytes and the NUL) overlapped the aligned one and hid it.
    #[test]
    fn wide_contains_finds_an_occurrence_a_misaligned_one_overlaps() {
        let zhe = 0x436u32;
        assert!(u32::contains(&[zhe, 0, zhe], &[0]));
        assert!(u32::contains(&[zhe, 0, 0, zhe], &[0, 0]));
        assert!(u32::contains(&[zhe, 1, zhe], &[1]));
        let long: Vec<u32> = (0..100).map(|k| if k % 2 == 0 { zhe } else { 0 }).collect();
        assert!(u32::contains(&long, &[0, zhe, 0]));
        assert!(!u32::contains(&long, &[0, 0]));
    }

    /// Wide search against windows compared one by one, on alphabets whose code points share
    /// bytes (zeros above all), across both paths (few starts, two-way).
    #[test]
    fn wide_contains_agrees_with_windows() {
        const ALPHABETS: [&[u32]; 4] = [
            &[0, 0x436],
            &[0, 1, 0x100, 0x1_0000],
            &[0, 0x100_0000, 0x1_0000, 0x436, 7],
            &[0x61, 0x62],
        ];
        let mut rng = crate::test_rng::Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..40_000 {
            let alphabet = ALPHABETS[rng.below(ALPHABETS.len())];
            let pick = |rng: &mut crate::test_rng::Rng| alphabet[rng.below(alphabet.len())];
            let n = rng.below(120);
            let hay: Vec<u32> = (0..n).map(|_| pick(&mut rng)).collect();
            let needle: Vec<u32> = if rng.below(2) == 0 && !hay.is_empty() {
                let start = rng.below(hay.len());
                let mut piece = hay[start..start + rng.below(hay.len() - start + 1)].to_vec();
                if !piece.is_empty() && rng.below(3) == 0 {
                    let at = rng.below(piece.len());
                    piece[at] = pick(&mut rng);
                }
                piece
            } else {
                (0..rng.below(14)).map(|_| pick(&mut rng)).collect()
            };
            let want = needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle);
            assert_eq!(u32::contains(&hay, &needle), want, "{hay:?} {needle:?}");
        }
    }

    /// Every needle of up to 7 elements over {0, 1} in every haystack of up to 12: the two-way
    /// search alone (no few-starts shortcut), periodic and aperiodic needles alike.
    #[test]
    fn two_way_exhaustive_on_two_letters() {
        for hn in 0..=12usize {
            for hbits in 0..(1u32 << hn) {
                let hay: Vec<u32> = (0..hn).map(|k| hbits >> k & 1).collect();
                for nn in 1..=7usize.min(hn) {
                    for nbits in 0..(1u32 << nn) {
                        let needle: Vec<u32> = (0..nn).map(|k| nbits >> k & 1).collect();
                        let want = hay.windows(nn).any(|w| w == needle);
                        assert_eq!(two_way_contains(&hay, &needle), want, "{hay:?} {needle:?}");
                    }
                }
            }
        }
    }

    thread_local! {
        static COMPARES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// An element that counts its comparisons.
    #[derive(Clone, Copy, Debug, Eq)]
    struct Counted(u32);

    impl PartialEq for Counted {
        fn eq(&self, other: &Self) -> bool {
            COMPARES.with(|c| c.set(c.get() + 1));
            self.0 == other.0
        }
    }
    impl PartialOrd for Counted {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Counted {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            COMPARES.with(|c| c.set(c.get() + 1));
            self.0.cmp(&other.0)
        }
    }

    /// Linear in the worst case: the inputs that make a naive search quadratic (a needle of one
    /// repeated element with a different last one, in a run of that element; and the reverse)
    /// cost a few compares per element, counted, whatever their lengths.
    #[test]
    fn two_way_is_linear_on_adversarial_inputs() {
        for (n, m) in [(2_000usize, 1_000usize), (20_000, 10_000), (20_000, 300)] {
            let hay: Vec<Counted> = (0..n).map(|_| Counted(0)).collect();
            for needle in [
                (0..m)
                    .map(|k| Counted(u32::from(k == m - 1)))
                    .collect::<Vec<_>>(),
                (0..m).map(|k| Counted(u32::from(k == 0))).collect(),
                (0..m).map(|k| Counted(u32::from(k == m / 2))).collect(),
            ] {
                COMPARES.with(|c| c.set(0));
                assert!(!two_way_contains(&hay, &needle));
                let compares = COMPARES.with(std::cell::Cell::get);
                assert!(
                    compares <= 6 * (n + m),
                    "{compares} compares for {n} and {m}"
                );
            }
        }
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
