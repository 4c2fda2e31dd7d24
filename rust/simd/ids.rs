//! Common prefixes and suffixes of two sequences of ids (`u32`), four ids a step: how the matcher
//! extends a run of equal lines (or wide characters) along a diagonal.

/// The prefix and suffix searches compare this many ids one at a time before four at a time: the
/// vector loop's setup cost more than it saved on the short runs of wide labels (callgrind:
/// `get_close_matches` on wide text took 23% more instructions without this).
const SCALAR_RUN_PREFIX: usize = 8;

/// How many leading elements of `x` and `y` are equal (up to the shorter's length).
///
/// Performance notes: runs of equal ids are long in line diffs (a hundred lines between edits is
/// common), where four ids a step (SSE2, in the x86_64 baseline) cut the run extension's
/// instructions about threefold against one id a step (callgrind, `benches/bench_difflib.py`'s
/// line diffs).
#[inline(always)]
pub fn common_prefix(x: &[u32], y: &[u32]) -> usize {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &y[..n]);
    // Most runs met by a search are short: a few ids one at a time first.
    let mut k = 0;
    while k < n.min(SCALAR_RUN_PREFIX) {
        if x[k] != y[k] {
            return k;
        }
        k += 1;
    }
    #[cfg(target_arch = "x86_64")]
    while k + 4 <= n {
        let mask = eq_mask4(&x[k..k + 4], &y[k..k + 4]);
        if mask != 0xFFFF {
            return k + (!mask).trailing_zeros() as usize / 4;
        }
        k += 4;
    }
    k + count_equal(x[k..].iter().zip(&y[k..]))
}

/// How many trailing elements of `x` and `y` are equal (up to the shorter's length).
#[inline(always)]
pub fn common_suffix(x: &[u32], y: &[u32]) -> usize {
    let n = x.len().min(y.len());
    let (x, y) = (&x[x.len() - n..], &y[y.len() - n..]);
    let mut k = 0;
    while k < n.min(SCALAR_RUN_PREFIX) {
        if x[n - 1 - k] != y[n - 1 - k] {
            return k;
        }
        k += 1;
    }
    #[cfg(target_arch = "x86_64")]
    while k + 4 <= n {
        let at = n - k - 4;
        let mask = eq_mask4(&x[at..at + 4], &y[at..at + 4]);
        if mask != 0xFFFF {
            return k + ((!mask) << 16).leading_zeros() as usize / 4;
        }
        k += 4;
    }
    k + count_equal(x[..n - k].iter().rev().zip(y[..n - k].iter().rev()))
}

/// How many leading pairs of `pairs` are equal.
#[inline]
fn count_equal<'a>(pairs: impl Iterator<Item = (&'a u32, &'a u32)>) -> usize {
    pairs.take_while(|(a, b)| a == b).count()
}

/// Four bits set for each of the four ids of `x` equal to the one of `y` in the same place (bits
/// `4t..4t + 4` for id `t`): 0xFFFF when all are. Each slice must hold four ids.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn eq_mask4(x: &[u32], y: &[u32]) -> u32 {
    use std::arch::x86_64::*;
    let (x, y): (&[u32; 4], &[u32; 4]) = (
        x.try_into().expect("four ids"),
        y.try_into().expect("four ids"),
    );
    // SAFETY: each load reads the 16 bytes of an array of four u32s (SSE2 is in the x86_64
    // baseline).
    unsafe {
        let u = _mm_loadu_si128(x.as_ptr().cast());
        let v = _mm_loadu_si128(y.as_ptr().cast());
        _mm_movemask_epi8(_mm_cmpeq_epi32(u, v)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// Against one id at a time, on lengths around the scalar prefix and the vector width (and
    /// unequal lengths).
    #[test]
    fn prefix_and_suffix_count_equal_runs() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for _ in 0..20_000 {
            let n = rng.below(40);
            let x: Vec<u32> = (0..n).map(|_| rng.below(3) as u32).collect();
            let mut y: Vec<u32> = x
                .iter()
                .map(|&v| if rng.below(6) == 0 { v + 1 } else { v })
                .collect();
            if rng.below(4) == 0 {
                y.truncate(rng.below(n + 1));
            }
            let m = x.len().min(y.len());
            let want_prefix = x.iter().zip(&y).take_while(|(a, b)| a == b).count();
            let want_suffix = x[x.len() - m..]
                .iter()
                .rev()
                .zip(y[y.len() - m..].iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            assert_eq!(common_prefix(&x, &y), want_prefix, "{x:?} {y:?}");
            assert_eq!(common_suffix(&x, &y), want_suffix, "{x:?} {y:?}");
        }
    }
}
