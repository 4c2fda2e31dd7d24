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
//! Measured with `MEMDEDUP_JOIN_CORPUS=<one label per line> cargo test --release --lib
//! join_real_corpus_timing -- --ignored --nocapture` (`MEMDEDUP_JOIN_LIMIT` takes the first lines,
//! `MEMDEDUP_JOIN_THRESHOLD` another threshold, `MEMDEDUP_JOIN_ALL_LINES` keeps non-ASCII lines,
//! `MEMDEDUP_JOIN_SKIP_BRUTE` skips the check against brute force on the first 5,000; it prints [`JoinStats`] and CPU and wall times), release, 2 cores of an AMD EPYC VM shared with
//! other jobs (load average 1-1.5 during these runs: wall times vary with that load, CPU times
//! less), default contract (0.85, 16). RSS is the whole test process (labels, output pairs, brute
//! check).
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
//! The scan is quadratic in the window (about 31% of all pairs at 0.85) with a sub-nanosecond
//! constant; at low thresholds, where the bounds say little and many pairs truly match, it
//! degrades (46,000 labels: 10.8 s at 0.7, 105 s at 0.5). What was tried instead and dropped (a
//! q-gram prefix filter, a bigram histogram, ...) is in docs/perf.md.

mod contain;
mod decide;
mod expand;
mod groups;
#[cfg(test)]
mod tests;
mod window;

use rayon::prelude::*;

use crate::alloc;
use crate::cancel::Cancel;
use crate::contract::MatchParams;
use crate::error::{Error, Result};
use crate::matcher::Matcher;
use crate::text::{Query, Text};

use groups::{self_pairs, Groups};
use window::Order;

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

    /// The sums of two stats' fields (the work of two workers, or of two phases).
    fn add(self, o: JoinStats) -> JoinStats {
        JoinStats {
            labels: self.labels + o.labels,
            groups: self.groups + o.groups,
            window_pairs: self.window_pairs + o.window_pairs,
            hist_passed: self.hist_passed + o.hist_passed,
            lcs_passed: self.lcs_passed + o.lcs_passed,
            containment_candidates: self.containment_candidates + o.containment_candidates,
            decisions: self.decisions + o.decisions,
            group_pairs: self.group_pairs + o.group_pairs,
            seconds_groups: self.seconds_groups + o.seconds_groups,
            seconds_prepare: self.seconds_prepare + o.seconds_prepare,
            seconds_ratio: self.seconds_ratio + o.seconds_ratio,
            seconds_containment: self.seconds_containment + o.seconds_containment,
            seconds_sort: self.seconds_sort + o.seconds_sort,
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
    joined(labels, params, cancel)?.pairs(cancel)
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

/// [`joined`] with its stats.
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
    let empty = alloc::from_fn(groups.reps.len(), |g| groups.reps[g].is_empty())?;
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
    let mut pairs = self_pairs(&groups, params)?;
    let order = Order::new(&groups)?;
    cancel.check()?;
    let (found, st) = join_distinct(&groups, &order, params, cancel)?;
    pairs.try_reserve(found.len())?;
    pairs.extend(found);
    stats = stats.add(st);
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
    let mut group_pairs = alloc::copy_of(group_pairs)?;
    group_pairs.sort_unstable();
    let joined = Joined {
        group_of_label: alloc::copy_of(group_of_label)?,
        group_pairs,
        every_pair: false,
        empty: alloc::filled(false, ngroups)?,
    };
    joined.pairs(cancel)
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

/// The matching ordered pairs of distinct non-empty groups, unsorted, possibly repeated: those of
/// the ratio rule, then those of the containment rule.
fn join_distinct(
    groups: &Groups,
    order: &Order,
    p: &MatchParams,
    cancel: &Cancel,
) -> Result<(Vec<(u32, u32)>, JoinStats)> {
    let (found, ratio_stats) = window::ratio_pairs(groups, order, p, cancel)?;
    cancel.check()?;
    let t1 = std::time::Instant::now();
    let (cont_found, mut cont_stats) = contain::containment_pairs(groups, order, p, cancel)?;
    cancel.check()?;
    cont_stats.seconds_containment = t1.elapsed().as_secs_f64();
    Ok((
        found.append(cont_found).into_pairs()?,
        ratio_stats.add(cont_stats),
    ))
}
