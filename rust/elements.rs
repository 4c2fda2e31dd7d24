//! The distinct elements of a sequence as dense ids in first-occurrence order, looked up as a
//! Python `dict` looks up keys (equal hash, then identity or `==`), so that coding another
//! sequence against them finds exactly what difflib's `b2j.get(a[i])` finds. This is how line
//! diffs code their lines; the elements themselves (Python objects in the bindings) are reached
//! only through [`Elements`].
//!
//! Performance notes (the measurements and what was tried: docs/perf.md, "Element table"): a
//! line diff's `a` mostly runs along `b`, so coding guesses that each item equals `b`'s next
//! element and hashes only where guesses miss; where they mostly miss, items are hashed in blocks
//! whose table slots are prefetched. Slots are 8 bytes (half of the hash, the id).

use crate::alloc;
use crate::error::Error;
use crate::matcher::BSide;

/// The items of one sequence, as the table reads them.
///
/// An item is read once by index ([`Elements::item`]) and handed to the other methods; it
/// borrows the sequence, so none can be held across [`Elements::poll`] (which takes it mutably):
/// the bindings' items are objects a list keeps alive only while no Python code runs.
pub trait Elements {
    /// What the table keeps of a distinct element (the bindings: a reference to the object).
    type Kept;
    /// A failure to hash or compare (the bindings: a Python exception), or to allocate the
    /// table (an [`Error::OutOfMemory`] turned into it).
    type Error: From<Error>;
    /// One item, as read from the sequence.
    type Item<'a>: Copy
    where
        Self: 'a;

    /// How many items there are (read again after each poll).
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Item `i` (below `len()`).
    fn item(&self, i: usize) -> Self::Item<'_>;

    /// Whether an item is of the kind the table takes (the bindings: exactly `str`, or exactly
    /// `bytes`, whose hash and `==` run no Python code). Coding stops at the first that is not.
    fn admits(&self, item: Self::Item<'_>) -> bool;

    /// The hash of an admitted item. Equal items must hash equally, for every sequence coded
    /// against one table.
    fn hash(&self, item: Self::Item<'_>) -> Result<u64, Self::Error>;

    /// Whether an admitted item equals `kept`, an element of equal hash.
    fn equal(&self, kept: &Self::Kept, item: Self::Item<'_>) -> Result<bool, Self::Error>;

    /// Keep an item: the first occurrence of a distinct element.
    fn keep(&self, item: Self::Item<'_>) -> Self::Kept;

    /// Whether hashing reads each item's data, not only its header: items are then prefetched.
    fn reads_data(&self) -> bool {
        false
    }

    /// Ask the CPU to load item `i` (a hint; `i` may be past the end).
    fn prefetch(&self, _i: usize) {}

    /// Ask the CPU to load a kept element (a hint).
    fn prefetch_kept(&self, _kept: &Self::Kept) {}

    /// Called every [`POLL_ITEMS`] items between items: the bindings check for signals here
    /// (which may run Python code, and change the sequence: its length is read again).
    fn poll(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Items between calls of [`Elements::poll`].
pub const POLL_ITEMS: usize = 1 << 14;

/// How many items ahead of its use an item (or a slot) is prefetched.
const PREFETCH_AHEAD: usize = 12;

const EMPTY_SLOT: u32 = u32::MAX;

/// The distinct elements of one sequence, by id.
pub struct ElementTable<K> {
    /// Open addressing: `(hash as u32, id)`, id [`EMPTY_SLOT`] when free.
    slots: Vec<(u32, u32)>,
    /// The distinct elements by id (each one's first occurrence, as `b2j`'s keys are).
    elems: Vec<K>,
}

/// A built table with each item's id and each id's count.
pub struct Built<K> {
    pub table: ElementTable<K>,
    pub ids: Vec<u32>,
    pub counts: Vec<u32>,
}

impl<K> ElementTable<K> {
    /// The table of `items`, or None when some item is not admitted (or there are `u32::MAX` or
    /// more).
    pub fn build<E: Elements<Kept = K>>(items: &mut E) -> Result<Option<Built<K>>, E::Error> {
        let n = items.len();
        if n >= u32::MAX as usize {
            return Ok(None);
        }
        let capacity = (n + n / 2).next_power_of_two().max(16);
        // Every buffer sized by the items is allocated fallibly: pushes beyond `ids` (reserved
        // whole) come once per distinct element.
        let mut table = ElementTable {
            slots: alloc::filled((0, EMPTY_SLOT), capacity)?,
            elems: Vec::new(),
        };
        let mut ids = alloc::with_capacity(n)?;
        let mut counts: Vec<u32> = Vec::new();
        // One item at a time, the next ones prefetched only when hashing reads their data
        // (docs/perf.md: faster than blocks here).
        let prefetch = items.reads_data();
        for i in 0..n {
            if i % POLL_ITEMS == POLL_ITEMS - 1 {
                items.poll()?;
                if items.len() != n {
                    return Ok(None);
                }
            }
            if prefetch {
                items.prefetch(i + PREFETCH_AHEAD);
            }
            let item = items.item(i);
            if !items.admits(item) {
                return Ok(None);
            }
            let hash = items.hash(item)?;
            ids.push(match table.find(items, item, hash)? {
                Ok(id) => {
                    counts[id as usize] += 1;
                    id
                }
                Err(slot) => {
                    let id = table.elems.len() as u32;
                    table.slots[slot] = (hash as u32, id);
                    alloc::push(&mut table.elems, items.keep(item))?;
                    alloc::push(&mut counts, 1)?;
                    id
                }
            });
        }
        Ok(Some(Built { table, ids, counts }))
    }

    /// The distinct elements by id.
    pub fn elements(&self) -> &[K] {
        &self.elems
    }

    /// `Ok(id)` of the element equal to `item` (hash `hash`), else `Err(slot)`: the free slot
    /// where it would go.
    #[inline(always)]
    fn find<'a, E: Elements<Kept = K>>(
        &self,
        items: &'a E,
        item: E::Item<'a>,
        hash: u64,
    ) -> Result<Result<u32, usize>, E::Error> {
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let (slot_hash, id) = self.slots[at];
            if id == EMPTY_SLOT {
                return Ok(Err(at));
            }
            if slot_hash == hash as u32 && equal_out_of_line(items, &self.elems[id as usize], item)?
            {
                return Ok(Ok(id));
            }
            at = (at + 1) & mask;
        }
    }

    /// The ids of `items` (a sequence coded against this table, whose elements hash as the
    /// table's do), `elements().len()` for an element the table lacks, or None when some item is
    /// not admitted (or the items' length changed at a poll); `side` is the index of the
    /// sequence the table was built from.
    ///
    /// Each item is first compared with the element of `b`'s next line, and looked up by hash
    /// only when they differ (the guess then goes on after where the found id first occurs,
    /// unless it is junk or popular, as a blank line is: then it stays). Where guesses mostly miss
    /// (a window with fewer than half right), items are looked up in blocks ([`Self::each_hashed`]),
    /// which still counts what the guesses would have hit, to take them up again.
    pub fn code<E: Elements<Kept = K>>(
        &self,
        items: &mut E,
        side: &BSide<u32>,
    ) -> Result<Option<Vec<u32>>, E::Error> {
        let n = items.len();
        let b_ids = side.seq();
        // Items between decisions to guess or not: guessing is dropped soon where it misses, and
        // blocks run long enough to pay their start.
        const GUESSING_WINDOW: usize = 64;
        const HASHING_WINDOW: usize = 512;
        let absent = self.elems.len() as u32;
        let mut codes = alloc::with_capacity(n)?;
        // The position in `b` whose element the next item is guessed to equal.
        let mut next = 0usize;
        // Where the guess goes on after a missed guess found `id`: past its first occurrence, or
        // where it was for a junk or popular id.
        let after_first = |id: u32, next: usize| side.first_position(id).map_or(next, |j| j + 1);
        let mut guessing = true;
        let prefetch = items.reads_data();
        let mut start = 0;
        let mut since_poll = 0;
        while start < n {
            if since_poll >= POLL_ITEMS {
                since_poll = 0;
                items.poll()?;
                if items.len() != n {
                    return Ok(None);
                }
            }
            let window = if guessing {
                GUESSING_WINDOW
            } else {
                HASHING_WINDOW
            };
            let end = (start + window).min(n);
            since_poll += end - start;
            let mut hits = 0;
            if guessing {
                for i in start..end {
                    if prefetch {
                        items.prefetch(i + PREFETCH_AHEAD);
                        if let Some(&ahead) = b_ids.get(next + PREFETCH_AHEAD) {
                            items.prefetch_kept(&self.elems[ahead as usize]);
                        }
                    }
                    let item = items.item(i);
                    if !items.admits(item) {
                        return Ok(None);
                    }
                    if let Some(&guess) = b_ids.get(next) {
                        if items.equal(&self.elems[guess as usize], item)? {
                            codes.push(guess);
                            next += 1;
                            hits += 1;
                            continue;
                        }
                    }
                    let hash = items.hash(item)?;
                    codes.push(match self.find(items, item, hash)? {
                        Ok(id) => {
                            next = after_first(id, next);
                            id
                        }
                        Err(_) => absent,
                    });
                }
            } else {
                let admitted = self.each_hashed(items, start..end, |table, item, hash| {
                    codes.push(match table.find(items, item, hash)? {
                        Ok(id) if b_ids.get(next) == Some(&id) => {
                            hits += 1;
                            next += 1;
                            id
                        }
                        Ok(id) => {
                            next = after_first(id, next);
                            id
                        }
                        Err(_) => absent,
                    });
                    Ok(())
                })?;
                if !admitted {
                    return Ok(None);
                }
            }
            guessing = 2 * hits >= end - start;
            start = end;
        }
        Ok(Some(codes))
    }

    /// Call `f` with each item of `range` and its hash, in order; false (before calling it on the
    /// rest of a block, whose results the caller then drops) when some item is not admitted.
    ///
    /// Items are taken in blocks: every item's kind and hash first (independent loads, whose cache
    /// misses overlap), each hash's slot prefetched as it is read, then `f` on the block; when
    /// hashing reads the items' data, the items a block ahead are prefetched too.
    #[inline(always)]
    fn each_hashed<'a, E: Elements<Kept = K>>(
        &self,
        items: &'a E,
        range: std::ops::Range<usize>,
        mut f: impl FnMut(&Self, E::Item<'a>, u64) -> Result<(), E::Error>,
    ) -> Result<bool, E::Error> {
        const BLOCK: usize = 16;
        let prefetch_ahead = items.reads_data();
        let mask = self.slots.len() - 1;
        let mut block: [Option<(E::Item<'a>, u64)>; BLOCK] = [None; BLOCK];
        let mut start = range.start;
        while start < range.end {
            let len = BLOCK.min(range.end - start);
            for (k, entry) in block[..len].iter_mut().enumerate() {
                let i = start + k;
                if prefetch_ahead {
                    items.prefetch(i + BLOCK);
                }
                let item = items.item(i);
                if !items.admits(item) {
                    return Ok(false);
                }
                let hash = items.hash(item)?;
                crate::simd::prefetch(&self.slots[hash as usize & mask]);
                *entry = Some((item, hash));
            }
            for &(item, hash) in block[..len].iter().flatten() {
                f(self, item, hash)?;
            }
            start += len;
        }
        Ok(true)
    }
}

/// [`Elements::equal`] kept out of line: `find` compares only on equal hashes, and inlined there
/// too the diffs measured 1-3% slower (docs/perf.md).
#[inline(never)]
fn equal_out_of_line<'a, E: Elements>(
    items: &'a E,
    kept: &E::Kept,
    item: E::Item<'a>,
) -> Result<bool, E::Error> {
    items.equal(kept, item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::hash::{Hash, Hasher};

    /// Strings, with a hash that collides often (to exercise probing) and a few "items" the table
    /// does not admit (`None`).
    struct Lines<'a> {
        items: &'a [Option<&'a str>],
        polls: usize,
        shrink_at_poll: bool,
    }

    impl Elements for Lines<'_> {
        type Kept = String;
        type Error = Error;
        type Item<'a>
            = Option<&'a str>
        where
            Self: 'a;

        fn len(&self) -> usize {
            if self.shrink_at_poll && self.polls > 0 {
                self.items.len() - 1
            } else {
                self.items.len()
            }
        }
        fn item(&self, i: usize) -> Option<&str> {
            self.items[i]
        }
        fn admits(&self, item: Option<&str>) -> bool {
            item.is_some()
        }
        fn hash(&self, item: Option<&str>) -> Result<u64, Error> {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            item.hash(&mut h);
            Ok(h.finish() % 7) // collisions on purpose
        }
        fn equal(&self, kept: &String, item: Option<&str>) -> Result<bool, Error> {
            Ok(item == Some(kept.as_str()))
        }
        fn keep(&self, item: Option<&str>) -> String {
            item.unwrap_or_default().to_string()
        }
        fn poll(&mut self) -> Result<(), Error> {
            self.polls += 1;
            Ok(())
        }
    }

    fn lines<'a>(items: &'a [Option<&'a str>]) -> Lines<'a> {
        Lines {
            items,
            polls: 0,
            shrink_at_poll: false,
        }
    }

    /// Dense first-occurrence ids with a HashMap: what the table must give.
    fn reference(b: &[&str], a: &[&str]) -> (Vec<u32>, Vec<u32>) {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let b_ids: Vec<u32> = b
            .iter()
            .map(|s| {
                let next = ids.len() as u32;
                *ids.entry(s).or_insert(next)
            })
            .collect();
        let absent = ids.len() as u32;
        let a_ids = a.iter().map(|s| *ids.get(s).unwrap_or(&absent)).collect();
        (b_ids, a_ids)
    }

    #[test]
    fn codes_equal_dict_lookups_whatever_the_guesses_do() {
        let mut rng = crate::test_rng::Rng(99);
        let vocab: Vec<String> = (0..40).map(|k| format!("line {k}")).collect();
        for round in 0..60 {
            let n = rng.below(3000);
            let b: Vec<&str> = (0..n)
                .map(|_| vocab[rng.below(vocab.len())].as_str())
                .collect();
            // a: b edited (runs kept, some lines changed, inserted or dropped), or unrelated.
            let a: Vec<&str> = if round % 3 == 0 {
                (0..rng.below(3000))
                    .map(|_| vocab[rng.below(vocab.len())].as_str())
                    .collect()
            } else {
                let mut a = Vec::new();
                for &line in &b {
                    match rng.below(20) {
                        0 => {}
                        1 => a.push(vocab[rng.below(vocab.len())].as_str()),
                        2 => {
                            a.push("a line b lacks");
                            a.push(line);
                        }
                        _ => a.push(line),
                    }
                }
                a
            };
            let b_items: Vec<Option<&str>> = b.iter().map(|&s| Some(s)).collect();
            let a_items: Vec<Option<&str>> = a.iter().map(|&s| Some(s)).collect();
            let built = ElementTable::build(&mut lines(&b_items)).unwrap().unwrap();
            let (b_ref, a_ref) = reference(&b, &a);
            assert_eq!(built.ids, b_ref);
            let distinct = built.table.elements().len();
            assert_eq!(built.counts.len(), distinct);
            assert_eq!(built.counts.iter().sum::<u32>() as usize, b.len());
            let side =
                BSide::of_dense_ids(built.ids.clone(), built.counts.clone(), false, None).unwrap();
            let codes = built
                .table
                .code(&mut lines(&a_items), &side)
                .unwrap()
                .unwrap();
            assert_eq!(codes, a_ref, "round {round}");
        }
    }

    #[test]
    fn an_item_not_admitted_stops_coding() {
        let b = [Some("x"), Some("y"), None];
        assert!(ElementTable::build(&mut lines(&b)).unwrap().is_none());
        let b = [Some("x"), Some("y")];
        let built = ElementTable::build(&mut lines(&b)).unwrap().unwrap();
        let side =
            BSide::of_dense_ids(built.ids.clone(), built.counts.clone(), false, None).unwrap();
        let a = [Some("x"), None, Some("y")];
        assert!(built.table.code(&mut lines(&a), &side).unwrap().is_none());
        let many: Vec<Option<&str>> = (0..3 * POLL_ITEMS).map(|_| Some("x")).collect();
        let mut polled = lines(&many);
        assert!(ElementTable::build(&mut polled).unwrap().is_some());
        assert_eq!(polled.polls, 3);
        // A sequence whose length changes at a poll (Python code ran) is not coded.
        let mut shrinking = Lines {
            shrink_at_poll: true,
            ..lines(&many)
        };
        assert!(ElementTable::build(&mut shrinking).unwrap().is_none());
    }
}
