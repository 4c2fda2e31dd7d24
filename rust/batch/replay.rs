//! Replay of a store's writes: each label decided as the write-time lookup decides it (a prefix gate
//! and a candidate limit, or every earlier canonical through the label index), per partition in
//! parallel.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use rayon::prelude::*;
use smallvec::SmallVec;

use crate::alloc;
use crate::cancel::Cancel;
use crate::contract::{MatchParams, PairDecider, Reason};
use crate::error::{Error, Result};
use crate::index::{LabelIndex, QueryScratch};
use crate::matcher::IdHasher;
use crate::text::Text;

/// How a replayed label was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A new canonical memory.
    New,
    /// Empty after stripping: never looked up, never a candidate (the seed returns before querying).
    Empty,
    /// Collapsed into an earlier canonical by the rule named.
    Collapsed(Reason),
}

/// Which text the candidate fetch compares prefixes of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixMode {
    /// The stripped raw label, case-sensitive: the seed's `label_prefix` query (parity).
    Raw,
    /// The normalised label: restatements that differ only in case or spacing at the start are fetched.
    Normalised,
    /// No gate: every earlier canonical of the partition is a candidate, oldest first, through a
    /// [`crate::index::LabelIndex`] (`prefix_len` and `query_limit` do not apply).
    None,
}

#[derive(Clone, Copy, Debug)]
pub struct ReplayParams {
    pub matching: MatchParams,
    pub prefix_mode: PrefixMode,
    pub prefix_len: usize,
    pub query_limit: usize,
}

#[derive(Clone, Debug, Default)]
pub struct ReplayResult {
    /// For each label, the index it collapses into (itself when it is canonical or empty).
    pub canonical: Vec<u32>,
    pub outcome: Vec<Option<Outcome>>,
    /// The exact ratio (stored canonical first) for collapsed labels; NaN otherwise.
    pub score: Vec<f64>,
}

/// Labels for [`replay`] as a caller reads them: ASCII ones as their raw bytes, back to back
/// (stripped and normalised later, in parallel), others stripped and normalised already.
#[derive(Default)]
pub struct ReplayInput {
    bytes: Vec<u8>,
    entries: Vec<ReplayEntry>,
}

enum ReplayEntry {
    Ascii(usize, usize),
    Texts(Text, Text),
}

impl ReplayInput {
    /// An ASCII label as read.
    pub fn push_ascii(&mut self, raw: &[u8]) -> Result<()> {
        self.bytes.try_reserve(raw.len())?;
        let start = self.bytes.len();
        self.bytes.extend_from_slice(raw);
        alloc::push(
            &mut self.entries,
            ReplayEntry::Ascii(start, self.bytes.len()),
        )
    }

    /// A label as `str.strip()` and the normalisation give it.
    pub fn push_texts(&mut self, stripped: Text, normalised: Text) -> Result<()> {
        alloc::push(&mut self.entries, ReplayEntry::Texts(stripped, normalised))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The stripped and the normalised labels, the ASCII ones computed in parallel.
    pub fn into_texts(self, cancel: &Cancel) -> Result<(Vec<Text>, Vec<Text>)> {
        let ReplayInput { bytes, entries } = self;
        // Both vectors reserved fallibly up front (`unzip_into_vecs` then allocates nothing), and
        // a label's own allocation failing inside a worker is kept, never a panic.
        let mut stripped = alloc::with_capacity(entries.len())?;
        let mut normalised = alloc::with_capacity(entries.len())?;
        let failed = std::sync::Mutex::new(None);
        entries
            .into_par_iter()
            .map(|entry| match entry {
                ReplayEntry::Ascii(start, end) if !cancel.is_cancelled() => {
                    Text::stripped_and_normalised_ascii(&bytes[start..end]).unwrap_or_else(|e| {
                        if let Ok(mut slot) = failed.lock() {
                            slot.get_or_insert(e);
                        }
                        cancel.cancel();
                        (Text::default(), Text::default())
                    })
                }
                ReplayEntry::Ascii(..) => (Text::default(), Text::default()),
                ReplayEntry::Texts(stripped, normalised) => (stripped, normalised),
            })
            .unzip_into_vecs(&mut stripped, &mut normalised);
        if let Some(err) = failed.into_inner().ok().flatten() {
            return Err(err);
        }
        cancel.check()?;
        Ok((stripped, normalised))
    }
}

/// Replays writes in input order: each label is looked up as `find_canonical_node` does against a
/// store that appends every new canonical (its stripped label), oldest first. `stripped[i]` is the
/// label after `str.strip()`, `normalised[i]` its normalised form, `partition[i]` its (scope, layer)
/// partition: nothing collapses across partitions. Partitions run in parallel.
///
/// A `prefix_len` longer than every key cuts none (the seed slices `key[:prefix_len]`), so any
/// `prefix_len` is taken, however large. Indices are `u32`: at most `u32::MAX` labels.
pub fn replay(
    stripped: &[Text],
    normalised: &[Text],
    partition: &[u32],
    rp: &ReplayParams,
    cancel: &Cancel,
) -> Result<ReplayResult> {
    let n = stripped.len();
    if normalised.len() != n || partition.len() != n {
        return Err(Error::InvalidInput(format!(
            "{n} stripped labels, {} normalised labels and {} partition ids",
            normalised.len(),
            partition.len()
        )));
    }
    if n > u32::MAX as usize {
        return Err(Error::InvalidInput(
            "replay takes at most 2**32 - 1 labels".into(),
        ));
    }
    let keys = match rp.prefix_mode {
        PrefixMode::Raw => stripped,
        PrefixMode::Normalised | PrefixMode::None => normalised,
    };
    // Every key is cut at its own length or `prefix_len`, whichever is shorter.
    let longest_key = keys.iter().map(Text::len).max().unwrap_or(0);
    let rp = &ReplayParams {
        prefix_len: rp.prefix_len.min(longest_key + 1),
        ..*rp
    };
    let mut groups: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, &g) in partition.iter().enumerate() {
        groups.entry(g).or_default().push(i as u32);
    }
    let mut groups: Vec<Vec<u32>> = groups.into_values().collect();
    // Largest first, so one huge scope does not start last.
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let decided: Vec<Vec<Decided>> = groups
        .par_iter()
        .map_init(
            || PairDecider::with_cancel(cancel),
            |d, members| match rp.prefix_mode {
                PrefixMode::None => {
                    replay_partition_indexed(members, stripped, normalised, rp, cancel)
                }
                _ => replay_partition(d, members, stripped, normalised, rp, cancel),
            },
        )
        .collect::<Result<_>>()?;
    let mut result = ReplayResult {
        canonical: alloc::from_fn(n, |i| i as u32)?,
        outcome: alloc::filled(None, n)?,
        score: alloc::filled(f64::NAN, n)?,
    };
    for (i, c, o, s) in decided.into_iter().flatten() {
        result.canonical[i as usize] = c;
        result.outcome[i as usize] = o;
        result.score[i as usize] = s;
    }
    Ok(result)
}

/// The candidate fetch of one partition: for a query key `p` of length `L`, the first `query_limit`
/// canonicals (oldest first) whose key starts with `p`.
///
/// Keys of full prefix length are answered by a map from each canonical's first `prefix_len` code points.
/// Shorter keys (a short label: its whole key is the prefix) can be answered by any longer canonical,
/// so each short key that some label of the partition will query gets a list, and a new canonical is
/// appended to the lists of every short key it starts with. Lists stop at `query_limit`: a later
/// canonical can never be among the first `query_limit`.
///
/// Performance notes: with a million labels, lookups missed the cache at every hop (map bucket, the
/// bucket's slot list, the slot, its key, its canonicals: ~17% of a replay in perf). Slots now
/// keep keys in one arena and their first canonicals inline, and the map holds a slot id.
struct CanonicalsByPrefix {
    prefix_len: usize,
    limit: usize,
    /// `(prefix length, hash of its code points)` -> the newest slot with that pair; older slots
    /// with the same pair (hash collisions) follow through `next`.
    map: HashMap<(u32, u64), u32, BuildHasherDefault<IdHasher>>,
    next: Vec<u32>,
    /// Slot `s`'s key (a prefix's code points) is `keys[key_start[s]..key_start[s + 1]]`.
    keys: Vec<u32>,
    key_start: Vec<usize>,
    /// Slot `s`'s canonicals, oldest first.
    canonicals: Vec<SmallVec<[u32; 4]>>,
    /// Which lengths below `prefix_len` some short query has (only those need probing on insert).
    short_lens: Vec<bool>,
}

/// No slot (end of a collision chain).
const NO_SLOT: u32 = u32::MAX;

/// The hashes of every prefix of `cps` up to `n` code points: `out[l]` hashes `cps[..l]`.
fn prefix_hashes(cps: &[u32], n: usize, out: &mut Vec<u64>) {
    out.clear();
    let mut h = 0x9E37_79B9_7F4A_7C15u64;
    out.push(h);
    for &c in &cps[..n.min(cps.len())] {
        h = (h.rotate_left(5) ^ c as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        out.push(h);
    }
}

impl CanonicalsByPrefix {
    fn new(prefix_len: usize, limit: usize, short_queries: impl Iterator<Item = Vec<u32>>) -> Self {
        let mut index = CanonicalsByPrefix {
            prefix_len,
            limit,
            map: HashMap::default(),
            next: Vec::new(),
            keys: Vec::new(),
            key_start: vec![0],
            canonicals: Vec::new(),
            short_lens: vec![false; prefix_len],
        };
        let mut hashes = Vec::new();
        for key in short_queries {
            prefix_hashes(&key, key.len(), &mut hashes);
            let l = key.len();
            index.short_lens[l] = true;
            index.slot(&key, l, hashes[l], true);
        }
        index
    }

    fn key(&self, s: usize) -> &[u32] {
        &self.keys[self.key_start[s]..self.key_start[s + 1]]
    }

    /// The slot of `cps[..l]` (hash `h`), created when `create` says so.
    fn slot(&mut self, cps: &[u32], l: usize, h: u64, create: bool) -> Option<usize> {
        let head = self.map.get(&(l as u32, h)).copied().unwrap_or(NO_SLOT);
        let mut s = head;
        while s != NO_SLOT {
            if self.key(s as usize) == &cps[..l] {
                return Some(s as usize);
            }
            s = self.next[s as usize];
        }
        if !create {
            return None;
        }
        let s = self.canonicals.len();
        self.keys.extend_from_slice(&cps[..l]);
        self.key_start.push(self.keys.len());
        self.canonicals.push(SmallVec::new());
        self.next.push(head);
        self.map.insert((l as u32, h), s as u32);
        Some(s)
    }

    /// The canonicals a query with key `cps` fetches.
    fn candidates(&mut self, cps: &[u32], hashes: &[u64]) -> &[u32] {
        let l = cps.len().min(self.prefix_len);
        match self.slot(cps, l, hashes[l], false) {
            Some(s) => &self.canonicals[s],
            None => &[],
        }
    }

    fn insert(&mut self, cps: &[u32], hashes: &[u64], index: u32) {
        let limit = self.limit;
        let push = |canonicals: &mut Vec<SmallVec<[u32; 4]>>, s: usize| {
            let list = &mut canonicals[s];
            if list.len() < limit {
                list.push(index);
            }
        };
        if cps.len() >= self.prefix_len {
            if let Some(s) = self.slot(cps, self.prefix_len, hashes[self.prefix_len], true) {
                push(&mut self.canonicals, s);
            }
        }
        let shortest_to_longest = cps.len().min(self.prefix_len.saturating_sub(1)) + 1;
        for (l, &h) in hashes.iter().enumerate().take(shortest_to_longest) {
            if self.short_lens.get(l).copied().unwrap_or(false) {
                if let Some(s) = self.slot(cps, l, h, false) {
                    push(&mut self.canonicals, s);
                }
            }
        }
    }
}

/// One replayed label: its index, canonical, outcome and score.
type Decided = (u32, u32, Option<Outcome>, f64);

fn replay_partition(
    d: &mut PairDecider,
    members: &[u32],
    stripped: &[Text],
    normalised: &[Text],
    rp: &ReplayParams,
    cancel: &Cancel,
) -> Result<Vec<Decided>> {
    // A key longer than `prefix_len` fetches by its first `prefix_len` code points only, so keys
    // are cut there (into one reused buffer: no allocation per label).
    let key_into = |i: u32, key: &mut Vec<u32>| {
        let text = match rp.prefix_mode {
            PrefixMode::Raw => &stripped[i as usize],
            PrefixMode::Normalised | PrefixMode::None => &normalised[i as usize],
        };
        text.prefix_codepoints_into(rp.prefix_len, key)
    };
    let mut key = Vec::new();
    let short_queries: std::collections::HashSet<Vec<u32>> = members
        .iter()
        .filter(|&&i| !stripped[i as usize].is_empty())
        .map(|&i| {
            key_into(i, &mut key)?;
            Ok((key.len() < rp.prefix_len).then(|| key.clone()))
        })
        .filter_map(Result::transpose)
        .collect::<Result<_>>()?;
    let mut index =
        CanonicalsByPrefix::new(rp.prefix_len, rp.query_limit, short_queries.into_iter());
    let mut out = Vec::with_capacity(members.len());
    let mut hashes = Vec::new();
    for &i in members {
        cancel.check()?;
        if stripped[i as usize].is_empty() {
            out.push((i, i, Some(Outcome::Empty), f64::NAN));
            continue;
        }
        key_into(i, &mut key)?;
        prefix_hashes(&key, rp.prefix_len, &mut hashes);
        let incoming = &normalised[i as usize];
        let mut hit = None;
        for &c in index.candidates(&key, &hashes) {
            if d.matches(&normalised[c as usize], incoming, &rp.matching)? {
                hit = Some(c);
                break;
            }
        }
        match hit {
            Some(c) => {
                let decision = d.decide(&normalised[c as usize], incoming, &rp.matching)?;
                let reason = decision.reason.unwrap_or(Reason::Containment);
                out.push((i, c, Some(Outcome::Collapsed(reason)), decision.score));
            }
            None => {
                index.insert(&key, &hashes, i);
                out.push((i, i, Some(Outcome::New), f64::NAN));
            }
        }
    }
    cancel.check()?;
    Ok(out)
}

/// One partition replayed with no gate: each label is looked up among every earlier canonical of
/// the partition (an exact [`LabelIndex`] query for the oldest match) and joins the oldest that
/// matches, else becomes a canonical itself. Equal to deciding every earlier canonical in order.
fn replay_partition_indexed(
    members: &[u32],
    stripped: &[Text],
    normalised: &[Text],
    rp: &ReplayParams,
    cancel: &Cancel,
) -> Result<Vec<Decided>> {
    let mut index = LabelIndex::new(rp.matching.min_chars);
    let mut scratch = QueryScratch::with_cancel(cancel);
    // Slot `s` of the index is canonical `label_of[s]`.
    let mut label_of: Vec<u32> = Vec::new();
    let mut out = alloc::with_capacity(members.len())?;
    for &i in members {
        cancel.check()?;
        if stripped[i as usize].is_empty() {
            out.push((i, i, Some(Outcome::Empty), f64::NAN));
            continue;
        }
        let incoming = &normalised[i as usize];
        let hits = index.query(0, incoming, &rp.matching, true, &mut scratch, cancel)?;
        match hits.first() {
            Some(&(slot, reason, score)) => {
                out.push((
                    i,
                    label_of[slot as usize],
                    Some(Outcome::Collapsed(reason)),
                    score,
                ));
            }
            None => {
                index.insert(0, incoming.clone(), cancel)?;
                alloc::push(&mut label_of, i)?;
                out.push((i, i, Some(Outcome::New), f64::NAN));
            }
        }
    }
    Ok(out)
}
