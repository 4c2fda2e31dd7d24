//! The exact all-pairs join: every pair `(i, j)`, `i < j`, with `labels_match(labels[i], labels[j])`
//! (the earlier label is the stored one), with no prefix gate: exactly the pairs brute force
//! ([`join_brute`]) returns, at a small fraction of its cost.
//!
//! API: [`join`] (all pairs, sorted), [`join_groups`] / [`join_groups_with_stats`] (identical labels
//! collapsed into groups, so a label repeated 4,910 times costs one group, not 12 million pairs),
//! [`expand_groups`] (groups back to pairs), [`join_brute`] (the quadratic oracle).
//!
//! # How, and why no pair is lost
//!
//! Every filter below is a necessary condition of the rule it prunes for (ratio or containment),
//! proven in place; a pair is dropped only when neither rule can hold, and every pair that survives
//! is decided by the contract itself. `t` is the threshold, `L = la + lb`, `M` the total size of
//! difflib's matching blocks (`ratio = 2.0 * M / L` in f64, stored label first).
//!
//! 1. **Exact duplicates.** Labels with the same code points form a group (a `Wide` text whose code
//!    points all fit a byte is keyed as the equal `Narrow` one). Two equal labels have ratio exactly
//!    1.0 (the matching blocks cover both) and each contains the other, so they match iff non-empty
//!    and (`1.0 >= t` or `len >= min_chars`). Between two groups the answer depends only on the two
//!    texts and on which is stored, so it is decided once per ordered group pair that some label
//!    pair realises (`first(g) < last(h)`), and expanded.
//! 2. **Length filter.** `M <= min(la, lb)`, and `ratio_of(M, L)` is monotone in `M` (exact
//!    numerator, correctly rounded division), so the ratio rule needs `ratio_of(min(la, lb), L) >=
//!    t`, evaluated exactly as the contract evaluates it. For a given length this allows an interval
//!    of partner lengths (`2 lb / (la + lb)` is monotone on each side of `la`); distinct labels are
//!    processed in (length, group) order, so the shorter partners form a range of positions: the
//!    label's *window*. `Mmin(L)` is the least `M` with `ratio_of(M, L) >= t`.
//! 3. **Ratio rule: window scan with bounds on `M`.** Every label is compared with every earlier
//!    label of its window, by three upper bounds on `M`, cheapest first:
//!    - *character histograms*: matched elements are equal and at distinct positions, so `M` is at
//!      most the multiset intersection of the two labels' characters (`quick_ratio`'s bound); merging
//!      characters into buckets only raises it (`min(x1 + x2, y1 + y2) >= min(x1, y1) + min(x2,
//!      y2)`), so `Σ_b min(ha[b], hb[b]) >= M` for any bucketing. Two are used: 16 buckets (two labels
//!      per AVX2 register), then 32 on what passes. Labels over 255 elements skip them (byte counts).
//!    - *LCS*: the matching blocks are disjoint and increasing in both labels, so they form a common
//!      subsequence: `LCS >= M`. Computed bit-parallel (Hyyrö) on the labels folded to bytes
//!      (`fold`: equal elements fold equally, so folding cannot shorten a common subsequence), with
//!      an early exit once the LCS of a prefix settles the bound.
//!
//!    A pair is dropped when a bound is below `Mmin(L)`.
//! 4. **Containment rule.** The shorter label `s` has `>= mc = max(min_chars, 1)` elements and occurs
//!    in the longer `l`, so every `mc`-gram of `s` is one of `l`, and stays so under any function of
//!    the gram (they are hashed): `l` is in the posting list of `s`'s rarest hashed `mc`-gram, which
//!    `s` probes, testing each longer label there by substring search. (A longer gram is never more
//!    frequent than a gram inside it, so `q = mc` is the most selective; every eligible `s` has a
//!    gram, so no short label needs a fallback.) Distinct labels of equal length cannot contain each
//!    other.
//! 5. **Decisions.** Each surviving pair is decided by `contract::labels_match` in each realised
//!    direction, exactly as `Query::matches` decides it (bytes when both labels are narrow, code
//!    points otherwise); the incoming side is prepared once per label and rebuilt in place.
//!
//! A threshold `<= 0` is met by every ratio (never negative): then every pair of non-empty labels
//! matches, without decisions. The output is sorted and deduplicated, and each block of labels is
//! processed the same way on any thread, so the result does not depend on the thread count.
//!
//! # Performance notes
//!
//! Measured with `join_real_corpus_timing` (release, 2 cores of an AMD EPYC VM shared with other
//! jobs, load average 1-1.5 during these runs: wall times vary with that load, CPU times less),
//! default contract (0.85, 16). RSS is the whole test process (labels, output pairs, brute check).
//!
//! | input | labels (distinct) | pairs | window pairs | histograms pass | LCS passes | join_groups + expansion | CPU | peak RSS |
//! | --- | --- | --- | --- | --- | --- | --- | --- | --- |
//! | first 50,000 lines, ASCII | 46,000 (42,774) | 238,540 | 2.8e8 | 860,177 | 146,371 | 0.50-0.59 s + 0.01 s | 1.0 s | 34 MB |
//! | all lines, ASCII | 788,422 (693,407) | 35,409,715 | 7.4e10 | 61.4M | 1.08M | 46.7 s + 1.7 s | 94 s | 762 MB |
//! | all 841,708 lines | 841,708 (743,334) | 35,510,302 | 8.3e10 | 71.6M | 1.09M | 53.6 s + 1.8 s | 107 s | 771 MB |
//!
//! (The last row lower-cases non-ASCII lines with Rust's `to_lowercase`, not Python's: timing
//! only.) On the full corpus 91% of the wall time is the ratio rule, 5% the containment rule (a
//! sort of 37M hashed grams, 195k substring tests), 3% expanding groups to pairs, the rest
//! grouping, histograms and sorting. Within the ratio rule (profiled on 200,000 lines, one
//! thread): ~35% the coarse histogram over every window pair (~0.45 ns a pair), ~28% the fine
//! histogram over the 1.5% the coarse one passes (~20 ns each: scattered loads and mispredicted
//! branches), ~21% the LCS bound, ~16% the contract's decisions. The answers are dominated by
//! families of templated summaries ("alibaba cloud X (date) sdk library for python"): 1.08M of
//! the 1.09M pairs that pass the LCS bound match.
//!
//! What did not work (see docs/perf.md, "The join's q-gram prefix filter (removed)"): a q-gram
//! prefix filter as the candidate generator. Also measured and dropped: a
//! 128-bucket bigram histogram between the character histograms and the LCS (passed 80% of what
//! it saw), and collecting the coarse survivors before the fine check (slower). The scan is
//! quadratic in the window (about 31% of all pairs at 0.85) with a sub-nanosecond constant; at low
//! thresholds, where the bounds say little and many pairs truly match, it degrades (46,000 labels:
//! 10.8 s at 0.7, 105 s at 0.5).

use std::borrow::Cow;
use std::collections::HashMap;

use rayon::prelude::*;

use crate::alloc;
use crate::bounds::{fold, m_min, Lcs};
use crate::cancel::Cancel;
use crate::contract::{self, MatchParams};
use crate::error::{Error, Result};
use crate::histogram::{coarse_filter_run, coarse_histogram, histogram, BUCKETS, COARSE};
use crate::matcher::{ratio_of, BSide, Matcher};
use crate::simd::histogram::prefetch_slice;
use crate::sym::Sym;
use crate::text::{Query, Text};

/// What a join did, for measurements: counts at each stage and wall-clock seconds per phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JoinStats {
    /// Input labels.
    pub labels: usize,
    /// Groups of identical labels (the empty label included when present).
    pub groups: usize,
    /// Pairs of distinct labels compared by the window scan (histogram bound).
    pub window_pairs: u64,
    /// Of those, pairs within the character-histogram bounds.
    pub hist_passed: u64,
    /// Of those, pairs within the LCS bound, decided with the contract.
    pub lcs_passed: u64,
    /// Substring tests made for the containment rule.
    pub containment_candidates: u64,
    /// Contract decisions made (one per realised direction of each decided pair).
    pub decisions: u64,
    /// Matching ordered group pairs returned (self pairs included).
    pub group_pairs: u64,
    /// Grouping identical labels.
    pub seconds_groups: f64,
    /// Histograms, folded bytes and the length plan.
    pub seconds_prepare: f64,
    /// Candidates and decisions for the ratio rule.
    pub seconds_ratio: f64,
    /// The containment index, probes and substring tests.
    pub seconds_containment: f64,
    /// Sorting and deduplicating the group pairs.
    pub seconds_sort: f64,
}

impl JoinStats {
    /// The counts alone (the timings differ from run to run).
    pub fn counts(&self) -> JoinStats {
        JoinStats {
            seconds_groups: 0.0,
            seconds_prepare: 0.0,
            seconds_ratio: 0.0,
            seconds_containment: 0.0,
            seconds_sort: 0.0,
            ..*self
        }
    }
}

/// Every pair `(i, j)`, `i < j`, with `labels_match(labels[i], labels[j])`, sorted.
///
/// Labels must be normalised (as for `Query`). Equal to [`join_brute`] on every input; the output
/// can be quadratic in size (a label repeated `k` times yields `k (k - 1) / 2` pairs), so callers
/// that only need clusters should use [`join_groups`], and callers that need the pairs somewhere
/// else expand [`Joined`] into their own buffer. Indices are `u32`: at most `u32::MAX` labels.
pub fn join(labels: &[Text], params: &MatchParams, cancel: &Cancel) -> Result<Vec<(u32, u32)>> {
    let joined = joined(labels, params, cancel)?;
    let mut out = alloc::filled([0u32; 2], joined.pair_count(cancel)?)?;
    joined.expand_into(&mut out, cancel)?;
    Ok(out.into_iter().map(|[i, j]| (i, j)).collect())
}

/// The join on groups of identical labels, without materialising every pair.
///
/// Returns `group_of_label` (group ids in order of first occurrence; every label, empty ones too,
/// has a group) and the matching ordered group pairs, sorted: `(g, h)` means every label pair
/// `(i, j)` with `i < j`, `i` in `g` (stored) and `j` in `h` (incoming) matches, and is listed only
/// when at least one such pair exists. `(g, g)` means every pair inside a group of two or more
/// labels matches. Because difflib's ratio depends on the argument order, `(g, h)` and `(h, g)` are
/// decided separately (they almost always agree); for clusters, treat the pairs as undirected edges.
pub fn join_groups(
    labels: &[Text],
    params: &MatchParams,
    cancel: &Cancel,
) -> Result<(Vec<u32>, GroupPairs)> {
    let (of, pairs, _) = join_groups_with_stats(labels, params, cancel)?;
    Ok((of, pairs))
}

/// [`join_groups`] with counts of the work done.
pub fn join_groups_with_stats(
    labels: &[Text],
    params: &MatchParams,
    cancel: &Cancel,
) -> Result<(Vec<u32>, GroupPairs, JoinStats)> {
    let (joined, stats) = join_groups_in(labels, params, cancel)?;
    let pairs = joined.explicit_group_pairs(cancel)?;
    Ok((joined.group_of_label, pairs, stats))
}

/// Ordered group pairs `(stored group, incoming group)`.
pub type GroupPairs = Vec<(u32, u32)>;

/// The join's answer on groups of identical labels, to count and expand into label pairs
/// ([`Joined::pair_count`], [`Joined::expand_into`]) wherever the caller keeps them.
pub struct Joined {
    /// Each label's group, in order of first occurrence (the empty label has one too).
    pub group_of_label: Vec<u32>,
    /// The matching ordered group pairs, sorted (see [`join_groups`]); empty when
    /// `every_pair` says every pair matches.
    group_pairs: Vec<(u32, u32)>,
    /// Every pair of non-empty labels matches (a threshold `<= 0`: every ratio reaches it).
    every_pair: bool,
    /// Whether each group is the empty label.
    empty: Vec<bool>,
}

/// The join of `labels` on groups, ready to be expanded.
pub fn joined(labels: &[Text], params: &MatchParams, cancel: &Cancel) -> Result<Joined> {
    Ok(join_groups_in(labels, params, cancel)?.0)
}

fn join_groups_in(
    labels: &[Text],
    params: &MatchParams,
    cancel: &Cancel,
) -> Result<(Joined, JoinStats)> {
    if labels.len() > u32::MAX as usize {
        return Err(Error::InvalidInput(
            "join takes at most 2**32 - 1 labels".into(),
        ));
    }
    let t0 = std::time::Instant::now();
    let groups = Groups::new(labels, cancel)?;
    let mut stats = JoinStats {
        labels: labels.len(),
        groups: groups.reps.len(),
        seconds_groups: t0.elapsed().as_secs_f64(),
        ..JoinStats::default()
    };
    let empty: Vec<bool> = groups.reps.iter().map(|r| r.is_empty()).collect();
    let t = params.threshold;
    if t <= 0.0 {
        // Every ratio reaches the threshold: every pair of non-empty labels matches.
        return Ok((
            Joined {
                group_of_label: groups.of_label,
                group_pairs: Vec::new(),
                every_pair: true,
                empty,
            },
            stats,
        ));
    }
    let mut pairs = self_pairs(&groups, params);
    let order = Order::new(&groups);
    cancel.check()?;
    let (found, st) = join_distinct(&groups, &order, params, cancel)?;
    pairs.try_reserve(found.len())?;
    pairs.extend(found);
    stats.window_pairs = st.window_pairs;
    stats.hist_passed = st.hist_passed;
    stats.lcs_passed = st.lcs_passed;
    stats.containment_candidates = st.containment_candidates;
    stats.decisions = st.decisions;
    stats.seconds_prepare = st.seconds_prepare;
    stats.seconds_ratio = st.seconds_ratio;
    stats.seconds_containment = st.seconds_containment;
    let t1 = std::time::Instant::now();
    pairs.par_sort_unstable();
    pairs.dedup();
    cancel.check()?;
    stats.seconds_sort = t1.elapsed().as_secs_f64();
    stats.group_pairs = pairs.len() as u64;
    Ok((
        Joined {
            group_of_label: groups.of_label,
            group_pairs: pairs,
            every_pair: false,
            empty,
        },
        stats,
    ))
}

/// Labels whose rows are counted or written between polls of the caller's [`Cancel`].
const EXPAND_CHUNK: usize = 1024;

impl Joined {
    /// The matching ordered group pairs, every one listed (for a threshold `<= 0` too: then every
    /// realised pair of non-empty groups, which can be quadratic in the number of groups).
    fn explicit_group_pairs(&self, cancel: &Cancel) -> Result<Vec<(u32, u32)>> {
        if !self.every_pair {
            return Ok(self.group_pairs.clone());
        }
        let ngroups = self.empty.len();
        let (mut first, mut last, mut size) = (
            vec![u32::MAX; ngroups],
            vec![0u32; ngroups],
            vec![0u32; ngroups],
        );
        for (i, &g) in self.group_of_label.iter().enumerate() {
            let g = g as usize;
            first[g] = first[g].min(i as u32);
            last[g] = i as u32;
            size[g] += 1;
        }
        let mut out = Vec::new();
        for g in 0..ngroups {
            cancel.check()?;
            if self.empty[g] {
                continue;
            }
            for (h, (&last_h, &empty_h)) in last.iter().zip(&self.empty).enumerate() {
                let realised = if g == h {
                    size[g] >= 2
                } else {
                    first[g] < last_h
                };
                if !empty_h && realised {
                    alloc::push(&mut out, (g as u32, h as u32))?;
                }
            }
        }
        Ok(out)
    }

    /// The members of each group, ascending (CSR: group `g`'s are `members[start[g]..start[g + 1]]`).
    fn members(&self) -> Result<(Vec<usize>, Vec<u32>)> {
        let ngroups = self.empty.len();
        let mut start = alloc::filled(0usize, ngroups + 1)?;
        for &g in &self.group_of_label {
            start[g as usize + 1] += 1;
        }
        for g in 0..ngroups {
            start[g + 1] += start[g];
        }
        let mut fill = start.clone();
        let mut members = alloc::filled(0u32, self.group_of_label.len())?;
        for (i, &g) in self.group_of_label.iter().enumerate() {
            members[fill[g as usize]] = i as u32;
            fill[g as usize] += 1;
        }
        Ok((start, members))
    }

    /// For each label, where its row starts in the expanded pairs (and the total, last).
    fn row_starts(&self, members: &(Vec<usize>, Vec<u32>), cancel: &Cancel) -> Result<Vec<usize>> {
        let n = self.group_of_label.len();
        let mut lens: Vec<usize> = alloc::filled(0, n)?;
        lens.par_chunks_mut(EXPAND_CHUNK)
            .enumerate()
            .try_for_each(|(c, chunk)| {
                cancel.check()?;
                for (k, len) in chunk.iter_mut().enumerate() {
                    *len = self.row(c * EXPAND_CHUNK + k, members).len();
                }
                Ok::<(), Error>(())
            })?;
        let mut starts = alloc::with_capacity(n + 1)?;
        let mut total = 0usize;
        for len in lens {
            starts.push(total);
            total = alloc::sum(total, len, "the expanded join")?;
        }
        starts.push(total);
        Ok(starts)
    }

    /// The row of label `i`: the later labels it matches as the stored label, as sorted runs.
    fn row<'m>(&'m self, i: usize, (start, members): &'m (Vec<usize>, Vec<u32>)) -> Row<'m> {
        let g = self.group_of_label[i];
        let of = |h: u32| &members[start[h as usize]..start[h as usize + 1]];
        let after = |h: u32| {
            let m = of(h);
            &m[m.partition_point(|&j| j as usize <= i)..]
        };
        if self.every_pair {
            return Row::Every {
                from: i + 1,
                nonempty: !self.empty[g as usize],
            };
        }
        let from = self.group_pairs.partition_point(|&(a, _)| a < g);
        let to = self.group_pairs.partition_point(|&(a, _)| a <= g);
        Row::Runs(
            self.group_pairs[from..to]
                .iter()
                .map(|&(_, h)| after(h))
                .filter(|run| !run.is_empty())
                .collect(),
        )
    }

    /// How many label pairs the join holds.
    pub fn pair_count(&self, cancel: &Cancel) -> Result<usize> {
        if self.every_pair {
            let nonempty = self
                .group_of_label
                .iter()
                .filter(|&&g| !self.empty[g as usize])
                .count();
            return alloc::product(nonempty, nonempty.saturating_sub(1), "the expanded join")
                .map(|n| n / 2);
        }
        let members = self.members()?;
        Ok(*self.row_starts(&members, cancel)?.last().unwrap_or(&0))
    }

    /// Write every label pair `[i, j]`, `i < j`, sorted, into `out` ([`Joined::pair_count`]
    /// long).
    pub fn expand_into(&self, out: &mut [[u32; 2]], cancel: &Cancel) -> Result<()> {
        let n = self.group_of_label.len();
        let members = self.members()?;
        let starts = if self.every_pair {
            let mut starts = alloc::with_capacity(n + 1)?;
            let mut total = 0usize;
            let mut later = self
                .group_of_label
                .iter()
                .filter(|&&g| !self.empty[g as usize])
                .count();
            for &g in &self.group_of_label {
                starts.push(total);
                if !self.empty[g as usize] {
                    later -= 1;
                    total += later;
                }
            }
            starts.push(total);
            starts
        } else {
            self.row_starts(&members, cancel)?
        };
        if out.len() != starts[n] {
            return Err(Error::InvalidInput(format!(
                "the join has {} pairs, not {}",
                starts[n],
                out.len()
            )));
        }
        // One slice of `out` per chunk of labels, filled in parallel.
        let mut slices = Vec::with_capacity(n.div_ceil(EXPAND_CHUNK));
        let mut rest = out;
        for c in 0..n.div_ceil(EXPAND_CHUNK) {
            let (a, b) = (
                starts[c * EXPAND_CHUNK],
                starts[((c + 1) * EXPAND_CHUNK).min(n)],
            );
            let (head, tail) = rest.split_at_mut(b - a);
            slices.push((c * EXPAND_CHUNK, head));
            rest = tail;
        }
        slices.into_par_iter().try_for_each(|(first, slice)| {
            cancel.check()?;
            let mut at = 0;
            for i in first..(first + EXPAND_CHUNK).min(n) {
                let row_start = at;
                match self.row(i, &members) {
                    Row::Every { from, nonempty } => {
                        if nonempty {
                            for j in from..n {
                                if !self.empty[self.group_of_label[j] as usize] {
                                    slice[at] = [i as u32, j as u32];
                                    at += 1;
                                }
                            }
                        }
                    }
                    Row::Runs(runs) => {
                        for run in &runs {
                            for &j in *run {
                                slice[at] = [i as u32, j];
                                at += 1;
                            }
                        }
                        if runs.len() > 1 {
                            slice[row_start..at].sort_unstable();
                        }
                    }
                }
            }
            Ok(())
        })
    }
}

/// The later labels one label matches as the stored label.
enum Row<'m> {
    /// Every non-empty label from `from` on, when the label itself is `nonempty`.
    Every { from: usize, nonempty: bool },
    /// Sorted runs of labels, one per matching group (sorted together when there are several).
    Runs(Vec<&'m [u32]>),
}

impl Row<'_> {
    fn len(&self) -> usize {
        match self {
            Row::Every { .. } => 0, // counted apart (see `expand_into`)
            Row::Runs(runs) => runs.iter().map(|r| r.len()).sum(),
        }
    }
}

/// Every label pair `(i, j)`, `i < j`, that the group pairs of [`join_groups`] stand for, sorted.
pub fn expand_groups(
    group_of_label: &[u32],
    group_pairs: &[(u32, u32)],
    cancel: &Cancel,
) -> Result<Vec<(u32, u32)>> {
    let ngroups = group_of_label
        .iter()
        .map(|&g| g as usize + 1)
        .max()
        .unwrap_or(0);
    let mut group_pairs = group_pairs.to_vec();
    group_pairs.sort_unstable();
    let joined = Joined {
        group_of_label: group_of_label.to_vec(),
        group_pairs,
        every_pair: false,
        empty: vec![false; ngroups],
    };
    let mut out = alloc::filled([0u32; 2], joined.pair_count(cancel)?)?;
    joined.expand_into(&mut out, cancel)?;
    Ok(out.into_iter().map(|[i, j]| (i, j)).collect())
}

/// The quadratic oracle: `Query::matches` on every pair, in parallel. For tests and tiny inputs.
pub fn join_brute(labels: &[Text], params: &MatchParams) -> Vec<(u32, u32)> {
    let labels = &labels[..labels.len().min(u32::MAX as usize)];
    let mut out: Vec<(u32, u32)> = (0..labels.len())
        .into_par_iter()
        .map_init(Matcher::new, |m, j| {
            let mut q = Query::new(labels[j].clone());
            (0..j)
                .filter(|&i| q.matches(m, &labels[i], params))
                .map(|i| (i as u32, j as u32))
                .collect::<Vec<_>>()
        })
        .flatten_iter()
        .collect();
    out.par_sort_unstable();
    out
}

// ---------------------------------------------------------------------------------------------
// Groups and order

/// A `Wide` text whose code points all fit a byte, as the equal `Narrow` text (the contract works on
/// code points, so the two are the same label).
fn canonical(t: &Text) -> Cow<'_, Text> {
    match t {
        Text::Wide(v) if v.iter().all(|&c| c < 256) => {
            Cow::Owned(Text::Narrow(v.iter().map(|&c| c as u8).collect()))
        }
        _ => Cow::Borrowed(t),
    }
}

/// Identical labels, grouped in order of first occurrence.
struct Groups<'a> {
    of_label: Vec<u32>,
    /// The canonical text of each group.
    reps: Vec<Cow<'a, Text>>,
    first: Vec<u32>,
    last: Vec<u32>,
    size: Vec<u32>,
}

impl<'a> Groups<'a> {
    fn new(labels: &'a [Text], cancel: &Cancel) -> Result<Groups<'a>> {
        let canon: Vec<Cow<'a, Text>> = labels.par_iter().map(canonical).collect();
        let mut of_label = alloc::with_capacity(labels.len())?;
        let mut reps: Vec<Cow<'a, Text>> = Vec::new();
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
                    first.push(i as u32);
                    last.push(i as u32);
                    size.push(0);
                }
                last[g as usize] = i as u32;
                size[g as usize] += 1;
                of_label.push(g);
            }
        }
        // Move the first occurrence of each group out of `canon` (no copies of the texts).
        let mut is_first = vec![false; canon.len()];
        for &f in &first {
            is_first[f as usize] = true;
        }
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
    fn stored_before(&self, g: u32, h: u32) -> bool {
        self.first[g as usize] < self.last[h as usize]
    }
}

/// `(g, g)` for every group of two or more identical non-empty labels that match each other.
fn self_pairs(groups: &Groups, p: &MatchParams) -> Vec<(u32, u32)> {
    (0..groups.reps.len())
        .filter(|&g| {
            let len = groups.reps[g].len();
            groups.size[g] >= 2
                && len > 0
                && (ratio_of(len, 2 * len) >= p.threshold || len >= p.min_chars)
        })
        .map(|g| (g as u32, g as u32))
        .collect()
}

/// The non-empty groups in order of (length, group id): "positions".
struct Order {
    group_at: Vec<u32>,
    len_at: Vec<u32>,
    /// Distinct lengths, ascending, and the first position of each (plus the end).
    lens: Vec<usize>,
    len_start: Vec<usize>,
}

impl Order {
    fn new(groups: &Groups) -> Order {
        let mut group_at: Vec<u32> = (0..groups.reps.len() as u32)
            .filter(|&g| !groups.reps[g as usize].is_empty())
            .collect();
        group_at.par_sort_unstable_by_key(|&g| (groups.reps[g as usize].len(), g));
        let len_at: Vec<u32> = group_at
            .iter()
            .map(|&g| groups.reps[g as usize].len().min(u32::MAX as usize) as u32)
            .collect();
        let (mut lens, mut len_start) = (Vec::new(), Vec::new());
        for (p, &l) in len_at.iter().enumerate() {
            if lens.last() != Some(&(l as usize)) {
                lens.push(l as usize);
                len_start.push(p);
            }
        }
        len_start.push(len_at.len());
        Order {
            group_at,
            len_at,
            lens,
            len_start,
        }
    }

    /// The index into `lens` of the first distinct length `>= l`.
    fn len_index_at_least(&self, l: usize) -> usize {
        self.lens.partition_point(|&x| x < l)
    }
}

// ---------------------------------------------------------------------------------------------
// Bounds

/// Whether the length filter lets labels of lengths `la` and `lb` match by ratio.
#[inline]
fn ratio_possible(la: usize, lb: usize, t: f64) -> bool {
    ratio_of(la.min(lb), la + lb) >= t
}

/// The least `lb` in `1..=la` that the length filter allows with `la` (`2 lb / (la + lb)` grows
/// with `lb`; f64 rounding keeps it monotone). None when not even `la` itself is allowed.
fn shortest_partner(la: usize, t: f64) -> Option<usize> {
    if !ratio_possible(la, la, t) {
        return None;
    }
    let (mut lo, mut hi) = (1usize, la);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ratio_possible(la, mid, t) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// Per distinct length of `order`: the first position of the shortest partner length the length
/// filter allows (`usize::MAX`: none, not even the length itself).
fn window_starts(order: &Order, t: f64) -> Vec<usize> {
    (0..order.lens.len())
        .into_par_iter()
        .map(|d| match shortest_partner(order.lens[d], t) {
            Some(lo) => order.len_start[order.len_index_at_least(lo)],
            None => usize::MAX,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Containment

/// Runs `$body` with `$s` bound to the text's elements (`&Vec<u8>` or `&Vec<u32>`).
macro_rules! with_seq {
    ($t:expr, |$s:ident| $body:expr) => {
        match $t {
            Text::Narrow($s) => $body,
            Text::Wide($s) => $body,
        }
    };
}

/// The containment index: for every label of at least `mc` elements and each distinct hashed
/// `mc`-gram of it, one key `(hash << pos_bits) | position`, sorted, so each (truncated) hash's
/// labels are one ascending run; and for each eligible label the run of its rarest gram.
/// Truncating the hash keeps it a function of the gram, which is all the filter needs.
struct ContainIndex {
    keys: Vec<u64>,
    pos_bits: u32,
    rarest: Vec<(usize, usize)>,
}

/// A polynomial rolling hash of every `q`-gram of `s` (any function of the gram keeps the
/// containment filter lossless; equal grams hash equally).
fn rolling_grams<T: Sym>(s: &[T], q: usize, out: &mut Vec<u64>) {
    const B: u64 = 0x100_0000_01B3;
    if q == 0 || s.len() < q {
        return;
    }
    let mut pow = 1u64;
    for _ in 1..q {
        pow = pow.wrapping_mul(B);
    }
    let mut h = 0u64;
    for (i, &c) in s.iter().enumerate() {
        if i >= q {
            h = h.wrapping_sub((s[i - q].code() as u64 + 1).wrapping_mul(pow));
        }
        h = h.wrapping_mul(B).wrapping_add(c.code() as u64 + 1);
        if i + 1 >= q {
            out.push(h);
        }
    }
}

impl ContainIndex {
    fn new(groups: &Groups, order: &Order, mc: usize) -> ContainIndex {
        let n = order.group_at.len();
        // 2^pos_bits > n, so a position never fills its field and u64::MAX is no key.
        let pos_bits = u64::BITS - (n as u64).leading_zeros();
        let first = order.len_at.partition_point(|&l| (l as usize) < mc);
        let mut off = Vec::with_capacity(n - first + 1);
        off.push(0usize);
        for p in first..n {
            let grams = (order.len_at[p] as usize + 1).saturating_sub(mc);
            off.push(off[p - first] + grams);
        }
        let mut keys = vec![u64::MAX; off[n - first]];
        {
            let mut slices: Vec<&mut [u64]> = Vec::with_capacity(n - first);
            let mut rest: &mut [u64] = &mut keys;
            for k in 0..n - first {
                let (head, tail) = rest.split_at_mut(off[k + 1] - off[k]);
                slices.push(head);
                rest = tail;
            }
            slices
                .into_par_iter()
                .enumerate()
                .for_each_init(Vec::new, |grams, (k, out)| {
                    let p = first + k;
                    grams.clear();
                    with_seq!(groups.reps[order.group_at[p] as usize].as_ref(), |s| {
                        rolling_grams(s, mc, grams)
                    });
                    for (slot, &h) in out.iter_mut().zip(grams.iter()) {
                        *slot = if pos_bits >= 64 {
                            p as u64
                        } else {
                            (h << pos_bits) | p as u64
                        };
                    }
                    // One key per distinct gram: repeats become u64::MAX, dropped after the sort.
                    out.sort_unstable();
                    for i in (1..out.len()).rev() {
                        if out[i] == out[i - 1] {
                            out[i] = u64::MAX;
                        }
                    }
                });
        }
        keys.par_sort_unstable();
        let real = keys.partition_point(|&k| k != u64::MAX);
        keys.truncate(real);
        let hash_of = |k: u64| if pos_bits >= 64 { 0 } else { k >> pos_bits };
        let pos_of = |k: u64| (k & ((1u64 << pos_bits.min(63)) - 1)) as usize;
        let mut rarest = vec![(usize::MAX, 0usize); n];
        let mut k = 0;
        while k < keys.len() {
            let h = hash_of(keys[k]);
            let run = keys[k..].iter().take_while(|&&x| hash_of(x) == h).count();
            for &key in &keys[k..k + run] {
                if let Some(r) = rarest.get_mut(pos_of(key)) {
                    if run < r.0 {
                        *r = (run, k);
                    }
                }
            }
            k += run;
        }
        let rarest = rarest
            .into_iter()
            .map(|(len, at)| {
                if len == usize::MAX {
                    (0, 0)
                } else {
                    (at, at + len)
                }
            })
            .collect();
        ContainIndex {
            keys,
            pos_bits,
            rarest,
        }
    }

    /// The position of a key.
    #[inline]
    fn pos(&self, key: u64) -> usize {
        (key & ((1u64 << self.pos_bits.min(63)) - 1)) as usize
    }
}

// ---------------------------------------------------------------------------------------------
// Verification

/// An incoming label prepared as difflib's `b`, rebuilt in place for each new label.
#[derive(Default)]
struct Prepared {
    narrow: BSide<u8>,
    wide: BSide<u32>,
    /// Which side holds the current label (`None`: not built yet).
    narrow_for: Option<u32>,
    wide_for: Option<u32>,
}

/// Per-worker buffers.
#[derive(Default)]
struct WorkerScratch {
    m: Matcher,
    x_side: Prepared,
    y_side: Prepared,
    stored_wide: Vec<u32>,
    /// One LCS pattern per label of a block (indexed by position % BLOCK), so the labels'
    /// candidates can be decided chunk by chunk without rebuilding patterns.
    lcs: Vec<Lcs>,
    hits: Vec<u32>,
    need: Vec<Option<usize>>,
    cands: Vec<(u32, u32, u32)>,
}

/// Matching group pairs found by one worker, gathered without aborting when memory runs out (the
/// output of a join can be quadratic): a push that cannot grow the vector marks it failed.
#[derive(Default)]
struct Found {
    pairs: Vec<(u32, u32)>,
    failed: bool,
}

impl Found {
    #[inline]
    fn push(&mut self, pair: (u32, u32)) {
        if self.pairs.len() < self.pairs.capacity() || self.pairs.try_reserve(1).is_ok() {
            self.pairs.push(pair);
        } else {
            self.failed = true;
        }
    }

    fn append(mut self, other: Found) -> Found {
        if self.pairs.try_reserve(other.pairs.len()).is_ok() {
            self.pairs.extend(other.pairs);
        } else {
            self.failed = true;
        }
        self.failed |= other.failed;
        self
    }

    fn into_pairs(self) -> Result<Vec<(u32, u32)>> {
        if self.failed {
            return Err(Error::OutOfMemory(
                "the join's matching pairs do not fit in memory".into(),
            ));
        }
        Ok(self.pairs)
    }
}

/// `labels_match(stored, incoming)` exactly as `Query::matches` decides it: on bytes when both texts
/// are narrow, on code points otherwise. `key` identifies `incoming` for the reuse of `side`.
fn decide(
    m: &mut Matcher,
    side: &mut Prepared,
    stored_wide: &mut Vec<u32>,
    stored: &Text,
    incoming: &Text,
    key: u32,
    p: &MatchParams,
) -> bool {
    match (stored, incoming) {
        (Text::Narrow(a), Text::Narrow(b)) => decide_bytes(m, side, a, b, key, p),
        _ => {
            if side.wide_for != Some(key) {
                side.wide.rebuild(&incoming.codepoints(), true, None);
                side.wide_for = Some(key);
            }
            match stored {
                Text::Wide(a) => contract::labels_match(m, a, &side.wide, p),
                Text::Narrow(a) => {
                    stored_wide.clear();
                    stored_wide.extend(a.iter().map(|&c| c as u32));
                    contract::labels_match(m, stored_wide, &side.wide, p)
                }
            }
        }
    }
}

/// [`decide`] for two narrow labels.
fn decide_bytes(
    m: &mut Matcher,
    side: &mut Prepared,
    stored: &[u8],
    incoming: &[u8],
    key: u32,
    p: &MatchParams,
) -> bool {
    if side.narrow_for != Some(key) {
        side.narrow.rebuild(incoming, true, None);
        side.narrow_for = Some(key);
    }
    contract::labels_match(m, stored, &side.narrow, p)
}

/// Whether the shorter of two texts occurs in the longer (on code points).
fn occurs_in(short: &Text, long: &Text) -> bool {
    match (short, long) {
        (Text::Narrow(s), Text::Narrow(l)) => u8::contains(l, s),
        _ => u32::contains(&long.codepoints(), &short.codepoints()),
    }
}

#[derive(Default, Clone, Copy)]
struct Counts {
    window_pairs: u64,
    hist_passed: u64,
    lcs_passed: u64,
    containment_candidates: u64,
    decisions: u64,
    seconds_prepare: f64,
    seconds_ratio: f64,
    seconds_containment: f64,
}

impl Counts {
    fn add(mut self, o: Counts) -> Counts {
        self.window_pairs += o.window_pairs;
        self.hist_passed += o.hist_passed;
        self.lcs_passed += o.lcs_passed;
        self.containment_candidates += o.containment_candidates;
        self.decisions += o.decisions;
        self.seconds_prepare += o.seconds_prepare;
        self.seconds_ratio += o.seconds_ratio;
        self.seconds_containment += o.seconds_containment;
        self
    }
}

// ---------------------------------------------------------------------------------------------
// The join of distinct labels

/// Positions per block of the window scan: their histograms stay in L1 while the window streams.
const BLOCK: usize = 64;

/// What the ratio rule's workers share: the labels in position order, their histograms and folded
/// bytes, and where each length's window starts.
struct Ctx<'g, 'a> {
    /// Polled per chunk of window pairs and of candidates.
    cancel: Cancel,
    groups: &'g Groups<'a>,
    order: &'g Order,
    p: MatchParams,
    /// Each position's index into `order.lens`.
    len_index: Vec<u32>,
    /// Per distinct length, the first position of its window ([`window_starts`]).
    lo_pos: Vec<usize>,
    hist: Vec<[u8; BUCKETS]>,
    coarse: Vec<[u8; COARSE]>,
    hist_ok: Vec<bool>,
    /// Every label folded to bytes ([`fold`]; narrow labels are their own bytes), in position
    /// order: candidates read them from one contiguous buffer instead of chasing each label's
    /// allocation.
    arena: Vec<u8>,
    arena_off: Vec<usize>,
    is_narrow: Vec<bool>,
}

impl<'g, 'a> Ctx<'g, 'a> {
    fn new(groups: &'g Groups<'a>, order: &'g Order, p: &MatchParams, cancel: &Cancel) -> Self {
        let n = order.group_at.len();
        let mut len_index = vec![0u32; n];
        for d in 0..order.lens.len() {
            for x in &mut len_index[order.len_start[d]..order.len_start[d + 1]] {
                *x = d as u32;
            }
        }
        let (hist, hist_ok): (Vec<[u8; BUCKETS]>, Vec<bool>) = (0..n)
            .into_par_iter()
            .map(
                |pos| match histogram(&groups.reps[order.group_at[pos] as usize]) {
                    Some(h) => (h, true),
                    None => ([0; BUCKETS], false),
                },
            )
            .unzip();
        let coarse: Vec<[u8; COARSE]> = (0..n)
            .into_par_iter()
            .map(|pos| {
                coarse_histogram(&groups.reps[order.group_at[pos] as usize]).unwrap_or([0; COARSE])
            })
            .collect();
        let mut arena = Vec::new();
        let mut arena_off = Vec::with_capacity(n + 1);
        let mut is_narrow = Vec::with_capacity(n);
        arena_off.push(0);
        for pos in 0..n {
            let text = groups.reps[order.group_at[pos] as usize].as_ref();
            match text {
                Text::Narrow(v) => arena.extend_from_slice(v),
                Text::Wide(v) => arena.extend(v.iter().map(|&c| fold(c))),
            }
            arena_off.push(arena.len());
            is_narrow.push(matches!(text, Text::Narrow(_)));
        }
        Ctx {
            cancel: cancel.clone(),
            groups,
            order,
            p: *p,
            len_index,
            lo_pos: window_starts(order, p.threshold),
            hist,
            coarse,
            hist_ok,
            arena,
            arena_off,
            is_narrow,
        }
    }

    #[inline]
    fn narrow(&self, pos: usize) -> Option<&[u8]> {
        self.is_narrow[pos].then(|| self.folded(pos))
    }

    /// The label's elements folded to bytes (its own bytes when narrow).
    #[inline]
    fn folded(&self, pos: usize) -> &[u8] {
        &self.arena[self.arena_off[pos]..self.arena_off[pos + 1]]
    }

    #[inline]
    fn text(&self, pos: usize) -> &Text {
        &self.groups.reps[self.order.group_at[pos] as usize]
    }

    /// The first position the length filter lets `x` pair with (`usize::MAX`: none).
    #[inline]
    fn lo_pos(&self, x: usize) -> usize {
        self.lo_pos[self.len_index[x] as usize]
    }

    /// The ratio rule on the block of positions `x0..x1`: every earlier position in the window of
    /// each, through the histogram bounds. The window is read in chunks, each compared with every
    /// label of the block while it is in cache.
    fn scan(&self, sc: &mut WorkerScratch, x0: usize, x1: usize, out: &mut Found, c: &mut Counts) {
        const CHUNK: usize = 256;
        let order = self.order;
        let t = self.p.threshold;
        let Some(lo) = (x0..x1).map(|x| self.lo_pos(x)).min() else {
            return;
        };
        if lo == usize::MAX {
            return;
        }
        let width = x1 - x0;
        for e in self.len_index[lo] as usize..=self.len_index[x1 - 1] as usize {
            let le = order.lens[e];
            // The least M each x of the block needs with a partner of length le (None: le is not
            // in its window). Every length from the shortest partner up to lx passes the filter.
            sc.need.clear();
            sc.need.extend((x0..x1).map(|x| {
                let lx = order.len_at[x] as usize;
                if le <= lx && ratio_possible(lx, le, t) {
                    m_min(lx + le, t)
                } else {
                    None
                }
            }));
            let (run_start, run_end) = (order.len_start[e], order.len_start[e + 1].min(x1 - 1));
            let mut cs = run_start;
            while cs < run_end {
                if self.cancel.is_cancelled() {
                    return;
                }
                let ce = (cs + CHUNK).min(run_end);
                // The fine histograms are read only where the coarse bound passes, scattered over
                // the chunk: ask for all of them now, while the block's labels go through it.
                prefetch_slice(&self.hist[cs..ce]);
                // So are the chunk's bytes, for the LCS bound of its survivors.
                prefetch_slice(&self.arena_off[cs..=ce]);
                prefetch_slice(&self.arena[self.arena_off[cs]..self.arena_off[ce]]);
                for k in 0..width {
                    let x = x0 + k;
                    let Some(need) = sc.need[k] else {
                        continue;
                    };
                    let (a, b) = (cs, ce.min(x));
                    if a >= b {
                        continue;
                    }
                    c.window_pairs += (b - a) as u64;
                    let passed = if self.hist_ok[x] && self.hist_ok[a] {
                        // Histograms are usable for all labels of one length or for none.
                        coarse_filter_run(
                            (&self.coarse[x], &self.hist[x]),
                            (&self.coarse[a..b], &self.hist[a..b]),
                            need,
                            &mut sc.hits,
                        )
                    } else {
                        sc.hits.clear();
                        sc.hits.extend(0..(b - a) as u32);
                        b - a
                    };
                    for &h in &sc.hits[..passed] {
                        sc.cands
                            .push((x as u32, (a + h as usize) as u32, need as u32));
                    }
                }
                // Decide this chunk's survivors now, while its labels' bytes are in cache; they
                // come label by label (one LCS pattern each), partners in memory order.
                let mut cands = std::mem::take(&mut sc.cands);
                for (k, &(x, y, need)) in cands.iter().enumerate() {
                    if k % CHUNK == CHUNK - 1 && self.cancel.is_cancelled() {
                        break;
                    }
                    c.hist_passed += 1;
                    self.candidate(sc, x as usize, y as usize, need as usize, out, c);
                }
                cands.clear();
                sc.cands = cands;
                cs = ce;
            }
        }
    }

    /// A pair the histogram bounds let through (`y` earlier than `x`, `need` = `Mmin(lx + ly)`):
    /// the LCS bound on `M`, then the contract in each realised direction.
    fn candidate(
        &self,
        sc: &mut WorkerScratch,
        x: usize,
        y: usize,
        need: usize,
        out: &mut Found,
        c: &mut Counts,
    ) {
        let order = self.order;
        if sc.lcs.len() < BLOCK {
            sc.lcs.resize_with(BLOCK, Lcs::default);
        }
        let lcs = &mut sc.lcs[x % BLOCK];
        lcs.set_pattern(self.folded(x), x as u32);
        if !lcs.at_least(self.folded(y), need) {
            return;
        }
        let narrow = (self.narrow(x), self.narrow(y));
        c.lcs_passed += 1;
        let groups = self.groups;
        for (stored, incoming) in [(y, x), (x, y)] {
            let (gs, gi) = (order.group_at[stored], order.group_at[incoming]);
            if !groups.stored_before(gs, gi) {
                continue;
            }
            c.decisions += 1;
            let side = if incoming == x {
                &mut sc.x_side
            } else {
                &mut sc.y_side
            };
            let matched = match narrow {
                (Some(a), Some(b)) => {
                    let (s, i) = if stored == x { (a, b) } else { (b, a) };
                    decide_bytes(&mut sc.m, side, s, i, incoming as u32, &self.p)
                }
                _ => decide(
                    &mut sc.m,
                    side,
                    &mut sc.stored_wide,
                    self.text(stored),
                    self.text(incoming),
                    incoming as u32,
                    &self.p,
                ),
            };
            if matched {
                out.push((gs, gi));
            }
        }
    }
}

/// The matching ordered pairs of distinct non-empty groups, unsorted, possibly repeated.
fn join_distinct(
    groups: &Groups,
    order: &Order,
    p: &MatchParams,
    cancel: &Cancel,
) -> Result<(Vec<(u32, u32)>, Counts)> {
    let n = order.group_at.len();
    let mut counts = Counts::default();
    let t0 = std::time::Instant::now();
    let found = {
        let ctx = Ctx::new(groups, order, p, cancel);
        counts.seconds_prepare = t0.elapsed().as_secs_f64();
        cancel.check()?;
        let (found, c) = (0..n.div_ceil(BLOCK))
            .into_par_iter()
            .map_init(
                || {
                    let mut sc = WorkerScratch::default();
                    sc.m.set_cancel(cancel);
                    sc
                },
                |sc, b| {
                    let mut out = Found::default();
                    if cancel.is_cancelled() {
                        return (out, Counts::default());
                    }
                    let (x0, x1) = (b * BLOCK, ((b + 1) * BLOCK).min(n));
                    let mut c = Counts::default();
                    ctx.scan(sc, x0, x1, &mut out, &mut c);
                    (out, c)
                },
            )
            .reduce(
                || (Found::default(), Counts::default()),
                |(v, c), (o, oc)| (v.append(o), c.add(oc)),
            );
        counts = counts.add(c);
        counts.seconds_ratio = t0.elapsed().as_secs_f64() - counts.seconds_prepare;
        found
    };
    cancel.check()?;
    let t1 = std::time::Instant::now();

    // Containment rule: each eligible label probes the run of its rarest mc-gram for longer labels.
    let text = |pos: usize| groups.reps[order.group_at[pos] as usize].as_ref();
    let mc = p.min_chars.max(1);
    let ci = ContainIndex::new(groups, order, mc);
    cancel.check()?;
    let first = order.len_at.partition_point(|&l| (l as usize) < mc);
    let (cont_found, cont_counts) = (first..n)
        .into_par_iter()
        .map(|s| {
            let mut out = Found::default();
            let mut c = Counts::default();
            if cancel.is_cancelled() {
                return (out, c);
            }
            let (a, b) = ci.rarest[s];
            let run = &ci.keys[a..b];
            let from = run.partition_point(|&k| ci.pos(k) <= s);
            let ls = order.len_at[s];
            let gs = order.group_at[s];
            for (k, &key) in run[from..].iter().enumerate() {
                if k % 1024 == 1023 && cancel.is_cancelled() {
                    break;
                }
                let l = ci.pos(key);
                if order.len_at[l] == ls {
                    continue;
                }
                c.containment_candidates += 1;
                if occurs_in(text(s), text(l)) {
                    // Containment is symmetric: both realised directions match.
                    let gl = order.group_at[l];
                    if groups.stored_before(gs, gl) {
                        out.push((gs, gl));
                    }
                    if groups.stored_before(gl, gs) {
                        out.push((gl, gs));
                    }
                }
            }
            (out, c)
        })
        .reduce(
            || (Found::default(), Counts::default()),
            |(v, c), (o, oc)| (v.append(o), c.add(oc)),
        );
    cancel.check()?;
    counts = counts.add(cont_counts);
    counts.seconds_containment = t1.elapsed().as_secs_f64();
    Ok((found.append(cont_found).into_pairs()?, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_rng::Rng;

    /// A random label over `alphabet` of `len` code points.
    fn word(rng: &mut Rng, alphabet: &[u32], len: usize) -> Vec<u32> {
        (0..len)
            .map(|_| alphabet[rng.below(alphabet.len())])
            .collect()
    }

    /// `s` with a few random insertions, deletions and substitutions.
    fn edit(rng: &mut Rng, s: &[u32], alphabet: &[u32], edits: usize) -> Vec<u32> {
        let mut v = s.to_vec();
        for _ in 0..edits {
            let c = alphabet[rng.below(alphabet.len())];
            match rng.below(3) {
                0 => v.insert(rng.below(v.len() + 1), c),
                1 if !v.is_empty() => {
                    v.remove(rng.below(v.len()));
                }
                _ if !v.is_empty() => {
                    let k = rng.below(v.len());
                    v[k] = c;
                }
                _ => v.push(c),
            }
        }
        v
    }

    /// A mixed set: near-duplicates by edits, repeats, substrings, empty and very short labels, long
    /// labels (over 200 elements, so difflib's popular-element rule applies), and wide texts.
    fn corpus(seed: u64, n: usize) -> Vec<Text> {
        let mut rng = Rng(seed | 1);
        let small: Vec<u32> = "ab c".chars().map(|c| c as u32).collect();
        let mid: Vec<u32> = "abcdefgh ".chars().map(|c| c as u32).collect();
        let wide: Vec<u32> = "ab é☕ж".chars().map(|c| c as u32).collect();
        let mut out: Vec<Vec<u32>> = Vec::new();
        let mut wide_flag: Vec<bool> = Vec::new();
        while out.len() < n {
            let kind = rng.below(10);
            let alphabet = match rng.below(3) {
                0 => &small,
                1 => &mid,
                _ => &wide,
            };
            let v = match kind {
                0 => Vec::new(),
                1 => {
                    let len = 1 + rng.below(2);
                    word(&mut rng, alphabet, len)
                }
                2 if !out.is_empty() => out[rng.below(out.len())].clone(),
                3 if !out.is_empty() => {
                    let base = out[rng.below(out.len())].clone();
                    let a = rng.below(base.len() + 1);
                    let b = a + rng.below(base.len() - a + 1);
                    base[a..b].to_vec()
                }
                4 => {
                    let len = 200 + rng.below(60);
                    word(&mut rng, alphabet, len)
                }
                5..=7 if !out.is_empty() => {
                    let base = out[rng.below(out.len())].clone();
                    let e = rng.below(4);
                    edit(&mut rng, &base, alphabet, e)
                }
                _ => {
                    let len = 3 + rng.below(40);
                    word(&mut rng, alphabet, len)
                }
            };
            // Sometimes a Wide text whose code points all fit a byte (equal to the Narrow one).
            wide_flag.push(rng.below(8) == 0);
            out.push(v);
        }
        out.iter()
            .zip(wide_flag)
            .map(|(v, w)| {
                if w {
                    Text::Wide(v.clone())
                } else {
                    Text::from_codepoints(v).unwrap()
                }
            })
            .collect()
    }

    const THRESHOLDS: [f64; 5] = [0.0, 0.5, 0.85, 0.95, 1.0];
    const MIN_CHARS: [usize; 3] = [0, 1, 16];

    /// `join`, and `join_groups` expanded, equal the brute-force oracle.
    fn check(labels: &[Text], p: MatchParams) {
        let never = Cancel::never();
        let brute = join_brute(labels, &p);
        assert!(join(labels, &p, &never).unwrap() == brute, "{p:?} join");
        let (of, groups) = join_groups(labels, &p, &never).unwrap();
        assert!(
            expand_groups(&of, &groups, &never).unwrap() == brute,
            "{p:?} groups"
        );
    }

    #[test]
    fn join_equals_brute_on_random_sets() {
        for seed in 1..=3u64 {
            let labels = corpus(seed * 7919, 150);
            for t in THRESHOLDS {
                for mc in MIN_CHARS {
                    check(
                        &labels,
                        MatchParams {
                            threshold: t,
                            min_chars: mc,
                        },
                    );
                }
            }
        }
    }

    #[test]
    fn join_equals_brute_at_odd_thresholds() {
        let labels = corpus(42, 120);
        for t in [
            -1.0,
            -0.0,
            0.3,
            2.0 / 3.0,
            0.7,
            0.8,
            0.9,
            0.99,
            1.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            for mc in [0, 3, 40] {
                check(
                    &labels,
                    MatchParams {
                        threshold: t,
                        min_chars: mc,
                    },
                );
            }
        }
    }

    #[test]
    fn join_equals_brute_on_near_duplicates() {
        // Many near-duplicates of a few real-looking labels: most window pairs pass the histograms.
        let mut rng = Rng(12345);
        let bases = [
            "a python library for parsing json files quickly",
            "command line tool to manage your dotfiles",
            "add your description here",
            "the official python client for the example api",
        ];
        let alphabet: Vec<u32> = "abcdefghijklmnopqrstuvwxyz "
            .chars()
            .map(|c| c as u32)
            .collect();
        let mut labels = Vec::new();
        for _ in 0..150 {
            let b: Vec<u32> = bases[rng.below(bases.len())]
                .chars()
                .map(|c| c as u32)
                .collect();
            let e = rng.below(8);
            labels.push(Text::from_codepoints(&edit(&mut rng, &b, &alphabet, e)).unwrap());
        }
        for t in [0.6, 0.75, 0.85, 0.95] {
            for mc in [10, 16] {
                check(
                    &labels,
                    MatchParams {
                        threshold: t,
                        min_chars: mc,
                    },
                );
            }
        }
    }

    #[test]
    fn groups_expand_to_the_pairs() {
        let labels: Vec<Text> = ["x", "abc", "", "abc", "abcd", "x", "", "abc"]
            .iter()
            .map(|s| Text::from_text(s))
            .collect();
        let p = MatchParams {
            threshold: 0.85,
            min_chars: 16,
        };
        let never = Cancel::never();
        let (of, pairs) = join_groups(&labels, &p, &never).unwrap();
        assert_eq!(of, vec![0, 1, 2, 1, 3, 0, 2, 1]);
        // "abc" vs "abcd": 6/7 = 0.857 >= 0.85 both ways; "x" x2 and "abc" x3 match themselves.
        assert_eq!(pairs, vec![(0, 0), (1, 1), (1, 3), (3, 1)]);
        assert_eq!(join(&labels, &p, &never).unwrap(), join_brute(&labels, &p));
        assert!(join(&[], &p, &never).unwrap().is_empty());
        assert!(join(&[Text::default()], &p, &never).unwrap().is_empty());
        // At threshold 0 every pair of non-empty labels matches, listed by group pair too.
        let zero = MatchParams {
            threshold: 0.0,
            ..p
        };
        let (_, pairs) = join_groups(&labels, &zero, &never).unwrap();
        assert_eq!(pairs.len(), 8); // "x" and "abc" self pairs, the 6 ordered pairs of 3 groups
        assert_eq!(
            join(&labels, &zero, &never).unwrap(),
            join_brute(&labels, &zero)
        );
    }

    #[test]
    fn a_cancelled_join_stops() {
        let labels = corpus(5, 400);
        let cancel = Cancel::new();
        cancel.cancel();
        for t in [0.0, 0.85] {
            let p = MatchParams {
                threshold: t,
                min_chars: 16,
            };
            assert_eq!(join(&labels, &p, &cancel), Err(Error::Interrupted));
        }
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let labels = corpus(777, 250);
        let p = MatchParams::default();
        let run = |threads: usize| {
            // A pool that cannot be built fails the test: it must not pass without comparing.
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a rayon pool");
            assert_eq!(pool.current_num_threads(), threads);
            pool.install(|| join_groups_with_stats(&labels, &p, &Cancel::never()))
                .unwrap()
        };
        let (one, many) = (run(1), run(4));
        assert!(
            !one.1.is_empty(),
            "the corpus has matching pairs to compare"
        );
        assert_eq!((&one.0, &one.1), (&many.0, &many.1));
        assert_eq!(one.2.counts(), many.2.counts());
    }

    /// This process's CPU time from /proc (Linux; 0 elsewhere): the machine may be shared, so wall
    /// time alone can mislead.
    fn cpu_seconds() -> f64 {
        let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
            return 0.0;
        };
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
        let rest = stat.rsplit(')').next().unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        let tick = |k: usize| f.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        (tick(11) + tick(12)) / 100.0
    }

    /// Reads `MEMDEDUP_JOIN_CORPUS` (one label per line), normalises the ASCII ones, and times the
    /// join: `cargo test --release --lib join_real_corpus_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn join_real_corpus_timing() {
        // A timing harness run on purpose: without its corpus it fails rather than pass idle.
        let path = std::env::var("MEMDEDUP_JOIN_CORPUS")
            .expect("set MEMDEDUP_JOIN_CORPUS to a file with one label per line");
        let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        let mut labels = Vec::new();
        let mut out = Vec::new();
        let mut skipped = 0usize;
        let raw = raw.strip_suffix(b"\n").unwrap_or(&raw);
        // MEMDEDUP_JOIN_ALL_LINES: keep non-ASCII lines too, lower-cased by Rust's `to_lowercase`
        // (close to Python's `str.lower`, not exact: good enough for timing, not for answers).
        let all_lines = std::env::var("MEMDEDUP_JOIN_ALL_LINES").is_ok();
        for line in raw.split(|&b| b == b'\n') {
            if crate::normalise::normalise_ascii(line, &mut out).unwrap() {
                labels.push(Text::Narrow(out.clone()));
            } else if all_lines {
                let lowered: Vec<u32> = String::from_utf8_lossy(line)
                    .to_lowercase()
                    .chars()
                    .map(|c| c as u32)
                    .collect();
                let mut collapsed = Vec::new();
                crate::normalise::collapse_lowered(&lowered, &mut collapsed).unwrap();
                labels.push(Text::from_codepoints(&collapsed).unwrap());
            } else {
                skipped += 1;
            }
        }
        let limit: usize = std::env::var("MEMDEDUP_JOIN_LIMIT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(usize::MAX);
        labels.truncate(limit);
        println!(
            "{} labels ({} non-ASCII lines skipped), {} threads",
            labels.len(),
            skipped,
            rayon::current_num_threads()
        );
        let threshold = std::env::var("MEMDEDUP_JOIN_THRESHOLD")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(crate::contract::DEFAULT_THRESHOLD);
        let p = MatchParams {
            threshold,
            ..MatchParams::default()
        };
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!("{p:?}; load average before: {}", load.trim());
        let cpu0 = cpu_seconds();
        let start = std::time::Instant::now();
        let never = Cancel::never();
        let (joined, stats) = join_groups_in(&labels, &p, &never).unwrap();
        let t_groups = start.elapsed().as_secs_f64();
        let mut pairs = vec![[0u32; 2]; joined.pair_count(&never).unwrap()];
        joined.expand_into(&mut pairs, &never).unwrap();
        let t_all = start.elapsed().as_secs_f64();
        println!("{stats:#?}");
        println!("cpu (user+sys, all threads) {:.3} s", cpu_seconds() - cpu0);
        println!(
            "join_groups {t_groups:.3} s, + expansion {:.3} s = {t_all:.3} s; {} pairs",
            t_all - t_groups,
            pairs.len()
        );
        if std::env::var("MEMDEDUP_JOIN_SKIP_BRUTE").is_ok() {
            return;
        }
        let k = labels.len().min(5000);
        let start = std::time::Instant::now();
        let brute = join_brute(&labels[..k], &p);
        let t_brute = start.elapsed().as_secs_f64();
        let start = std::time::Instant::now();
        let fast = join(&labels[..k], &p, &never).unwrap();
        let t_fast = start.elapsed().as_secs_f64();
        println!(
            "first {k}: {} pairs, brute {t_brute:.3} s, join {t_fast:.3} s",
            brute.len()
        );
        assert!(fast == brute);
    }
}
