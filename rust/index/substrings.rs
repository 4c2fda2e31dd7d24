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
//!
//! # Removal
//!
//! A posting names its label's slot and *generation*; a removed or relabelled label gets a new
//! generation, so its old postings are dead where they lie (a posting is live only while its
//! generation is its slot's, see [`Substrings::insert`]'s `live`), and removal costs no list scan.
//! Dead postings are dropped when a list is full and about to grow (so a list never grows for
//! them: amortised O(1) a push), and by a sweep of all the lists once they outnumber the live
//! ones (amortised O(1) a removed posting). So removing N labels costs O(total postings), not
//! O(N x list length) as a scan of each list did (issue 37: x4 per doubling of copies).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::text::Text;

use crate::cancel::Cancel;
use crate::matcher::IdHasher;

use super::minimisers::minimisers;

/// The longest gram: longer grams are rarer, but leave shorter windows (more minimisers a label).
const MAX_GRAM: usize = 8;

/// Dead postings tolerated before a sweep, beside as many as there are live ones.
const SWEEP_MIN: usize = 4096;

/// A stored label on a list: its slot, the low bits of its generation (whether the posting is still
/// live), its length and element mask (so the length test and the mask test need no other memory).
/// Four `u32`s (16 bytes): the length and the generation share one, the mask is split so that the
/// posting aligns to 4 bytes.
///
/// Only [`GEN_BITS`] of the generation are kept: a dead posting whose generation agrees with its
/// slot's current one by chance (one in 4,096) is taken for live. That costs a substring test of
/// the slot's current label (every candidate is tested, so never an answer) and keeps the posting
/// until the slot's label changes again; it does not change what a query returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Posting {
    pub slot: u32,
    len_gen: u32,
    mask: [u32; 2],
}

/// Generation bits a posting keeps.
pub const GEN_BITS: u32 = 12;
/// The largest length a posting holds; a longer label's posting holds this ("this or more").
pub const LEN_MAX: u32 = (1 << (32 - GEN_BITS)) - 1;

impl Posting {
    pub fn new(slot: u32, gen: u32, len: usize, mask: u64) -> Posting {
        let len = u32::try_from(len).unwrap_or(LEN_MAX).min(LEN_MAX);
        Posting {
            slot,
            len_gen: len << GEN_BITS | gen & ((1 << GEN_BITS) - 1),
            mask: [mask as u32, (mask >> 32) as u32],
        }
    }

    /// The label's length, None when it is [`LEN_MAX`] or more (then read the label's).
    #[inline]
    pub fn len(&self) -> Option<usize> {
        let len = self.len_gen >> GEN_BITS;
        (len < LEN_MAX).then_some(len as usize)
    }

    /// Whether the posting was filed under generation `gen` (its low bits).
    #[inline]
    pub fn filed_under(&self, gen: u32) -> bool {
        (self.len_gen ^ gen) & ((1 << GEN_BITS) - 1) == 0
    }

    #[inline]
    pub fn mask(&self) -> u64 {
        self.mask[0] as u64 | (self.mask[1] as u64) << 32
    }
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

fn oom<E: std::fmt::Debug>(e: E) -> Error {
    Error::OutOfMemory(format!("cannot allocate: {e:?}"))
}

/// The two minimiser maps of one partition, and how many of their postings are live and dead.
#[derive(Default)]
pub struct Substrings {
    gram: usize,
    window: usize,
    all: Lists,
    one: Lists,
    live: usize,
    dead: usize,
    /// Postings visited by drops and sweeps (a step count for the tests).
    work: usize,
}

impl Substrings {
    /// Lists for containment at `min_chars >= c` (`c` at least 1).
    pub fn new(c: usize) -> Substrings {
        let c = c.max(1);
        let gram = c.min(MAX_GRAM);
        Substrings {
            gram,
            window: c - gram + 1,
            ..Substrings::default()
        }
    }

    /// The `c` these lists serve.
    pub fn serves(&self) -> usize {
        self.gram + self.window - 1
    }

    /// A text's minimisers under this index's gram and window (polling `cancel`).
    pub fn minimisers_of(&self, text: &Text, out: &mut Vec<u64>, cancel: &Cancel) -> Result<()> {
        minimisers(text, self.gram, self.window, out, cancel)
    }

    /// Postings a label with these minimisers is filed under (0 when it has none).
    pub fn postings_for(mins: &[u64]) -> usize {
        if mins.is_empty() {
            0
        } else {
            mins.len() + 1
        }
    }

    /// Room for the postings of a label with these minimisers, so that [`Substrings::insert`]
    /// cannot fail midway.
    pub fn reserve(&mut self, mins: &[u64]) -> Result<()> {
        self.all.try_reserve(mins.len()).map_err(oom)?;
        self.one.try_reserve(1).map_err(oom)?;
        Ok(())
    }

    /// File a stored label (its minimisers from [`Substrings::minimisers_of`]); `live` tells
    /// whether a posting already on a list is still live. Returns the postings filed
    /// ([`Substrings::postings_for`]).
    pub fn insert(
        &mut self,
        mins: &[u64],
        posting: Posting,
        live: impl Fn(&Posting) -> bool,
    ) -> Result<usize> {
        if mins.is_empty() {
            return Ok(0);
        }
        self.reserve(mins)?;
        let mut best = (usize::MAX, mins[0]);
        for &m in mins {
            let list = self.all.entry(m).or_default();
            self.dead -= push(list, posting, self.dead > 0, &live, &mut self.work)?;
            let shortest = self.one.get(&m).map_or(0, SmallVec::len);
            if shortest < best.0 {
                best = (shortest, m);
            }
        }
        let list = self.one.entry(best.1).or_default();
        self.dead -= push(list, posting, self.dead > 0, &live, &mut self.work)?;
        let filed = Self::postings_for(mins);
        self.live += filed;
        Ok(filed)
    }

    /// A label's `filed` postings are dead (its slot's generation changed): swept once the dead
    /// outnumber the live.
    pub fn retire(&mut self, filed: usize, live: impl Fn(&Posting) -> bool) {
        self.live -= filed.min(self.live);
        self.dead += filed;
        if self.dead > self.live.max(SWEEP_MIN) {
            self.sweep(live);
        }
    }

    /// Drop every dead posting, every emptied list, and the slack of lists and tables.
    pub fn sweep(&mut self, live: impl Fn(&Posting) -> bool) {
        for lists in [&mut self.all, &mut self.one] {
            self.work += lists.len();
            lists.retain(|_, list| {
                self.work += list.len();
                list.retain(|p| live(p));
                if list.capacity() > 2 * list.len() + 2 {
                    list.shrink_to_fit();
                }
                !list.is_empty()
            });
            if lists.capacity() > 4 * lists.len() + 64 {
                lists.shrink_to_fit();
            }
        }
        self.dead = 0;
    }

    /// Postings visited by drops and sweeps so far.
    pub fn work(&self) -> usize {
        self.work
    }

    /// Dead postings not yet dropped.
    pub fn dead(&self) -> usize {
        self.dead
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

    /// Bytes held: table slots (a key, a list and a control byte each) plus spilled lists.
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

/// Push a posting on a list; a full list first drops its dead postings (when the lists hold any:
/// `any_dead`), and doubles when over half of it survives. So between two drops a list of capacity
/// `C` takes at least `C / 2` pushes: the drops cost O(1) a push, amortised, and a list holds at
/// most as many dead postings as live ones plus its inline room when it grows. Returns how many it
/// dropped; `work` counts the postings it visited.
#[inline]
fn push(
    list: &mut Postings,
    posting: Posting,
    any_dead: bool,
    live: &impl Fn(&Posting) -> bool,
    work: &mut usize,
) -> Result<usize> {
    let mut dropped = 0;
    let capacity = list.capacity();
    if any_dead && list.len() == capacity {
        *work += list.len();
        list.retain(|p| live(p));
        dropped = capacity - list.len();
        if list.len() * 2 > capacity {
            list.try_reserve(2 * capacity - list.len()).map_err(oom)?;
        }
    }
    list.try_reserve(1).map_err(oom)?;
    list.push(posting);
    Ok(dropped)
}
