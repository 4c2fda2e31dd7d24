//! The containment rule's candidates outside the ratio rule's length window: stored labels that
//! occur in the incoming one, and stored labels the incoming one occurs in.
//!
//! # Why no candidate is lost
//!
//! Grams are the `g` consecutive elements at each position, hashed; a *window* is `w` consecutive
//! grams, and its *minimiser* the least hash among them (a value, so ties do not matter). With
//! `g + w - 1 = c` (the `min_chars` the index serves), every run of at least `c` elements holds a
//! whole window. A window is a function of its elements only, so when `s` occurs in `l`, every
//! window of `s` is a window of `l` and has the same minimiser there:
//!
//! - *incoming in stored* (`len(incoming) >= min_chars >= c`): every minimiser of the incoming
//!   label is one of the stored label's, so the stored label is on the list of *any* of them
//!   (`all`: each label under every minimiser it has); the query reads the shortest such list.
//! - *stored in incoming* (`len(stored) >= min_chars >= c`): each minimiser of the stored label is
//!   one of the incoming label's, so the stored label is found on the list of whichever of its own
//!   minimisers it was filed under (`one`: each label under the minimiser whose list was shortest
//!   when it arrived, which keeps lists short whatever the corpus), by reading the lists of all the
//!   incoming label's minimisers.
//!
//! Every candidate is then tested by substring search, so a hash collision costs a test, never an
//! answer. A query with `min_chars < c` cannot rely on this and scans instead (see `LabelIndex`).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use smallvec::SmallVec;

use crate::alloc;
use crate::error::Result;
use crate::text::Text;

use crate::matcher::IdHasher;

/// The longest gram: longer grams are rarer, but leave shorter windows (more minimisers a label).
const MAX_GRAM: usize = 8;

/// A stored label on a list: its slot, length and element mask (so the length test and the mask test
/// need no other memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Posting {
    pub slot: u32,
    pub len: u32,
    pub mask: u64,
}

/// Which of 64 buckets a text's elements fall in, a bit each. A text that occurs in another has
/// every element of it, so its mask is a subset of the other's: a candidate whose mask is not is
/// dropped before its text is read.
pub fn element_mask(text: &Text) -> u64 {
    let bit = |c: u32| 1u64 << (c.wrapping_mul(0x9E37_79B1) >> 26);
    match text {
        Text::Narrow(v) => v.iter().fold(0, |m, &c| m | bit(c as u32)),
        Text::Wide(v) => v.iter().fold(0, |m, &c| m | bit(c)),
    }
}

/// Most minimisers are on one label's list only: two postings fit inline.
type Postings = SmallVec<[Posting; 2]>;
type Lists = HashMap<u64, Postings, BuildHasherDefault<IdHasher>>;

/// The two minimiser maps of one partition.
#[derive(Default)]
pub struct Substrings {
    gram: usize,
    window: usize,
    all: Lists,
    one: Lists,
}

/// The distinct minimisers of a text's windows, in first-seen order, into `out` (cleared). Empty
/// when the text is shorter than one window.
pub fn minimisers(text: &Text, gram: usize, window: usize, out: &mut Vec<u64>) -> Result<()> {
    out.clear();
    let n = text.len();
    if gram == 0 || n < gram + window - 1 {
        return Ok(());
    }
    let grams = n - gram + 1;
    let mut hashes: Vec<u64> = alloc::with_capacity(grams)?;
    match text {
        Text::Narrow(v) => hashes.extend(
            v.windows(gram)
                .map(|g| gram_hash(g.iter().map(|&c| c as u32))),
        ),
        Text::Wide(v) => hashes.extend(v.windows(gram).map(|g| gram_hash(g.iter().copied()))),
    }
    let mut last = None;
    for win in hashes.windows(window) {
        let m = win.iter().copied().min().unwrap_or(0);
        if last != Some(m) {
            last = Some(m);
            if !out.contains(&m) {
                alloc::push(out, m)?;
            }
        }
    }
    Ok(())
}

/// A gram's hash (its elements as code points, so a narrow and a wide text hash alike).
#[inline]
fn gram_hash(elements: impl Iterator<Item = u32>) -> u64 {
    let mut h = 0x243F_6A88_85A3_08D3u64;
    for c in elements {
        h = (h ^ c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 29;
    }
    h
}

impl Substrings {
    /// Lists for containment at `min_chars >= c` (`c` at least 1).
    pub fn new(c: usize) -> Substrings {
        let c = c.max(1);
        let gram = c.min(MAX_GRAM);
        Substrings {
            gram,
            window: c - gram + 1,
            all: Lists::default(),
            one: Lists::default(),
        }
    }

    /// The `c` these lists serve.
    pub fn serves(&self) -> usize {
        self.gram + self.window - 1
    }

    /// A text's minimisers under this index's gram and window.
    pub fn minimisers_of(&self, text: &Text, out: &mut Vec<u64>) -> Result<()> {
        minimisers(text, self.gram, self.window, out)
    }

    /// File a stored label (its minimisers from [`Substrings::minimisers_of`]).
    pub fn insert(&mut self, mins: &[u64], posting: Posting) -> Result<()> {
        if mins.is_empty() {
            return Ok(());
        }
        let mut best = (usize::MAX, mins[0]);
        for &m in mins {
            self.all.try_reserve(1)?;
            let list = self.all.entry(m).or_default();
            list.try_reserve(1)
                .map_err(|e| crate::Error::OutOfMemory(format!("cannot allocate: {e:?}")))?;
            list.push(posting);
            let shortest = self.one.get(&m).map_or(0, SmallVec::len);
            if shortest < best.0 {
                best = (shortest, m);
            }
        }
        self.one.try_reserve(1)?;
        let list = self.one.entry(best.1).or_default();
        list.try_reserve(1)
            .map_err(|e| crate::Error::OutOfMemory(format!("cannot allocate: {e:?}")))?;
        list.push(posting);
        Ok(())
    }

    /// Forget a removed label (its minimisers as filed).
    pub fn remove(&mut self, mins: &[u64], slot: u32) {
        for &m in mins {
            for lists in [&mut self.all, &mut self.one] {
                if let Some(list) = lists.get_mut(&m) {
                    list.retain(|p| p.slot != slot);
                    if list.is_empty() {
                        lists.remove(&m);
                    }
                }
            }
        }
    }

    /// Candidates for "the incoming label occurs in the stored one": the shortest list among the
    /// incoming label's minimisers (empty when it has none, i.e. is shorter than `c`).
    pub fn containing(&self, incoming_mins: &[u64]) -> &[Posting] {
        let mut best: &[Posting] = &[];
        for (k, m) in incoming_mins.iter().enumerate() {
            let list = self.all.get(m).map_or(&[][..], |l| &l[..]);
            if k == 0 || list.len() < best.len() {
                best = list;
            }
            if best.is_empty() {
                break;
            }
        }
        best
    }

    /// Candidates for "a stored label occurs in the incoming one": each stored label with a
    /// minimiser among `incoming_mins` is on exactly one of these lists.
    pub fn contained<'s>(&'s self, incoming_mins: &'s [u64]) -> impl Iterator<Item = Posting> + 's {
        incoming_mins
            .iter()
            .filter_map(|m| self.one.get(m))
            .flat_map(|l| l.iter().copied())
    }

    /// Bytes held (an estimate: table slots plus spilled lists).
    pub fn memory_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(u64, Postings)>() + 1;
        let spilled = |lists: &Lists| {
            lists
                .values()
                .filter(|l| l.spilled())
                .map(|l| l.capacity() * std::mem::size_of::<Posting>())
                .sum::<usize>()
        };
        (self.all.capacity() + self.one.capacity()) * entry
            + spilled(&self.all)
            + spilled(&self.one)
    }
}
