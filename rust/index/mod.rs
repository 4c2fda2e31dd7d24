//! An exact, incremental candidate index: every stored label that `labels_match(stored, incoming)`
//! accepts, in insertion order, with no prefix gate.
//!
//! Labels are stored normalised, each under its *insertion number* (`u64`, never reused: the
//! caller's handle, and the order answers come in) and a *partition* (the caller's scope and layer:
//! nothing matches across partitions). A query gathers candidates by necessary conditions only,
//! then decides each with the contract itself, oldest first:
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
//! # Storage under churn
//!
//! Inside, a label lives in a *slot* (a row of `entries`); a removed label's slot is reused, lowest
//! first, and trailing free slots are given back, so memory follows the live labels, not the
//! insertions ever made (issue 37: one label inserted and removed 2 M times grew +110 MB, and 2^32
//! insertions used every slot up). A slot's *generation* changes when its label is removed or
//! relabelled, which retires its postings on the minimiser lists where they lie ([`substrings`]).
//! Runs hold each label once and drop it by a swap (the label knows its place), so removal is O(1)
//! there; a partition whose last label leaves is dropped whole. The insertion number maps to its
//! slot through one table; a relabel keeps the number (its place in the order) and the slot.

mod minimisers;
mod query;
mod substrings;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasherDefault;

use rayon::prelude::*;

use crate::alloc;
use crate::bounds::fold;
use crate::cancel::Cancel;
use crate::error::{Error, Result};
use crate::histogram::{coarse_histogram, histogram, BUCKETS, COARSE};
use crate::matcher::IdHasher;
use crate::simd::pack_nibbles;
use crate::text::Text;

pub use query::QueryScratch;
use substrings::{element_mask, Posting, Substrings};

/// A matching stored label: its insertion number, why it matches, and the exact ratio (stored
/// first).
pub type Hit = (u64, Reason, f64);

pub use crate::contract::Reason;

type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// One slot: a live label, or a free slot (`alive` false, no text).
#[derive(Default)]
struct Entry {
    /// The label's elements; empty for a narrow label with a record (its run holds the bytes).
    text: Text,
    /// Its length in elements.
    len: u32,
    seq: u64,
    partition: u32,
    /// Changes when the label leaves or is relabelled: its postings name the generation they were
    /// filed under.
    gen: u32,
    /// Its place in its run.
    run_pos: u32,
    /// Postings filed for it on the minimiser lists.
    postings: u32,
    alive: bool,
}

/// The labels of one length in a partition, in no particular order (answers are ordered by
/// insertion number afterwards), and each one's coarse histogram packed into nibbles (half the
/// bytes to stream: the window scan reads every label of the window; zeros when the length is over
/// [`HIST_MAX`], where histograms are not used). Up to that length each label also has a *record*
/// in `records`: its fine histogram and its text folded to bytes, side by side.
///
/// Performance notes: what the nibble scan passes (~1.4% of the window on the real corpus) is read
/// at random; with the fine histogram, the slot, the label's entry and its text in four places, a
/// passing label cost four cache misses (perf at 841,708 labels: the loads of `slots[k]`, of the
/// entry and of the fine histogram were 77% of the scan's own time, and the LCS bound's reads of
/// the text most of its). A record makes it one or two adjacent lines, prefetched ahead.
#[derive(Default)]
struct Run {
    slots: Vec<u32>,
    packed: Vec<[u8; 8]>,
    records: Vec<u8>,
}

/// The longest label with histograms (counts are bytes) and a record.
const HIST_MAX: usize = 255;

impl Run {
    /// The bytes of one record of a run of `len`-element labels (0 when they have none).
    fn record_len(len: usize) -> usize {
        if len <= HIST_MAX {
            BUCKETS + len
        } else {
            0
        }
    }
}

#[derive(Default)]
struct Partition {
    runs: BTreeMap<usize, Run>,
    substrings: Option<Substrings>,
    live: usize,
}

/// A label prepared for insertion (computed in parallel by `insert_many`).
#[derive(Default)]
struct Prepared {
    text: Text,
    packed: [u8; 8],
    fine: [u8; BUCKETS],
    mins: Vec<u64>,
}

/// What a server exports about an index ([`LabelIndex::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Live labels.
    pub labels: usize,
    /// Partitions holding at least one live label.
    pub partitions: usize,
    /// [`LabelIndex::memory_bytes`].
    pub bytes: usize,
    /// Dead postings on the minimiser lists, not yet dropped.
    pub tombstones: usize,
    /// Slots (live labels plus free slots below the highest live one).
    pub slots: usize,
    /// Free slots awaiting reuse.
    pub free_slots: usize,
    /// Insertions ever made (the next insertion number).
    pub inserted: u64,
}

/// See the module documentation.
pub struct LabelIndex {
    /// The `min_chars` the minimiser lists serve (at least 1).
    serves: usize,
    entries: Vec<Entry>,
    /// Free slots below `entries.len()`, lowest reused first.
    free: BTreeSet<u32>,
    slot_of: IdMap<u64, u32>,
    partitions: IdMap<u32, Partition>,
    next_seq: u64,
    next_gen: u32,
    live: usize,
    /// [`Substrings::work`] of the partitions dropped.
    dropped_work: usize,
}

/// Whether a posting is still its slot's (live, and filed under the slot's current generation).
fn posting_live(entries: &[Entry], p: &Posting) -> bool {
    entries
        .get(p.slot as usize)
        .is_some_and(|e| e.alive && p.filed_under(e.gen))
}

/// A stored label's elements, wherever they are kept ([`LabelIndex::label`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Label<'a> {
    Narrow(&'a [u8]),
    Wide(&'a [u32]),
}

impl Label<'_> {
    pub(crate) fn len(self) -> usize {
        match self {
            Label::Narrow(v) => v.len(),
            Label::Wide(v) => v.len(),
        }
    }

    /// An owned copy (for the oracle).
    pub(crate) fn to_text(self) -> Result<Text> {
        Ok(match self {
            Label::Narrow(v) => Text::Narrow(alloc::copy_of(v)?),
            Label::Wide(v) => Text::Wide(alloc::copy_of(v)?),
        })
    }
}

/// Whether a label's elements live in its run's record only (a narrow label that has one), not in
/// its entry: one copy of the bytes, read where the scan reads them.
fn kept_in_record(text: &Text) -> bool {
    matches!(text, Text::Narrow(v) if !v.is_empty() && v.len() <= HIST_MAX)
}

impl LabelIndex {
    /// The elements of the live label in `slot`.
    pub(crate) fn label(&self, slot: u32) -> Label<'_> {
        let e = &self.entries[slot as usize];
        match &e.text {
            Text::Wide(v) => Label::Wide(v),
            Text::Narrow(v) if !v.is_empty() || e.len == 0 => Label::Narrow(v),
            Text::Narrow(_) => {
                let len = e.len as usize;
                let r = Run::record_len(len);
                let at = e.run_pos as usize * r + BUCKETS;
                let bytes = self
                    .partitions
                    .get(&e.partition)
                    .and_then(|p| p.runs.get(&len))
                    .and_then(|run| run.records.get(at..at + len));
                // A live label is always in its run (the index's invariant): an empty label
                // here would only ever drop it as a candidate, never accept it.
                Label::Narrow(bytes.unwrap_or(&[]))
            }
        }
    }

    /// An empty index whose containment lists serve queries with `min_chars >= serves` (others
    /// are answered exactly by a scan).
    pub fn new(serves: usize) -> LabelIndex {
        LabelIndex {
            // A larger `c` would only make windows longer than any label worth indexing.
            serves: serves.clamp(1, 1 << 20),
            entries: Vec::new(),
            free: BTreeSet::new(),
            slot_of: IdMap::default(),
            partitions: IdMap::default(),
            next_seq: 0,
            next_gen: 0,
            live: 0,
            dropped_work: 0,
        }
    }

    /// Live labels.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The insertion number the next insertion gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    fn prepare(&self, text: Text, cancel: &Cancel) -> Result<Prepared> {
        let mut mins = Vec::new();
        Substrings::new(self.serves).minimisers_of(&text, &mut mins, cancel)?;
        Ok(Prepared {
            packed: pack_nibbles(&coarse_histogram(&text).unwrap_or([0; COARSE])),
            fine: histogram(&text).unwrap_or([0; BUCKETS]),
            text,
            mins,
        })
    }

    /// Room for `more` live labels (slots are `u32`: at most 2^32 - 1 live at once; insertions
    /// over the index's life are not limited).
    fn check_room(&self, more: usize) -> Result<()> {
        if self.live.saturating_add(more) >= u32::MAX as usize {
            return Err(Error::InvalidInput(
                "a LabelIndex holds at most 2**32 - 2 live labels".into(),
            ));
        }
        Ok(())
    }

    /// Store a normalised label in `partition`; returns its insertion number. The minimiser pass
    /// polls `cancel` (nothing is stored when it stops).
    pub fn insert(&mut self, partition: u32, text: Text, cancel: &Cancel) -> Result<u64> {
        self.check_room(1)?;
        let prepared = self.prepare(text, cancel)?;
        self.reserve(1)?;
        self.place(partition, prepared, None)
    }

    /// Store many normalised labels (prepared in parallel); returns the first one's insertion
    /// number (the others follow it).
    pub fn insert_many(
        &mut self,
        partitions: &[u32],
        texts: Vec<Text>,
        cancel: &Cancel,
    ) -> Result<u64> {
        if partitions.len() != texts.len() {
            return Err(Error::InvalidInput(format!(
                "{} labels but {} partitions",
                texts.len(),
                partitions.len()
            )));
        }
        self.check_room(texts.len())?;
        let first = self.next_seq;
        let prepared: Vec<Prepared> = alloc::par_collect(
            texts.into_par_iter(),
            || (),
            |(), t| {
                if cancel.is_cancelled() {
                    return Err(Error::Interrupted);
                }
                // The pass polls `never`: rayon's workers are not the thread that runs Python's
                // signal check; `cancel` is polled between labels.
                self.prepare(t, &Cancel::never())
            },
        )?;
        self.reserve(prepared.len())?;
        let mut placed = Ok(());
        for (k, (p, &part)) in prepared.into_iter().zip(partitions).enumerate() {
            if k % 4096 == 0 {
                placed = cancel.check();
            }
            placed = placed.and_then(|()| self.place(part, p, None).map(drop));
            if placed.is_err() {
                break;
            }
        }
        if let Err(e) = placed {
            // All or nothing: what was placed is taken out again.
            for seq in first..self.next_seq {
                self.remove(seq)?;
            }
            return Err(e);
        }
        Ok(first)
    }

    fn reserve(&mut self, more: usize) -> Result<()> {
        alloc::reserve(&mut self.entries, more.saturating_sub(self.free.len()))?;
        self.slot_of
            .try_reserve(more)
            .map_err(|e| Error::OutOfMemory(format!("cannot allocate: {e:?}")))?;
        self.partitions
            .try_reserve(1)
            .map_err(|e| Error::OutOfMemory(format!("cannot allocate: {e:?}")))
    }

    /// File a prepared label: a new one (its slot taken and a new insertion number), or with
    /// `relabel` the new text of the live label in that slot (its number kept, already off its
    /// run). Out of memory while filing its postings, the label is removed and the error returned,
    /// so the index stays consistent.
    fn place(&mut self, partition: u32, p: Prepared, relabel: Option<u32>) -> Result<u64> {
        let len = p.text.len();
        let part = self.partitions.entry(partition).or_default();
        let run = part.runs.entry(len).or_default();
        let reserved = alloc::reserve(&mut run.slots, 1)
            .and_then(|()| alloc::reserve(&mut run.packed, 1))
            .and_then(|()| alloc::reserve(&mut run.records, Run::record_len(len)));
        let slot = match (reserved, relabel) {
            (Err(e), Some(slot)) => {
                let seq = self.entries[slot as usize].seq;
                self.remove(seq)?;
                return Err(e);
            }
            (Err(e), None) => return Err(e),
            (Ok(()), Some(slot)) => slot,
            (Ok(()), None) => match self.free.pop_first() {
                Some(slot) => slot,
                None => {
                    // `reserve` made room: this push does not allocate.
                    alloc::push(&mut self.entries, Entry::default())?;
                    (self.entries.len() - 1) as u32
                }
            },
        };
        let part = self.partitions.entry(partition).or_default();
        let run = part.runs.entry(len).or_default();
        let run_pos = run.slots.len() as u32;
        run.slots.push(slot);
        run.packed.push(p.packed);
        if Run::record_len(len) > 0 {
            run.records.extend_from_slice(&p.fine);
            match &p.text {
                Text::Narrow(v) => run.records.extend_from_slice(v),
                Text::Wide(v) => run.records.extend(v.iter().map(|&c| fold(c))),
            }
        }
        let gen = self.next_gen;
        self.next_gen = self.next_gen.wrapping_add(1);
        let seq = match relabel {
            Some(_) => self.entries[slot as usize].seq,
            None => {
                part.live += 1;
                self.live += 1;
                let seq = self.next_seq;
                self.next_seq += 1;
                self.slot_of.insert(seq, slot);
                seq
            }
        };
        let mask = element_mask(&p.text);
        let text = if kept_in_record(&p.text) {
            Text::default()
        } else {
            p.text
        };
        self.entries[slot as usize] = Entry {
            text,
            len: u32::try_from(len).unwrap_or(u32::MAX),
            seq,
            partition,
            gen,
            run_pos,
            postings: 0,
            alive: true,
        };
        if p.mins.is_empty() {
            return Ok(seq);
        }
        let serves = self.serves;
        let subs = part
            .substrings
            .get_or_insert_with(|| Substrings::new(serves));
        let posting = Posting::new(slot, gen, len, mask);
        let entries = &self.entries;
        match subs.insert(&p.mins, posting, |q| posting_live(entries, q)) {
            Ok(filed) => {
                self.entries[slot as usize].postings = filed as u32;
                Ok(seq)
            }
            Err(e) => {
                // Some postings may be filed: they die with the label's generation.
                self.remove(seq)?;
                Err(e)
            }
        }
    }

    /// Take a live label off its run and retire its postings (its generation moves on); its slot
    /// stays taken.
    fn unfile(&mut self, slot: u32) {
        let entry = &mut self.entries[slot as usize];
        let (partition, len, run_pos, filed) = (
            entry.partition,
            entry.len as usize,
            entry.run_pos as usize,
            entry.postings as usize,
        );
        entry.gen = self.next_gen;
        self.next_gen = self.next_gen.wrapping_add(1);
        entry.postings = 0;
        // Off its run from now on (so a second call, on a relabel that failed, touches no run).
        entry.run_pos = u32::MAX;
        let Some(part) = self.partitions.get_mut(&partition) else {
            return;
        };
        if let Some(run) = part.runs.get_mut(&len) {
            if run_pos < run.slots.len() {
                run.slots.swap_remove(run_pos);
                run.packed.swap_remove(run_pos);
                let r = Run::record_len(len);
                let last = run.records.len() - r;
                run.records.copy_within(last.., run_pos * r);
                run.records.truncate(last);
                if let Some(&moved) = run.slots.get(run_pos) {
                    self.entries[moved as usize].run_pos = run_pos as u32;
                }
            }
            if run.slots.is_empty() {
                part.runs.remove(&len);
            } else if run.slots.capacity() > 2 * run.slots.len() + 16 {
                run.slots.shrink_to_fit();
                run.packed.shrink_to_fit();
                run.records.shrink_to_fit();
            }
        }
        if let Some(subs) = part.substrings.as_mut() {
            let entries = &self.entries;
            subs.retire(filed, |q| posting_live(entries, q));
        }
    }

    /// Retract a label by its insertion number: it matches nothing from now on. False when it is
    /// not live. O(1) amortised (a table look-up, a swap in its run, a free-slot set insert).
    pub fn remove(&mut self, seq: u64) -> Result<bool> {
        let Some(slot) = self.slot_of.remove(&seq) else {
            return Ok(false);
        };
        self.unfile(slot);
        let entry = &mut self.entries[slot as usize];
        entry.alive = false;
        let partition = entry.partition;
        entry.text = Text::default();
        entry.len = 0;
        self.live -= 1;
        if let Some(part) = self.partitions.get_mut(&partition) {
            part.live -= 1;
            if part.live == 0 {
                if let Some(subs) = self
                    .partitions
                    .remove(&partition)
                    .and_then(|p| p.substrings)
                {
                    self.dropped_work += subs.work() + subs.memory_bytes() / 20;
                }
            }
        }
        self.free_slot(slot);
        if self.live == 0 {
            // Empty: every table back to nothing.
            self.entries = Vec::new();
            self.free = BTreeSet::new();
            self.slot_of = IdMap::default();
            self.partitions = IdMap::default();
        }
        if self.slot_of.capacity() > 4 * self.slot_of.len() + 64 {
            self.slot_of.shrink_to_fit();
        }
        if self.partitions.capacity() > 4 * self.partitions.len() + 64 {
            self.partitions.shrink_to_fit();
        }
        Ok(true)
    }

    /// A slot is free: reused later, or given back when no live slot lies above it.
    fn free_slot(&mut self, slot: u32) {
        if slot as usize + 1 == self.entries.len() {
            self.entries.pop();
            while self.entries.last().is_some_and(|e| !e.alive) {
                let last = (self.entries.len() - 1) as u32;
                self.free.remove(&last);
                self.entries.pop();
            }
            if self.entries.capacity() > 2 * self.entries.len() + 64 {
                self.entries.shrink_to_fit();
            }
        } else {
            self.free.insert(slot);
        }
    }

    /// Give the live label `seq` a new (normalised) text, keeping its insertion number, so its
    /// place in every answer's order, and its partition. False when it is not live. Costs what an
    /// insertion costs; nothing else in the partition is touched. The minimiser pass polls
    /// `cancel` (nothing changes when it stops).
    pub fn relabel(&mut self, seq: u64, text: Text, cancel: &Cancel) -> Result<bool> {
        let Some(&slot) = self.slot_of.get(&seq) else {
            return Ok(false);
        };
        let prepared = self.prepare(text, cancel)?;
        let partition = self.entries[slot as usize].partition;
        self.unfile(slot);
        self.place(partition, prepared, Some(slot))?;
        Ok(true)
    }

    /// The partition of the live label `seq`.
    pub fn partition_of(&self, seq: u64) -> Option<u32> {
        let &slot = self.slot_of.get(&seq)?;
        Some(self.entries[slot as usize].partition)
    }

    /// The slot of the live label `seq`.
    pub fn slot_of(&self, seq: u64) -> Option<u32> {
        self.slot_of.get(&seq).copied()
    }

    /// Live labels in `partition`.
    pub fn partition_len(&self, partition: u32) -> usize {
        self.partitions.get(&partition).map_or(0, |p| p.live)
    }

    /// Whether insertion number `seq` is live.
    pub fn contains(&self, seq: u64) -> bool {
        self.slot_of.contains_key(&seq)
    }

    /// Bytes held by the index: texts, slots, runs, lists, the tables (an estimate of their slack
    /// included).
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
            .map(|r| r.slots.capacity() * 4 + r.packed.capacity() * 8 + r.records.capacity() + 64)
            .sum();
        let lists: usize = self
            .partitions
            .values()
            .filter_map(|p| p.substrings.as_ref())
            .map(Substrings::memory_bytes)
            .sum();
        let tables = self.slot_of.capacity() * (16 + 1)
            + self.partitions.capacity() * (std::mem::size_of::<(u32, Partition)>() + 1)
            + self.free.len() * 8;
        self.entries.capacity() * std::mem::size_of::<Entry>() + texts + runs + lists + tables
    }

    /// List entries visited by removals so far (a step count: see [`Substrings::work`]), a
    /// dropped partition's lists counted by their size.
    pub fn list_work(&self) -> usize {
        self.dropped_work
            + self
                .partitions
                .values()
                .filter_map(|p| p.substrings.as_ref())
                .map(Substrings::work)
                .sum::<usize>()
    }

    /// Counts a server can export.
    pub fn stats(&self) -> Stats {
        Stats {
            labels: self.live,
            partitions: self.partitions.len(),
            bytes: self.memory_bytes(),
            tombstones: self
                .partitions
                .values()
                .filter_map(|p| p.substrings.as_ref())
                .map(Substrings::dead)
                .sum(),
            slots: self.entries.len(),
            free_slots: self.free.len(),
            inserted: self.next_seq,
        }
    }
}
