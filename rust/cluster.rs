//! Clusters straight from the join on groups of identical labels ([`crate::join::join_groups`]),
//! without its label pairs: duplicates settle by their group, and only the pairs between groups are
//! read. On all 841,708 shared PyPI labels the join holds 35.5 million label pairs, 27.1 million of
//! them between labels identical after normalisation; [`crate::batch::clusters`] needs every one.
//!
//! API: [`clusters_from_groups`] (canonical and `via` for each label, as [`crate::batch::clusters`]
//! gives them on the expanded pairs, plus the partner of a member linked only through later labels),
//! [`check_groups`] (the shape of a group join a caller passes in).
//!
//! # The input
//!
//! `group_of_label[i]` is label `i`'s group; `group_pairs` holds ordered group pairs `(g, h)`, and
//! stands for the label pairs `E = {(i, j) : i < j, (group(i), group(j)) in group_pairs}` (the
//! stored label first). [`crate::join::join_groups`] gives exactly that for the join: `(g, h)`,
//! `g != h`, when the two texts match with `g` stored and some `i` of `g` precedes some `j` of `h`;
//! `(g, g)` when `g` has two or more labels and its text matches itself. Below, `first(g)` is the
//! smallest label of `g`, `self(g)` says `(g, g)` is listed and `g` has two or more labels (so
//! every pair inside `g` is in `E`), and a group is *split* when it has two or more labels and not
//! `self(g)` (no pair inside it is in `E`).
//!
//! # Why a split group is alone in a join
//!
//! In a join, a split group has no pair at all. Its text `s` is non-empty with `!(1.0 >= t)` and
//! `len(s) < min_chars` (two equal labels match iff non-empty and `ratio = 1.0 >= t` or `len >=
//! min_chars`; see `contract::settle_cheaply`), or empty. An empty label matches nothing. Else:
//! every ratio is `2M / L` with `M <= min(la, lb) <= L / 2`, so `<= 1.0` (a correctly rounded
//! quotient of a value `<= 1`), and `!(1.0 >= t)` (t above 1, or NaN) leaves `!(r >= t)` for every
//! such `r`: the ratio rule never holds. Containment needs the shorter label (either one on equal
//! lengths) to have `>= min_chars` elements; with `s` in the pair, the shorter has at most
//! `len(s) < min_chars`. So `s` matches no label. [`clusters_from_groups`] does not rely on this: a
//! split group in a pair of labels sends the input to the expansion (below), exact on any input.
//!
//! # Canonical mode on groups
//!
//! Label by label, in index order, `j` joins the smallest earlier *canonical* label `i` with
//! `(i, j)` in `E`, else becomes canonical. With no split group in a pair (as in every join):
//!
//! **Rule.** Take the groups in order of `first`. Group `g` *joins* `c = first(h)` for the `h`
//! with the smallest `first(h) < first(g)` such that `(h, g)` is listed and `h` is *standing*
//! (did not join); else `g` is standing. Then: every label of a joining `g` has canonical and via
//! `c`; of a standing `g`, `first(g)` is canonical, and each later label has canonical and via
//! `first(g)` when `self(g)`, else (a split group) is canonical itself.
//!
//! **Proof**, by induction over labels in index order, with the invariant *the canonical labels
//! before `j` are the `first(h)` of standing groups with `first(h) < j` and the labels of split
//! groups before `j`*. Label `j` of group `g`:
//! - `j = first(g)`. The earlier canonicals are `first(h)` of standing `h` (first before `j`, so
//!   `h` is decided already) and labels of split groups. A label `i < j` of `h != g` pairs with
//!   `j` iff `(h, g)` is listed; a split group's labels pair with none (no split group is in a
//!   pair). So `j` joins `min first(h)` over standing `h`, `first(h) < first(g)`, `(h, g)` listed:
//!   exactly the rule's `c`, and `g` joins `c` iff `j` is not canonical. The invariant holds for
//!   `j + 1` (standing `g` adds `first(g)`).
//! - `j > first(g)`, `g` joins `c`. The canonicals before `first(g)` that pair with `j` are those
//!   that paired with `first(g)` (pairing depends on the groups alone): `c` is the smallest. Any
//!   other candidate is at least `first(g) > c`. So `j` joins `c`.
//! - `j > first(g)`, `g` standing, `self(g)`. `first(g)` is canonical and `(first(g), j)` is in
//!   `E`. A smaller candidate would be a canonical `i < first(g)` pairing with `first(g)` too, and
//!   `g` would have joined. So `j` joins `first(g)`.
//! - `g` split: `g` is in no pair, so nothing pairs with `j`: canonical (the invariant's split
//!   labels).
//!
//! `via` is the canonical joined, as in [`crate::batch::clusters`].
//!
//! # Components mode on groups
//!
//! With no split group in a pair: the labels of a group with `self(g)` are connected, and a listed
//! pair `(g, h)` that some label pair realises (`first(g) < last(h)`) connects the two groups; an
//! unrealised one stands for no pair and is skipped. So the components of labels are the components
//! of groups under the realised pairs (a split group's labels stay apart, each its own), and each
//! canonical is the smallest `first` of its component (the union keeps the smaller root).
//!
//! `via[j]` for a collapsed `j` is the smallest `i < j` with `(i, j)` in `E`. The candidates are
//! `first(g)` when `self(g)` and `first(g) < j` (the smallest label of `g`), and `first(h)` for
//! each listed `(h, g)`, `h != g`, with `first(h) < j`: the smallest is `m(g) = min first(h)` over
//! those pairs when `m(g) < j` (else no `first(h)` is below `j`). So `via[j]` is the smaller of the
//! two, each when present: O(1) per label after one pass over the pairs.
//!
//! A collapsed `j` with no earlier partner is linked only through later labels; its `via` is its
//! smallest partner (as `memdedup.batch.clusters` gives it). Such a `j` is `first(g)` (a later
//! label of `g` has `first(g)` before it); its partners after it are the second label of `g` when
//! `self(g)`, and for each listed `(g, h)`, `h != g`, the smallest label of `h` after `j`.
//!
//! # The expansion
//!
//! When a split group is in a pair of labels (never in a join's output), the rules above do not
//! apply: the groups are expanded into `E` and clustered by [`crate::batch::clusters`].

use crate::alloc;
use crate::batch::{self, ClusterMode};
use crate::cancel::Cancel;
use crate::error::{Error, Result};

/// No label, or no group.
const NONE: u32 = u32::MAX;

/// Items between polls of the caller's [`Cancel`] in the loops over labels, groups or pairs.
const POLL: usize = 1 << 16;

fn poll(k: usize, cancel: &Cancel) -> Result<()> {
    if k % POLL == 0 {
        cancel.check()
    } else {
        Ok(())
    }
}

/// The number of groups of a group join (one more than the largest group id; 0 without labels),
/// after checking its shape: at most `u32::MAX - 1` labels, and every group of a pair held by some
/// label (an error names the first pair that is not).
pub fn check_groups(group_of_label: &[u32], group_pairs: &[(u32, u32)]) -> Result<usize> {
    if group_of_label.len() >= u32::MAX as usize {
        return Err(Error::InvalidInput(format!(
            "clusters takes at most 2**32 - 2 labels, not {}",
            group_of_label.len()
        )));
    }
    let ngroups = group_of_label
        .iter()
        .map(|&g| g as usize + 1)
        .max()
        .unwrap_or(0);
    if let Some(&(g, h)) = group_pairs
        .iter()
        .find(|&&(g, h)| g as usize >= ngroups || h as usize >= ngroups)
    {
        return Err(Error::InvalidInput(format!(
            "group pair ({g}, {h}) is out of range for {ngroups} groups"
        )));
    }
    Ok(ngroups)
}

/// Per group: its first and last label and its size.
struct Spans {
    first: Vec<u32>,
    last: Vec<u32>,
    size: Vec<u32>,
}

impl Spans {
    fn new(group_of_label: &[u32], ngroups: usize, cancel: &Cancel) -> Result<Spans> {
        let mut spans = Spans {
            first: alloc::filled(NONE, ngroups)?,
            last: alloc::filled(0, ngroups)?,
            size: alloc::filled(0, ngroups)?,
        };
        for (i, &g) in group_of_label.iter().enumerate() {
            poll(i, cancel)?;
            let g = g as usize;
            if spans.first[g] == NONE {
                spans.first[g] = i as u32;
            }
            spans.last[g] = i as u32;
            spans.size[g] += 1;
        }
        Ok(spans)
    }

    /// Whether some label of `g` precedes some label of `h` (the pair `(g, h)` stands for a pair of
    /// labels). Groups without labels precede nothing.
    fn realised(&self, g: u32, h: u32) -> bool {
        let (g, h) = (g as usize, h as usize);
        self.size[g] > 0 && self.size[h] > 0 && self.first[g] < self.last[h]
    }
}

/// For each label: its canonical, and the label that justified the collapse (None for a
/// canonical): in `Canonical` mode the canonical itself; in `Components` mode the smallest earlier
/// label it pairs with, else (linked only through later labels) the smallest label it pairs with.
/// Equal to [`crate::batch::clusters`] on the expanded pairs, with that last rule (see the module
/// documentation for the proof). The input's shape is checked ([`check_groups`]).
pub fn clusters_from_groups(
    group_of_label: &[u32],
    group_pairs: &[(u32, u32)],
    mode: ClusterMode,
    cancel: &Cancel,
) -> Result<(Vec<u32>, Vec<Option<u32>>)> {
    let ngroups = check_groups(group_of_label, group_pairs)?;
    let spans = Spans::new(group_of_label, ngroups, cancel)?;
    let mut whole: Vec<bool> = alloc::filled(false, ngroups)?;
    for (k, &(g, h)) in group_pairs.iter().enumerate() {
        poll(k, cancel)?;
        if g == h && spans.size[g as usize] >= 2 {
            whole[g as usize] = true;
        }
    }
    let split = |g: u32| spans.size[g as usize] >= 2 && !whole[g as usize];
    for (k, &(g, h)) in group_pairs.iter().enumerate() {
        poll(k, cancel)?;
        if g != h && spans.realised(g, h) && (split(g) || split(h)) {
            return expanded(group_of_label, group_pairs, mode, cancel);
        }
    }
    match mode {
        ClusterMode::Canonical => {
            canonical_mode(group_of_label, group_pairs, &spans, &whole, cancel)
        }
        ClusterMode::Components => {
            components_mode(group_of_label, group_pairs, &spans, &whole, cancel)
        }
    }
}

/// The canonical mode's rule on groups (see the module documentation).
fn canonical_mode(
    group_of_label: &[u32],
    group_pairs: &[(u32, u32)],
    spans: &Spans,
    whole: &[bool],
    cancel: &Cancel,
) -> Result<(Vec<u32>, Vec<Option<u32>>)> {
    let n = group_of_label.len();
    let ngroups = spans.first.len();
    // The stored partners of each group that come before it (CSR by incoming group).
    let earlier =
        |&(h, g): &(u32, u32)| h != g && spans.first[h as usize] < spans.first[g as usize];
    let mut start: Vec<usize> = alloc::filled(0, ngroups + 1)?;
    for (k, pair) in group_pairs.iter().enumerate() {
        poll(k, cancel)?;
        if earlier(pair) {
            start[pair.1 as usize + 1] += 1;
        }
    }
    for g in 0..ngroups {
        start[g + 1] += start[g];
    }
    let mut stored: Vec<u32> = alloc::filled(0, start[ngroups])?;
    let mut fill = alloc::copy_of(&start[..ngroups])?;
    for (k, pair) in group_pairs.iter().enumerate() {
        poll(k, cancel)?;
        if earlier(pair) {
            let g = pair.1 as usize;
            stored[fill[g]] = pair.0;
            fill[g] += 1;
        }
    }
    drop(fill);
    // The canonical label each group's labels join (its own first label when it stands).
    let mut joins: Vec<u32> = alloc::filled(NONE, ngroups)?;
    let mut canonical: Vec<u32> = alloc::with_capacity(n)?;
    let mut via: Vec<Option<u32>> = alloc::with_capacity(n)?;
    for (j, &g) in group_of_label.iter().enumerate() {
        poll(j, cancel)?;
        let (g, j) = (g as usize, j as u32);
        let first = spans.first[g];
        if j == first {
            // Every partner here came first, so it is decided: standing iff it joins its own first.
            joins[g] = stored[start[g]..start[g + 1]]
                .iter()
                .filter(|&&h| joins[h as usize] == spans.first[h as usize])
                .map(|&h| spans.first[h as usize])
                .min()
                .unwrap_or(first);
        }
        let c = joins[g];
        let (to, by) = if c != first {
            (c, Some(c))
        } else if j == first || !whole[g] {
            (j, None)
        } else {
            (first, Some(first))
        };
        canonical.push(to);
        via.push(by);
    }
    Ok((canonical, via))
}

/// The components mode on groups (see the module documentation).
fn components_mode(
    group_of_label: &[u32],
    group_pairs: &[(u32, u32)],
    spans: &Spans,
    whole: &[bool],
    cancel: &Cancel,
) -> Result<(Vec<u32>, Vec<Option<u32>>)> {
    let n = group_of_label.len();
    let ngroups = spans.first.len();
    let mut parent: Vec<u32> = alloc::from_fn(ngroups, |g| g as u32)?;
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            let up = parent[parent[x as usize] as usize];
            parent[x as usize] = up;
            x = up;
        }
        x
    }
    // `m(g)`: the smallest first label of a stored partner of `g`.
    let mut smallest_stored: Vec<u32> = alloc::filled(NONE, ngroups)?;
    for (k, &(g, h)) in group_pairs.iter().enumerate() {
        poll(k, cancel)?;
        if g == h || !spans.realised(g, h) {
            continue;
        }
        let m = &mut smallest_stored[h as usize];
        *m = (*m).min(spans.first[g as usize]);
        let (rg, rh) = (find(&mut parent, g), find(&mut parent, h));
        if rg != rh {
            // The root with the smaller first label wins: every root holds its component's smallest.
            let (lo, hi) = if spans.first[rg as usize] < spans.first[rh as usize] {
                (rg, rh)
            } else {
                (rh, rg)
            };
            parent[hi as usize] = lo;
        }
    }
    let mut canonical: Vec<u32> = alloc::with_capacity(n)?;
    let mut via: Vec<Option<u32>> = alloc::with_capacity(n)?;
    let mut unlinked: Vec<bool> = Vec::new();
    for (j, &g) in group_of_label.iter().enumerate() {
        poll(j, cancel)?;
        let (g, j) = (g as usize, j as u32);
        let split = spans.size[g] >= 2 && !whole[g];
        let c = if split {
            j
        } else {
            spans.first[find(&mut parent, g as u32) as usize]
        };
        canonical.push(c);
        if c == j {
            via.push(None);
            continue;
        }
        let m = smallest_stored[g];
        let own = (whole[g] && spans.first[g] < j).then_some(spans.first[g]);
        let by = match (own, (m < j).then_some(m)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if by.is_none() {
            if unlinked.is_empty() {
                unlinked = alloc::filled(false, ngroups)?;
            }
            unlinked[g] = true;
        }
        via.push(by);
    }
    if !unlinked.is_empty() {
        later_partners(
            group_of_label,
            group_pairs,
            spans,
            whole,
            &unlinked,
            &mut via,
            cancel,
        )?;
    }
    Ok((canonical, via))
}

/// `via` of the first label of each `unlinked` group: its smallest partner, all of them later.
fn later_partners(
    group_of_label: &[u32],
    group_pairs: &[(u32, u32)],
    spans: &Spans,
    whole: &[bool],
    unlinked: &[bool],
    via: &mut [Option<u32>],
    cancel: &Cancel,
) -> Result<()> {
    let ngroups = spans.first.len();
    // The labels of each group, ascending (CSR).
    let mut start: Vec<usize> = alloc::filled(0, ngroups + 1)?;
    for g in 0..ngroups {
        start[g + 1] = start[g] + spans.size[g] as usize;
    }
    let mut fill = alloc::copy_of(&start[..ngroups])?;
    let mut members: Vec<u32> = alloc::filled(0, group_of_label.len())?;
    for (i, &g) in group_of_label.iter().enumerate() {
        poll(i, cancel)?;
        members[fill[g as usize]] = i as u32;
        fill[g as usize] += 1;
    }
    let mut best: Vec<u32> = alloc::filled(NONE, ngroups)?;
    for g in (0..ngroups).filter(|&g| unlinked[g] && whole[g]) {
        best[g] = members[start[g] + 1];
    }
    for (k, &(g, h)) in group_pairs.iter().enumerate() {
        poll(k, cancel)?;
        if g == h || !unlinked[g as usize] {
            continue;
        }
        let j = spans.first[g as usize];
        let of_h = &members[start[h as usize]..start[h as usize + 1]];
        if let Some(&k) = of_h.get(of_h.partition_point(|&x| x <= j)) {
            let b = &mut best[g as usize];
            *b = (*b).min(k);
        }
    }
    for g in (0..ngroups).filter(|&g| unlinked[g]) {
        via[spans.first[g] as usize] = (best[g] != NONE).then_some(best[g]);
    }
    Ok(())
}

/// Exact on any input: the groups expanded into label pairs, clustered by
/// [`crate::batch::clusters`], and each collapsed label without an earlier partner given its
/// smallest partner.
fn expanded(
    group_of_label: &[u32],
    group_pairs: &[(u32, u32)],
    mode: ClusterMode,
    cancel: &Cancel,
) -> Result<(Vec<u32>, Vec<Option<u32>>)> {
    let pairs = crate::join::expand_groups(group_of_label, group_pairs, cancel)?;
    let n = group_of_label.len();
    let (canonical, mut via) = batch::clusters(n, &pairs, mode, cancel)?;
    let mut unlinked: Vec<bool> = alloc::filled(false, n)?;
    let mut any = false;
    for j in 0..n {
        if canonical[j] != j as u32 && via[j].is_none() {
            unlinked[j] = true;
            any = true;
        }
    }
    if any {
        for (k, &(i, j)) in pairs.iter().enumerate() {
            poll(k, cancel)?;
            for (a, b) in [(i, j), (j, i)] {
                if unlinked[a as usize] {
                    let v = &mut via[a as usize];
                    *v = Some(v.map_or(b, |v| v.min(b)));
                }
            }
        }
    }
    Ok((canonical, via))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::MatchParams;
    use crate::join::{join_brute, join_groups};
    use crate::test_rng::Rng;
    use crate::text::Text;

    /// [`crate::batch::clusters`] on label pairs, with the smallest partner of a member linked only
    /// through later labels (what `memdedup.batch.clusters` reports).
    fn on_pairs(n: usize, pairs: &[(u32, u32)], mode: ClusterMode) -> (Vec<u32>, Vec<Option<u32>>) {
        let never = Cancel::never();
        let (canonical, mut via) = batch::clusters(n, pairs, mode, &never).unwrap();
        for j in 0..n {
            if canonical[j] != j as u32 && via[j].is_none() {
                via[j] = pairs
                    .iter()
                    .filter_map(|&(a, b)| match (a as usize, b as usize) {
                        (a, b) if a == j => Some(b as u32),
                        (a, b) if b == j => Some(a as u32),
                        _ => None,
                    })
                    .min();
            }
        }
        (canonical, via)
    }

    const MODES: [ClusterMode; 2] = [ClusterMode::Canonical, ClusterMode::Components];

    #[test]
    fn the_group_rule_equals_clusters_on_the_pairs_for_any_group_pairs() {
        // Random groups and random group pairs (not a join's): split groups in pairs included, so
        // both the rule and the expansion are checked.
        let mut rng = Rng(0x5eed_c105);
        let never = Cancel::never();
        for round in 0..3000 {
            let n = rng.below(14);
            let ngroups = rng.below(n.min(7)) + 1;
            let of: Vec<u32> = (0..n).map(|_| rng.below(ngroups) as u32).collect();
            let ngroups = of.iter().map(|&g| g as usize + 1).max().unwrap_or(0);
            let mut pairs = Vec::new();
            for g in 0..ngroups as u32 {
                for h in 0..ngroups as u32 {
                    if rng.below(3) == 0 {
                        pairs.push((g, h));
                    }
                }
            }
            let expanded = crate::join::expand_groups(&of, &pairs, &never).unwrap();
            for mode in MODES {
                let want = on_pairs(n, &expanded, mode);
                let got = clusters_from_groups(&of, &pairs, mode, &never).unwrap();
                assert_eq!(got, want, "round {round} {mode:?}: {of:?} {pairs:?}");
            }
        }
    }

    /// Random groups and pairs with no split group in a pair: the rule alone decides.
    #[test]
    fn the_rule_decides_without_expanding_when_no_split_group_pairs() {
        let mut rng = Rng(77);
        let never = Cancel::never();
        let mut collapsed = 0;
        for round in 0..3000 {
            let n = rng.below(16);
            let ngroups = rng.below(n.min(8)) + 1;
            let of: Vec<u32> = (0..n).map(|_| rng.below(ngroups) as u32).collect();
            let ngroups = of.iter().map(|&g| g as usize + 1).max().unwrap_or(0);
            let spans = Spans::new(&of, ngroups, &never).unwrap();
            // Each group of two or more labels is whole (self pair) or split (alone).
            let whole: Vec<bool> = (0..ngroups)
                .map(|g| spans.size[g] < 2 || rng.below(5) != 0)
                .collect();
            let mut pairs = Vec::new();
            for g in 0..ngroups as u32 {
                if spans.size[g as usize] >= 2 && whole[g as usize] {
                    pairs.push((g, g));
                }
                for h in 0..ngroups as u32 {
                    if g != h && whole[g as usize] && whole[h as usize] && rng.below(3) == 0 {
                        pairs.push((g, h));
                    }
                }
            }
            let expanded = crate::join::expand_groups(&of, &pairs, &never).unwrap();
            for mode in MODES {
                let want = on_pairs(n, &expanded, mode);
                let got = clusters_from_groups(&of, &pairs, mode, &never).unwrap();
                collapsed += got.1.iter().filter(|v| v.is_some()).count();
                assert_eq!(got, want, "round {round} {mode:?}: {of:?} {pairs:?}");
            }
        }
        assert!(collapsed > 1000, "the inputs collapse labels: {collapsed}");
    }

    fn labels(words: &[&str]) -> Vec<Text> {
        words.iter().map(|w| Text::from_text(w)).collect()
    }

    #[test]
    fn clusters_of_a_join_equal_clusters_of_brute_force() {
        // Many duplicates and containment chains, at thresholds where identical labels do and do
        // not match themselves (above 1.0 only by containment).
        let mut rng = Rng(2024);
        let pool = [
            "",
            "dark mode",
            "prefers dark mode",
            "prefers dark mode in the editor",
            "user prefers dark mode in the editor always",
            "uses pytest and ruff",
            "uses pytest and ruff daily",
            "uses pytest and ruf",
            "abcdefghijklmnopq",
            "abcdefghijklmnopqr",
            "xabcdefghijklmnopqr",
            "short",
            "shorts",
        ];
        let never = Cancel::never();
        for round in 0..400 {
            let n = rng.below(24);
            let words: Vec<&str> = (0..n).map(|_| pool[rng.below(pool.len())]).collect();
            let texts = labels(&words);
            for (threshold, min_chars) in
                [(0.85, 16), (0.6, 16), (1.5, 18), (1.0, 0), (f64::NAN, 5)]
            {
                let p = MatchParams {
                    threshold,
                    min_chars,
                };
                let brute = join_brute(&texts, &p);
                let (of, pairs) = join_groups(&texts, &p, &never).unwrap();
                for mode in MODES {
                    let want = on_pairs(n, &brute, mode);
                    let got = clusters_from_groups(&of, &pairs, mode, &never).unwrap();
                    assert_eq!(got, want, "round {round} {p:?} {mode:?}: {words:?}");
                }
            }
        }
    }

    #[test]
    fn canonical_mode_keeps_order_and_components_chain() {
        // Groups A = {0, 3}, B = {1, 4}, C = {2}: A-B and B-C match, A-C do not.
        let of = [0, 1, 2, 0, 1];
        let pairs = [(0, 0), (1, 1), (0, 1), (1, 0), (1, 2), (2, 1)];
        let never = Cancel::never();
        let (c, via) = clusters_from_groups(&of, &pairs, ClusterMode::Canonical, &never).unwrap();
        assert_eq!(c, vec![0, 0, 2, 0, 0]);
        assert_eq!(via, vec![None, Some(0), None, Some(0), Some(0)]);
        let (c, via) = clusters_from_groups(&of, &pairs, ClusterMode::Components, &never).unwrap();
        assert_eq!(c, vec![0, 0, 0, 0, 0]);
        assert_eq!(via, vec![None, Some(0), Some(1), Some(0), Some(0)]);
    }

    #[test]
    fn a_member_linked_only_through_later_labels_gets_its_smallest_partner() {
        // 0 ~ 2 and 1 ~ 2 (1 stored): 1 joins component 0 with no earlier partner; its partner is 2.
        let of = [0, 1, 2];
        let pairs = [(0, 2), (1, 2)];
        let never = Cancel::never();
        let (c, via) = clusters_from_groups(&of, &pairs, ClusterMode::Components, &never).unwrap();
        assert_eq!(c, vec![0, 0, 0]);
        assert_eq!(via, vec![None, Some(2), Some(0)]);
    }

    #[test]
    fn malformed_groups_are_refused_and_cancel_is_polled() {
        let never = Cancel::never();
        let got = clusters_from_groups(&[0, 1], &[(0, 2)], ClusterMode::Canonical, &never);
        assert!(matches!(got, Err(Error::InvalidInput(_))), "{got:?}");
        let got = clusters_from_groups(&[], &[(0, 0)], ClusterMode::Components, &never);
        assert!(matches!(got, Err(Error::InvalidInput(_))), "{got:?}");
        assert_eq!(
            clusters_from_groups(&[], &[], ClusterMode::Canonical, &never).unwrap(),
            (vec![], vec![])
        );
        let cancelled = Cancel::new();
        cancelled.cancel();
        let got = clusters_from_groups(&[0, 0, 1], &[(0, 0)], ClusterMode::Canonical, &cancelled);
        assert_eq!(got, Err(Error::Interrupted));
    }
}
