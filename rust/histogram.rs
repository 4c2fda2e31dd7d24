//! Bucketed character histograms: cheap upper bounds on difflib's `M` (the total size of the
//! matching blocks), used by the join's window scan and the label index to drop pairs whose ratio
//! cannot reach the threshold before anything costlier is computed.
//!
//! Why `Σ_b min(ha[b], hb[b]) >= M`: matched elements are equal and at distinct positions, so `M` is
//! at most the multiset intersection of the two labels' characters (`quick_ratio`'s bound), and
//! merging characters into buckets can only raise each `min` (`min(x1 + x2, y1 + y2) >= min(x1, y1)
//! + min(x2, y2)`). So any mapping of code points to buckets keeps the bound; the mappings below
//! are chosen to make it tight on the real corpus. Two are used: 16 coarse buckets (two labels per
//! AVX2 register), then 32 on what passes. Counts are bytes, so labels over 255 elements have no
//! histogram (their pairs skip these bounds). The kernels are in [`crate::simd::histogram`].

use crate::bounds::scatter;
use crate::simd::histogram::{min_sum_32, two_stage_filter};
use crate::sym::Sym;
use crate::text::Text;

/// Buckets of the (fine) character histogram.
pub const BUCKETS: usize = 32;

/// Buckets of the coarse histogram, tried first.
pub const COARSE: usize = 16;

/// The histogram bucket of a code point: each lower-case ASCII letter, the space and the digits get
/// their own, other ASCII shares four, and other code points are scattered over all 32.
#[inline]
fn bucket(c: u32) -> usize {
    match c {
        0x61..=0x7A => (c - 0x61) as usize,
        0x20 => 26,
        0x30..=0x39 => 27,
        0..=0x7F => 28 + (c % 4) as usize,
        _ => scatter(c) % BUCKETS,
    }
}

/// The coarse bucket of a code point: the space and the eight most frequent letters of the real
/// corpus (e, a, o, t, i, n, r, s) alone, the other letters grouped frequent with rare, one bucket
/// for digits and other ASCII, and other code points scattered over all 16.
#[inline]
fn coarse_bucket(c: u32) -> usize {
    // a b c d e f g h i j k l m n o p q r s t u v w x y z
    const OF: [u8; 26] = [
        2, 14, 9, 11, 1, 14, 14, 15, 5, 12, 9, 10, 13, 6, 3, 12, 13, 7, 8, 4, 15, 11, 10, 12, 15,
        13,
    ];
    match c {
        0x61..=0x7A => OF[(c - 0x61) as usize] as usize,
        0x20 => 0,
        0..=0x7F => 15,
        _ => scatter(c) % COARSE,
    }
}

/// The counts of `t`'s elements per bucket, or None when a count might not fit a byte.
fn counts<const N: usize>(t: &Text, bucket: impl Fn(u32) -> usize) -> Option<[u8; N]> {
    fn fill<T: Sym, const N: usize>(s: &[T], bucket: impl Fn(u32) -> usize) -> [u8; N] {
        let mut h = [0u8; N];
        for &c in s {
            let b = bucket(c.code());
            h[b] = h[b].saturating_add(1);
        }
        h
    }
    if t.len() > 255 {
        return None;
    }
    Some(match t {
        Text::Narrow(s) => fill(s, bucket),
        Text::Wide(s) => fill(s, bucket),
    })
}

/// The bucketed character histogram of a label, or None when a count might not fit a byte (labels
/// longer than 255 elements; their pairs skip this bound).
pub fn histogram(t: &Text) -> Option<[u8; BUCKETS]> {
    counts(t, bucket)
}

/// The coarse histogram (None when a count might not fit a byte).
pub fn coarse_histogram(t: &Text) -> Option<[u8; COARSE]> {
    counts(t, coarse_bucket)
}

/// `Σ_b min(ha[b], hb[b])` of two histograms: an upper bound on `M` (see the module doc).
#[inline]
pub fn hist_overlap(a: &[u8; BUCKETS], b: &[u8; BUCKETS]) -> u32 {
    min_sum_32(a, b)
}

/// The coarse and fine histograms of one label, and of a run of labels.
pub type Hists<'h> = (&'h [u8; COARSE], &'h [u8; BUCKETS]);
pub type HistRun<'h> = (&'h [[u8; COARSE]], &'h [[u8; BUCKETS]]);

/// The indices `k` of a run whose coarse and then fine overlap with `x` reach `need`, ascending,
/// written to `hits[..n]`; returns `n`. (Both are upper bounds on `M`; the coarse one is half the
/// bytes, so it goes first.) `hits` is grown to the run's length when shorter.
#[inline]
pub fn coarse_filter_run(x: Hists, ys: HistRun, need: usize, hits: &mut Vec<u32>) -> usize {
    two_stage_filter(x, ys.0, ys.1, need, hits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::matching_blocks;
    use crate::simd::histogram::min_sum;
    use crate::test_rng::Rng;

    #[test]
    fn both_overlaps_bound_the_matching_blocks() {
        let mut rng = Rng(2801);
        // Frequent letters, a rarer one, a digit, other ASCII, and code points above 255 (some
        // sharing a bucket by the scatter).
        let alphabet: Vec<u32> = "eeaat x7-é☕жñ".chars().map(|c| c as u32).collect();
        let word = |rng: &mut Rng, len: usize| -> Vec<u32> {
            (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect()
        };
        let mut tight = 0;
        for round in 0..1000 {
            let la = 1 + rng.below(60);
            let a = word(&mut rng, la);
            // Half the partners edited copies (large M), half unrelated.
            let b = if round % 2 == 0 {
                let mut b = a.clone();
                for _ in 0..rng.below(6) {
                    let k = rng.below(b.len());
                    b[k] = alphabet[rng.below(alphabet.len())];
                }
                b
            } else {
                let lb = 1 + rng.below(60);
                word(&mut rng, lb)
            };
            let m: usize = matching_blocks(&a, &b, true).iter().map(|bl| bl.2).sum();
            let (ta, tb) = (
                Text::from_codepoints(&a).unwrap(),
                Text::from_codepoints(&b).unwrap(),
            );
            let fine = hist_overlap(&histogram(&ta).unwrap(), &histogram(&tb).unwrap()) as usize;
            let coarse = min_sum(
                &coarse_histogram(&ta).unwrap(),
                &coarse_histogram(&tb).unwrap(),
            ) as usize;
            assert!(
                fine >= m && coarse >= m,
                "{a:?} {b:?}: M {m}, {fine}, {coarse}"
            );
            tight += (fine == m) as usize;
        }
        // The bound is not vacuous: it is often exact on these labels.
        assert!(tight > 100, "fine bound exact only {tight} times");
    }

    #[test]
    fn long_labels_have_no_histogram() {
        let long = Text::Narrow(vec![b'a'; 256]);
        assert_eq!(histogram(&long), None);
        assert_eq!(coarse_histogram(&long), None);
        let full = Text::Narrow(vec![b'a'; 255]);
        assert_eq!(histogram(&full).unwrap()[bucket('a' as u32)], 255);
        assert_eq!(
            coarse_histogram(&full).unwrap()[coarse_bucket('a' as u32)],
            255
        );
    }
}
