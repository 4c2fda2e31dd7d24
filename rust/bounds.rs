//! Upper bounds on difflib's matching count `M` that cannot change an answer: each is `>= M` for
//! every pair, and `ratio_of` is monotone in `M`, so a pair whose bound gives a ratio below the
//! threshold has a ratio below it too. Shared by the all-pairs join and the cutoff searches.

use crate::matcher::ratio_of;
use crate::text::Text;

/// The least `M` in `0..=L/2` with `ratio_of(M, L) >= t` (None: no `M` reaches `t`). `M` can be at
/// most `min(la, lb) <= L / 2`, and `ratio_of` is monotone in `M`, so the answer is a threshold.
pub fn m_min(length: usize, t: f64) -> Option<usize> {
    let top = length / 2;
    if !(ratio_of(top, length) >= t) {
        return None;
    }
    let guess = (t * length as f64 / 2.0).ceil();
    let mut m = if guess.is_finite() && guess > 0.0 {
        (guess as usize).min(top)
    } else {
        0
    };
    while m > 0 && ratio_of(m - 1, length) >= t {
        m -= 1;
    }
    while !(ratio_of(m, length) >= t) {
        m += 1;
    }
    Some(m)
}

/// A code point above ASCII, scattered (so that texts in other scripts spread over buckets).
#[inline]
pub fn scatter(c: u32) -> usize {
    (c.wrapping_mul(0x9E37_79B1) >> 16) as usize
}

/// A code point folded to a byte for the LCS bound: itself below 256 (so narrow labels keep their
/// bytes), else one of 128..256 by a scatter. Equal elements fold equally, so a common subsequence
/// of two labels folds to one of their folded forms: `LCS(fold x, fold y) >= LCS(x, y) >= M`.
#[inline]
pub fn fold(c: u32) -> u8 {
    if c < 256 {
        c as u8
    } else {
        128 + (scatter(c) % 128) as u8
    }
}

/// A text's elements folded to bytes for the LCS bound: a narrow text's own bytes.
pub fn folded<'t>(text: &'t Text, buf: &'t mut Vec<u8>) -> &'t [u8] {
    match text {
        Text::Narrow(v) => v,
        Text::Wide(v) => {
            buf.clear();
            buf.extend(v.iter().map(|&c| fold(c)));
            buf
        }
    }
}

/// Bit-parallel LCS length (Allison-Dix / Hyyrö): `a` as a bit pattern per byte value, then one
/// add-and-or step per element of `b`. difflib's matching blocks are disjoint and increasing in
/// both labels, so they form a common subsequence: `LCS >= M`, an upper bound on `M`.
#[derive(Default)]
pub struct Lcs {
    peq: Vec<u64>,
    words: usize,
    pattern: Vec<u8>,
    key: Option<u32>,
    v: Vec<u64>,
}

impl Lcs {
    /// Make `a` the pattern, unless the pattern is already the one given `key`.
    pub fn set_pattern(&mut self, a: &[u8], key: u32) {
        if self.key != Some(key) {
            self.load(a);
            self.key = Some(key);
        }
    }

    /// Make `a` the pattern (work in `a`'s and the previous pattern's length, not the table's).
    pub fn load(&mut self, a: &[u8]) {
        for &c in &self.pattern {
            let row = c as usize * self.words;
            self.peq[row..row + self.words].fill(0);
        }
        self.words = a.len().div_ceil(64).max(1);
        if self.peq.len() < 256 * self.words {
            self.peq.clear();
            self.peq.resize(256 * self.words, 0);
        }
        // Rows of the previous width may hold bits at other offsets: they were cleared above.
        self.pattern.clear();
        self.pattern.extend_from_slice(a);
        for (i, &c) in a.iter().enumerate() {
            self.peq[c as usize * self.words + i / 64] |= 1 << (i % 64);
        }
        self.key = None;
    }

    /// Whether `LCS(pattern, b) >= need`. After `k` elements of `b` the LCS of the prefix is known
    /// (it never falls as `b` grows, and each further element adds at most one), so the answer is
    /// settled early once that LCS reaches `need`, or once it plus the elements left cannot.
    pub fn at_least(&mut self, b: &[u8], need: usize) -> bool {
        let (w, m) = (self.words, self.pattern.len());
        if need == 0 {
            return true;
        }
        if need > m.min(b.len()) {
            return false;
        }
        const STRIDE: usize = 16;
        // Zero bits among the low m bits of V are the LCS so far (carries only move upwards, so
        // bits at or above m never reach them).
        let settled = |lcs: usize, done: usize| -> Option<bool> {
            if lcs >= need {
                Some(true)
            } else if lcs + (b.len() - done) < need {
                Some(false)
            } else {
                None
            }
        };
        match w {
            1 => {
                let mask = if m == 64 { !0 } else { (1u64 << m) - 1 };
                let mut v = !0u64;
                for (k, chunk) in b.chunks(STRIDE).enumerate() {
                    for &c in chunk {
                        let u = v & self.peq[c as usize];
                        v = v.wrapping_add(u) | (v - u);
                    }
                    let lcs = m - (v & mask).count_ones() as usize;
                    if let Some(r) = settled(lcs, k * STRIDE + chunk.len()) {
                        return r;
                    }
                }
                false
            }
            2 => {
                let mask = if m == 128 { !0 } else { (1u128 << m) - 1 };
                let mut v = !0u128;
                for (k, chunk) in b.chunks(STRIDE).enumerate() {
                    for &c in chunk {
                        let row = 2 * c as usize;
                        let x = self.peq[row] as u128 | (self.peq[row + 1] as u128) << 64;
                        let u = v & x;
                        v = v.wrapping_add(u) | (v - u);
                    }
                    let lcs = m - (v & mask).count_ones() as usize;
                    if let Some(r) = settled(lcs, k * STRIDE + chunk.len()) {
                        return r;
                    }
                }
                false
            }
            _ => {
                self.v.clear();
                self.v.resize(w, !0);
                for (k, chunk) in b.chunks(STRIDE).enumerate() {
                    for &c in chunk {
                        let row = &self.peq[c as usize * w..(c as usize + 1) * w];
                        let mut carry = false;
                        for (v, &x) in self.v.iter_mut().zip(row) {
                            let u = *v & x;
                            let (s1, c1) = v.overflowing_add(u);
                            let (s2, c2) = s1.overflowing_add(carry as u64);
                            carry = c1 || c2;
                            // u is a subset of v, so v - u borrows nothing.
                            *v = s2 | (*v - u);
                        }
                    }
                    let mut ones = 0usize;
                    for (k, &v) in self.v.iter().enumerate() {
                        let valid = m.saturating_sub(k * 64).min(64);
                        let mask = if valid == 64 { !0 } else { (1u64 << valid) - 1 };
                        ones += (v & mask).count_ones() as usize;
                    }
                    if let Some(r) = settled(m - ones, k * STRIDE + chunk.len()) {
                        return r;
                    }
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::{matching_blocks, ratio_of};
    use crate::test_rng::Rng;

    /// LCS length by the textbook quadratic DP.
    fn lcs_dp(a: &[u8], b: &[u8]) -> usize {
        let mut prev = vec![0usize; b.len() + 1];
        for &x in a {
            let mut cur = vec![0usize; b.len() + 1];
            for (j, &y) in b.iter().enumerate() {
                cur[j + 1] = if x == y {
                    prev[j] + 1
                } else {
                    prev[j + 1].max(cur[j])
                };
            }
            prev = cur;
        }
        prev[b.len()]
    }

    #[test]
    fn at_least_agrees_with_the_dp_across_word_counts() {
        let mut rng = Rng(0x1c5);
        let mut lcs = Lcs::default();
        for case in 0..3000 {
            // Pattern lengths over the one-word, two-word and multi-word paths, reloaded in a
            // shuffled order so a longer pattern's bits must be cleared for a shorter one.
            let alphabet = 1 + rng.below(if case % 3 == 0 { 3 } else { 30 });
            let la = rng.below(200);
            let lb = rng.below(200);
            let a: Vec<u8> = (0..la).map(|_| b'a' + rng.below(alphabet) as u8).collect();
            let b: Vec<u8> = (0..lb).map(|_| b'a' + rng.below(alphabet) as u8).collect();
            if case % 2 == 0 {
                lcs.load(&a);
            } else {
                lcs.set_pattern(&a, case as u32);
            }
            let exact = lcs_dp(&a, &b);
            for need in [
                0,
                1,
                exact.saturating_sub(1),
                exact,
                exact + 1,
                la.min(lb) + 1,
            ] {
                assert_eq!(lcs.at_least(&b, need), exact >= need, "{a:?} {b:?} {need}");
            }
            // The bound it stands for: difflib's matching count never exceeds the LCS.
            let m: usize = matching_blocks(&a, &b, case % 5 != 0)
                .iter()
                .map(|t| t.2)
                .sum();
            assert!(m <= exact);
        }
    }

    #[test]
    fn m_min_is_the_least_count_reaching_the_threshold() {
        for length in 0..300 {
            for t in [
                0.0,
                1e-300,
                0.1,
                0.5,
                0.6,
                2.0 / 3.0,
                0.85,
                0.9,
                1.0,
                1.5,
                f64::NAN,
            ] {
                let expected = (0..=length / 2).find(|&m| ratio_of(m, length) >= t);
                assert_eq!(m_min(length, t), expected, "{length} {t}");
            }
        }
    }
}
