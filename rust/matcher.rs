//! difflib's `SequenceMatcher`, element for element: the same `b2j` index, junk and popular rules,
//! longest-match tie-breaks and matching blocks, so every ratio is bit-identical to Python's.
//!
//! Elements are first mapped to dense ids by the second sequence (`b`): an element of `a` that never
//! occurs in `b` gets [`NONE`] and can match nothing. `b2j` is a CSR array over those ids.
//!
//! Performance notes (measured on ~60-character label pairs, see benches/bench_core.py):
//! - difflib's per-row `j2len` dict becomes two arrays (`cells`) alternated by row parity; only the
//!   entries a row wrote are cleared (two rows later), so a row allocates nothing and a read needs no
//!   branch. A first version stamped entries with an epoch instead; its unpredictable stamp test cost
//!   more than the clearing.
//! - Bytes (strings with every code point below 256) index their tables directly; wider text is
//!   interned into dense ids first.
//! - `BSide` and `Matcher` keep their buffers between calls (thread-local in the bindings), so a call
//!   allocates nothing once warm.
//! - Threshold decisions stop as soon as the matches found so far accept, or found + the best the
//!   pending sub-ranges could still add rejects (`Matcher::ratio_at_least`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::alloc;
use crate::cancel::Cancel;
use crate::error::Result;
use crate::sym::Sym;

/// The id of an element of `a` that does not occur in `b`.
pub const NONE: u32 = u32::MAX;
/// A junk or popular position of `b` in `BSide::run_ids`: equal to no id of `a` (not even [`NONE`]).
const UNINDEXED: u32 = u32::MAX - 1;

/// Rows a DP searches between polls of its [`Cancel`] where a row is a few vector steps.
const POLL_ROWS: usize = 1024;

/// The widest `b` range the byte-row DP takes (its run lengths are bytes).
const DENSE_MAX_WIDTH: usize = 255;

/// The most 16-column vectors a row of the register DP (`dense_regs`) holds.
const DENSE_REG_VECTORS: usize = 8;

/// A range whose known common run (prefix or suffix) is at least this long is searched from anchor
/// rows (`anchor_core`) instead of row by row.
const ANCHOR_MIN_RUN: usize = 8;

/// `b2j` is also kept as bitsets (ids x words of 64 positions) only up to this many words (512 KiB):
/// the layout grows as distinct elements times length, which for 50,000 distinct lines was 1.3 GB.
const BITSET_MAX_WORDS: usize = 1 << 16;

/// Sequences of ids (lines) with at least this many elements in `a` list the runs of
/// their whole `a` x `b` once (`Matcher::list_runs`) for every sub-range of the recursion to reuse.
const RUN_LIST_MIN_ROWS: usize = 256;
/// The listed runs are every maximal run at least this long: each one crosses a row of this stride.
const RUN_LIST_STRIDE: usize = 8;
/// Listing stops (and the ranges are searched one by one) past this many runs, or past
/// `RUN_LIST_WORK_PER_ELEMENT` steps per element of `a` and `b`: it pays only where runs are few
/// and long, as in line diffs.
const RUN_LIST_MAX_RUNS: usize = 1024;
const RUN_LIST_WORK_PER_ELEMENT: usize = 16;
/// Steps of run extension (a step: ~4 elements compared) between polls of the [`Cancel`] inside
/// one row of a run search: a row of equal lines meets a match in every column, each extended
/// across the whole sequences.
const RUN_LIST_POLL_WORK: usize = 1 << 18;

/// difflib's `_calculate_ratio`: `2.0 * matches / length`, and 1.0 for two empty sequences.
#[inline]
pub fn ratio_of(matches: usize, length: usize) -> f64 {
    if length == 0 {
        1.0
    } else {
        2.0 * matches as f64 / length as f64
    }
}

/// A multiplicative hasher for `u32` keys: the map only ever holds code points of one string.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdMap = HashMap<u32, u32, BuildHasherDefault<IdHasher>>;

/// The second sequence prepared once, as difflib's `__chain_b` prepares it.
#[derive(Clone)]
pub struct BSide<T: Sym> {
    seq: Vec<T>,
    /// `b[j]` as a dense id (ids are assigned in first-occurrence order, as difflib's `b2j` keys are).
    ids: Vec<u32>,
    /// The distinct elements, in first-occurrence order.
    elems: Vec<T>,
    /// element -> id for codes below 256, and above.
    small: Box<[u32; 256]>,
    large: IdMap,
    /// `b2j`: the positions of id `k` are `positions[run_start[k]..][..run_len[k]]`; junk, popular
    /// and absent ids have none.
    run_start: Vec<u32>,
    run_len: Vec<u32>,
    positions: Vec<u32>,
    /// The ids `b` holds, in first-occurrence order (parallel to `elems`).
    present: Vec<u32>,
    junk: Vec<bool>,
    popular: Vec<bool>,
    /// difflib's `fullbcount`: occurrences of each id in `b`, junk and popular included.
    counts: Vec<u32>,
    any_junk: bool,
    /// No element of `b` is junk or popular: every equal pair of elements is in `b2j`.
    all_indexed: bool,
    /// Whether `positions` (difflib's `b2j` lists), `present` and `elems` were built for this `b`;
    /// `rebuild_plain_bytes` skips them.
    has_positions: bool,
    /// `b2j` as bitsets when `all_indexed`: bit `j % 64` of `bits[(j / 64) * bit_ids + id]` is set
    /// when `b[j]` has id `id` (word-major, so building needs no multiply and one word of every id
    /// sits together); `words` and `bit_ids` only grow, so a smaller `b` reuses the layout.
    bits: Vec<u64>,
    words: usize,
    bit_ids: usize,
    /// Whether the last `rebuild` set bits (which the next one clears).
    has_bits: bool,
    /// Codes are dense ids already (the k-th distinct element of `b` is k): no interning map.
    dense_codes: bool,
    /// When some element is junk or popular: `ids` with those positions set to [`UNINDEXED`], so
    /// one compare with an `a` id tells an indexed equal pair (a run of difflib's DP).
    run_ids: Vec<u32>,
    /// For byte strings: `b` itself, and 0xFF where `b[j]` is indexed (0 where junk or popular).
    bytes: Vec<u8>,
    indexed_mask: Vec<u8>,
}

impl<T: Sym> Default for BSide<T> {
    fn default() -> Self {
        BSide {
            seq: Vec::new(),
            ids: Vec::new(),
            elems: Vec::new(),
            small: Box::new([NONE; 256]),
            large: IdMap::default(),
            run_start: Vec::new(),
            run_len: Vec::new(),
            positions: Vec::new(),
            present: Vec::new(),
            junk: Vec::new(),
            popular: Vec::new(),
            counts: Vec::new(),
            any_junk: false,
            all_indexed: true,
            has_positions: false,
            bits: Vec::new(),
            words: 0,
            bit_ids: 0,
            has_bits: false,
            dense_codes: false,
            run_ids: Vec::new(),
            bytes: Vec::new(),
            indexed_mask: Vec::new(),
        }
    }
}

impl<T: Sym> BSide<T> {
    /// `b` prepared with no junk function (`isjunk=None`).
    pub fn new(b: &[T], autojunk: bool) -> Self {
        let mut side = BSide::default();
        side.rebuild(b, autojunk, None);
        side
    }

    /// [`BSide::new`] with its buffers the size of `b` reserved fallibly first.
    pub fn try_new(b: &[T], autojunk: bool) -> Result<Self> {
        let mut side = BSide::default();
        side.reserve_for(b.len())?;
        side.rebuild(b, autojunk, None);
        Ok(side)
    }

    /// Reserve, fallibly, the buffers a `rebuild` of `n` elements fills with `n` entries (the
    /// sequence, its ids, `b2j`'s positions, and for byte strings the padded copy and mask), so
    /// a `b` the machine cannot hold is an error here, not an abort inside `rebuild`. (Per-id
    /// tables grow with the distinct elements; the run ids of a `b` with junk are not reserved.)
    pub fn reserve_for(&mut self, n: usize) -> Result<()> {
        alloc::reserve_total(&mut self.seq, n)?;
        alloc::reserve_total(&mut self.ids, n)?;
        alloc::reserve_total(&mut self.positions, n)?;
        if T::is_byte() {
            let padded = alloc::sum(n, FRONT_PAD + DENSE_PAD, "a sequence")?;
            alloc::reserve_total(&mut self.bytes, padded)?;
            alloc::reserve_total(&mut self.indexed_mask, padded)?;
        }
        Ok(())
    }

    /// `rebuild` for codes that may already be dense ids in first-occurrence order (the k-th distinct
    /// element is k), as the bindings' element table assigns them to lines: then no interning map
    /// is built or read (checked here; other codes take `rebuild`'s interning).
    pub fn rebuild_dense(
        &mut self,
        b: &[T],
        autojunk: bool,
        is_junk: Option<&mut dyn FnMut(T) -> bool>,
    ) {
        let mut next = 0u32;
        let dense = !T::is_byte()
            && b.iter().all(|x| match x.code() {
                c if c == next => {
                    next += 1;
                    true
                }
                c => c < next,
            });
        self.rebuild_coded(b, autojunk, is_junk, dense);
    }

    /// Re-prepare for a new `b`, keeping the buffers. `is_junk` is called once per distinct element,
    /// in first-occurrence order, as difflib calls `isjunk` on `b2j`'s keys.
    pub fn rebuild(&mut self, b: &[T], autojunk: bool, is_junk: Option<&mut dyn FnMut(T) -> bool>) {
        self.rebuild_coded(b, autojunk, is_junk, false);
    }

    /// `rebuild`; `dense` when the codes are dense first-occurrence ids (checked by the caller).
    fn rebuild_coded(
        &mut self,
        b: &[T],
        autojunk: bool,
        is_junk: Option<&mut dyn FnMut(T) -> bool>,
        dense: bool,
    ) {
        // Reset only what the previous `b` touched: per-id state is sparse in a byte alphabet.
        // Clear exactly the bitset words the last `b` set (one per element): no memset calls.
        if std::mem::take(&mut self.has_bits) {
            for (j, &id) in self.ids.iter().enumerate() {
                if let Some(word) = self.bits.get_mut((j / 64) * self.bit_ids + id as usize) {
                    *word = 0;
                }
            }
        }
        for &id in &self.present {
            let id = id as usize;
            self.counts[id] = 0;
            self.run_start[id] = 0;
            self.run_len[id] = 0;
            self.junk[id] = false;
            self.popular[id] = false;
        }
        self.present.clear();
        if !T::is_byte() {
            for &e in &self.elems {
                let c = e.code();
                if c < 256 {
                    self.small[c as usize] = NONE;
                }
            }
            self.large.clear();
        }
        self.elems.clear();
        self.dense_codes = dense;
        self.seq.clear();
        self.seq.extend_from_slice(b);
        self.ids.clear();
        let n = b.len();
        if T::is_byte() && is_junk.is_none() && !(autojunk && n >= 200) {
            self.rebuild_plain_bytes(b);
            return;
        }
        if T::is_byte() {
            self.ids.extend(b.iter().map(|&x| x.code()));
            self.grow_ids(256);
        } else if dense {
            // Ids are the codes; first occurrences in order; the counts (skipped below).
            self.ids.extend(b.iter().map(|x| x.code()));
            let distinct = self.ids.iter().max().map_or(0, |&m| m as usize + 1);
            self.grow_ids(distinct);
            let counts = &mut self.counts[..distinct];
            for (&id, &x) in self.ids.iter().zip(b) {
                let count = &mut counts[id as usize];
                if *count == 0 {
                    self.present.push(id);
                    self.elems.push(x);
                }
                *count += 1;
            }
        } else {
            for &x in b {
                let id = self.intern(x);
                self.ids.push(id);
            }
            self.grow_ids(self.elems.len());
        }
        if !dense {
            for (j, &id) in self.ids.iter().enumerate() {
                let count = &mut self.counts[id as usize];
                if *count == 0 {
                    self.present.push(id);
                    if T::is_byte() {
                        self.elems.push(b[j]);
                    }
                }
                *count += 1;
            }
        }
        self.index_counted(autojunk, is_junk);
    }

    /// The rest of `rebuild` once `seq`, `ids`, `counts`, `present` and `elems` describe the new
    /// `b` (and the per-id vectors are zero over its ids): junk, popular, `b2j` and the run ids.
    fn index_counted(&mut self, autojunk: bool, is_junk: Option<&mut dyn FnMut(T) -> bool>) {
        let n = self.seq.len();
        self.has_positions = true;
        self.any_junk = false;
        if let Some(is_junk) = is_junk {
            for (k, &id) in self.present.iter().enumerate() {
                if is_junk(self.elems[k]) {
                    self.junk[id as usize] = true;
                    self.any_junk = true;
                }
            }
        }
        // One pass over the ids present: popular ids (difflib's autojunk), and where each indexed
        // id's run of positions starts (`run_len` is the fill cursor below). Junk and popular ids
        // get no run: difflib's `b2j` has no entry for them.
        let ntest = (autojunk && n >= 200).then_some(n / 100 + 1);
        let mut total = 0u32;
        {
            let (counts, junk, popular) = (&self.counts[..], &self.junk[..], &mut self.popular[..]);
            let (run_start, run_len) = (&mut self.run_start[..], &mut self.run_len[..]);
            for &id in &self.present {
                let k = id as usize;
                let count = counts[k];
                if ntest.is_some_and(|ntest| !junk[k] && count as usize > ntest) {
                    popular[k] = true;
                }
                (run_start[k], run_len[k]) = (total, total);
                if !junk[k] && !popular[k] {
                    total += count;
                }
            }
        }
        let total = total as usize;
        self.positions.clear();
        self.positions.resize(total, 0);
        if T::is_byte() {
            self.bytes.clear();
            self.bytes.resize(FRONT_PAD, 0);
            self.bytes.extend(self.seq.iter().map(|&x| x.code() as u8));
            self.indexed_mask.clear();
            let (junk, popular) = (&self.junk, &self.popular);
            self.indexed_mask.extend(self.ids.iter().map(|&id| {
                if junk[id as usize] || popular[id as usize] {
                    0
                } else {
                    0xFF
                }
            }));
            self.bytes.resize(self.bytes.len() + DENSE_PAD, 0);
            self.indexed_mask
                .resize(self.indexed_mask.len() + DENSE_PAD, 0);
        }
        let all_indexed = total == n;
        self.all_indexed = all_indexed;
        let (nids, words) = (self.counts.len(), n.div_ceil(64).max(1));
        if all_indexed && nids * words <= BITSET_MAX_WORDS {
            if self.words.max(words) * self.bit_ids.max(nids) > BITSET_MAX_WORDS {
                // Start a fresh layout rather than grow one past the cap.
                (self.words, self.bit_ids) = (0, 0);
            }
            self.ensure_bit_rows(nids, n);
            self.has_bits = true;
            let stride = self.bit_ids;
            for (j, &id) in self.ids.iter().enumerate() {
                self.bits[(j / 64) * stride + id as usize] |= 1 << (j % 64);
            }
        }
        // Fill each indexed id's run in ascending j (`run_len`, from `run_start`, is where its next
        // position goes) and, when some element is not indexed, `run_ids`, in one pass.
        let BSide {
            ids,
            junk,
            popular,
            run_ids,
            run_start,
            run_len,
            positions,
            present,
            ..
        } = self;
        // Slices, not the vectors: so their pointers stay in registers across the stores.
        let (ids, positions, cursor) = (&ids[..n], &mut positions[..total], &mut run_len[..]);
        run_ids.clear();
        if all_indexed {
            for (j, &id) in ids.iter().enumerate() {
                let next = &mut cursor[id as usize];
                positions[*next as usize] = j as u32;
                *next += 1;
            }
        } else {
            // Performance notes: junk and popular ids (blank lines) recur every few lines. Filling
            // runs for them too, which nothing reads, took `of_dense_ids` over bench_difflib's 10
            // files from 158-166 to 187-197 us (a Rust loop, best of runs).
            let (junk, popular) = (&junk[..], &popular[..]);
            run_ids.extend(ids.iter().enumerate().map(|(j, &id)| {
                let k = id as usize;
                if junk[k] | popular[k] {
                    return UNINDEXED;
                }
                let next = &mut cursor[k];
                positions[*next as usize] = j as u32;
                *next += 1;
                id
            }));
        }
        // The cursors stop where each run ends: turn them into lengths.
        for &id in present.iter() {
            run_len[id as usize] -= run_start[id as usize];
        }
    }

    /// `rebuild` for a byte string with nothing junk or popular (the common label): the searches
    /// read its bytes directly, so difflib's `b2j` position lists, the counts (`quick_matches`
    /// counts on demand) and, on x86_64, the bitsets are skipped.
    fn rebuild_plain_bytes(&mut self, b: &[T]) {
        let n = b.len();
        self.grow_ids(256);
        self.any_junk = false;
        self.all_indexed = true;
        self.has_positions = false;
        self.ids.extend(b.iter().map(|&x| x.code()));
        // The row search reads byte strings directly on x86_64 (`each_match_in_row`); elsewhere it
        // reads the bitsets.
        #[cfg(not(target_arch = "x86_64"))]
        {
            self.ensure_bit_rows(256, n);
            self.has_bits = true;
            let stride = self.bit_ids;
            for (j, &x) in b.iter().enumerate() {
                self.bits[(j / 64) * stride + (x.code() as usize & 0xFF)] |= 1 << (j % 64);
            }
        }
        self.bytes.clear();
        self.bytes.resize(FRONT_PAD, 0);
        self.bytes.extend(b.iter().map(|&x| x.code() as u8));
        self.bytes.resize(self.bytes.len() + DENSE_PAD, 0);
        self.indexed_mask.clear();
        self.indexed_mask.resize(n + DENSE_PAD, 0xFF);
    }

    /// Make `bits` hold `nids` rows wide enough for a `b` of length `n`, all zero outside the rows
    /// the last `b` set (which `rebuild` has cleared).
    fn ensure_bit_rows(&mut self, nids: usize, n: usize) {
        let words = n.div_ceil(64).max(1);
        if words > self.words || nids > self.bit_ids {
            self.words = words.max(self.words);
            self.bit_ids = nids.max(self.bit_ids);
            self.bits.clear();
            self.bits.resize(self.bit_ids * self.words, 0);
        }
    }

    /// Word `w` of the bitset of id `id` (0 past the layout).
    #[inline]
    fn bit_word(&self, id: usize, w: usize) -> u64 {
        self.bits[w * self.bit_ids + id]
    }

    fn grow_ids(&mut self, nids: usize) {
        if self.counts.len() < nids {
            self.counts.resize(nids, 0);
            self.run_start.resize(nids, 0);
            self.run_len.resize(nids, 0);
            self.junk.resize(nids, false);
            self.popular.resize(nids, false);
        }
    }

    /// The distinct elements of `b` in first-occurrence order (difflib's `b2j` key order).
    pub fn distinct(&self) -> Vec<T> {
        if self.has_positions {
            return self.elems.clone();
        }
        // `rebuild_plain_bytes` does not keep them: each element of `b` at its first occurrence.
        let mut seen = vec![false; self.counts.len()];
        self.seq
            .iter()
            .zip(&self.ids)
            .filter(|&(_, &id)| !std::mem::replace(&mut seen[id as usize], true))
            .map(|(&x, _)| x)
            .collect()
    }

    fn intern(&mut self, x: T) -> u32 {
        let c = x.code();
        let next = self.elems.len() as u32;
        let slot = if c < 256 {
            &mut self.small[c as usize]
        } else {
            self.large.entry(c).or_insert(NONE)
        };
        if *slot == NONE {
            *slot = next;
            self.elems.push(x);
        }
        *slot
    }

    /// The dense id of `x`, or [`NONE`] when `x` does not occur in `b`.
    #[inline]
    pub fn id_of(&self, x: T) -> u32 {
        let c = x.code();
        if T::is_byte() {
            c
        } else if self.dense_codes {
            if (c as usize) < self.elems.len() {
                c
            } else {
                NONE
            }
        } else if c < 256 {
            self.small[c as usize]
        } else {
            self.large.get(&c).copied().unwrap_or(NONE)
        }
    }

    pub fn seq(&self) -> &[T] {
        &self.seq
    }

    /// Where id `id` first occurs in `b`, for an id in difflib's `b2j` (not junk, not popular)
    /// when the position lists were built.
    pub fn first_position(&self, id: u32) -> Option<usize> {
        let k = id as usize;
        if !self.has_positions || *self.run_len.get(k)? == 0 {
            return None;
        }
        Some(self.positions[self.run_start[k] as usize] as usize)
    }

    pub fn len(&self) -> usize {
        self.seq.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seq.is_empty()
    }

    /// difflib's `bjunk`, in first-occurrence order.
    pub fn junk_elements(&self) -> Vec<T> {
        self.distinct()
            .into_iter()
            .filter(|&e| self.junk[self.id_of(e) as usize])
            .collect()
    }

    /// difflib's `bpopular`, in first-occurrence order.
    pub fn popular_elements(&self) -> Vec<T> {
        self.distinct()
            .into_iter()
            .filter(|&e| self.popular[self.id_of(e) as usize])
            .collect()
    }

    /// difflib's `b2j`: each indexed element with its ascending positions, in first-occurrence order.
    pub fn b2j(&self) -> Vec<(T, Vec<u32>)> {
        let mut by_id: Vec<Vec<u32>> = vec![Vec::new(); self.counts.len()];
        for (j, &id) in self.ids.iter().enumerate() {
            by_id[id as usize].push(j as u32);
        }
        self.distinct()
            .into_iter()
            .map(|e| (e, self.id_of(e)))
            .filter(|&(_, id)| !self.junk[id as usize] && !self.popular[id as usize])
            .map(|(e, id)| (e, std::mem::take(&mut by_id[id as usize])))
            .collect()
    }

    /// The range of `positions` holding the positions of `id` in `b[blo..bhi]` (empty for an id not
    /// in `b`, junk or popular). Short runs, the common case, are scanned; long ones bisected.
    #[inline]
    fn range_in(&self, id: u32, blo: usize, bhi: usize) -> (usize, usize) {
        debug_assert!(self.has_positions);
        if id == NONE {
            return (0, 0);
        }
        let first = self.run_start[id as usize] as usize;
        let run = &self.positions[first..first + self.run_len[id as usize] as usize];
        if blo == 0 && bhi >= self.seq.len() {
            return (first, first + run.len());
        }
        let (lo, hi) = if run.len() <= 16 {
            let lo = run.iter().take_while(|&&j| (j as usize) < blo).count();
            (
                lo,
                lo + run[lo..]
                    .iter()
                    .take_while(|&&j| (j as usize) < bhi)
                    .count(),
            )
        } else {
            let lo = run.partition_point(|&j| (j as usize) < blo);
            (lo, lo + run[lo..].partition_point(|&j| (j as usize) < bhi))
        };
        (first + lo, first + hi)
    }

    #[inline]
    fn is_junk_at(&self, j: usize) -> bool {
        self.any_junk && self.junk[self.ids[j] as usize]
    }
}

impl BSide<u32> {
    /// The index of `ids`, dense ids in first-occurrence order (the k-th distinct element is k),
    /// with `counts[k]` the occurrences of id k: what the bindings' element table produces for a
    /// list of lines. It equals `rebuild_dense` of the same ids and skips its passes that the table
    /// has done (checking density, copying and counting).
    ///
    /// Performance notes (callgrind, `get_opcodes` over bench_difflib's line diffs, 10% edited):
    /// indexing `b` took 101 instructions a line through `rebuild_dense`, 68 this way (with the
    /// table's counts and `index_counted`'s fill); the whole call went from 597 to 562.
    pub fn of_dense_ids(
        ids: Vec<u32>,
        counts: Vec<u32>,
        autojunk: bool,
        is_junk: Option<&mut dyn FnMut(u32) -> bool>,
    ) -> Self {
        let distinct = counts.len();
        debug_assert!(ids.iter().all(|&id| (id as usize) < distinct));
        debug_assert_eq!(counts.iter().map(|&c| c as usize).sum::<usize>(), ids.len());
        let mut side = BSide {
            seq: ids.clone(),
            ids,
            counts,
            dense_codes: true,
            ..BSide::default()
        };
        side.present.extend(0..distinct as u32);
        side.elems.extend(0..distinct as u32);
        side.run_start.resize(distinct, 0);
        side.run_len.resize(distinct, 0);
        side.junk.resize(distinct, false);
        side.popular.resize(distinct, false);
        side.index_counted(autojunk, is_junk);
        side
    }
}

/// The columns where a row of ids equals `b`, ascending: from difflib's position lists, or from
/// `b`'s bitsets (word by word).
enum RowHits<'b> {
    Positions(std::slice::Iter<'b, u32>),
    Bits {
        id: usize,
        word: usize,
        last_word: usize,
        bits: u64,
    },
}

impl<'b> RowHits<'b> {
    #[inline(always)]
    fn new<T: Sym>(
        m: &Matcher,
        b: &'b BSide<T>,
        r: usize,
        blo: usize,
        bhi: usize,
        by_positions: bool,
    ) -> Self {
        let id = m.a_ids[r];
        if by_positions {
            let (start, end) = b.range_in(id, blo, bhi);
            return RowHits::Positions(b.positions[start..end].iter());
        }
        if id == NONE || blo >= bhi {
            return RowHits::Positions([].iter());
        }
        let word = blo / 64;
        RowHits::Bits {
            id: id as usize,
            word,
            last_word: (bhi - 1) / 64,
            bits: b.bit_word(id as usize, word) & window_mask(word, blo, bhi),
        }
    }

    #[inline(always)]
    fn next<T: Sym>(&mut self, b: &BSide<T>, blo: usize, bhi: usize) -> Option<usize> {
        match self {
            RowHits::Positions(positions) => positions.next().map(|&j| j as usize),
            RowHits::Bits {
                id,
                word,
                last_word,
                bits,
            } => loop {
                if *bits != 0 {
                    let j = *word * 64 + bits.trailing_zeros() as usize;
                    *bits &= *bits - 1;
                    return Some(j);
                }
                if *word >= *last_word {
                    return None;
                }
                *word += 1;
                *bits = b.bit_word(*id, *word) & window_mask(*word, blo, bhi);
            },
        }
    }
}

/// Keep `run` (start row, start column, length) in `best` if longer, or as long and first in
/// (row, column) order: difflib's choice among longest runs.
#[inline(always)]
fn keep_longest(best: &mut (usize, usize, usize), run: (usize, usize, usize)) {
    if run.2 > best.2 || (run.2 == best.2 && (run.0, run.1) < (best.0, best.1)) {
        *best = run;
    }
}

/// An edit of difflib's `get_opcodes()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Replace,
    Delete,
    Insert,
    Equal,
}

/// difflib's `get_opcodes()` from matching blocks that end with the `(len(a), len(b), 0)` sentinel.
pub fn opcodes(blocks: &[(usize, usize, usize)]) -> Vec<(Tag, usize, usize, usize, usize)> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(2 * blocks.len());
    for &(ai, bj, size) in blocks {
        let tag = match (i < ai, j < bj) {
            (true, true) => Some(Tag::Replace),
            (true, false) => Some(Tag::Delete),
            (false, true) => Some(Tag::Insert),
            (false, false) => None,
        };
        if let Some(tag) = tag {
            out.push((tag, i, ai, j, bj));
        }
        (i, j) = (ai + size, bj + size);
        if size > 0 {
            out.push((Tag::Equal, ai, i, bj, j));
        }
    }
    out
}

/// `common_prefix`/`common_suffix` compare this many ids one at a time before four at a time: the
/// vector loop's setup cost more than it saved on the short runs of wide labels (callgrind:
/// get_close_matches +23% instructions without this).
const SCALAR_RUN_PREFIX: usize = 8;

/// How many leading elements of `x` and `y` (equal lengths) are equal.
///
/// Performance notes: runs of equal ids are long in line diffs (a hundred lines between edits is
/// common), where comparing four ids a step (SSE2, in the x86_64 baseline) cut the run extension's
/// instructions about threefold against one id a step.
#[inline]
fn common_prefix(x: &[u32], y: &[u32]) -> usize {
    let n = x.len().min(y.len());
    // Most runs met by a search are short: a few ids one at a time first.
    let mut k = 0;
    while k < n.min(SCALAR_RUN_PREFIX) {
        if x[k] != y[k] {
            return k;
        }
        k += 1;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        while k + 4 <= n {
            // SAFETY: k + 4 <= n, so four u32s are readable from both slices at k.
            let mask = unsafe {
                let u = _mm_loadu_si128(x.as_ptr().add(k).cast());
                let v = _mm_loadu_si128(y.as_ptr().add(k).cast());
                _mm_movemask_epi8(_mm_cmpeq_epi32(u, v)) as u32
            };
            if mask != 0xFFFF {
                return k + (!mask).trailing_zeros() as usize / 4;
            }
            k += 4;
        }
    }
    k + x[k..n]
        .iter()
        .zip(&y[k..n])
        .take_while(|(a, b)| a == b)
        .count()
}

/// How many trailing elements of `x` and `y` (equal lengths) are equal.
#[inline]
fn common_suffix(x: &[u32], y: &[u32]) -> usize {
    let n = x.len().min(y.len());
    let (x, y) = (&x[x.len() - n..], &y[y.len() - n..]);
    let mut k = 0;
    while k < n.min(SCALAR_RUN_PREFIX) {
        if x[n - 1 - k] != y[n - 1 - k] {
            return k;
        }
        k += 1;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        while k + 4 <= n {
            // SAFETY: k + 4 <= n, so the four u32s ending n - k back are readable in both slices.
            let mask = unsafe {
                let u = _mm_loadu_si128(x.as_ptr().add(n - k - 4).cast());
                let v = _mm_loadu_si128(y.as_ptr().add(n - k - 4).cast());
                _mm_movemask_epi8(_mm_cmpeq_epi32(u, v)) as u32
            };
            if mask != 0xFFFF {
                return k + ((!mask) << 16).leading_zeros() as usize / 4;
            }
            k += 4;
        }
    }
    k + x[..n - k]
        .iter()
        .rev()
        .zip(y[..n - k].iter().rev())
        .take_while(|(a, b)| a == b)
        .count()
}

/// Two sequences of code points rewritten as bytes when `b` holds at most 255 distinct elements:
/// `b`'s distinct elements become distinct bytes, `a`'s elements that `b` lacks one byte no element
/// of `b` has. An element of `a` and one of `b` stay equal exactly when they were, and counts per
/// element are kept, so every difflib answer (which compares `a` with `b` only) and the containment
/// rule are unchanged, and wide labels run on the byte searches.
#[derive(Default)]
pub struct ByteRemap {
    /// Basic-plane code point -> its byte (0: not in `b`), and the entries to clear after a call.
    bmp: Option<Box<[u8; 1 << 16]>>,
    astral: AstralBytes,
    touched: Vec<u32>,
}

/// Code points past the basic plane -> their bytes, for `ByteRemap`.
type AstralBytes = HashMap<u32, u8, BuildHasherDefault<IdHasher>>;

/// Where `ByteRemap` keeps the byte of `c`: the table's entry below 2**16, the map's above.
#[inline]
fn byte_slot<'t>(bmp: &'t mut [u8; 1 << 16], astral: &'t mut AstralBytes, c: u32) -> &'t mut u8 {
    if c < 1 << 16 {
        &mut bmp[c as usize & 0xFFFF]
    } else {
        astral.entry(c).or_insert(0)
    }
}

/// The byte `ByteRemap` gave `c` (0: none).
#[inline]
fn byte_of(bmp: &[u8; 1 << 16], astral: &AstralBytes, c: u32) -> u8 {
    if c < 1 << 16 {
        bmp[c as usize & 0xFFFF]
    } else {
        astral.get(&c).copied().unwrap_or(0)
    }
}

/// Zero the entries a call set (`touched` lists their code points), so the next call starts clean.
fn reset_bytes(bmp: &mut [u8; 1 << 16], astral: &mut AstralBytes, touched: &mut Vec<u32>) {
    for &c in touched.iter() {
        if c < 1 << 16 {
            bmp[c as usize & 0xFFFF] = 0;
        }
    }
    touched.clear();
    if !astral.is_empty() {
        astral.clear();
    }
}

impl ByteRemap {
    /// The basic-plane table (allocated on first use), the astral map and the touched list.
    fn tables(&mut self) -> (&mut [u8; 1 << 16], &mut AstralBytes, &mut Vec<u32>) {
        let bmp = self.bmp.get_or_insert_with(|| Box::new([0; 1 << 16]));
        (bmp, &mut self.astral, &mut self.touched)
    }

    /// `a` and `b` as bytes in `out_a`, `out_b`; false (outputs unspecified) when `b` has more
    /// than 255 distinct elements. ASCII stays itself when `b` has at most 127 distinct other
    /// elements (`remap_beside_ascii`); otherwise every element goes through the table.
    ///
    /// Performance notes: on wide label pairs (callgrind, 1,000 corpus pairs with a code point above
    /// 255) a loop of pushes with a break cost ~3,700 instructions a pair; mapping through a fixed
    /// 64 Ki table by `extend` (no bounds checks, no early exit: a `b` past 255 elements is only
    /// reported) costs a fraction of that.
    pub fn remap(
        &mut self,
        a: &[u32],
        b: &[u32],
        out_a: &mut Vec<u8>,
        out_b: &mut Vec<u8>,
    ) -> bool {
        if self.remap_beside_ascii(a, b, out_a, out_b) {
            return true;
        }
        if a.iter().chain(b).fold(0, |acc, &c| acc | c) < 1 << 16 {
            return self.remap_basic_plane(a, b, out_a, out_b);
        }
        self.remap_any(a, b, out_a, out_b)
    }

    /// `remap` keeping ASCII as itself: `b`'s other elements become 128, 129, ... and `a`'s other
    /// elements `b`'s byte for them, or one byte `b` does not use. False (tables clean, outputs
    /// unspecified) when `b` has more than 127 distinct non-ASCII elements.
    ///
    /// Performance notes: wide labels are mostly ASCII (a dash, an accented name); narrowing every
    /// element at once and fixing the few others up took a fraction of mapping each one through
    /// the table (`remap_basic_plane`, ~14 instructions an element under callgrind).
    fn remap_beside_ascii(
        &mut self,
        a: &[u32],
        b: &[u32],
        out_a: &mut Vec<u8>,
        out_b: &mut Vec<u8>,
    ) -> bool {
        let (bmp, astral, touched) = self.tables();
        out_b.clear();
        out_b.extend(b.iter().map(|&c| c as u8));
        let mut next = 128u32;
        let mut fits = true;
        for (out, &c) in out_b.iter_mut().zip(b) {
            if c < 128 {
                continue;
            }
            let slot = byte_slot(bmp, astral, c);
            if *slot == 0 {
                if next > 255 {
                    fits = false;
                    break;
                }
                *slot = next as u8;
                next += 1;
                touched.push(c);
            }
            *out = *slot;
        }
        // `next` is the first byte `b` left unused: a's elements absent from `b` take it. When `b`
        // used every byte from 128 up, none is left for them, and the table remap takes the pair.
        fits &= next <= 255;
        if fits {
            let absent = next as u8;
            out_a.clear();
            out_a.extend(a.iter().map(|&c| c as u8));
            for (out, &c) in out_a.iter_mut().zip(a) {
                if c < 128 {
                    continue;
                }
                let byte = byte_of(bmp, astral, c);
                *out = if byte == 0 { absent } else { byte };
            }
        }
        reset_bytes(bmp, astral, touched);
        fits
    }

    /// `remap` when every code point is in the basic plane: the table alone, and no branch on
    /// whether an element was seen before.
    ///
    /// Performance notes: callgrind, `labels_match` on the 161 pairs of bench_core's sample with
    /// a non-ASCII label: `remap` took ~2,800 instructions a call as one loop for every plane.
    fn remap_basic_plane(
        &mut self,
        a: &[u32],
        b: &[u32],
        out_a: &mut Vec<u8>,
        out_b: &mut Vec<u8>,
    ) -> bool {
        let (bmp, astral, touched) = self.tables();
        touched.clear();
        touched.resize(b.len(), 0);
        out_b.clear();
        out_b.resize(b.len(), 0);
        let (mut distinct, mut seen) = (0u32, 0usize);
        for (out, &c) in out_b.iter_mut().zip(b) {
            let slot = &mut bmp[c as usize & 0xFFFF];
            let fresh = *slot == 0;
            distinct += fresh as u32;
            // Every element is written down; only a fresh one is kept (`seen` moves past it).
            touched[seen] = c;
            seen += fresh as usize;
            // Past 255 the bytes are no longer distinct, but the call then reports false.
            let byte = if fresh {
                distinct.min(255) as u8
            } else {
                *slot
            };
            *slot = byte;
            *out = byte;
        }
        let fits = distinct <= 255;
        out_a.clear();
        if fits {
            out_a.extend(a.iter().map(|&c| bmp[c as usize & 0xFFFF]));
        }
        touched.truncate(seen);
        reset_bytes(bmp, astral, touched);
        fits
    }

    /// `remap` for any code points: those past the basic plane through a map.
    fn remap_any(
        &mut self,
        a: &[u32],
        b: &[u32],
        out_a: &mut Vec<u8>,
        out_b: &mut Vec<u8>,
    ) -> bool {
        let (bmp, astral, touched) = self.tables();
        let mut distinct = 0u32;
        out_b.clear();
        out_b.extend(b.iter().map(|&c| {
            let slot = byte_slot(bmp, astral, c);
            if *slot == 0 {
                distinct += 1;
                touched.push(c);
                // Past 255 the bytes are no longer distinct, but the call then reports false.
                *slot = distinct.min(255) as u8;
            }
            *slot
        }));
        let fits = distinct <= 255;
        out_a.clear();
        if fits {
            out_a.extend(a.iter().map(|&c| byte_of(bmp, astral, c)));
        }
        reset_bytes(bmp, astral, touched);
        fits
    }
}

/// Work buffers for matching one `a` against a prepared `b`; reuse one per thread.
#[derive(Default, Clone)]
pub struct Matcher {
    a_ids: Vec<u32>,
    /// Two rows of difflib's `j2len` (alternated by row parity), entry `j + 1` for `j`; all zero
    /// between calls.
    cells: Vec<u32>,
    stride: usize,
    queue: Vec<[u32; 4]>,
    blocks: Vec<(u32, u32, u32)>,
    avail: Vec<u32>,
    /// `a` as bytes and two byte rows, for the dense DP on byte strings.
    a_bytes: Vec<u8>,
    dense: Vec<u8>,
    /// When `runs_listed`: every maximal run of difflib's DP (equal, indexed pairs along a
    /// diagonal) of length >= RUN_LIST_STRIDE in the whole `a` x `b`, as (i, j, length).
    runs: Vec<(u32, u32, u32)>,
    runs_listed: bool,
    /// The longest listed run's length (runs are sorted by start row).
    longest_run: usize,
    /// Runs being extended across anchor rows while listing: (diagonal, end row).
    open_runs: Vec<(usize, usize)>,
    /// Polled by every loop whose work grows with the sequences (a row, a sub-range); once it is
    /// cancelled the search stops early and its results mean nothing (the caller drops them).
    cancel: Cancel,
}

impl Matcher {
    pub fn new() -> Self {
        Matcher::default()
    }

    /// Poll `cancel` from now on (a clone of it: call again, with [`Cancel::never`], to stop).
    pub fn set_cancel(&mut self, cancel: &Cancel) {
        self.cancel = cancel.clone();
    }

    /// Whether the caller's cancellation stopped this search: its results are then meaningless.
    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Reserve, fallibly, what [`Matcher::set_a`] fills for an `a` of `n` elements (its ids, and
    /// for byte strings its padded copy).
    pub fn reserve_for_a<T: Sym>(&mut self, n: usize) -> Result<()> {
        alloc::reserve_total(&mut self.a_ids, n)?;
        if T::is_byte() {
            let padded = alloc::sum(n, FRONT_PAD + DENSE_PAD, "a sequence")?;
            alloc::reserve_total(&mut self.a_bytes, padded)?;
        }
        Ok(())
    }

    /// [`ratio_with`] with the buffers reserved fallibly first.
    pub fn try_ratio_with<T: Sym>(
        &mut self,
        side: &mut BSide<T>,
        a: &[T],
        b: &[T],
        autojunk: bool,
    ) -> Result<f64> {
        side.reserve_for(b.len())?;
        self.reserve_for_a::<T>(a.len())?;
        Ok(ratio_with(self, side, a, b, autojunk))
    }

    /// Map `a` onto `b`'s ids; every other method works on the last `a` set here.
    pub fn set_a<T: Sym>(&mut self, a: &[T], b: &BSide<T>) {
        self.a_ids.clear();
        self.a_ids.extend(a.iter().map(|&x| b.id_of(x)));
        if T::is_byte() {
            self.a_bytes.clear();
            self.a_bytes.resize(FRONT_PAD, 0);
            self.a_bytes.extend(a.iter().map(|&x| x.code() as u8));
            self.a_bytes.resize(self.a_bytes.len() + DENSE_PAD, 0);
        }
        let stride = b.len() + 1;
        if self.cells.len() < 2 * stride {
            self.cells.clear();
            self.cells.resize(2 * stride, 0);
        }
        self.stride = stride;
    }

    /// difflib's `find_longest_match(alo, ahi, blo, bhi)` on the current `a` and `b`.
    pub fn find_longest_match<T: Sym>(
        &mut self,
        b: &BSide<T>,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let narrow = T::is_byte();
        let width = bhi.saturating_sub(blo);
        let (besti, bestj, bestsize) = if b.all_indexed {
            let rows = ahi.saturating_sub(alo);
            let limit = rows.min(width);
            // A run any strategy may start from: the common prefix or suffix of the two ranges
            // (only worth computing where it can reach ANCHOR_MIN_RUN).
            let mut known = 0;
            if limit >= ANCHOR_MIN_RUN {
                known = self.run_forward(b, alo, blo, limit);
                if known == limit {
                    // One side matches whole at the start: nothing is longer, and any other run
                    // of that length ends later in (row, column) order.
                    return (alo, blo, limit);
                }
                if known < ANCHOR_MIN_RUN {
                    known = known.max(self.run_backward(b, ahi, bhi, limit));
                }
            }
            if limit == 0 {
                (alo, blo, 0)
            } else if narrow && (rows == 1 || width == 1) {
                // One row or one column: the first equal pair, if any.
                let (a, bytes) = (&self.a_bytes[FRONT_PAD..], &b.bytes[FRONT_PAD..]);
                let found = if rows == 1 {
                    first_equal_byte(bytes, blo, bhi, a[alo]).map(|t| (alo, t))
                } else {
                    first_equal_byte(a, alo, ahi, bytes[blo]).map(|t| (t, blo))
                };
                found.map_or((alo, blo, 0), |(i, j)| (i, j, 1))
            } else if known >= ANCHOR_MIN_RUN {
                self.anchor_core(b, alo, ahi, blo, bhi, known)
            } else if narrow && width <= DENSE_MAX_WIDTH {
                if let Some(found) = self.dense_avx2(b, alo, ahi, blo, bhi) {
                    found
                } else if width <= 16 * DENSE_REG_VECTORS {
                    self.dense_regs(b, alo, ahi, blo, bhi)
                } else {
                    self.dense_core(b, alo, ahi, blo, bhi)
                }
            } else {
                // Wider than a byte can count, or wide text: anchors from the top (measured on
                // wide label pairs: fewer instructions than difflib's sparse search).
                self.anchor_core(b, alo, ahi, blo, bhi, known)
            }
        } else if narrow {
            // Byte strings with junk or popular elements (long text): the byte-row DPs.
            if width > 0 && width <= DENSE_MAX_WIDTH {
                self.dense_core(b, alo, ahi, blo, bhi)
            } else {
                self.sparse_core(b, alo, ahi, blo, bhi)
            }
        } else {
            // Ids (lines, wide text) with junk or popular elements: difflib's DP sees only indexed
            // pairs, so the known run is the common prefix (or suffix) of indexed equal pairs, and
            // anchors extend along those. With few equal pairs a row and long runs (lines),
            // anchors from the top visit a few rows where difflib's DP visits all of them.
            let limit = ahi.saturating_sub(alo).min(width);
            let (mut known, mut prefix) = (0, 0);
            if limit >= ANCHOR_MIN_RUN {
                prefix = self.run_forward(b, alo, blo, limit);
                known = prefix;
                if known < ANCHOR_MIN_RUN {
                    known = known.max(self.run_backward(b, ahi, bhi, limit));
                }
            }
            if limit > 0 && prefix == limit {
                // As above: a whole side matching at the start is the first longest run.
                (alo, blo, limit)
            } else {
                self.anchor_core(b, alo, ahi, blo, bhi, known)
            }
        };
        if b.all_indexed {
            return (besti, bestj, bestsize);
        }
        self.extend_longest(b, alo, ahi, blo, bhi, (besti, bestj, bestsize))
    }

    /// The end of `find_longest_match` when `b` has junk or popular elements: its DP's longest run
    /// `(besti, bestj, bestsize)` extended with equal non-junk elements (popular ones included),
    /// then with equal junk, as difflib does. (With every element indexed, the DP's run is maximal
    /// already; callers skip this, which stays out of line so the label searches stay small.)
    #[inline(never)]
    fn extend_longest<T: Sym>(
        &self,
        b: &BSide<T>,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
        (mut besti, mut bestj, mut bestsize): (usize, usize, usize),
    ) -> (usize, usize, usize) {
        let a = &self.a_ids;
        let bids = &b.ids;
        // Extend with equal non-junk elements (popular ones included), then with equal junk.
        while besti > alo
            && bestj > blo
            && !b.is_junk_at(bestj - 1)
            && a[besti - 1] == bids[bestj - 1]
        {
            besti -= 1;
            bestj -= 1;
            bestsize += 1;
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && !b.is_junk_at(bestj + bestsize)
            && a[besti + bestsize] == bids[bestj + bestsize]
        {
            bestsize += 1;
        }
        if b.any_junk {
            while besti > alo
                && bestj > blo
                && b.is_junk_at(bestj - 1)
                && a[besti - 1] == bids[bestj - 1]
            {
                besti -= 1;
                bestj -= 1;
                bestsize += 1;
            }
            while besti + bestsize < ahi
                && bestj + bestsize < bhi
                && b.is_junk_at(bestj + bestsize)
                && a[besti + bestsize] == bids[bestj + bestsize]
            {
                bestsize += 1;
            }
        }
        (besti, bestj, bestsize)
    }

    /// The DP part of `find_longest_match` when every element of `b` is indexed, without the DP.
    ///
    /// difflib keeps the first cell, in (i, j) order, that ends a longest run of equal elements inside
    /// the range: the longest run with the smallest start row, then the smallest start column. Any run
    /// of length >= g covers one of the rows `alo + g - 1, alo + 2g - 1, ...` ("anchor" rows), so
    /// extending every match on those rows both ways along its diagonal finds every such run whole. A
    /// round with stride g is therefore exact once the longest run it finds is >= g; otherwise the
    /// longest run is shorter than g and a smaller stride follows. Strides start at the whole range
    /// and halve, never going below a run already found, so a pair with a long match is decided from
    /// a handful of rows.
    ///
    /// Performance notes: on ~66-character label pairs this replaced an SSE2 row DP as the default
    /// (`examples/bench_pairs.rs`: ratio 4.5 us -> see the commit), because that DP visits every row of
    /// every sub-range of the matching-block recursion (~195 rows a pair) where this visits a few.
    fn anchor_core<T: Sym>(
        &mut self,
        b: &BSide<T>,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
        mut known: usize,
    ) -> (usize, usize, usize) {
        let limit = (ahi.saturating_sub(alo)).min(bhi.saturating_sub(blo));
        if limit == 0 {
            return (alo, blo, 0);
        }
        let mut stride = if known > 0 { known } else { limit };
        let (mut work, mut next_poll, mut stop) = (0usize, RUN_LIST_POLL_WORK, false);
        loop {
            stride = stride.max(known).max(1);
            let mut best = (alo, blo, 0usize);
            // The last run found (start row, start column, end row): a later anchor on it would
            // find it again. Lines meet one run on many consecutive anchors; byte strings skip this.
            let mut last = (0usize, 0usize, 0usize);
            let mut r = alo + stride - 1;
            while r < ahi {
                if self.stopped() {
                    // An anchor row can scan all of `b`: stop at once (with any run, in bounds).
                    return best;
                }
                let window = (alo, ahi, blo, bhi);
                if T::is_byte() {
                    // Labels: no memo (one closure as small as the byte search needs inlined).
                    // A round with stride >= 2 returns a run of at least 2, and any shorter run it
                    // misses only lowers `known`, a lower bound either way.
                    // A row of one repeated byte meets a match in every column: poll within it.
                    self.each_match_in_row(b, r, blo, bhi, stride >= 2, |m, j| {
                        if stop {
                            return;
                        }
                        if work >= next_poll {
                            next_poll = work + RUN_LIST_POLL_WORK;
                            stop = m.stopped();
                        }
                        let run = m.run_through(b, r, j, window);
                        work += 1 + run.2 / 4;
                        keep_longest(&mut best, run);
                    });
                } else {
                    // A row of equal lines meets a match in every column, each extended across
                    // the range: poll within the row too (every RUN_LIST_POLL_WORK steps).
                    self.each_match_in_row(b, r, blo, bhi, false, |m, j| {
                        if stop || (r < last.2 && r - last.0 == j.wrapping_sub(last.1)) {
                            return;
                        }
                        if work >= next_poll {
                            next_poll = work + RUN_LIST_POLL_WORK;
                            stop = m.stopped();
                        }
                        let run = m.run_through(b, r, j, window);
                        work += 1 + run.2 / 4;
                        last = (run.0, run.1, run.0 + run.2);
                        keep_longest(&mut best, run);
                    });
                }
                if best.2 == limit {
                    // No run is longer, and runs first met on later anchor rows start after this one.
                    break;
                }
                r += stride;
            }
            let (si, sj, size) = best;
            if size >= stride || stride == 1 {
                return (si, sj, size);
            }
            if stride == known {
                // Every run of `known` or more covers an anchor row of this round, so there is
                // none: `known` was no lower bound. A caller's error, but it must not loop.
                debug_assert!(false, "anchor_core: no run of the known length {known}");
                known = size;
            }
            known = known.max(size);
            stride /= 2;
        }
    }

    /// The maximal run through the equal pair `(r, j)` inside the range: (start row, start column,
    /// length).
    #[inline(always)]
    fn run_through<T: Sym>(
        &self,
        b: &BSide<T>,
        r: usize,
        j: usize,
        (alo, ahi, blo, bhi): (usize, usize, usize, usize),
    ) -> (usize, usize, usize) {
        let back = self.run_backward(b, r, j, (r - alo).min(j - blo));
        let len = back + self.run_forward(b, r, j, (ahi - r).min(bhi - j));
        (r - back, j - back, len)
    }

    /// Call `f` with each column `j` in `blo..bhi`, ascending, where `b[j]` equals `a[r]`. Byte
    /// strings compare 16 columns a step; others read `b`'s bitsets.
    ///
    /// With `runs_only`, byte strings may skip a match whose diagonal neighbours (`(r - 1, j - 1)`
    /// and `(r + 1, j + 1)`) both differ: it lies on no run longer than 1, and every run of 2 or
    /// more keeps all its matches. (Neighbours are compared even outside the range, which can
    /// only keep a match, never skip one.)
    ///
    /// Performance notes: the anchor rows of a label pair's first range meet ~13 equal bytes, and
    /// only ~2.6 of them have an equal neighbour (the sample pairs of `examples/bench_pairs.rs`);
    /// each skipped one saves extending it both ways.
    #[inline(always)]
    fn each_match_in_row<T: Sym>(
        &self,
        b: &BSide<T>,
        r: usize,
        blo: usize,
        bhi: usize,
        runs_only: bool,
        mut f: impl FnMut(&Self, usize),
    ) {
        #[cfg(target_arch = "x86_64")]
        if T::is_byte() {
            // Byte strings reach here only when all indexed: compared 16 columns a step.
            debug_assert!(b.all_indexed);
            if has_avx2() {
                // SAFETY: the CPU has AVX2; both byte copies are padded as the loop below needs.
                unsafe {
                    each_byte_match_avx2(&self.a_bytes, &b.bytes, r, blo, bhi, runs_only, |j| {
                        f(self, j)
                    })
                };
                return;
            }
            let bytes = &b.bytes[FRONT_PAD..];
            let row_eq = |row: usize, from: &[u8]| eq_mask16(from, 0, self.a_bytes[row]);
            let mut c = blo;
            while c < bhi {
                // `bytes` extends DENSE_PAD (>= 17) bytes past `b` and FRONT_PAD (>= 1) before it,
                // as `a_bytes` does: the 16 bytes from any c - 1, c or c + 1 (c < len(b)) and the
                // bytes of rows r - 1 and r + 1 are readable.
                let mut hits = row_eq(FRONT_PAD + r, &bytes[c..]);
                if runs_only && hits != 0 {
                    let before = row_eq(FRONT_PAD + r - 1, &b.bytes[FRONT_PAD + c - 1..]);
                    let after = row_eq(FRONT_PAD + r + 1, &bytes[c + 1..]);
                    hits &= before | after;
                }
                if bhi - c < 16 {
                    hits &= (1u32 << (bhi - c)) - 1;
                }
                while hits != 0 {
                    f(self, c + hits.trailing_zeros() as usize);
                    hits &= hits - 1;
                }
                c += 16;
            }
            return;
        }
        // Position lists (difflib's own b2j) when only indexed pairs count, or when `b` has no
        // bitsets; else the bitsets. One call site of `f`, so the anchor search inlines it (with
        // two it did not: a wide `get_close_matches` took 6% more instructions under callgrind).
        let by_positions = !b.all_indexed || !b.has_bits;
        let mut hits = RowHits::new(self, b, r, blo, bhi, by_positions);
        while let Some(j) = hits.next(b, blo, bhi) {
            f(self, j);
        }
    }

    /// How many elements from `a[i]` and `b[j]` on are equal (and indexed in `b`: a run of
    /// difflib's DP), up to `max`.
    #[inline(always)]
    fn run_forward<T: Sym>(&self, b: &BSide<T>, i: usize, j: usize, max: usize) -> usize {
        // Byte strings reach the run searches only when every element is indexed.
        if !T::is_byte() && !b.all_indexed {
            return self.indexed_run_forward(b, i, j, max);
        }
        if T::is_byte() {
            // Eight bytes a step: the first differing byte is the lowest set byte of the xor.
            let (a, bb) = (&self.a_bytes[FRONT_PAD..], &b.bytes[FRONT_PAD..]);
            let mut k = 0;
            while k < max {
                let x = load8(a, i + k) ^ load8(bb, j + k);
                if x != 0 {
                    return (k + x.trailing_zeros() as usize / 8).min(max);
                }
                k += 8;
            }
            max
        } else {
            common_prefix(&self.a_ids[i..i + max], &b.ids[j..j + max])
        }
    }

    /// How many elements before `a[i]` and `b[j]` (ending at `a[i - 1]`, `b[j - 1]`) are equal (and
    /// indexed in `b`), up to `max` (at most `min(i, j)`).
    #[inline(always)]
    fn run_backward<T: Sym>(&self, b: &BSide<T>, i: usize, j: usize, max: usize) -> usize {
        if !T::is_byte() && !b.all_indexed {
            return self.indexed_run_backward(b, i, j, max);
        }
        if T::is_byte() {
            // The bytes padded in front make the eight bytes before any position readable.
            let mut k = 0;
            while k < max {
                let x = load8(&self.a_bytes, FRONT_PAD + i - k - 8)
                    ^ load8(&b.bytes, FRONT_PAD + j - k - 8);
                if x != 0 {
                    return (k + x.leading_zeros() as usize / 8).min(max);
                }
                k += 8;
            }
            max
        } else {
            common_suffix(&self.a_ids[i - max..i], &b.ids[j - max..j])
        }
    }

    /// `run_forward` when `b` has junk or popular elements (kept out of line: the label paths
    /// inline `run_forward`, and this branch made it too large to inline, +12% instructions a ratio).
    #[inline(never)]
    fn indexed_run_forward<T: Sym>(&self, b: &BSide<T>, i: usize, j: usize, max: usize) -> usize {
        common_prefix(&self.a_ids[i..i + max], &b.run_ids[j..j + max])
    }

    /// `run_backward` when `b` has junk or popular elements.
    #[inline(never)]
    fn indexed_run_backward<T: Sym>(&self, b: &BSide<T>, i: usize, j: usize, max: usize) -> usize {
        common_suffix(&self.a_ids[i - max..i], &b.run_ids[j - max..j])
    }

    /// The DP part of `find_longest_match` over `b2j`, as difflib runs it: for each row, only the
    /// positions where `a[i]` occurs in `b`.
    fn sparse_core<T: Sym>(
        &mut self,
        b: &BSide<T>,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        let stride = self.stride;
        // Row r (counted from alo) writes its j2len into buffer r % 2 and reads the other one. A buffer
        // is all zero except what the row before last wrote (`written`: a range of `b.positions`),
        // which is cleared before the buffer is reused and at the end, so a read needs no check: an
        // entry the previous row did not write reads as 0, as difflib's `j2len.get(j - 1, 0)` does.
        let mut written = [(0usize, 0usize); 2];
        let limit = (ahi.saturating_sub(alo)).min(bhi.saturating_sub(blo));
        debug_assert!(self.cells.len() >= 2 * stride && b.len() < stride);
        let cells = self.cells.as_mut_ptr();
        for i in alo..ahi {
            if self.cancel.is_cancelled() {
                break; // (the buffers are cleared below all the same)
            }
            let parity = (i - alo) & 1;
            let (cur, prev) = if parity == 0 {
                (0, stride)
            } else {
                (stride, 0)
            };
            let (start, end) = written[parity];
            let (next_start, next_end) = b.range_in(self.a_ids[i], blo, bhi);
            written[parity] = (next_start, next_end);
            // SAFETY: every position j is below len(b) = stride - 1, and cur, prev are 0 or stride, so
            // each index is below 2 * stride <= cells.len() (checked in set_a).
            unsafe {
                for &j in b.positions.get_unchecked(start..end) {
                    *cells.add(cur + j as usize + 1) = 0;
                }
                for &j in b.positions.get_unchecked(next_start..next_end) {
                    let j = j as usize;
                    let k = *cells.add(prev + j) as usize + 1;
                    *cells.add(cur + j + 1) = k as u32;
                    if k > bestsize {
                        besti = i + 1 - k;
                        bestj = j + 1 - k;
                        bestsize = k;
                    }
                }
            }
            if bestsize == limit {
                // Nothing longer exists, and later rows only replace on strictly longer runs.
                break;
            }
        }
        for (parity, &(start, end)) in written.iter().enumerate() {
            let buf = if parity == 0 { 0 } else { stride };
            for &j in &b.positions[start..end] {
                self.cells[buf + j as usize + 1] = 0;
            }
        }
        (besti, bestj, bestsize)
    }

    /// The same DP over a byte string's whole row at once: `cur[j + 1] = (prev[j] + 1) & eq[j]`, where
    /// `eq[j]` is all ones when `b[j]` equals `a[i]` and is indexed (not junk, not popular). A row is a
    /// few SIMD steps with no branches (`dense_row`); the winner is the first row whose maximum beats
    /// the best so far, at the first column holding that maximum: the cell difflib's `k > bestsize`
    /// test keeps.
    /// Run lengths fit a byte because the range is at most `DENSE_MAX_WIDTH` wide.
    fn dense_core<T: Sym>(
        &mut self,
        b: &BSide<T>,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        let width = bhi - blo;
        let limit = (ahi - alo).min(width);
        let bytes = &b.bytes[FRONT_PAD + blo..];
        let indexed = &b.indexed_mask[blo..];
        self.dense.clear();
        self.dense.resize(2 * (width + 1 + DENSE_PAD), 0);
        let (mut prev, mut cur) = self.dense.split_at_mut(width + 1 + DENSE_PAD);
        for i in alo..ahi {
            if (i - alo) % POLL_ROWS == 0 && self.cancel.is_cancelled() {
                break;
            }
            let x = self.a_bytes[FRONT_PAD + i];
            let row_max = dense_row(prev, &mut cur[1..], bytes, indexed, x, width) as usize;
            if row_max > bestsize {
                let t = cur[1..=width]
                    .iter()
                    .position(|&v| v as usize == row_max)
                    .unwrap_or(0);
                bestsize = row_max;
                besti = i + 1 - row_max;
                bestj = blo + t + 1 - row_max;
                if bestsize == limit {
                    break;
                }
            }
            std::mem::swap(&mut prev, &mut cur);
        }
        (besti, bestj, bestsize)
    }

    /// The byte DP on AVX2 (`dense_rows_avx2`) for a `b` with no junk or popular element, or None
    /// when this CPU lacks AVX2 or the range fits neither way: as it is (at most 128 columns and
    /// `LANE_ROWS_MAX` rows) or transposed (at most 128 rows and `LANE_ROWS_MAX` columns). When
    /// it fits both ways, the one with fewer vector steps (a row of 32 lanes is one step).
    ///
    /// Performance notes: a range taller than wide took one step per row; transposed it takes one
    /// per column. Over the sample pairs' sub-ranges (`examples/bench_pairs.rs`) that is 170 ->
    /// 130 vector steps a pair, and the rare ranges of 129-255 columns leave `dense_core`'s SSE2
    /// rows (~5% of a ratio's instructions on the sample) when they are at most 128 rows tall.
    fn dense_avx2<T: Sym>(
        &self,
        b: &BSide<T>,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> Option<(usize, usize, usize)> {
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            let (a, bytes) = (&self.a_bytes[FRONT_PAD..], &b.bytes[FRONT_PAD..]);
            let (rows, width) = (ahi - alo, bhi - blo);
            let lanes_max = 16 * DENSE_REG_VECTORS;
            let steps = |lanes: usize, rows: usize| {
                (lanes <= lanes_max && rows <= LANE_ROWS_MAX).then(|| rows * lanes.div_ceil(32))
            };
            let (straight, transposed) = (steps(width, rows), steps(rows, width));
            if straight.is_none() && transposed.is_none() {
                return None;
            }
            let transpose = match (straight, transposed) {
                (Some(straight), Some(transposed)) => transposed < straight,
                (_, transposed) => transposed.is_some(),
            };
            // SAFETY: the CPU has AVX2 (checked above); the lanes (at most 128) match the vector
            // counts and the rows are at most LANE_ROWS_MAX; both byte copies are padded alike.
            return Some(unsafe {
                if transpose {
                    let (i, j, k) = match rows.div_ceil(32) {
                        1 => dense_rows_avx2::<1, true>(bytes, a, blo, bhi, alo, ahi),
                        2 => dense_rows_avx2::<2, true>(bytes, a, blo, bhi, alo, ahi),
                        3 => dense_rows_avx2::<3, true>(bytes, a, blo, bhi, alo, ahi),
                        _ => dense_rows_avx2::<4, true>(bytes, a, blo, bhi, alo, ahi),
                    };
                    (j, i, k)
                } else {
                    match width.div_ceil(32) {
                        1 => dense_rows_avx2::<1, false>(a, bytes, alo, ahi, blo, bhi),
                        2 => dense_rows_avx2::<2, false>(a, bytes, alo, ahi, blo, bhi),
                        3 => dense_rows_avx2::<3, false>(a, bytes, alo, ahi, blo, bhi),
                        _ => dense_rows_avx2::<4, false>(a, bytes, alo, ahi, blo, bhi),
                    }
                }
            });
        }
        None
    }

    /// The byte DP of `dense_core` for a range at most `16 * DENSE_REG_VECTORS` wide and a `b` with
    /// no junk or popular element, holding the whole row in SSE2 registers (where `dense_avx2`
    /// does not run: no AVX2, or over `LANE_ROWS_MAX` rows).
    fn dense_regs<T: Sym>(
        &mut self,
        b: &BSide<T>,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        match (bhi - blo).div_ceil(16) {
            0 => (alo, blo, 0),
            1 => self.dense_regs_n::<T, 1>(b, alo, ahi, blo, bhi),
            2 => self.dense_regs_n::<T, 2>(b, alo, ahi, blo, bhi),
            3 => self.dense_regs_n::<T, 3>(b, alo, ahi, blo, bhi),
            4 => self.dense_regs_n::<T, 4>(b, alo, ahi, blo, bhi),
            5 => self.dense_regs_n::<T, 5>(b, alo, ahi, blo, bhi),
            6 => self.dense_regs_n::<T, 6>(b, alo, ahi, blo, bhi),
            7 => self.dense_regs_n::<T, 7>(b, alo, ahi, blo, bhi),
            _ => self.dense_regs_n::<T, 8>(b, alo, ahi, blo, bhi),
        }
    }

    /// `N` vectors of 16 columns: `cur[t] = (prev[t - 1] + 1) & (b[blo + t] == a[i])`. A row is tested
    /// against the best so far with one compare; only a row that beats it is searched lane by lane,
    /// for its maximum and the first column holding it (the cell difflib's `k > bestsize` keeps).
    fn dense_regs_n<T: Sym, const N: usize>(
        &mut self,
        b: &BSide<T>,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        let width = bhi - blo;
        let limit = (ahi - alo).min(width);
        let bytes = &b.bytes[FRONT_PAD + blo..];
        debug_assert!(bytes.len() >= 16 * N && width <= 16 * N);
        #[cfg(not(target_arch = "x86_64"))]
        let mut row = [0u8; 16 * DENSE_REG_VECTORS];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: SSE2 is in the x86_64 baseline; every load reads 16 * N bytes of `bytes`, which
            // extends at least that far (width <= 16 * N and `bytes` is padded by DENSE_PAD past b).
            unsafe {
                let lane = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                let ones = _mm_set1_epi8(-1); // x - (-1) is x + 1
                let zero = _mm_setzero_si128();
                let mut bv = [zero; N];
                for (k, v) in bv.iter_mut().enumerate() {
                    *v = _mm_loadu_si128(bytes.as_ptr().add(16 * k).cast());
                }
                // Lanes past the range (only ever in the last vector) compute runs of their own,
                // which never flow into lower lanes (a run moves up one lane a row); they are masked
                // out of the maximum only.
                let left = (width - 16 * (N - 1)) as i8;
                let last_mask = _mm_cmplt_epi8(lane, _mm_set1_epi8(left));
                let mut prev = [zero; N];
                let mut over = _mm_set1_epi8(1); // bestsize + 1, the least value that beats it
                for i in alo..ahi {
                    if (i - alo) % POLL_ROWS == 0 && self.cancel.is_cancelled() {
                        break;
                    }
                    let x = _mm_loadu_si128(
                        SPLAT[self.a_bytes[FRONT_PAD + i] as usize].as_ptr().cast(),
                    );
                    let mut cur = [zero; N];
                    let mut carry = zero;
                    let mut rmax = zero;
                    for k in 0..N {
                        let shifted = _mm_or_si128(_mm_slli_si128(prev[k], 1), carry);
                        carry = _mm_srli_si128(prev[k], 15);
                        let eq = _mm_cmpeq_epi8(bv[k], x);
                        cur[k] = _mm_and_si128(_mm_sub_epi8(shifted, ones), eq);
                        if k + 1 < N {
                            rmax = _mm_max_epu8(rmax, cur[k]);
                        } else {
                            rmax = _mm_max_epu8(rmax, _mm_and_si128(cur[k], last_mask));
                        }
                    }
                    if _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(rmax, over), rmax)) != 0 {
                        // The row's maximum in every lane, then the first lane holding it.
                        rmax = _mm_max_epu8(rmax, _mm_srli_si128(rmax, 8));
                        rmax = _mm_max_epu8(rmax, _mm_srli_si128(rmax, 4));
                        rmax = _mm_max_epu8(rmax, _mm_srli_si128(rmax, 2));
                        rmax = _mm_max_epu8(rmax, _mm_srli_si128(rmax, 1));
                        let row_max = (_mm_cvtsi128_si32(rmax) & 0xFF) as usize;
                        let splat = _mm_loadu_si128(SPLAT[row_max].as_ptr().cast());
                        let mut t = 0;
                        cur[N - 1] = _mm_and_si128(cur[N - 1], last_mask);
                        for (k, v) in cur.iter().enumerate() {
                            let hits = _mm_movemask_epi8(_mm_cmpeq_epi8(*v, splat));
                            if hits != 0 {
                                t = 16 * k + hits.trailing_zeros() as usize;
                                break;
                            }
                        }
                        bestsize = row_max;
                        besti = i + 1 - row_max;
                        bestj = blo + t + 1 - row_max;
                        if bestsize == limit {
                            break;
                        }
                        over = _mm_loadu_si128(SPLAT[bestsize + 1].as_ptr().cast());
                    }
                    prev = cur;
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let mut prev = [0u8; 16 * DENSE_REG_VECTORS + 1];
            for i in alo..ahi {
                if (i - alo) % POLL_ROWS == 0 && self.cancel.is_cancelled() {
                    break;
                }
                let x = self.a_bytes[FRONT_PAD + i];
                for t in 0..width {
                    row[t] = if bytes[t] == x { prev[t] + 1 } else { 0 };
                }
                let row_max = *row[..width].iter().max().unwrap_or(&0) as usize;
                if row_max > bestsize {
                    let t = row[..width]
                        .iter()
                        .position(|&v| v as usize == row_max)
                        .unwrap_or(0);
                    bestsize = row_max;
                    besti = i + 1 - row_max;
                    bestj = blo + t + 1 - row_max;
                    if bestsize == limit {
                        break;
                    }
                }
                prev[1..=width].copy_from_slice(&row[..width]);
            }
        }
        (besti, bestj, bestsize)
    }

    /// Process one pending sub-range: find its longest match, queue what lies either side.
    /// Returns the match size and the change in the pending bound (what the new ranges could add).
    fn step<T: Sym>(&mut self, b: &BSide<T>, [alo, ahi, blo, bhi]: [u32; 4]) -> (usize, usize) {
        let (alo, ahi, blo, bhi) = (alo as usize, ahi as usize, blo as usize, bhi as usize);
        let listed = if !T::is_byte() && self.runs_listed {
            self.longest_listed_run(alo, ahi, blo, bhi)
        } else {
            (alo, blo, 0)
        };
        let (i, j, k) = if !T::is_byte() && listed.2 >= RUN_LIST_STRIDE {
            // Exact: every run of the range this long is a listed run cut to the range.
            if b.all_indexed {
                listed
            } else {
                self.extend_longest(b, alo, ahi, blo, bhi, listed)
            }
        } else {
            self.find_longest_match(b, alo, ahi, blo, bhi)
        };
        if T::is_byte() && k == 1 && b.all_indexed {
            return (self.single_matches_from(b, i, j, ahi, bhi), 0);
        }
        let mut added = 0;
        if k > 0 {
            self.blocks.push((i as u32, j as u32, k as u32));
            if alo < i && blo < j {
                self.queue
                    .push([alo as u32, i as u32, blo as u32, j as u32]);
                added += (i - alo).min(j - blo);
            }
            if i + k < ahi && j + k < bhi {
                self.queue
                    .push([(i + k) as u32, ahi as u32, (j + k) as u32, bhi as u32]);
                added += (ahi - i - k).min(bhi - j - k);
            }
        }
        (k, added)
    }

    /// The blocks difflib's recursion finds in a byte range whose longest match is one element, the
    /// first being `(i, j)`; returns how many there are.
    ///
    /// With every element indexed the recursion below such a match is greedy: the range above and
    /// left of `(i, j)` holds no equal pair (it is the first in row-major order, the cell difflib
    /// keeps among runs of 1), and the range below and right again has runs of at most 1, so its
    /// block is its first equal pair. So each later row takes the first equal byte right of the
    /// last block, if any. (With junk or popular elements a block can grow past its DP run, and
    /// a sub-range's longest match exceed its parent's: not taken there.)
    ///
    /// Performance notes: on the sample label pairs of `examples/bench_pairs.rs`, 46% of the byte
    /// DP's searches found a longest match of 1, and 4,508 of all 12,048 DP searches (plus 3,104
    /// one-row or one-column ones) lay inside such a range; one byte search a row replaces them
    /// (callgrind, one round: 11.63M -> 10.65M instructions).
    fn single_matches_from<T: Sym>(
        &mut self,
        b: &BSide<T>,
        i: usize,
        j: usize,
        ahi: usize,
        bhi: usize,
    ) -> usize {
        debug_assert!(T::is_byte() && b.all_indexed);
        self.blocks.push((i as u32, j as u32, 1));
        let (a, bytes) = (&self.a_bytes[FRONT_PAD..], &b.bytes[FRONT_PAD..]);
        let (mut found, mut from) = (1, j + 1);
        let mut r = i + 1;
        while r < ahi && from < bhi {
            if (r - i) % POLL_ROWS == 0 && self.cancel.is_cancelled() {
                break;
            }
            if let Some(t) = first_equal_byte(bytes, from, bhi, a[r]) {
                self.blocks.push((r as u32, t as u32, 1));
                found += 1;
                from = t + 1;
            }
            r += 1;
        }
        found
    }

    fn start<T: Sym>(&mut self, b: &BSide<T>) {
        self.queue.clear();
        self.blocks.clear();
        self.queue
            .push([0, self.a_ids.len() as u32, 0, b.len() as u32]);
        self.runs_listed = !T::is_byte()
            && self.a_ids.len() >= RUN_LIST_MIN_ROWS
            && b.len() >= RUN_LIST_STRIDE
            && self.list_runs(b);
    }

    /// Fill `runs` for the whole `a` x `b`; false when it stopped at a limit (too many runs or
    /// steps: then every range is searched on its own).
    ///
    /// Every maximal run of length >= RUN_LIST_STRIDE covers one of the anchor rows (every
    /// RUN_LIST_STRIDE-th row, from row RUN_LIST_STRIDE - 1); each match on those rows is extended
    /// both ways along its diagonal, unless it lies on a run already extended from an earlier one.
    ///
    /// Performance notes: the matching-block recursion searches each sub-range anew; on line diffs
    /// of real files (~125 lines between edits) that visited each line ~5 times, and the anchor
    /// search of a sub-range re-extended the same long runs on each halving of its stride. A
    /// sub-range's longest run is now read from this list (the longest listed run cut to the range,
    /// exact once it is >= RUN_LIST_STRIDE), and only ranges with no such run are searched.
    fn list_runs<T: Sym>(&mut self, b: &BSide<T>) -> bool {
        let (la, lb) = (self.a_ids.len(), b.len());
        let mut runs = std::mem::take(&mut self.runs);
        let mut open = std::mem::take(&mut self.open_runs);
        runs.clear();
        open.clear();
        let budget = RUN_LIST_WORK_PER_ELEMENT * (la + lb);
        let mut work = 0usize;
        let (mut next_poll, mut stop) = (RUN_LIST_POLL_WORK, false);
        let mut r = RUN_LIST_STRIDE - 1;
        while r < la && work <= budget && runs.len() <= RUN_LIST_MAX_RUNS {
            if self.cancel.is_cancelled() {
                break; // (incomplete: the ranges are then searched one by one, and stop too)
            }
            open.retain(|&(_, end)| end > r);
            self.each_match_in_row(b, r, 0, lb, false, |m, j| {
                // One row can hold a match in every column, each extended across the whole
                // sequences (equal lines): past the budget, or once cancelled, the rest of the row
                // is skipped, so a poll comes every RUN_LIST_POLL_WORK steps, not once a row.
                if stop || work > budget {
                    return;
                }
                if work >= next_poll {
                    next_poll = work + RUN_LIST_POLL_WORK;
                    stop = m.stopped();
                }
                let diagonal = j + la - r;
                work += 1 + open.len();
                if open.iter().any(|&(d, _)| d == diagonal) {
                    return;
                }
                let back = m.run_backward(b, r, j, r.min(j));
                let len = back + m.run_forward(b, r, j, (la - r).min(lb - j));
                work += len / 4;
                if len >= RUN_LIST_STRIDE {
                    runs.push(((r - back) as u32, (j - back) as u32, len as u32));
                    open.push((diagonal, r - back + len));
                }
            });
            r += RUN_LIST_STRIDE;
        }
        let complete = r >= la && work <= budget && runs.len() <= RUN_LIST_MAX_RUNS;
        runs.sort_unstable();
        self.longest_run = runs.iter().map(|r| r.2 as usize).max().unwrap_or(0);
        self.runs = runs;
        self.open_runs = open;
        complete
    }

    /// The longest listed run cut to the range (first in (i, j) order among equals), as
    /// `find_longest_match`'s DP would pick it: exact when its length is >= RUN_LIST_STRIDE, as any
    /// run that long in the range lies on a listed run, which cut to the range is that run.
    fn longest_listed_run(
        &self,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let mut best = (alo, blo, 0usize);
        // Only runs starting in rows [alo - longest_run, ahi) can reach the range's rows.
        let lowest = alo.saturating_sub(self.longest_run);
        let first = self.runs.partition_point(|r| (r.0 as usize) < lowest);
        for &(i0, j0, len) in &self.runs[first..] {
            let (i0, j0, len) = (i0 as usize, j0 as usize, len as usize);
            if i0 >= ahi {
                break;
            }
            let from = alo.saturating_sub(i0).max(blo.saturating_sub(j0));
            let to = len.min(ahi.saturating_sub(i0)).min(bhi.saturating_sub(j0));
            if to > from {
                let (i, j, k) = (i0 + from, j0 + from, to - from);
                if k > best.2 || (k == best.2 && (i, j) < (best.0, best.1)) {
                    best = (i, j, k);
                }
            }
        }
        best
    }

    /// Total size of difflib's matching blocks (`M` in `2M / (len(a) + len(b))`).
    pub fn matches<T: Sym>(&mut self, b: &BSide<T>) -> usize {
        self.start(b);
        let mut found = 0;
        while let Some(range) = self.queue.pop() {
            if self.cancel.is_cancelled() {
                break;
            }
            found += self.step(b, range).0;
        }
        found
    }

    /// difflib's `get_matching_blocks()`, without the `(len(a), len(b), 0)` sentinel.
    pub fn matching_blocks<T: Sym>(&mut self, b: &BSide<T>) -> Vec<(usize, usize, usize)> {
        self.start(b);
        while let Some(range) = self.queue.pop() {
            if self.cancel.is_cancelled() {
                break;
            }
            self.step(b, range);
        }
        self.blocks.sort_unstable();
        let mut out: Vec<(usize, usize, usize)> = Vec::with_capacity(self.blocks.len());
        for &(i, j, k) in &self.blocks {
            let (i, j, k) = (i as usize, j as usize, k as usize);
            if let Some(last) = out.last_mut() {
                if last.0 + last.2 == i && last.1 + last.2 == j {
                    last.2 += k;
                    continue;
                }
            }
            out.push((i, j, k));
        }
        out
    }

    /// `ratio() >= threshold`, deciding as early as the matches found so far allow.
    pub fn ratio_at_least<T: Sym>(&mut self, b: &BSide<T>, threshold: f64) -> bool {
        let length = self.a_ids.len() + b.len();
        let mut pending = self.a_ids.len().min(b.len());
        if !(ratio_of(pending, length) >= threshold) {
            return false;
        }
        self.start(b);
        let mut found = 0;
        while let Some(range) = self.queue.pop() {
            if self.cancel.is_cancelled() {
                return false;
            }
            pending -= ((range[1] - range[0]).min(range[3] - range[2])) as usize;
            let (k, added) = self.step(b, range);
            found += k;
            pending += added;
            if ratio_of(found, length) >= threshold {
                return true;
            }
            if !(ratio_of(found + pending, length) >= threshold) {
                return false;
            }
        }
        ratio_of(found, length) >= threshold
    }

    /// The multiset intersection size behind difflib's `quick_ratio`.
    pub fn quick_matches<T: Sym>(&mut self, b: &BSide<T>) -> usize {
        self.avail.clear();
        if b.has_positions {
            self.avail.extend_from_slice(&b.counts);
        } else {
            self.avail.resize(b.counts.len(), 0);
            for &id in &b.ids {
                self.avail[id as usize] += 1;
            }
        }
        let mut matches = 0;
        for &id in &self.a_ids {
            if id != NONE {
                let slot = &mut self.avail[id as usize];
                if *slot > 0 {
                    *slot -= 1;
                    matches += 1;
                }
            }
        }
        matches
    }

    pub fn a_len(&self) -> usize {
        self.a_ids.len()
    }
}

/// Zero bytes past the end of every byte buffer the dense DP reads, so its last 16-column step can
/// load a whole vector.
const DENSE_PAD: usize = 32;

/// The bits of word `w` of a bitset over `b` that lie in `blo..bhi`.
#[inline]
fn window_mask(w: usize, blo: usize, bhi: usize) -> u64 {
    let lo = (w * 64).max(blo) - w * 64;
    let hi = (w * 64 + 64).min(bhi) - w * 64;
    (u64::MAX >> (64 - (hi - lo))) << lo
}

/// Eight bytes from `at`, little-endian.
#[inline]
fn load8(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

/// Bit `t` set where `bytes[at + t] == x`, for `t` in `0..16` (`bytes` holds them all).
#[inline(always)]
fn eq_mask16(bytes: &[u8], at: usize, x: u8) -> u32 {
    let window = &bytes[at..at + 16];
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is in the x86_64 baseline; `window` holds 16 bytes.
        unsafe {
            let splat = _mm_loadu_si128(SPLAT[x as usize].as_ptr().cast());
            let v = _mm_loadu_si128(window.as_ptr().cast());
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, splat)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        window
            .iter()
            .enumerate()
            .fold(0, |m, (t, &y)| m | (((y == x) as u32) << t))
    }
}

/// The first `t` in `from..to` where `bytes[t] == x`. `bytes` (a padded byte copy, from its first
/// element) extends at least 15 bytes past `to`: 16 bytes are compared a step.
#[inline]
fn first_equal_byte(bytes: &[u8], from: usize, to: usize, x: u8) -> Option<usize> {
    let mut c = from;
    while c < to {
        let hits = eq_mask16(bytes, c, x);
        if hits != 0 {
            let t = c + hits.trailing_zeros() as usize;
            return (t < to).then_some(t);
        }
        c += 16;
    }
    None
}

/// Whether this CPU has AVX2 (detected once; the standard library caches the answer).
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2() -> bool {
    #[cfg(test)]
    if tests::SSE2_ONLY.with(|only| only.get()) {
        return false;
    }
    std::is_x86_feature_detected!("avx2")
}

/// `Matcher::each_match_in_row` on byte strings (`a_bytes` and `b_bytes` are the padded copies, from
/// their first byte), 32 columns a step.
///
/// Performance notes: the anchor rows of a label pair's first range compare ~5 blocks of 16 columns
/// a row, three compares each with `runs_only`; with 32 a step, half the blocks
/// (`examples/bench_pairs.rs` under callgrind, one round: 10.65M -> 10.20M instructions).
///
/// # Safety
/// The CPU must support AVX2. (Every load reads a bounds-checked slice.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn each_byte_match_avx2(
    a_bytes: &[u8],
    b_bytes: &[u8],
    r: usize,
    blo: usize,
    bhi: usize,
    runs_only: bool,
    mut f: impl FnMut(usize),
) {
    use std::arch::x86_64::*;
    let row = FRONT_PAD + r;
    let x = _mm256_set1_epi8(a_bytes[row] as i8);
    // Rows r - 1 and r + 1 (a pad byte where r is a's first or last row: it can only keep a match).
    let above = _mm256_set1_epi8(a_bytes[row - 1] as i8);
    let below = _mm256_set1_epi8(a_bytes[row + 1] as i8);
    let mut c = blo;
    while c < bhi {
        // `b_bytes` holds FRONT_PAD bytes before `b` and DENSE_PAD (32) after it: the 32 bytes
        // from any column c - 1, c or c + 1 (c < len(b)) are inside.
        let at = FRONT_PAD + c;
        // SAFETY: each load reads the 32 bytes of a bounds-checked slice.
        let v = unsafe { _mm256_loadu_si256(b_bytes[at..at + 32].as_ptr().cast()) };
        let mut hits = _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, x)) as u32;
        if runs_only && hits != 0 {
            // SAFETY: as above.
            let left = unsafe { _mm256_loadu_si256(b_bytes[at - 1..at + 31].as_ptr().cast()) };
            // SAFETY: as above.
            let right = unsafe { _mm256_loadu_si256(b_bytes[at + 1..at + 33].as_ptr().cast()) };
            let before = _mm256_movemask_epi8(_mm256_cmpeq_epi8(left, above)) as u32;
            let after = _mm256_movemask_epi8(_mm256_cmpeq_epi8(right, below)) as u32;
            hits &= before | after;
        }
        if bhi - c < 32 {
            hits &= (1u32 << (bhi - c)) - 1;
        }
        while hits != 0 {
            f(c + hits.trailing_zeros() as usize);
            hits &= hits - 1;
        }
        c += 32;
    }
}

/// The most rows `dense_rows_avx2` takes: it keeps each column's row as a byte offset, and 255
/// marks "no row".
const LANE_ROWS_MAX: usize = 255;

/// `Matcher::dense_regs_n` with `N` AVX2 vectors of 32 columns (a range at most `32 * N` wide and
/// at most `LANE_ROWS_MAX` rows). `a` and `bytes` (holding `b`) start at element 0; `bytes` extends
/// `DENSE_PAD` (32) bytes past `b`, so every load of `32 * N` bytes from `blo` stays inside
/// (`32 * N < width + 32`).
///
/// No branch depends on the data: each column keeps the longest run that ended in it so far and
/// the row where that length was first reached; after the last row, the longest of those is the
/// match, and among equals the first in (row, column) order, the run difflib's `k > bestsize`
/// keeps. `TRANSPOSED` when the caller swapped the sequences (and the range's bounds) so that
/// difflib's rows are the columns here: among equals, the first in (column, row) order then.
///
/// Performance notes: one AVX2 vector per 32 columns halves the vector operations of the SSE2 rows
/// for the 17-64-column ranges most sub-ranges of the recursion are (measured with callgrind on
/// label pairs, examples/bench_pairs.rs). An earlier version tested every row against the best so
/// far and searched the row when it beat it; perf put a third of this function's time on that
/// branch, which depends on the text and mispredicts.
///
/// # Safety
/// The CPU must support AVX2. (The loads past the asserts below stay inside `bytes` and `a`.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dense_rows_avx2<const N: usize, const TRANSPOSED: bool>(
    a: &[u8],
    bytes: &[u8],
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    use std::arch::x86_64::*;
    let width = bhi - blo;
    let bytes = &bytes[blo..];
    assert!(width <= 32 * N && bytes.len() >= 32 * N && a.len() >= ahi);
    assert!(ahi - alo <= LANE_ROWS_MAX);
    let lane = _mm256_setr_epi8(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31,
    );
    let ones = _mm256_set1_epi8(-1);
    let zero = _mm256_setzero_si256();
    let mut bv = [zero; N];
    for (k, v) in bv.iter_mut().enumerate() {
        // SAFETY: `bytes` holds at least 32 * N bytes (asserted above): 32 from 32 * k are inside.
        *v = unsafe { _mm256_loadu_si256(bytes.as_ptr().add(32 * k).cast()) };
    }
    // Lanes past the range (in the last vector only) never feed lower lanes; they are masked out of
    // the per-column bests after the last row.
    let left = (width - 32 * (N - 1)) as i8;
    let last_mask = _mm256_cmpgt_epi8(_mm256_set1_epi8(left), lane);
    let mut prev = [zero; N];
    // Per column: the longest run ending in it so far, and the row (offset from alo) where a run
    // of that length first ended.
    let mut longest = [zero; N];
    let mut first_row = [zero; N];
    let mut row = zero;
    for i in alo..ahi {
        // SAFETY: i < ahi <= a.len() (asserted above).
        let x = _mm256_set1_epi8(unsafe { *a.get_unchecked(i) } as i8);
        for k in 0..N {
            // prev shifted up one byte across the whole vector, the byte below it carried in
            // (prev[k - 1] is still the previous row's: cur overwrites prev in descending k).
            let k = N - 1 - k;
            let below = if k == 0 { zero } else { prev[k - 1] };
            let spliced = _mm256_permute2x128_si256(prev[k], below, 0x03);
            let shifted = _mm256_alignr_epi8(prev[k], spliced, 15);
            let eq = _mm256_cmpeq_epi8(bv[k], x);
            let cur = _mm256_and_si256(_mm256_sub_epi8(shifted, ones), eq);
            let longer = _mm256_max_epu8(longest[k], cur);
            let kept = _mm256_cmpeq_epi8(longer, longest[k]);
            first_row[k] = _mm256_blendv_epi8(row, first_row[k], kept);
            longest[k] = longer;
            prev[k] = cur;
        }
        row = _mm256_sub_epi8(row, ones);
    }
    // Lanes past the range kept runs of their own (which never reach lower lanes): dropped once here
    // rather than masked on every row.
    longest[N - 1] = _mm256_and_si256(longest[N - 1], last_mask);
    let mut top = longest[0];
    for v in &longest[1..] {
        top = _mm256_max_epu8(top, *v);
    }
    let size = hmax_epu8(top) as usize;
    if size == 0 {
        return (alo, blo, 0);
    }
    let target = _mm256_set1_epi8(size as i8);
    if TRANSPOSED {
        // Columns here are difflib's rows: the first column holding a run of `size`, then the
        // first row that run length was reached in.
        for (k, v) in longest.iter().enumerate() {
            let hits = _mm256_movemask_epi8(_mm256_cmpeq_epi8(*v, target)) as u32;
            if hits != 0 {
                let lane = hits.trailing_zeros() as usize;
                let mut offsets = [0u8; 32];
                // SAFETY: stores 32 bytes into a local array of 32.
                unsafe { _mm256_storeu_si256(offsets.as_mut_ptr().cast(), first_row[k]) };
                let (end_i, end_j) = (alo + offsets[lane] as usize, blo + 32 * k + lane);
                return (end_i + 1 - size, end_j + 1 - size, size);
            }
        }
    }
    // The first row a run of `size` ended in, then the first column of that row holding one.
    let mut rows = [ones; N];
    let mut earliest = ones;
    for k in 0..N {
        rows[k] = _mm256_blendv_epi8(ones, first_row[k], _mm256_cmpeq_epi8(longest[k], target));
        earliest = _mm256_min_epu8(earliest, rows[k]);
    }
    let r = hmin_epu8(earliest);
    let at = _mm256_set1_epi8(r as i8);
    let mut column = 0;
    for (k, v) in rows.iter().enumerate() {
        let hits = _mm256_movemask_epi8(_mm256_cmpeq_epi8(*v, at)) as u32;
        if hits != 0 {
            column = 32 * k + hits.trailing_zeros() as usize;
            break;
        }
    }
    let (end_i, end_j) = (alo + r as usize, blo + column);
    (end_i + 1 - size, end_j + 1 - size, size)
}

/// The largest byte of `v`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn hmax_epu8(v: std::arch::x86_64::__m256i) -> u8 {
    use std::arch::x86_64::*;
    let mut m = _mm_max_epu8(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 8));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 4));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 2));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 1));
    (_mm_cvtsi128_si32(m) & 0xFF) as u8
}

/// The smallest byte of `v`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn hmin_epu8(v: std::arch::x86_64::__m256i) -> u8 {
    use std::arch::x86_64::*;
    // Each step folds the upper half of what is left onto the lower; the zeros the shifts bring in
    // land above it and never reach byte 0.
    let mut m = _mm_min_epu8(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_min_epu8(m, _mm_srli_si128(m, 8));
    m = _mm_min_epu8(m, _mm_srli_si128(m, 4));
    m = _mm_min_epu8(m, _mm_srli_si128(m, 2));
    m = _mm_min_epu8(m, _mm_srli_si128(m, 1));
    (_mm_cvtsi128_si32(m) & 0xFF) as u8
}

/// Each byte value repeated across a vector, for loading instead of building a broadcast (SSE2 has
/// no one-instruction byte broadcast).
static SPLAT: [[u8; 16]; 256] = {
    let mut table = [[0u8; 16]; 256];
    let mut v = 0;
    while v < 256 {
        table[v] = [v as u8; 16];
        v += 1;
    }
    table
};

/// Bytes before the first element of the byte copies of `a` and `b`, so a match can be extended
/// backwards eight elements at a time with one unaligned load.
const FRONT_PAD: usize = 8;

/// One row of the byte DP over `width` columns: `cur[t] = (prev[t] + 1) & (bytes[t] == x ? indexed[t] :
/// 0)`; returns the row's maximum. Every slice extends at least `DENSE_PAD` bytes past `width`.
#[inline]
fn dense_row(prev: &[u8], cur: &mut [u8], bytes: &[u8], indexed: &[u8], x: u8, width: usize) -> u8 {
    debug_assert!([prev.len(), cur.len(), bytes.len(), indexed.len()]
        .iter()
        .all(|&l| l >= width + DENSE_PAD));
    #[cfg(target_arch = "x86_64")]
    {
        // SSE2 is part of the x86_64 baseline: 16 columns a step. Measured: LLVM left the scalar
        // loop below unvectorised, and this one takes 4-5x fewer instructions per pair.
        use std::arch::x86_64::*;
        // SAFETY: each step reads and writes [t, t + 16) with t < width, inside every slice (each is
        // at least width + 16 long); lanes at or past `width` are masked to zero.
        unsafe {
            let xv = _mm_set1_epi8(x as i8);
            let one = _mm_set1_epi8(1);
            let lane = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            let mut maxv = _mm_setzero_si128();
            let mut t = 0;
            while t < width {
                let left = (width - t).min(16) as i8;
                let in_range = _mm_cmplt_epi8(lane, _mm_set1_epi8(left));
                let p = _mm_loadu_si128(prev.as_ptr().add(t).cast());
                let b = _mm_loadu_si128(bytes.as_ptr().add(t).cast());
                let ind = _mm_and_si128(_mm_loadu_si128(indexed.as_ptr().add(t).cast()), in_range);
                let v = _mm_and_si128(
                    _mm_add_epi8(p, one),
                    _mm_and_si128(_mm_cmpeq_epi8(b, xv), ind),
                );
                _mm_storeu_si128(cur.as_mut_ptr().add(t).cast(), v);
                maxv = _mm_max_epu8(maxv, v);
                t += 16;
            }
            maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 8));
            maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 4));
            maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 2));
            maxv = _mm_max_epu8(maxv, _mm_srli_si128(maxv, 1));
            (_mm_cvtsi128_si32(maxv) & 0xFF) as u8
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut row_max = 0u8;
        for t in 0..width {
            let v = prev[t].wrapping_add(1) & 0u8.wrapping_sub((bytes[t] == x) as u8) & indexed[t];
            cur[t] = v;
            row_max = row_max.max(v);
        }
        row_max
    }
}

/// One-shot helpers over two sequences, for tests and simple callers.
pub fn ratio<T: Sym>(a: &[T], b: &[T], autojunk: bool) -> f64 {
    ratio_with(&mut Matcher::new(), &mut BSide::default(), a, b, autojunk)
}

/// difflib's ratio of `a` against `b` (indexed into `side`), reusing the buffers of `m` and `side`.
pub fn ratio_with<T: Sym>(
    m: &mut Matcher,
    side: &mut BSide<T>,
    a: &[T],
    b: &[T],
    autojunk: bool,
) -> f64 {
    side.rebuild(b, autojunk, None);
    m.set_a(a, side);
    ratio_of(m.matches(side), a.len() + b.len())
}

/// difflib's `quick_ratio()` (its buffers reserved fallibly: the sequences come from the caller).
pub fn quick_ratio<T: Sym>(a: &[T], b: &[T]) -> Result<f64> {
    let side = BSide::try_new(b, false)?;
    let mut m = Matcher::new();
    m.reserve_for_a::<T>(a.len())?;
    m.set_a(a, &side);
    Ok(ratio_of(m.quick_matches(&side), a.len() + b.len()))
}

pub fn real_quick_ratio(la: usize, lb: usize) -> f64 {
    ratio_of(la.min(lb), la + lb)
}

pub fn matching_blocks<T: Sym>(a: &[T], b: &[T], autojunk: bool) -> Vec<(usize, usize, usize)> {
    let side = BSide::new(b, autojunk);
    let mut m = Matcher::new();
    m.set_a(a, &side);
    m.matching_blocks(&side)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(a: &str, b: &str) -> f64 {
        ratio(a.as_bytes(), b.as_bytes(), true)
    }

    /// difflib's `find_longest_match` written out as CPython has it (dict-free but the same loops),
    /// with no junk function: the oracle for the searches `Matcher` picks between.
    fn difflib_longest(
        a: &[u32],
        b: &[u32],
        autojunk: bool,
        (alo, ahi, blo, bhi): (usize, usize, usize, usize),
    ) -> (usize, usize, usize) {
        difflib_longest_with_junk(a, b, autojunk, |_| false, (alo, ahi, blo, bhi))
    }

    /// difflib's `find_longest_match` with an `isjunk` predicate.
    fn difflib_longest_with_junk(
        a: &[u32],
        b: &[u32],
        autojunk: bool,
        junk: impl Fn(u32) -> bool,
        (alo, ahi, blo, bhi): (usize, usize, usize, usize),
    ) -> (usize, usize, usize) {
        let n = b.len();
        let mut popular = std::collections::HashSet::new();
        if autojunk && n >= 200 {
            let mut counts = std::collections::HashMap::new();
            for &x in b.iter().filter(|&&x| !junk(x)) {
                *counts.entry(x).or_insert(0usize) += 1;
            }
            let ntest = n / 100 + 1;
            popular.extend(
                counts
                    .into_iter()
                    .filter(|&(_, c)| c > ntest)
                    .map(|(x, _)| x),
            );
        }
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        let mut j2len = vec![0usize; n + 1];
        for (i, &x) in a.iter().enumerate().take(ahi).skip(alo) {
            let mut newj2len = vec![0usize; n + 1];
            for j in blo..bhi {
                if x != b[j] || popular.contains(&b[j]) || junk(b[j]) {
                    continue;
                }
                let k = j2len[j] + 1;
                newj2len[j + 1] = k;
                if k > bestsize {
                    (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
                }
            }
            j2len = newj2len;
        }
        for junk_pass in [false, true] {
            while besti > alo
                && bestj > blo
                && junk(b[bestj - 1]) == junk_pass
                && a[besti - 1] == b[bestj - 1]
            {
                (besti, bestj, bestsize) = (besti - 1, bestj - 1, bestsize + 1);
            }
            while besti + bestsize < ahi
                && bestj + bestsize < bhi
                && junk(b[bestj + bestsize]) == junk_pass
                && a[besti + bestsize] == b[bestj + bestsize]
            {
                bestsize += 1;
            }
        }
        (besti, bestj, bestsize)
    }

    #[test]
    fn common_prefix_and_suffix_count_equal_runs() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for _ in 0..20_000 {
            let n = rng.below(40);
            let x: Vec<u32> = (0..n).map(|_| rng.below(3) as u32).collect();
            let y: Vec<u32> = x
                .iter()
                .map(|&v| if rng.below(6) == 0 { v + 1 } else { v })
                .collect();
            let want_prefix = x.iter().zip(&y).take_while(|(a, b)| a == b).count();
            let want_suffix = x
                .iter()
                .rev()
                .zip(y.iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            assert_eq!(common_prefix(&x, &y), want_prefix, "{x:?} {y:?}");
            assert_eq!(common_suffix(&x, &y), want_suffix, "{x:?} {y:?}");
        }
    }

    /// Line-diff-like sequences (a large alphabet, most elements unique, a few frequent "blank
    /// lines" that autojunk makes popular, optional junk), edited in runs, against difflib's search:
    /// the searches over indexed runs when `b` has junk or popular elements.
    #[test]
    fn searches_with_junk_and_popular_agree_with_difflib() {
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        let mut side = BSide::<u32>::default();
        let mut m = Matcher::new();
        let junk_rule = |x: u32| x % 7 == 3;
        for case in 0..1500 {
            let len = [9, 40, 150, 199, 200, 260, 700][rng.below(7)];
            let frequent = [1, 3, 40][rng.below(3)];
            let line = |rng: &mut Rng| {
                if rng.below(5) == 0 {
                    rng.below(frequent) as u32
                } else {
                    1000 + rng.below(100_000) as u32
                }
            };
            let a: Vec<u32> = (0..len).map(|_| line(&mut rng)).collect();
            let mut b = a.clone();
            if rng.below(4) == 0 {
                // Repeated blocks: equal-length runs tie, and the first one must win.
                let cut = rng.below(a.len() + 1);
                b.extend_from_slice(&a[cut..]);
                for _ in 0..rng.below(3) {
                    let x = line(&mut rng);
                    b.insert(0, x);
                }
            }
            for _ in 0..rng.below(12) {
                let at = rng.below(b.len() + 1);
                let run = 1 + rng.below(4);
                match rng.below(3) {
                    0 => {
                        b.drain(at..(at + run).min(b.len()));
                    }
                    1 => {
                        for _ in 0..run {
                            let x = line(&mut rng);
                            b.insert(at, x);
                        }
                    }
                    _ => {
                        for k in at..(at + run).min(b.len()) {
                            b[k] = line(&mut rng);
                        }
                    }
                }
            }
            // Chosen apart from `dense` (every fourth case) below, so it meets both settings.
            let autojunk = (case / 2) % 2 == 0;
            let with_junk = case % 3 == 0;
            let rule = |x: u32| with_junk && junk_rule(x);
            // Every fourth case codes both sides as dense first-occurrence ids (as the bindings'
            // element table does), which `rebuild_dense` indexes without its interning map.
            let dense = case % 4 == 1;
            let mut first_seen = std::collections::HashMap::new();
            for &x in &b {
                let next = first_seen.len() as u32;
                first_seen.entry(x).or_insert(next);
            }
            let code = |x: &u32| {
                first_seen
                    .get(x)
                    .copied()
                    .unwrap_or(first_seen.len() as u32)
            };
            let (a_in, b_in): (Vec<u32>, Vec<u32>) = if dense {
                (a.iter().map(code).collect(), b.iter().map(code).collect())
            } else {
                (a.clone(), b.clone())
            };
            let element: Vec<u32> = {
                let mut by_id = vec![0; first_seen.len()];
                for (&x, &id) in &first_seen {
                    by_id[id as usize] = x;
                }
                by_id
            };
            let mut junk_of = |x: u32| junk_rule(if dense { element[x as usize] } else { x });
            let junk_of: Option<&mut dyn FnMut(u32) -> bool> = with_junk.then_some(&mut junk_of);
            if dense && (case / 8) % 2 == 1 {
                // Half of them as the element table hands them over, counted.
                let mut counts = vec![0; first_seen.len()];
                for &id in &b_in {
                    counts[id as usize] += 1;
                }
                side = BSide::of_dense_ids(b_in.clone(), counts, autojunk, junk_of);
            } else if dense {
                side.rebuild_dense(&b_in, autojunk, junk_of);
            } else {
                side.rebuild(&b_in, autojunk, junk_of);
            }
            assert_eq!(side.dense_codes, dense);
            m.set_a(&a_in, &side);
            let windows = random_windows(&mut rng, a.len(), b.len());
            for w in windows {
                let want = difflib_longest_with_junk(&a, &b, autojunk, rule, w);
                assert_eq!(
                    m.find_longest_match(&side, w.0, w.1, w.2, w.3),
                    want,
                    "case {case} {w:?}"
                );
            }
            // The whole recursion (which lists runs once for sequences this long and reads each
            // sub-range's longest run from the list) against difflib's, search by search.
            let want = difflib_blocks_with_junk(&a, &b, autojunk, rule);
            assert_eq!(m.matching_blocks(&side), want, "case {case}");
            let total: usize = want.iter().map(|x| x.2).sum();
            assert_eq!(m.matches(&side), total, "case {case}");
        }
    }

    /// Sequences with so many distinct elements that `b2j` is not kept as bitsets: the searches
    /// read the position lists instead.
    #[test]
    fn long_distinct_sequences_search_without_bitsets() {
        let mut rng = Rng(0x9FB2_1C65_1E98_DF25);
        let mut m = Matcher::new();
        for case in 0..4 {
            let a: Vec<u32> = (0..2100).map(|k| k * 7 + rng.below(3) as u32).collect();
            let mut b = a.clone();
            for _ in 0..30 {
                let at = rng.below(b.len());
                match rng.below(3) {
                    0 => {
                        b.remove(at);
                    }
                    1 => b.insert(at, rng.below(20_000) as u32),
                    _ => b[at] = rng.below(20_000) as u32,
                }
            }
            let side = BSide::new(&b, case % 2 == 0);
            assert!(side.all_indexed && !side.has_bits);
            m.set_a(&a, &side);
            let never = |_: u32| false;
            let whole = (0, a.len(), 0, b.len());
            assert_eq!(
                m.find_longest_match(&side, 0, a.len(), 0, b.len()),
                difflib_longest_with_junk(&a, &b, case % 2 == 0, never, whole)
            );
            let want = difflib_blocks_with_junk(&a, &b, case % 2 == 0, never);
            assert_eq!(m.matching_blocks(&side), want, "case {case}");
        }
    }

    /// difflib's `get_matching_blocks()` (without the sentinel) over `difflib_longest_with_junk`.
    fn difflib_blocks_with_junk(
        a: &[u32],
        b: &[u32],
        autojunk: bool,
        junk: impl Fn(u32) -> bool + Copy,
    ) -> Vec<(usize, usize, usize)> {
        let mut queue = vec![(0, a.len(), 0, b.len())];
        let mut blocks = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let (i, j, k) = difflib_longest_with_junk(a, b, autojunk, junk, (alo, ahi, blo, bhi));
            if k > 0 {
                blocks.push((i, j, k));
                if alo < i && blo < j {
                    queue.push((alo, i, blo, j));
                }
                if i + k < ahi && j + k < bhi {
                    queue.push((i + k, ahi, j + k, bhi));
                }
            }
        }
        blocks.sort_unstable();
        let mut out: Vec<(usize, usize, usize)> = Vec::new();
        for (i, j, k) in blocks {
            match out.last_mut() {
                Some(last) if last.0 + last.2 == i && last.1 + last.2 == j => last.2 += k,
                _ => out.push((i, j, k)),
            }
        }
        out
    }

    /// The whole ranges and four random sub-ranges of sequences of lengths `la` and `lb`.
    fn random_windows(rng: &mut Rng, la: usize, lb: usize) -> Vec<(usize, usize, usize, usize)> {
        let mut windows = vec![(0, la, 0, lb)];
        for _ in 0..4 {
            let (x, y) = (rng.below(la + 1), rng.below(la + 1));
            let (u, v) = (rng.below(lb + 1), rng.below(lb + 1));
            windows.push((x.min(y), x.max(y), u.min(v), u.max(v)));
        }
        windows
    }

    use crate::test_rng::Rng;

    /// Remapped to bytes, wide sequences give difflib's answers on the code points, or refuse
    /// (more than 255 distinct elements in `b`).
    #[test]
    fn byte_remap_keeps_every_answer() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let mut remap = ByteRemap::default();
        let (mut ra, mut rb) = (Vec::new(), Vec::new());
        for case in 0..2000 {
            let alphabet = [3, 40, 300][case % 3];
            // ASCII (NUL included), ASCII and Latin-1, basic-plane and astral text, and 0xFFF0 +
            // up to 300 across the two planes.
            let bases = [0x0u32, 0x20, 0x60, 0x100, 0x4E00, 0x1F600, 0xFFF0];
            // One range for the pair, or each element's own (ASCII, basic and astral mixed).
            let pair_base = bases[rng.below(bases.len())];
            let mixed = case % 5 == 4;
            let element = |rng: &mut Rng| {
                let base = if mixed {
                    bases[rng.below(bases.len())]
                } else {
                    pair_base
                };
                base + rng.below(alphabet) as u32
            };
            let a: Vec<u32> = (0..rng.below(120)).map(|_| element(&mut rng)).collect();
            let b: Vec<u32> = (0..rng.below(400)).map(|_| element(&mut rng)).collect();
            let distinct = b.iter().collect::<std::collections::HashSet<_>>().len();
            let fits = remap.remap(&a, &b, &mut ra, &mut rb);
            assert_eq!(fits, distinct <= 255);
            if fits {
                // Equal exactly where the code points are equal.
                for (x, &rx) in a.iter().zip(&ra) {
                    for (y, &ry) in b.iter().zip(&rb) {
                        assert_eq!(x == y, rx == ry, "{x} {y} -> {rx} {ry}");
                    }
                }
                for autojunk in [false, true] {
                    assert_eq!(ratio(&ra, &rb, autojunk), ratio(&a, &b, autojunk));
                    assert_eq!(
                        matching_blocks(&ra, &rb, autojunk),
                        matching_blocks(&a, &b, autojunk)
                    );
                }
                assert_eq!(
                    crate::contract::contained(&ra, &rb, 1),
                    crate::contract::contained(&a, &b, 1)
                );
            }
        }
        // At the limits: 127 or 128 distinct non-ASCII elements beside ASCII ones (from 0x40),
        // 255 distinct elements, in one plane and across two.
        for distinct in [127, 128, 129, 191, 192, 193, 254, 255, 256] {
            for base in [0x40u32, 0x100, 0xFF80, 0x1F600] {
                // A NUL in b too: the byte an element of a absent from b must never take.
                let b: Vec<u32> = (0..distinct).map(|k| base + k).chain([0]).collect();
                let a: Vec<u32> = b.iter().rev().chain(&[base + 1000]).copied().collect();
                let fits = remap.remap(&a, &b, &mut ra, &mut rb);
                assert_eq!(fits, distinct < 255, "{distinct} from {base:#x}");
                if fits {
                    for (x, &rx) in a.iter().zip(&ra) {
                        for (y, &ry) in b.iter().zip(&rb) {
                            assert_eq!(x == y, rx == ry, "{x} {y} -> {rx} {ry}");
                        }
                    }
                }
            }
        }
    }

    thread_local! {
        /// Set by a test to take the SSE2 paths on a CPU with AVX2.
        pub static SSE2_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    #[test]
    fn every_search_agrees_with_difflib() {
        every_search_case();
    }

    #[test]
    fn every_search_agrees_with_difflib_without_avx2() {
        SSE2_ONLY.with(|only| only.set(true));
        every_search_case();
    }

    /// The byte searches' limits: ranges either side of `LANE_ROWS_MAX` rows (byte row offsets), of
    /// each vector count's width (either way round: tall ranges run transposed), of
    /// `DENSE_MAX_WIDTH` and of `ANCHOR_MIN_RUN`, with the longest run planted to end on
    /// the last row, and small alphabets for ties between runs ending on the same row or in the
    /// same column.
    #[test]
    fn byte_dp_row_and_width_limits() {
        let mut rng = Rng(0x5EED_F1A7);
        let mut side = BSide::<u8>::default();
        let mut m = Matcher::new();
        for rows in [
            1, 2, 31, 32, 33, 64, 65, 127, 128, 129, 253, 254, 255, 256, 257, 300,
        ] {
            for width in [
                1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 97, 127, 128, 129, 200, 255,
            ] {
                for trial in 0..9 {
                    let alphabet = [2, 3, 4][trial % 3];
                    let mut a: Vec<u8> = (0..rows)
                        .map(|_| b'a' + rng.below(alphabet) as u8)
                        .collect();
                    let mut b: Vec<u8> = (0..width)
                        .map(|_| b'a' + rng.below(alphabet) as u8)
                        .collect();
                    if trial >= 3 {
                        // A run of a letter outside the alphabet, ending on a's last row: of
                        // any length, or either side of ANCHOR_MIN_RUN.
                        let k = if trial >= 6 {
                            (ANCHOR_MIN_RUN + trial - 7).min(rows.min(width))
                        } else {
                            1 + rng.below(rows.min(width))
                        };
                        let at = rng.below(width - k + 1);
                        a[rows - k..].fill(b'z');
                        b[at..at + k].fill(b'z');
                    }
                    side.rebuild(&b, false, None);
                    m.set_a(&a, &side);
                    let (a32, b32): (Vec<u32>, Vec<u32>) = (
                        a.iter().map(|&x| x as u32).collect(),
                        b.iter().map(|&x| x as u32).collect(),
                    );
                    for window in [(0, rows, 0, width), (rows / 3, rows, width / 4, width)] {
                        assert_eq!(
                            m.find_longest_match(&side, window.0, window.1, window.2, window.3),
                            difflib_longest(&a32, &b32, false, window),
                            "{rows} x {width}, trial {trial}, window {window:?}"
                        );
                    }
                }
            }
        }
    }

    /// Random labels and edits of them (long shared runs, repeats, small alphabets, lengths either
    /// side of every search's limits), on one reused `BSide` and `Matcher` per element type, so the
    /// buffer resets between different `b`s are exercised too.
    fn every_search_case() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut side8 = BSide::<u8>::default();
        let mut side32 = BSide::<u32>::default();
        let mut m = Matcher::new();
        for case in 0..3000 {
            let alphabet = [2, 3, 5, 26, 200][rng.below(5)];
            let len = [0, 1, 7, 16, 17, 33, 64, 66, 129, 190, 260, 300][rng.below(12)];
            let a: Vec<u32> = (0..len).map(|_| rng.below(alphabet) as u32 + 97).collect();
            // b: an edit of a (shared runs) or independent text.
            let b: Vec<u32> = if rng.below(3) > 0 {
                let mut b = a.clone();
                for _ in 0..rng.below(8) {
                    let at = rng.below(b.len() + 1);
                    match rng.below(3) {
                        0 if at < b.len() => {
                            b.remove(at);
                        }
                        1 => b.insert(at, rng.below(alphabet) as u32 + 97),
                        _ if at < b.len() => b[at] = rng.below(alphabet) as u32 + 97,
                        _ => {}
                    }
                }
                b
            } else {
                (0..rng.below(300))
                    .map(|_| rng.below(alphabet) as u32 + 97)
                    .collect()
            };
            let autojunk = case % 2 == 0;
            let a8: Vec<u8> = a.iter().map(|&x| x as u8).collect();
            let b8: Vec<u8> = b.iter().map(|&x| x as u8).collect();
            side8.rebuild(&b8, autojunk, None);
            side32.rebuild(&b, autojunk, None);
            let windows = random_windows(&mut rng, a.len(), b.len());
            for w in windows {
                let want = difflib_longest(&a, &b, autojunk, w);
                m.set_a(&a8, &side8);
                assert_eq!(
                    m.find_longest_match(&side8, w.0, w.1, w.2, w.3),
                    want,
                    "bytes {a8:?} {b8:?} {w:?}"
                );
                m.set_a(&a, &side32);
                assert_eq!(
                    m.find_longest_match(&side32, w.0, w.1, w.2, w.3),
                    want,
                    "wide {a:?} {b:?} {w:?}"
                );
            }
            // The whole recursion (its shortcuts too, such as the greedy one-element ranges).
            let want = difflib_blocks_with_junk(&a, &b, autojunk, |_| false);
            let total: usize = want.iter().map(|x| x.2).sum();
            m.set_a(&a8, &side8);
            assert_eq!(m.matching_blocks(&side8), want, "bytes {a8:?} {b8:?}");
            assert_eq!(m.matches(&side8), total, "bytes {a8:?} {b8:?}");
            m.set_a(&a, &side32);
            assert_eq!(m.matching_blocks(&side32), want, "wide {a:?} {b:?}");
            assert_eq!(m.matches(&side32), total, "wide {a:?} {b:?}");
        }
    }

    #[test]
    fn known_difflib_values() {
        // Values printed by CPython 3.11's difflib.
        assert_eq!(r("abcd", "bcde"), 0.75);
        assert_eq!(r("", ""), 1.0);
        assert_eq!(r("a", ""), 0.0);
        assert_eq!(
            r(
                "private Thread currentThread;",
                "private volatile Thread currentThread;"
            ),
            0.8656716417910447
        );
        assert_eq!(
            matching_blocks(b"abxcd", b"abcd", true),
            vec![(0, 0, 2), (3, 2, 2)]
        );
    }

    #[test]
    fn asymmetry_is_difflib_s() {
        // difflib's ratio depends on argument order; both orders match CPython.
        assert_eq!(r("tide", "diet"), 0.25);
        assert_eq!(r("diet", "tide"), 0.5);
    }

    #[test]
    fn longest_match_tie_breaks() {
        let side = BSide::new(b"ab ab", false);
        let mut m = Matcher::new();
        m.set_a(b" abcd", &side);
        assert_eq!(m.find_longest_match(&side, 0, 5, 0, 5), (0, 2, 3));
        let side = BSide::new(b"abcd", false);
        m.set_a(b"abxab", &side);
        assert_eq!(m.find_longest_match(&side, 0, 5, 0, 4), (0, 0, 2));
    }

    #[test]
    fn first_positions_of_indexed_ids_only() {
        // Dense ids in first-occurrence order; 3 is popular in a b of 300 (more than 300 / 100 + 1
        // times), 1 is junk: those two are not in b2j and have no first position.
        let mut ids: Vec<u32> = vec![0, 1, 2, 0, 1];
        ids.extend(std::iter::repeat_n(3, 10));
        ids.extend(4..289);
        ids.extend([2, 3, 0]);
        let mut counts = vec![0u32; 289];
        for &id in &ids {
            counts[id as usize] += 1;
        }
        let side = BSide::of_dense_ids(ids.clone(), counts, true, Some(&mut |id| id == 1));
        assert!(side.popular_elements() == [3] && side.junk_elements() == [1]);
        for id in 0..289u32 {
            let first = ids
                .iter()
                .position(|&x| x == id)
                .filter(|_| id != 1 && id != 3);
            assert_eq!(side.first_position(id), first, "id {id}");
        }
        assert_eq!(side.first_position(289), None);
        let b2j: Vec<(u32, Vec<u32>)> = side.b2j();
        assert_eq!(b2j.len(), 287);
        for (id, positions) in b2j {
            let expected: Vec<u32> = (0..ids.len() as u32)
                .filter(|&j| ids[j as usize] == id)
                .collect();
            assert_eq!(positions, expected, "id {id}");
        }
    }

    #[test]
    fn popular_elements_are_dropped_from_the_index_only() {
        let b: Vec<u8> = std::iter::repeat_n(b'a', 300).chain(*b"xyz").collect();
        let side = BSide::new(&b, true);
        assert_eq!(side.popular_elements(), vec![b'a']);
        // Identical sequences still match completely: the extension walks over popular elements.
        let mut m = Matcher::new();
        m.set_a(&b, &side);
        assert_eq!(m.matches(&side), b.len());
        let side = BSide::new(&b, false);
        assert!(side.popular_elements().is_empty());
    }

    #[test]
    fn junk_extension() {
        // isjunk = " ": CPython gives 0.9333333333333333 (2 * 7 / 15) for these.
        let a = b"a b c d";
        let b = b"a  b c d";
        let mut side = BSide::default();
        side.rebuild(b, true, Some(&mut |c| c == b' '));
        let mut m = Matcher::new();
        m.set_a(a, &side);
        let got = ratio_of(m.matches(&side), a.len() + b.len());
        assert_eq!(got, 2.0 * 7.0 / 15.0);
        assert_eq!(side.junk_elements(), vec![b' ']);
    }

    #[test]
    fn threshold_decision_agrees_with_ratio() {
        let words = [
            "uses pytest and ruff",
            "uses pytest and ruff for python",
            "prefers dark mode",
            "abcabcabc",
        ];
        let mut m = Matcher::new();
        for a in words {
            for b in words {
                let side = BSide::new(b.as_bytes(), true);
                m.set_a(a.as_bytes(), &side);
                let exact = ratio_of(m.matches(&side), a.len() + b.len());
                for t in [0.0, 0.3, 0.5, exact, 0.85, 0.9, 1.0, f64::NAN, 1.5, -1.0] {
                    m.set_a(a.as_bytes(), &side);
                    assert_eq!(m.ratio_at_least(&side, t), exact >= t, "{a:?} {b:?} {t}");
                }
            }
        }
    }

    /// A search cancelled part way stops (whatever the strategy: dense rows, anchors, the sparse
    /// DP with junk, line ids) and leaves the matcher's buffers as a finished one does: the next
    /// search on it gives difflib's answer.
    #[test]
    fn a_cancelled_search_stops_and_leaves_the_matcher_reusable() {
        use crate::cancel::Cancel;
        let mut rng = crate::test_rng::Rng(4242);
        let long = |rng: &mut crate::test_rng::Rng, n: usize, k: usize| -> Vec<u8> {
            (0..n).map(|_| b"abcd"[rng.below(k)]).collect()
        };
        let (a, b) = (long(&mut rng, 200_000, 4), long(&mut rng, 200_000, 4));
        let ids_a: Vec<u32> = a.iter().map(|&c| c as u32 % 3).collect();
        let ids_b: Vec<u32> = b.iter().map(|&c| c as u32 % 3).collect();
        let small: Vec<(Vec<u8>, Vec<u8>)> = (0..50)
            .map(|_| {
                let (la, lb) = (rng.below(300), rng.below(300));
                (long(&mut rng, la, 3), long(&mut rng, lb, 3))
            })
            .collect();
        for autojunk in [false, true] {
            let mut m = Matcher::new();
            for round in 0..2 {
                let cancel = Cancel::new();
                let stopper = cancel.clone();
                let timer = std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(20 * round));
                    stopper.cancel();
                });
                m.set_cancel(&cancel);
                let side = BSide::new(&b, autojunk);
                m.set_a(&a, &side);
                m.matching_blocks(&side);
                timer.join().unwrap();
                assert!(m.stopped());
                let side = BSide::new(&ids_b, autojunk);
                m.set_a(&ids_a, &side);
                assert!(!m.ratio_at_least(&side, 0.5) || m.stopped());
                m.set_cancel(&Cancel::never());
                for (x, y) in &small {
                    let side = BSide::new(y, autojunk);
                    m.set_a(x, &side);
                    let want = ratio(x, y, autojunk);
                    assert_eq!(ratio_of(m.matches(&side), x.len() + y.len()), want);
                }
            }
        }
    }

    #[test]
    fn wide_and_narrow_agree() {
        let a = "prefers dark mode in every editor";
        let b = "prefers a dark theme in editors";
        let aw: Vec<u32> = a.chars().map(|c| c as u32).collect();
        let bw: Vec<u32> = b.chars().map(|c| c as u32).collect();
        assert_eq!(
            ratio(&aw, &bw, true),
            ratio(a.as_bytes(), b.as_bytes(), true)
        );
        assert_eq!(
            quick_ratio(&aw, &bw).unwrap(),
            quick_ratio(a.as_bytes(), b.as_bytes()).unwrap()
        );
    }
}
