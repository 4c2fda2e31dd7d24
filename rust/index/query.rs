//! A query: candidates by the necessary conditions of the module documentation, then each decided
//! by the contract, oldest first.

use crate::alloc;
use crate::bounds::{fold, folded, m_min, Lcs};
use crate::cancel::Cancel;
use crate::contract::{self, Decision, MatchParams, PairDecider, Reason};
use crate::error::Result;
use crate::histogram::{coarse_histogram, hist_overlap, histogram, BUCKETS, COARSE};
use crate::matcher::{ratio_of, BSide, Matcher};
use crate::simd::{nibble_filter, prefetch};
use crate::text::Text;

use super::substrings::{element_mask, Posting};
use super::{posting_live, Hit, Label, LabelIndex, Partition, Run, HIST_MAX};

/// The longest incoming label the LCS bound is computed for.
const LCS_MAX: usize = 4096;

/// How many hits ahead the fine histograms are prefetched.
const PREFETCH_AHEAD: usize = 12;

/// difflib's autojunk applies to a `b` (the incoming label) of this many elements or more.
const AUTOJUNK_MIN: usize = 200;

/// A candidate: its slot shifted left once, the low bit set when it is known to hold the
/// containment relation with the incoming label (one occurs in the other, the shorter with at
/// least `min_chars` elements).
type Candidate = u64;

/// A query's reusable state: the incoming label's difflib index (built once a query, not once a
/// candidate), the LCS pattern and buffers.
#[derive(Default)]
pub struct QueryScratch {
    matcher: Matcher,
    narrow: BSide<u8>,
    wide: BSide<u32>,
    /// Which sides hold the current incoming label.
    built: (bool, bool),
    wide_stored: Vec<u32>,
    wide_incoming: Vec<u32>,
    lcs: Lcs,
    hits: Vec<u32>,
    folded_in: Vec<u8>,
    folded_st: Vec<u8>,
    mins: Vec<u64>,
    pub(super) candidates: Vec<Candidate>,
    ordered: Vec<(u64, u32, bool)>,
}

impl QueryScratch {
    /// Scratch whose searches poll `cancel`.
    pub fn with_cancel(cancel: &Cancel) -> Self {
        let mut s = QueryScratch::default();
        s.matcher.set_cancel(cancel);
        s
    }

    /// `decide(stored, incoming)` with the incoming label's index built at most once a query.
    ///
    /// Performance notes: the candidates of a query on a common phrase are thousands of labels it
    /// occurs in; rebuilding difflib's `b2j` of the incoming label for each (as `PairDecider` does
    /// for one pair) was most of such a query. And a known containment needs no matching at all
    /// when `b` has no popular elements (fewer than 200 elements): the shorter label is then one
    /// matching block, the longest there is, so difflib's `M` is its length exactly.
    fn decide(
        &mut self,
        stored: Label<'_>,
        incoming: &Text,
        known_contained: bool,
        p: &MatchParams,
    ) -> Result<Decision> {
        let (la, lb) = (stored.len(), incoming.len());
        if known_contained && lb < AUTOJUNK_MIN && la > 0 {
            let score = ratio_of(la.min(lb), la + lb);
            let reason = if score >= p.threshold {
                Reason::Ratio
            } else {
                Reason::Containment
            };
            return Ok(Decision {
                reason: Some(reason),
                score,
            });
        }
        if let (Label::Narrow(a), Text::Narrow(b)) = (stored, incoming) {
            if !self.built.0 {
                self.narrow.reserve_for(lb)?;
                self.narrow.rebuild(b, true, None);
                self.built.0 = true;
            }
            self.matcher.reserve_for::<u8>(la, lb)?;
            return Ok(contract::decide(&mut self.matcher, a, &self.narrow, p));
        }
        if !self.built.1 {
            incoming.codepoints_into(&mut self.wide_incoming)?;
            self.wide.reserve_for(lb)?;
            self.wide.rebuild(&self.wide_incoming, true, None);
            self.built.1 = true;
        }
        self.matcher.reserve_for::<u32>(la, lb)?;
        let a: &[u32] = match stored {
            Label::Wide(a) => a,
            Label::Narrow(a) => {
                self.wide_stored.clear();
                alloc::reserve(&mut self.wide_stored, a.len())?;
                self.wide_stored.extend(a.iter().map(|&c| c as u32));
                &self.wide_stored
            }
        };
        Ok(contract::decide(&mut self.matcher, a, &self.wide, p))
    }
}

impl LabelIndex {
    /// Every live label of `partition` that `labels_match(stored, incoming)` accepts, by insertion
    /// number (oldest first), with its reason and exact ratio; with `first`, only the oldest.
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
        s.built = (false, false);
        self.ratio_candidates(part, incoming, p, s, cancel)?;
        self.containment_candidates(part, incoming, p, s, cancel)?;
        // By slot, a slot's known containment (the odd candidate) kept over its plain one.
        s.candidates.sort_unstable_by(|a, b| b.cmp(a));
        s.candidates.dedup_by_key(|c| *c >> 1);
        s.ordered.clear();
        alloc::reserve_total(&mut s.ordered, s.candidates.len())?;
        for &c in &s.candidates {
            let slot = (c >> 1) as u32;
            let entry = &self.entries[slot as usize];
            if entry.alive {
                s.ordered.push((entry.seq, slot, c & 1 == 1));
            }
        }
        s.ordered.sort_unstable();
        let mut found = Vec::new();
        let ordered = std::mem::take(&mut s.ordered);
        let mut result = Ok(());
        for (k, &(seq, slot, known)) in ordered.iter().enumerate() {
            if k % 64 == 0 {
                if let Err(e) = cancel.check() {
                    result = Err(e);
                    break;
                }
            }
            // One decision with its reason and exact ratio: the candidates that reach here mostly
            // match (on the real corpus 82 of 82 a query), so deciding `labels_match` first and the
            // reason after would compute most ratios twice.
            let d = match s.decide(self.label(slot), incoming, known, p) {
                Ok(d) => d,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let Some(reason) = d.reason else { continue };
            if let Err(e) = alloc::push(&mut found, (seq, reason, d.score)) {
                result = Err(e);
                break;
            }
            if first {
                break;
            }
        }
        s.ordered = ordered;
        result.map(|()| found)
    }

    /// Whether a stored length is in the ratio rule's window for an incoming length.
    pub(super) fn in_window(la: usize, lb: usize, t: f64) -> bool {
        ratio_of(la.min(lb), la + lb) >= t
    }

    /// 1 and 2 of the module documentation: the live labels of the window's runs that pass the
    /// histogram and LCS bounds.
    ///
    /// Performance notes: one thread. Scanning the runs on rayon's two threads gained nothing on an
    /// idle machine and took twice as long under load (`index_real_corpus_timing`, docs/perf.md);
    /// concurrent queries from several threads use the cores instead.
    pub(super) fn ratio_candidates(
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
        out: &mut Vec<Candidate>,
        cancel: &Cancel,
    ) -> Result<()> {
        cancel.check()?;
        let need = m_min(la + lb, t).unwrap_or(0);
        alloc::reserve_total(hits, run.slots.len())?;
        let lcs_on = need > 0 && lb <= LCS_MAX;
        match hx {
            (Some(c), Some(f)) if la <= HIST_MAX && need > 0 => {
                nibble_filter(c, &run.packed, need as u32, hits);
                // What passed lies scattered in memory: each record (fine histogram and folded
                // text, side by side) is asked for a few hits ahead, so their cache misses overlap.
                let r = Run::record_len(la);
                for (i, &k) in hits.iter().enumerate() {
                    if i % 4096 == 4095 {
                        cancel.check()?;
                    }
                    if let Some(&ahead) = hits.get(i + PREFETCH_AHEAD) {
                        let at = ahead as usize * r;
                        prefetch(&run.records[at]);
                        prefetch(&run.records[at + r - 1]);
                    }
                    let record = &run.records[k as usize * r..(k as usize + 1) * r];
                    let (fine, text) = record.split_at(BUCKETS);
                    let fine: &[u8; BUCKETS] = fine.try_into().unwrap_or(&[u8::MAX; BUCKETS]);
                    if (hist_overlap(f, fine) as usize) < need
                        || (lcs_on && !lcs.at_least(text, need))
                    {
                        continue;
                    }
                    alloc::push(out, (run.slots[k as usize] as u64) << 1)?;
                }
            }
            _ => {
                for (n, &slot) in run.slots.iter().enumerate() {
                    if n % 4096 == 4095 {
                        cancel.check()?;
                    }
                    if lcs_on {
                        let text = match self.label(slot) {
                            Label::Narrow(v) => v,
                            Label::Wide(v) => {
                                folded_st.clear();
                                folded_st.extend(v.iter().map(|&c| fold(c)));
                                &folded_st[..]
                            }
                        };
                        if !lcs.at_least(text, need) {
                            continue;
                        }
                    }
                    alloc::push(out, (slot as u64) << 1)?;
                }
            }
        }
        Ok(())
    }

    /// 3 of the module documentation: containment outside the window.
    pub(super) fn containment_candidates(
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
        let mut reader = Incoming::new(incoming);
        match &part.substrings {
            Some(subs) if mc >= subs.serves() => {
                subs.minimisers_of(incoming, &mut s.mins, cancel)?;
                let mins = std::mem::take(&mut s.mins);
                let mask = element_mask(incoming);
                // A posting's length, or its label's when the posting holds "LEN_MAX or more".
                let len_of = |p: &Posting| p.len().unwrap_or_else(|| self.label(p.slot).len());
                let mut test = |posting: Posting, s: &mut QueryScratch| -> Result<()> {
                    cancel.check()?;
                    if !outside(len_of(&posting)) || !posting_live(&self.entries, &posting) {
                        return Ok(());
                    }
                    if reader.contained(self.label(posting.slot), mc)? {
                        alloc::push(&mut s.candidates, (posting.slot as u64) << 1 | 1)?;
                    }
                    Ok(())
                };
                let mut result = Ok(());
                for posting in subs.containing(&mins) {
                    // Equal lengths: the labels are identical (outside the window when t > 1).
                    if len_of(posting) >= lb && mask & !posting.mask() == 0 {
                        result = test(*posting, s);
                        if result.is_err() {
                            break;
                        }
                    }
                }
                if result.is_ok() {
                    for posting in subs.contained(&mins) {
                        let len = len_of(&posting);
                        if len < lb && len >= mc && posting.mask() & !mask == 0 {
                            result = test(posting, s);
                            if result.is_err() {
                                break;
                            }
                        }
                    }
                }
                s.mins = mins;
                result?;
            }
            _ => {
                for (&la, run) in &part.runs {
                    if !outside(la) || (la < lb && la < mc) {
                        continue;
                    }
                    cancel.check()?;
                    for (n, &slot) in run.slots.iter().enumerate() {
                        if n % 1024 == 1023 {
                            cancel.check()?;
                        }
                        if reader.contained(self.label(slot), mc)? {
                            alloc::push(&mut s.candidates, (slot as u64) << 1 | 1)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The oracle: every live label of `partition`, decided in insertion order.
    pub fn query_brute(
        &self,
        partition: u32,
        incoming: &Text,
        p: &MatchParams,
        first: bool,
        decider: &mut PairDecider,
    ) -> Result<Vec<Hit>> {
        let mut live: Vec<(u64, u32)> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.alive && e.partition == partition)
            .map(|(slot, e)| (e.seq, slot as u32))
            .collect();
        live.sort_unstable();
        let mut found = Vec::new();
        for (seq, slot) in live {
            let text = self.label(slot).to_text()?;
            if decider.matches(&text, incoming, p)? {
                let d = decider.decide(&text, incoming, p)?;
                if let Some(reason) = d.reason {
                    found.push((seq, reason, d.score));
                    if first {
                        break;
                    }
                }
            }
        }
        Ok(found)
    }
}

/// The incoming label as the containment test reads it: its code points taken once, and only when
/// a wide label is met.
struct Incoming<'t> {
    text: &'t Text,
    wide: Option<std::borrow::Cow<'t, [u32]>>,
}

impl<'t> Incoming<'t> {
    fn new(text: &'t Text) -> Self {
        Incoming { text, wide: None }
    }

    /// The containment rule between a stored label and this one, of any widths.
    fn contained(&mut self, stored: Label<'_>, min_chars: usize) -> Result<bool> {
        if let (Label::Narrow(a), Text::Narrow(b)) = (stored, self.text) {
            return Ok(contract::contained(a, b, min_chars));
        }
        if self.wide.is_none() {
            self.wide = Some(self.text.codepoints_cow()?);
        }
        let b = self.wide.as_deref().unwrap_or(&[]);
        match stored {
            Label::Wide(a) => Ok(contract::contained(a, b, min_chars)),
            Label::Narrow(a) => {
                let mut wide: Vec<u32> = alloc::with_capacity(a.len())?;
                wide.extend(a.iter().map(|&c| c as u32));
                Ok(contract::contained(&wide, b, min_chars))
            }
        }
    }
}
