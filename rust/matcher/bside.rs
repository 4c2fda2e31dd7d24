//! difflib's index of the second sequence (`b2j`, junk and popular rules), as `__chain_b` builds it.

use super::*;

/// The second sequence prepared once, as difflib's `__chain_b` prepares it.
#[derive(Clone)]
pub struct BSide<T: Sym> {
    pub(super) seq: Vec<T>,
    /// `b[j]` as a dense id (ids are assigned in first-occurrence order, as difflib's `b2j` keys are).
    pub(super) ids: Vec<u32>,
    /// The distinct elements, in first-occurrence order.
    pub(super) elems: Vec<T>,
    /// element -> id for codes below 256, and above.
    pub(super) small: Box<[u32; 256]>,
    pub(super) large: IdMap,
    /// `b2j`: the positions of id `k` are `positions[run_start[k]..][..run_len[k]]`; junk, popular
    /// and absent ids have none.
    pub(super) run_start: Vec<u32>,
    pub(super) run_len: Vec<u32>,
    pub(super) positions: Vec<u32>,
    /// The ids `b` holds, in first-occurrence order (parallel to `elems`).
    pub(super) present: Vec<u32>,
    pub(super) junk: Vec<bool>,
    pub(super) popular: Vec<bool>,
    /// difflib's `fullbcount`: occurrences of each id in `b`, junk and popular included.
    pub(super) counts: Vec<u32>,
    pub(super) any_junk: bool,
    /// No element of `b` is junk or popular: every equal pair of elements is in `b2j`.
    pub(super) all_indexed: bool,
    /// Whether `positions` (difflib's `b2j` lists), `present` and `elems` were built for this `b`;
    /// `rebuild_plain_bytes` skips them.
    pub(super) has_positions: bool,
    /// `b2j` as bitsets when `all_indexed`: bit `j % 64` of `bits[(j / 64) * bit_ids + id]` is set
    /// when `b[j]` has id `id` (word-major, so building needs no multiply and one word of every id
    /// sits together); `words` and `bit_ids` only grow, so a smaller `b` reuses the layout.
    pub(super) bits: Vec<u64>,
    pub(super) words: usize,
    pub(super) bit_ids: usize,
    /// Whether the last `rebuild` set bits (which the next one clears).
    pub(super) has_bits: bool,
    /// Codes are dense ids already (the k-th distinct element of `b` is k): no interning map.
    pub(super) dense_codes: bool,
    /// When some element is junk or popular: `ids` with those positions set to [`UNINDEXED`], so
    /// one compare with an `a` id tells an indexed equal pair (a run of difflib's DP).
    pub(super) run_ids: Vec<u32>,
    /// For byte strings: `b` itself, and 0xFF where `b[j]` is indexed (0 where junk or popular).
    pub(super) bytes: Vec<u8>,
    pub(super) indexed_mask: Vec<u8>,
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

    /// Reserve, fallibly, the buffers a `rebuild` of `n` elements fills (the sequence, its ids,
    /// `b2j`'s positions, the run ids of a `b` with junk or popular elements, the per-id tables
    /// for up to `n` distinct elements, and for byte strings the padded copy and mask), so a `b`
    /// the machine cannot hold is an error here, not an abort inside `rebuild`. What `rebuild`
    /// still allocates is bounded apart from `n`: the bitsets (`BITSET_MAX_WORDS`) and the map
    /// interning code points past 255 (at most one entry per Unicode code point).
    pub fn reserve_for(&mut self, n: usize) -> Result<()> {
        alloc::reserve_total(&mut self.seq, n)?;
        alloc::reserve_total(&mut self.ids, n)?;
        alloc::reserve_total(&mut self.positions, n)?;
        alloc::reserve_total(&mut self.run_ids, n)?;
        // A byte string's ids are its bytes; other sequences have at most one id an element.
        self.reserve_ids(if T::is_byte() { 256 } else { n })?;
        if T::is_byte() {
            let padded = alloc::sum(n, FRONT_PAD + BACK_PAD, "a sequence")?;
            alloc::reserve_total(&mut self.bytes, padded)?;
            alloc::reserve_total(&mut self.indexed_mask, padded)?;
        }
        Ok(())
    }

    /// Reserve, fallibly, the per-id tables for `nids` ids.
    fn reserve_ids(&mut self, nids: usize) -> Result<()> {
        alloc::reserve_total(&mut self.counts, nids)?;
        alloc::reserve_total(&mut self.run_start, nids)?;
        alloc::reserve_total(&mut self.run_len, nids)?;
        alloc::reserve_total(&mut self.junk, nids)?;
        alloc::reserve_total(&mut self.popular, nids)?;
        alloc::reserve_total(&mut self.present, nids)?;
        alloc::reserve_total(&mut self.elems, nids)
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
    pub(super) fn rebuild_coded(
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
    pub(super) fn index_counted(
        &mut self,
        autojunk: bool,
        is_junk: Option<&mut dyn FnMut(T) -> bool>,
    ) {
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
            self.bytes.resize(self.bytes.len() + BACK_PAD, 0);
            self.indexed_mask
                .resize(self.indexed_mask.len() + BACK_PAD, 0);
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
    pub(super) fn rebuild_plain_bytes(&mut self, b: &[T]) {
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
        self.bytes.resize(self.bytes.len() + BACK_PAD, 0);
        self.indexed_mask.clear();
        self.indexed_mask.resize(n + BACK_PAD, 0xFF);
    }

    /// Make `bits` hold `nids` rows wide enough for a `b` of length `n`, all zero outside the rows
    /// the last `b` set (which `rebuild` has cleared).
    pub(super) fn ensure_bit_rows(&mut self, nids: usize, n: usize) {
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
    pub(super) fn bit_word(&self, id: usize, w: usize) -> u64 {
        self.bits[w * self.bit_ids + id]
    }

    pub(super) fn grow_ids(&mut self, nids: usize) {
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

    pub(super) fn intern(&mut self, x: T) -> u32 {
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
    pub(super) fn range_in(&self, id: u32, blo: usize, bhi: usize) -> (usize, usize) {
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
    pub(super) fn is_junk_at(&self, j: usize) -> bool {
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
    ///
    /// The buffers sized by `ids` and `counts` are allocated fallibly: an index the machine
    /// cannot hold is [`crate::Error::OutOfMemory`].
    pub fn of_dense_ids(
        ids: Vec<u32>,
        counts: Vec<u32>,
        autojunk: bool,
        is_junk: Option<&mut dyn FnMut(u32) -> bool>,
    ) -> Result<Self> {
        let distinct = counts.len();
        debug_assert!(ids.iter().all(|&id| (id as usize) < distinct));
        debug_assert_eq!(counts.iter().map(|&c| c as usize).sum::<usize>(), ids.len());
        let n = ids.len();
        let mut side = BSide {
            seq: alloc::copy_of(&ids)?,
            ids,
            counts,
            dense_codes: true,
            ..BSide::default()
        };
        alloc::reserve_total(&mut side.positions, n)?;
        alloc::reserve_total(&mut side.run_ids, n)?;
        side.reserve_ids(distinct)?;
        side.present.extend(0..distinct as u32);
        side.elems.extend(0..distinct as u32);
        side.run_start.resize(distinct, 0);
        side.run_len.resize(distinct, 0);
        side.junk.resize(distinct, false);
        side.popular.resize(distinct, false);
        side.index_counted(autojunk, is_junk);
        Ok(side)
    }
}
