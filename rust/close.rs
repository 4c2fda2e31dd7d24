//! `difflib.get_close_matches`' scoring pass: every possibility's ratio against one word, computed
//! only where the cheap bounds leave it open.

use rayon::prelude::*;

use crate::bounds::{folded, m_min, Lcs};
use crate::cancel::Cancel;
use crate::error::Result;
use crate::matcher::{ratio_of, BSide, Matcher};
use crate::sym::Sym;
use crate::text::Text;

/// Whether `get_close_matches`' length test (`real_quick_ratio() >= cutoff`) keeps a possibility
/// of `len_x` elements against a word of `len_word`.
#[inline]
pub fn length_admits(len_x: usize, len_word: usize, cutoff: f64) -> bool {
    len_x + len_word == 0 || ratio_of(len_x.min(len_word), len_x + len_word) >= cutoff
}

/// `(ratio, index)` for every `(index, possibility)` of `pool` whose `real_quick_ratio`,
/// `quick_ratio` and `ratio` against `word` (the possibility first, as difflib's `set_seq1(x)`
/// with `set_seq2(word)`) all reach `cutoff`, in pool order. The pool holds possibilities that
/// passed [`length_admits`] already; they are decided in parallel, and the exact ratio is computed
/// only for those the early-stopping threshold test accepts.
pub fn scores(
    word: &Text,
    pool: &[(usize, Text)],
    cutoff: f64,
    autojunk: bool,
    cancel: &Cancel,
) -> Result<Vec<(f64, usize)>> {
    let lw = word.len();
    let narrow = match word {
        Text::Narrow(w) => Some(BSide::try_new(w, autojunk)?),
        Text::Wide(_) => None,
    };
    let wide = BSide::try_new(&word.codepoints_cow()?, autojunk)?;
    let word_folded = folded(word, &mut Vec::new()).to_vec();
    let scored: Vec<Option<(f64, usize)>> = pool
        .par_iter()
        .map_init(
            || {
                let mut lcs = Lcs::default();
                lcs.load(&word_folded);
                let mut m = Matcher::new();
                m.set_cancel(cancel);
                (m, lcs, Vec::new())
            },
            |(m, lcs, buf), &(index, ref x)| {
                if cancel.is_cancelled() {
                    return None;
                }
                let length = x.len() + lw;
                if length == 0 {
                    return Some((1.0, index));
                }
                // The LCS bound implies difflib's `quick_ratio` bound (a common subsequence is a
                // common multiset).
                let need = m_min(length, cutoff)?;
                if !lcs.at_least(folded(x, buf), need) {
                    return None;
                }
                let score = match (x, &narrow) {
                    (Text::Narrow(a), Some(side)) => close_score(m, a.as_slice(), side, cutoff),
                    _ => close_score(m, &x.codepoints(), &wide, cutoff),
                };
                score.map(|s| (s, index))
            },
        )
        .collect();
    cancel.check()?;
    Ok(scored.into_iter().flatten().collect())
}

fn close_score<T: Sym>(m: &mut Matcher, a: &[T], side: &BSide<T>, cutoff: f64) -> Option<f64> {
    let length = a.len() + side.len();
    m.set_a(a, side);
    if !m.ratio_at_least(side, cutoff) {
        return None;
    }
    m.set_a(a, side);
    Some(ratio_of(m.matches(side), length))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher;

    #[test]
    fn scores_are_difflibs_ratios_above_the_cutoff() {
        let word = Text::from_text("appel");
        let words = [
            "ape",
            "apple",
            "peach",
            "puppy",
            "",
            "appel",
            "ΑΠΠΕΛ",
            "apppel",
        ];
        for cutoff in [0.0, 0.3, 0.6, 0.8, 1.0] {
            let pool: Vec<(usize, Text)> = words
                .iter()
                .enumerate()
                .filter(|(_, w)| length_admits(w.chars().count(), 5, cutoff))
                .map(|(k, w)| (k, Text::from_text(w)))
                .collect();
            let got = scores(&word, &pool, cutoff, true, &Cancel::never()).unwrap();
            let want: Vec<(f64, usize)> = words
                .iter()
                .enumerate()
                .filter_map(|(k, w)| {
                    let (a, b) = (Text::from_text(w).codepoints(), word.codepoints());
                    let r = matcher::ratio(&a, &b, true);
                    let quick = matcher::quick_ratio(&a, &b).unwrap();
                    let real = matcher::real_quick_ratio(a.len(), b.len());
                    (real >= cutoff && quick >= cutoff && r >= cutoff).then_some((r, k))
                })
                .collect();
            assert_eq!(got, want, "cutoff {cutoff}");
        }
        let cancel = Cancel::new();
        cancel.cancel();
        let pool = vec![(0, Text::from_text("apple"))];
        assert!(scores(&word, &pool, 0.0, true, &cancel).is_err());
    }
}
