//! The match contract on normalised labels: the ratio (stored first) reaches the threshold, or the
//! shorter label has at least `min_chars` elements and occurs in the longer.
//!
//! `labels_match` settles each pair by the cheapest rule that can settle it; every early exit is a
//! bound on the same f64 expression the full computation would compare (`2.0 * M / (la + lb)`), and
//! f64 division is monotone in `M`, so no exit can change an answer:
//! 1. length bound (`real_quick_ratio`, `M <= min(la, lb)`): below the threshold only containment is left;
//! 2. containment by substring search (memchr's memmem);
//! 3. character-multiset bound (`quick_ratio`);
//! 4. the exact matching blocks, stopped as soon as the threshold is decided.

use crate::matcher::{ratio_of, BSide, Matcher};
use crate::sym::Sym;

pub const DEFAULT_THRESHOLD: f64 = 0.85;
pub const DEFAULT_MIN_CHARS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatchParams {
    pub threshold: f64,
    pub min_chars: usize,
}

impl Default for MatchParams {
    fn default() -> Self {
        MatchParams {
            threshold: DEFAULT_THRESHOLD,
            min_chars: DEFAULT_MIN_CHARS,
        }
    }
}

/// Why two labels match. The ratio rule is tried first, as the contract states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Ratio,
    Containment,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Ratio => "ratio",
            Reason::Containment => "containment",
        }
    }
}

/// A decided pair: the reason it matches (None: no match) and the exact ratio when it was computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    pub reason: Option<Reason>,
    pub score: f64,
}

impl Default for Decision {
    /// Undecided: no reason, no ratio.
    fn default() -> Self {
        Decision {
            reason: None,
            score: f64::NAN,
        }
    }
}

/// The containment rule: the shorter label (the stored one on equal lengths) has at least
/// `min_chars` elements and occurs in the longer.
#[inline]
pub fn contained<T: Sym>(stored: &[T], incoming: &[T], min_chars: usize) -> bool {
    let (shorter, longer) = if stored.len() <= incoming.len() {
        (stored, incoming)
    } else {
        (incoming, stored)
    };
    shorter.len() >= min_chars && T::contains(longer, shorter)
}

/// The rules that need no index of `incoming`: emptiness, the length bound, identical labels,
/// containment. `Some(answer)` when they settle the pair.
#[inline]
pub fn settle_cheaply<T: Sym>(stored: &[T], incoming: &[T], p: &MatchParams) -> Option<bool> {
    let (la, lb) = (stored.len(), incoming.len());
    if la == 0 || lb == 0 {
        return Some(false);
    }
    if !(ratio_of(la.min(lb), la + lb) >= p.threshold) {
        return Some(contained(stored, incoming, p.min_chars));
    }
    if stored == incoming {
        // Identical labels: difflib's matching blocks cover both completely (the longest match lies on
        // the diagonal and extends over every element), so the ratio is exactly 1.0, which the length
        // bound just compared with the threshold.
        return Some(true);
    }
    if contained(stored, incoming, p.min_chars) {
        return Some(true);
    }
    None
}

/// Occurrences of each byte value in `b`.
pub fn byte_counts(b: &[u8]) -> [u32; 256] {
    let mut counts = [0u32; 256];
    b.iter().for_each(|&x| counts[x as usize] += 1);
    counts
}

/// difflib's `quick_ratio` bound for byte strings, from `incoming`'s byte counts (consumed): false
/// when even the multiset intersection of the two labels stays below the threshold.
///
/// Performance notes: deciding this from counts alone, before `incoming`'s index is built, settles
/// most dissimilar pairs at a fraction of the index's cost.
#[inline]
pub fn multiset_admits(
    stored: &[u8],
    mut avail: [u32; 256],
    incoming_len: usize,
    p: &MatchParams,
) -> bool {
    let shared = stored
        .iter()
        .filter(|&&x| {
            let slot = &mut avail[x as usize];
            let hit = *slot > 0;
            *slot -= hit as u32;
            hit
        })
        .count();
    ratio_of(shared, stored.len() + incoming_len) >= p.threshold
}

/// Buffers to decide one pair after another without allocating: a thread's share of a batch, or
/// one call's.
#[derive(Default)]
pub struct PairDecider {
    matcher: Matcher,
    narrow: BSide<u8>,
    wide: BSide<u32>,
    wide_stored: Vec<u32>,
    wide_incoming: Vec<u32>,
    remap: crate::matcher::ByteRemap,
    remapped_stored: Vec<u8>,
    remapped_incoming: Vec<u8>,
}

impl PairDecider {
    /// A decider whose searches poll `cancel` (see [`Matcher::set_cancel`]).
    pub fn with_cancel(cancel: &crate::cancel::Cancel) -> Self {
        let mut decider = PairDecider::default();
        decider.set_cancel(cancel);
        decider
    }

    /// Poll `cancel` from now on.
    pub fn set_cancel(&mut self, cancel: &crate::cancel::Cancel) {
        self.matcher.set_cancel(cancel);
    }

    /// `labels_match` of two normalised byte-string labels.
    /// (The buffers a pair needs are reserved fallibly: labels' sizes come from the caller.)
    pub fn matches_bytes(
        &mut self,
        stored: &[u8],
        incoming: &[u8],
        p: &MatchParams,
    ) -> crate::Result<bool> {
        if let Some(answer) = settle_cheaply(stored, incoming, p) {
            return Ok(answer);
        }
        if !multiset_admits(stored, byte_counts(incoming), incoming.len(), p) {
            return Ok(false);
        }
        self.narrow.reserve_for(incoming.len())?;
        self.matcher
            .reserve_for::<u8>(stored.len(), incoming.len())?;
        self.narrow.rebuild(incoming, true, None);
        self.matcher.set_a(stored, &self.narrow);
        Ok(self.matcher.ratio_at_least(&self.narrow, p.threshold))
    }

    /// The decision with its reason and exact ratio (`decide`) of two normalised labels.
    pub fn decide(
        &mut self,
        stored: &crate::Text,
        incoming: &crate::Text,
        p: &MatchParams,
    ) -> crate::Result<Decision> {
        use crate::Text;
        if let (Text::Narrow(a), Text::Narrow(b)) = (stored, incoming) {
            self.narrow.reserve_for(b.len())?;
            self.matcher.reserve_for::<u8>(a.len(), b.len())?;
            self.narrow.rebuild(b, true, None);
            return Ok(decide(&mut self.matcher, a, &self.narrow, p));
        }
        stored.codepoints_into(&mut self.wide_stored)?;
        incoming.codepoints_into(&mut self.wide_incoming)?;
        self.wide.reserve_for(self.wide_incoming.len())?;
        self.matcher
            .reserve_for::<u32>(self.wide_stored.len(), self.wide_incoming.len())?;
        self.wide.rebuild(&self.wide_incoming, true, None);
        Ok(decide(&mut self.matcher, &self.wide_stored, &self.wide, p))
    }

    /// `labels_match` of two normalised labels of any width.
    pub fn matches(
        &mut self,
        stored: &crate::Text,
        incoming: &crate::Text,
        p: &MatchParams,
    ) -> crate::Result<bool> {
        use crate::Text;
        if let (Text::Narrow(a), Text::Narrow(b)) = (stored, incoming) {
            return self.matches_bytes(a, b, p);
        }
        let (mut a, mut b) = (
            std::mem::take(&mut self.wide_stored),
            std::mem::take(&mut self.wide_incoming),
        );
        let answer = stored
            .codepoints_into(&mut a)
            .and_then(|()| incoming.codepoints_into(&mut b))
            .and_then(|()| self.matches_codepoints(&a, &b, p));
        (self.wide_stored, self.wide_incoming) = (a, b);
        answer
    }

    /// `labels_match` of two normalised labels as code points: on bytes when `incoming` has at
    /// most 255 distinct code points (`ByteRemap`), else on the code points.
    pub fn matches_codepoints(
        &mut self,
        stored: &[u32],
        incoming: &[u32],
        p: &MatchParams,
    ) -> crate::Result<bool> {
        let (mut ra, mut rb) = (
            std::mem::take(&mut self.remapped_stored),
            std::mem::take(&mut self.remapped_incoming),
        );
        let reserved = crate::alloc::reserve_total(&mut ra, stored.len())
            .and_then(|()| crate::alloc::reserve_total(&mut rb, incoming.len()));
        let answer = match reserved {
            Err(err) => Some(Err(err)),
            Ok(()) if self.remap.remap(stored, incoming, &mut ra, &mut rb) => {
                Some(self.matches_bytes(&ra, &rb, p))
            }
            Ok(()) => None,
        };
        (self.remapped_stored, self.remapped_incoming) = (ra, rb);
        if let Some(answer) = answer {
            return answer;
        }
        if let Some(answer) = settle_cheaply(stored, incoming, p) {
            return Ok(answer);
        }
        self.wide.reserve_for(incoming.len())?;
        self.matcher
            .reserve_for::<u32>(stored.len(), incoming.len())?;
        self.wide.rebuild(incoming, true, None);
        Ok(settle_exactly(&mut self.matcher, stored, &self.wide, p))
    }
}

/// The rules that need `incoming`'s index, for a pair `settle_cheaply` left open: the multiset bound,
/// then the matching blocks, stopped as soon as the threshold is decided.
pub fn settle_exactly<T: Sym>(
    m: &mut Matcher,
    stored: &[T],
    incoming: &BSide<T>,
    p: &MatchParams,
) -> bool {
    let length = stored.len() + incoming.len();
    m.set_a(stored, incoming);
    if !(ratio_of(m.quick_matches(incoming), length) >= p.threshold) {
        return false;
    }
    m.ratio_at_least(incoming, p.threshold)
}

/// `labels_match` on normalised labels: `stored` against `incoming`, prepared with autojunk on.
pub fn labels_match<T: Sym>(
    m: &mut Matcher,
    stored: &[T],
    incoming: &BSide<T>,
    p: &MatchParams,
) -> bool {
    settle_cheaply(stored, incoming.seq(), p)
        .unwrap_or_else(|| settle_exactly(m, stored, incoming, p))
}

/// The contract's decision with the exact ratio always computed (for reports and tuning).
pub fn decide<T: Sym>(
    m: &mut Matcher,
    stored: &[T],
    incoming: &BSide<T>,
    p: &MatchParams,
) -> Decision {
    let (la, lb) = (stored.len(), incoming.len());
    if la == 0 || lb == 0 {
        return Decision {
            reason: None,
            score: 0.0,
        };
    }
    m.set_a(stored, incoming);
    let score = ratio_of(m.matches(incoming), la + lb);
    let reason = if score >= p.threshold {
        Some(Reason::Ratio)
    } else if contained(stored, incoming.seq(), p.min_chars) {
        Some(Reason::Containment)
    } else {
        None
    };
    Decision { reason, score }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher;

    fn check(a: &str, b: &str, p: MatchParams) {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        let side = BSide::new(b, true);
        let mut m = Matcher::new();
        let fast = labels_match(&mut m, a, &side, &p);
        let full = decide(&mut m, a, &side, &p);
        let expected = !a.is_empty()
            && !b.is_empty()
            && (matcher::ratio(a, b, true) >= p.threshold || contained(a, b, p.min_chars));
        assert_eq!(
            fast,
            expected,
            "{:?} {:?}",
            std::str::from_utf8(a),
            std::str::from_utf8(b)
        );
        assert_eq!(full.reason.is_some(), expected);
    }

    #[test]
    fn rules() {
        let p = MatchParams::default();
        check(
            "uses pytest and ruff",
            "uses pytest and ruff for python projects with strict linting",
            p,
        );
        check(
            "uses pytest and ruff for python projects",
            "uses pytest and ruff",
            p,
        );
        check("prefers dark mode", "prefers dark mode", p);
        check("", "x", p);
        check("short", "shorter", p);
        check(
            "project alpha uses postgresql",
            "project beta uses postgresql",
            p,
        );
        for t in [0.0, 0.5, 0.85, 1.0, 1.01, f64::NAN] {
            check(
                "abc",
                "abc",
                MatchParams {
                    threshold: t,
                    min_chars: 16,
                },
            );
            check(
                "abcdefghijklmnopq",
                "abcdefghijklmnopq",
                MatchParams {
                    threshold: t,
                    min_chars: 16,
                },
            );
        }
    }

    #[test]
    fn exact_boundary() {
        // M = 17 of 40 characters: 2.0 * 17 / 40 == 0.85 exactly in f64, so it matches at 0.85.
        let a = "abcdefghijklmnopqXXX";
        let b = "abcdefghijklmnopqYYY";
        assert_eq!(matcher::ratio(a.as_bytes(), b.as_bytes(), true), 0.85);
        let p = MatchParams {
            threshold: 0.85,
            min_chars: 100,
        };
        check(a, b, p);
        let side = BSide::new(b.as_bytes(), true);
        assert!(labels_match(&mut Matcher::new(), a.as_bytes(), &side, &p));
        let above = MatchParams {
            threshold: f64::from_bits(0.85f64.to_bits() + 1),
            min_chars: 100,
        };
        assert!(!labels_match(
            &mut Matcher::new(),
            a.as_bytes(),
            &side,
            &above
        ));
    }
}
