//! An exact, incremental candidate index: every stored label that `labels_match(stored, incoming)`
//! accepts, in insertion order, with no prefix gate.
//!
//! Labels are stored normalised, under a *slot* (insertion number: slot order is insertion order)
//! and a *partition* (the caller's scope and layer: nothing matches across partitions). A query
//! gathers candidates by necessary conditions only, then decides each with the contract itself
//! ([`PairDecider`]), oldest first:
//!
//! 1. **Ratio rule.** `M <= min(la, lb)`, so the ratio rule needs `ratio_of(min(la, lb), la + lb)
//!    >= t`: stored labels are kept in runs by length, and only runs in that *window* are read.
//!    Within a run, the character-histogram bounds and the bit-parallel LCS bound on `M` (both
//!    proven in [`crate::histogram`] and [`crate::bounds`]) drop a label whose bound is below
//!    `Mmin(la + lb)`, the least `M` that reaches `t`.
//! 2. **Containment rule, inside the window.** When one label occurs in the other, both bounds are
//!    at least the shorter length, and inside the window that length already reaches `Mmin`: the
//!    filters of 1 keep every such pair.
//! 3. **Containment rule, outside the window.** Only containment can hold there: candidates come
//!    from the minimiser lists ([`substrings`], proof there) when the query's `min_chars` is at
//!    least the one the index was built for, else from a scan of those runs. Either way each is
//!    tested by substring search.
//!
//! So a label is dropped only when neither rule can hold; the tests compare every answer with
//! deciding each stored label in turn ([`LabelIndex::query_brute`]).
//!
//! Removal marks a slot dead (its text is freed) and takes it off the minimiser lists; runs skip
//! dead slots and are compacted once half of them are dead.

mod substrings;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

use rayon::prelude::*;

use crate::alloc;
use crate::bounds::{folded, m_min, Lcs};
use crate::cancel::Cancel;
use crate::contract::{MatchParams, PairDecider, Reason};
use crate::error::{Error, Result};
use crate::histogram::{coarse_histogram, hist_overlap, histogram, BUCKETS, COARSE};
use crate::matcher::{ratio_of, IdHasher};
use crate::simd::{nibble_filter, pack_nibbles, prefetch};
use crate::text::Text;

use substrings::{element_mask, Posting, Substrings};

/// The longest incoming label the LCS bound is computed for.
const LCS_MAX: usize = 4096;

/// How many hits ahead the fine histograms are prefetched.
const PREFETCH_AHEAD: usize = 12;

/// A matching stored label: its slot, why it matches, and the exact ratio (stored first).
pub type Hit = (u32, Reason, f64);

/// One stored label.
struct Entry {
    partition: u32,
    text: Text,
    alive: bool,
}

/// The labels of one length in a partition: slots ascending, and each one's histograms (zeros when
/// the length is over 255, where histograms are not used): the coarse one packed into nibbles
/// (half the bytes to stream: the window scan reads every label of the window), the fine one whole.
#[derive(Default)]
struct Run {
    slots: Vec<u32>,
    packed: Vec<[u8; 8]>,
    fine: Vec<[u8; BUCKETS]>,
    dead: usize,
}

#[derive(Default)]
struct Partition {
    runs: BTreeMap<usize, Run>,
    substrings: Option<Substrings>,
}

/// A label prepared for insertion (computed in parallel by `insert_many`).
#[derive(Default)]
struct Prepared {
    text: Text,
    packed: [u8; 8],
    fine: [u8; BUCKETS],
    mins: Vec<u64>,
}

/// See the module documentation.
pub struct LabelIndex {
    /// The `min_chars` the minimiser lists serve (at least 1).
    serves: usize,
    entries: Vec<Entry>,
    partitions: HashMap<u32, Partition, BuildHasherDefault<IdHasher>>,
    live: usize,
}

/// A query's reusable state: the decider, the LCS pattern and buffers.
#[derive(Default)]
pub struct QueryScratch {
    decider: PairDecider,
    lcs: Lcs,
    hits: Vec<u32>,
    folded_in: Vec<u8>,
    folded_st: Vec<u8>,
    mins: Vec<u64>,
    candidates: Vec<u32>,
}

impl QueryScratch {
    /// Scratch whose searches poll `cancel`.
    pub fn with_cancel(cancel: &Cancel) -> Self {
        QueryScratch {
            decider: PairDecider::with_cancel(cancel),
            ..QueryScratch::default()
        }
    }
}

impl LabelIndex {
    /// An empty index whose containment lists serve queries with `min_chars >= serves` (others
    /// are answered exactly by a scan).
    pub fn new(serves: usize) -> LabelIndex {
        LabelIndex {
            // A larger `c` would only make windows longer than any label worth indexing.
            serves: serves.clamp(1, 1 << 20),
            entries: Vec::new(),
            partitions: HashMap::default(),
            live: 0,
        }
    }

    /// Live labels.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The next slot an insertion gets.
    pub fn next_slot(&self) -> usize {
        self.entries.len()
    }

    fn prepare(&self, text: Text) -> Result<Prepared> {
        let mut mins = Vec::new();
        Substrings::new(self.serves).minimisers_of(&text, &mut mins)?;
        Ok(Prepared {
            packed: pack_nibbles(&coarse_histogram(&text).unwrap_or([0; COARSE])),
            fine: histogram(&text).unwrap_or([0; BUCKETS]),
            text,
            mins,
        })
    }

    fn check_room(&self, more: usize) -> Result<()> {
        if self.entries.len().saturating_add(more) > u32::MAX as usize {
            return Err(Error::InvalidInput(
                "a LabelIndex holds at most 2**32 - 1 insertions".into(),
            ));
        }
        Ok(())
    }

    /// Store a normalised label in `partition`; returns its slot.
    pub fn insert(&mut self, partition: u32, text: Text) -> Result<u32> {
        self.check_room(1)?;
        let prepared = self.prepare(text)?;
        self.entries.try_reserve(1)?;
        self.place(partition, prepared)
    }

    /// Store many normalised labels (prepared in parallel); returns the first one's slot.
    pub fn insert_many(
        &mut self,
        partitions: &[u32],
        texts: Vec<Text>,
        cancel: &Cancel,
    ) -> Result<u32> {
        if partitions.len() != texts.len() {
            return Err(Error::InvalidInput(format!(
                "{} labels but {} partitions",
                texts.len(),
                partitions.len()
            )));
        }
        self.check_room(texts.len())?;
        let first = self.entries.len() as u32;
        let prepared: Vec<Prepared> = alloc::par_collect(
            texts.into_par_iter(),
            || (),
            |(), t| {
                if cancel.is_cancelled() {
                    return Err(Error::Interrupted);
                }
                self.prepare(t)
            },
        )?;
        self.entries.try_reserve(prepared.len())?;
        for (k, (p, &part)) in prepared.into_iter().zip(partitions).enumerate() {
            if k % 4096 == 0 {
                cancel.check()?;
            }
            self.place(part, p)?;
        }
        Ok(first)
    }

    fn place(&mut self, partition: u32, p: Prepared) -> Result<u32> {
        let slot = self.entries.len() as u32;
        let serves = self.serves;
        self.partitions.try_reserve(1)?;
        let part = self.partitions.entry(partition).or_default();
        let run = part.runs.entry(p.text.len()).or_default();
        alloc::push(&mut run.slots, slot)?;
        alloc::push(&mut run.packed, p.packed)?;
        alloc::push(&mut run.fine, p.fine)?;
        if !p.mins.is_empty() {
            let subs = part
                .substrings
                .get_or_insert_with(|| Substrings::new(serves));
            let len = u32::try_from(p.text.len()).unwrap_or(u32::MAX);
            let mask = element_mask(&p.text);
            subs.insert(&p.mins, Posting { slot, len, mask })?;
        }
        alloc::push(
            &mut self.entries,
            Entry {
                partition,
                text: p.text,
                alive: true,
            },
        )?;
        self.live += 1;
        Ok(slot)
    }

    /// Retract a slot: it matches nothing from now on. False when it is not live.
    pub fn remove(&mut self, slot: u32) -> Result<bool> {
        let Some(entry) = self.entries.get_mut(slot as usize) else {
            return Ok(false);
        };
        if !entry.alive {
            return Ok(false);
        }
        entry.alive = false;
        let text = std::mem::take(&mut entry.text);
        let partition = entry.partition;
        self.live -= 1;
        let Some(part) = self.partitions.get_mut(&partition) else {
            return Ok(true);
        };
        if let Some(subs) = part.substrings.as_mut() {
            let mut mins = Vec::new();
            subs.minimisers_of(&text, &mut mins)?;
            subs.remove(&mins, slot);
        }
        let len = text.len();
        if let Some(run) = part.runs.get_mut(&len) {
            run.dead += 1;
            if run.dead * 2 > run.slots.len() {
                let entries = &self.entries;
                let keep: Vec<bool> = run
                    .slots
                    .iter()
                    .map(|&s| entries[s as usize].alive)
                    .collect();
                let mut k = 0;
                run.slots.retain(|_| (keep[k], k += 1).0);
                k = 0;
                run.packed.retain(|_| (keep[k], k += 1).0);
                k = 0;
                run.fine.retain(|_| (keep[k], k += 1).0);
                run.dead = 0;
                if run.slots.is_empty() {
                    part.runs.remove(&len);
                }
            }
        }
        Ok(true)
    }

    /// Whether `slot` is live.
    pub fn contains(&self, slot: u32) -> bool {
        self.entries.get(slot as usize).is_some_and(|e| e.alive)
    }

    /// Every live label of `partition` that `labels_match(stored, incoming)` accepts, by slot, with
    /// its reason and exact ratio; with `first`, only the oldest.
    pub fn query(
        &self,
        partition: u32,
        incoming: &Text,
        p: &MatchParams,
        first: bool,
        s: &mut QueryScratch,
        cancel: &Cancel,
    ) -> Result<Vec<Hit>> {
        let lb = incoming.len();
        let Some(part) = self.partitions.get(&partition) else {
            return Ok(Vec::new());
        };
        if lb == 0 {
            return Ok(Vec::new());
        }
        s.candidates.clear();
        self.ratio_candidates(part, incoming, p, s, cancel)?;
        self.containment_candidates(part, incoming, p, s, cancel)?;
        s.candidates.sort_unstable();
        s.candidates.dedup();
        let mut found = Vec::new();
        let QueryScratch {
            decider,
            candidates,
            ..
        } = s;
        for (k, &slot) in candidates.iter().enumerate() {
            if k % 64 == 0 {
                cancel.check()?;
            }
            let entry = &self.entries[slot as usize];
            if !entry.alive {
                continue;
            }
            // One decision with its reason and exact ratio: the candidates that reach here mostly
            // match (on the real corpus 82 of 82 a query), so deciding `labels_match` first and the
            // reason after would compute most ratios twice.
            let d = decider.decide(&entry.text, incoming, p)?;
            let Some(reason) = d.reason else { continue };
            alloc::push(&mut found, (slot, reason, d.score))?;
            if first {
                break;
            }
        }
        Ok(found)
    }

    /// Whether a stored length is in the ratio rule's window for an incoming length.
    fn in_window(la: usize, lb: usize, t: f64) -> bool {
        ratio_of(la.min(lb), la + lb) >= t
    }

    /// 1 and 2 of the module documentation: the live labels of the window's runs that pass the
    /// histogram and LCS bounds.
    ///
    /// Performance notes: one thread. Scanning the runs on rayon's two threads gained nothing on an
    /// idle machine and took twice as long under load (`index_real_corpus_timing`, docs/perf.md);
    /// concurrent queries from several threads use the cores instead.
    fn ratio_candidates(
        &self,
        part: &Partition,
        incoming: &Text,
        p: &MatchParams,
        s: &mut QueryScratch,
        cancel: &Cancel,
    ) -> Result<()> {
        let lb = incoming.len();
        let t = p.threshold;
        let hx = (coarse_histogram(incoming), histogram(incoming));
        // The LCS bound's pattern table grows with the label (256 words a 64 elements): above
        // `LCS_MAX` elements the bound is skipped (it only ever drops candidates).
        if lb <= LCS_MAX {
            s.lcs.load(folded(incoming, &mut s.folded_in));
        }
        let mut out = std::mem::take(&mut s.candidates);
        let mut bufs = (
            std::mem::take(&mut s.hits),
            std::mem::take(&mut s.folded_st),
        );
        let mut result = Ok(());
        for (&la, run) in part
            .runs
            .iter()
            .filter(|(&la, _)| Self::in_window(la, lb, t))
        {
            result = self.scan_run(la, run, lb, t, &hx, &mut s.lcs, &mut bufs, &mut out, cancel);
            if result.is_err() {
                break;
            }
        }
        (s.candidates, s.hits, s.folded_st) = (out, bufs.0, bufs.1);
        result
    }

    /// The slots of one run in the window that pass the bounds, appended to `out`.
    #[allow(clippy::too_many_arguments)]
    fn scan_run(
        &self,
        la: usize,
        run: &Run,
        lb: usize,
        t: f64,
        hx: &(Option<[u8; COARSE]>, Option<[u8; BUCKETS]>),
        lcs: &mut Lcs,
        (hits, folded_st): &mut (Vec<u32>, Vec<u8>),
        out: &mut Vec<u32>,
        cancel: &Cancel,
    ) -> Result<()> {
        cancel.check()?;
        let need = m_min(la + lb, t).unwrap_or(0);
        alloc::reserve_total(hits, run.slots.len())?;
        match hx {
            (Some(c), Some(f)) if la <= 255 && need > 0 => {
                nibble_filter(c, &run.packed, need as u32, hits);
                // The fine histograms of what passed lie scattered in memory: each is asked for a
                // few hits ahead, so their cache misses overlap.
                let mut kept = 0;
                for i in 0..hits.len() {
                    if let Some(&ahead) = hits.get(i + PREFETCH_AHEAD) {
                        prefetch(&run.fine[ahead as usize]);
                    }
                    let k = hits[i];
                    if hist_overlap(f, &run.fine[k as usize]) as usize >= need {
                        hits[kept] = k;
                        kept += 1;
                    }
                }
                hits.truncate(kept);
            }
            _ => {
                hits.clear();
                hits.extend(0..run.slots.len() as u32);
            }
        }
        for &k in hits.iter() {
            let slot = run.slots[k as usize];
            let entry = &self.entries[slot as usize];
            if !entry.alive {
                continue;
            }
            if need > 0 && lb <= LCS_MAX && !lcs.at_least(folded(&entry.text, folded_st), need) {
                continue;
            }
            alloc::push(out, slot)?;
        }
        Ok(())
    }

    /// 3 of the module documentation: containment outside the window.
    fn containment_candidates(
        &self,
        part: &Partition,
        incoming: &Text,
        p: &MatchParams,
        s: &mut QueryScratch,
        cancel: &Cancel,
    ) -> Result<()> {
        let lb = incoming.len();
        let t = p.threshold;
        let mc = p.min_chars.max(1);
        if lb < mc {
            // The shorter label must have min_chars elements: a stored label outside the window
            // would have to be shorter than this one (too short) or contain it (this one too short).
            return Ok(());
        }
        let outside = |len: usize| !Self::in_window(len, lb, t);
        match &part.substrings {
            Some(subs) if mc >= subs.serves() => {
                subs.minimisers_of(incoming, &mut s.mins)?;
                let mins = std::mem::take(&mut s.mins);
                let mask = element_mask(incoming);
                let mut tested = 0usize;
                let mut test = |posting: Posting, s: &mut QueryScratch| -> Result<()> {
                    tested += 1;
                    if tested % 256 == 0 {
                        cancel.check()?;
                    }
                    let len = posting.len as usize;
                    let entry = &self.entries[posting.slot as usize];
                    if outside(len) && entry.alive && contained(&entry.text, incoming, mc) {
                        alloc::push(&mut s.candidates, posting.slot)?;
                    }
                    Ok(())
                };
                for posting in subs.containing(&mins) {
                    // Equal lengths: the labels are identical (outside the window when t > 1).
                    if posting.len as usize >= lb && mask & !posting.mask == 0 {
                        test(*posting, s)?;
                    }
                }
                for posting in subs.contained(&mins) {
                    let len = posting.len as usize;
                    if len < lb && len >= mc && posting.mask & !mask == 0 {
                        test(posting, s)?;
                    }
                }
                s.mins = mins;
            }
            _ => {
                for (&la, run) in &part.runs {
                    if !outside(la) || (la < lb && la < mc) {
                        continue;
                    }
                    cancel.check()?;
                    for &slot in &run.slots {
                        let entry = &self.entries[slot as usize];
                        if entry.alive && contained(&entry.text, incoming, mc) {
                            alloc::push(&mut s.candidates, slot)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The oracle: every live label of `partition`, decided in slot order.
    pub fn query_brute(
        &self,
        partition: u32,
        incoming: &Text,
        p: &MatchParams,
        first: bool,
        decider: &mut PairDecider,
    ) -> Result<Vec<Hit>> {
        let mut found = Vec::new();
        for (slot, entry) in self.entries.iter().enumerate() {
            if entry.partition != partition || !entry.alive {
                continue;
            }
            if decider.matches(&entry.text, incoming, p)? {
                let d = decider.decide(&entry.text, incoming, p)?;
                if let Some(reason) = d.reason {
                    found.push((slot as u32, reason, d.score));
                    if first {
                        break;
                    }
                }
            }
        }
        Ok(found)
    }

    /// Bytes held by the index (texts, runs, lists; an estimate of the tables' slack).
    pub fn memory_bytes(&self) -> usize {
        let texts: usize = self
            .entries
            .iter()
            .map(|e| match &e.text {
                Text::Narrow(v) => v.capacity(),
                Text::Wide(v) => v.capacity() * 4,
            })
            .sum();
        let runs: usize = self
            .partitions
            .values()
            .flat_map(|p| p.runs.values())
            .map(|r| {
                r.slots.capacity() * 4 + r.packed.capacity() * 8 + r.fine.capacity() * BUCKETS + 64
            })
            .sum();
        let lists: usize = self
            .partitions
            .values()
            .filter_map(|p| p.substrings.as_ref())
            .map(Substrings::memory_bytes)
            .sum();
        self.entries.capacity() * std::mem::size_of::<Entry>() + texts + runs + lists
    }
}

/// The containment rule between a stored and an incoming label of any widths.
fn contained(stored: &Text, incoming: &Text, min_chars: usize) -> bool {
    match (stored, incoming) {
        (Text::Narrow(a), Text::Narrow(b)) => crate::contract::contained(a, b, min_chars),
        _ => {
            let (Ok(a), Ok(b)) = (stored.codepoints_cow(), incoming.codepoints_cow()) else {
                // Unreadable only when out of memory: keep it as a candidate; the decider decides.
                return true;
            };
            crate::contract::contained(&a, &b, min_chars)
        }
    }
}
