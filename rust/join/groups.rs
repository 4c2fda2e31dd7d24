//! Identical labels collapsed into groups (rule 1 of the module doc): a label repeated thousands of
//! times is one group, decided once against each other group and expanded afterwards.

use std::borrow::Cow;
use std::collections::HashMap;

use rayon::prelude::*;

use crate::alloc;
use crate::cancel::Cancel;
use crate::contract::MatchParams;
use crate::error::Result;
use crate::matcher::ratio_of;
use crate::text::Text;

/// A `Wide` text whose code points all fit a byte, as the equal `Narrow` text (the contract works on
/// code points, so the two are the same label).
fn canonical(t: &Text) -> Result<Cow<'_, Text>> {
    Ok(match t {
        Text::Wide(v) if v.iter().all(|&c| c < 256) => {
            let mut bytes = alloc::with_capacity(v.len())?;
            bytes.extend(v.iter().map(|&c| c as u8));
            Cow::Owned(Text::Narrow(bytes))
        }
        _ => Cow::Borrowed(t),
    })
}

/// Identical labels, grouped in order of first occurrence.
pub(super) struct Groups<'a> {
    /// Each label's group.
    pub(super) of_label: Vec<u32>,
    /// The canonical text of each group.
    pub(super) reps: Vec<Cow<'a, Text>>,
    /// Each group's first and last label, and its number of labels.
    first: Vec<u32>,
    last: Vec<u32>,
    size: Vec<u32>,
}

impl<'a> Groups<'a> {
    pub(super) fn new(labels: &'a [Text], cancel: &Cancel) -> Result<Groups<'a>> {
        let canon: Vec<Cow<'a, Text>> =
            alloc::par_collect(labels.par_iter(), || (), |_, t| canonical(t))?;
        let mut of_label = alloc::with_capacity(labels.len())?;
        let (mut first, mut last, mut size) = (Vec::new(), Vec::new(), Vec::new());
        {
            let mut index: HashMap<&Text, u32> = HashMap::new();
            index.try_reserve(labels.len())?;
            for (i, c) in canon.iter().enumerate() {
                if i % (1 << 16) == 0 {
                    cancel.check()?;
                }
                let next = index.len() as u32;
                let g = *index.entry(c.as_ref()).or_insert(next);
                if g == next {
                    alloc::push(&mut first, i as u32)?;
                    alloc::push(&mut last, i as u32)?;
                    alloc::push(&mut size, 0)?;
                }
                last[g as usize] = i as u32;
                size[g as usize] += 1;
                of_label.push(g);
            }
        }
        // Move the first occurrence of each group out of `canon` (no copies of the texts).
        let mut is_first = alloc::filled(false, canon.len())?;
        for &f in &first {
            is_first[f as usize] = true;
        }
        let mut reps = alloc::with_capacity(first.len())?;
        for (i, c) in canon.into_iter().enumerate() {
            if is_first[i] {
                reps.push(c);
            }
        }
        Ok(Groups {
            of_label,
            reps,
            first,
            last,
            size,
        })
    }

    /// Whether some label of `g` precedes some label of `h` (so `g` is stored in a realised pair).
    #[inline]
    pub(super) fn stored_before(&self, g: u32, h: u32) -> bool {
        self.first[g as usize] < self.last[h as usize]
    }
}

/// `(g, g)` for every group of two or more identical non-empty labels that match each other.
pub(super) fn self_pairs(groups: &Groups, p: &MatchParams) -> Result<Vec<(u32, u32)>> {
    let mut out = Vec::new();
    for (g, rep) in groups.reps.iter().enumerate() {
        let len = rep.len();
        if groups.size[g] >= 2
            && len > 0
            && (ratio_of(len, 2 * len) >= p.threshold || len >= p.min_chars)
        {
            alloc::push(&mut out, (g as u32, g as u32))?;
        }
    }
    Ok(out)
}
