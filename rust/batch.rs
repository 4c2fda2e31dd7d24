//! Batch decisions: pairs, one-vs-many scores, and replay of a store's writes. Pure Rust; the
//! bindings normalise labels (with the GIL) and call these without it.
//!
//! Every answer equals the pairwise contract (`Query::matches`), and no result depends on the
//! number of worker threads: work is split by pair or by partition, never by order-dependent state.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::contract::{MatchParams, Reason};
use crate::matcher::{ratio_of, BSide, Matcher};
use crate::text::{Query, Text};

/// `labels_match(stored[k], incoming[k])` for every k, in parallel.
pub fn match_pairs(stored: &[Text], incoming: &[Text], p: &MatchParams) -> Vec<bool> {
    stored
        .par_iter()
        .zip(incoming.par_iter())
        .map_init(Matcher::new, |m, (a, b)| {
            Query::new(b.clone()).matches(m, a, p)
        })
        .collect()
}

/// difflib's ratio of two texts (no normalisation), `a` first.
pub fn text_ratio(m: &mut Matcher, a: &Text, b: &Text, autojunk: bool) -> f64 {
    match (a, b) {
        (Text::Narrow(a), Text::Narrow(b)) => {
            let side = BSide::new(b, autojunk);
            m.set_a(a, &side);
            ratio_of(m.matches(&side), a.len() + b.len())
        }
        _ => {
            let (a, b) = (a.codepoints(), b.codepoints());
            let side = BSide::new(&b, autojunk);
            m.set_a(&a, &side);
            ratio_of(m.matches(&side), a.len() + b.len())
        }
    }
}

/// The ratio matrix `ratio(queries[i], choices[j])`, row-major; entries below `cutoff` are 0.0 and
/// skip the exact computation when difflib's upper bounds already fall below it.
pub fn cdist(queries: &[Text], choices: &[Text], autojunk: bool, cutoff: f64) -> Vec<f64> {
    let n = choices.len();
    let mut out = vec![0.0; queries.len() * n];
    out.par_chunks_mut(n.max(1))
        .zip(queries.par_iter())
        .for_each_init(Matcher::new, |m, (row, q)| {
            for (cell, c) in row.iter_mut().zip(choices) {
                let (la, lb) = (q.len(), c.len());
                if !(ratio_of(la.min(lb), la + lb) >= cutoff) {
                    continue;
                }
                let r = text_ratio(m, q, c, autojunk);
                if r >= cutoff {
                    *cell = r;
                }
            }
        });
    out
}

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

/// Replays writes in input order: each label is looked up as `find_canonical_node` does against a
/// store that appends every new canonical (its stripped label), oldest first. `stripped[i]` is the
/// label after `str.strip()`, `normalised[i]` its normalised form, `partition[i]` its (scope, layer)
/// partition: nothing collapses across partitions. Partitions run in parallel.
pub fn replay(
    stripped: &[Text],
    normalised: &[Text],
    partition: &[u32],
    rp: &ReplayParams,
) -> ReplayResult {
    let n = stripped.len();
    let mut groups: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, &g) in partition.iter().enumerate() {
        groups.entry(g).or_default().push(i as u32);
    }
    let mut groups: Vec<Vec<u32>> = groups.into_values().collect();
    // Largest first, so one huge scope does not start last.
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let decided: Vec<Vec<Decided>> = groups
        .par_iter()
        .map_init(Matcher::new, |m, members| {
            replay_partition(m, members, stripped, normalised, rp)
        })
        .collect();
    let mut result = ReplayResult {
        canonical: (0..n as u32).collect(),
        outcome: vec![None; n],
        score: vec![f64::NAN; n],
    };
    for (i, c, o, s) in decided.into_iter().flatten() {
        result.canonical[i as usize] = c;
        result.outcome[i as usize] = o;
        result.score[i as usize] = s;
    }
    result
}

/// The candidate fetch of one partition: for a query key `p` of length `L`, the first `query_limit`
/// canonicals (oldest first) whose key starts with `p`.
///
/// Keys of full prefix length are answered by a map from each canonical's first `prefix_len` code points.
/// Shorter keys (a short label: its whole key is the prefix) can be answered by any longer canonical,
/// so each short key that some label of the partition will query gets a list, and a new canonical is
/// appended to the lists of every short key it starts with. Lists stop at `query_limit`: a later
/// canonical can never be among the first `query_limit`.
struct PrefixIndex {
    prefix_len: usize,
    limit: usize,
    full: HashMap<Text, Vec<u32>>,
    short: HashMap<Text, Vec<u32>>,
}

impl PrefixIndex {
    fn new(prefix_len: usize, limit: usize, short_queries: impl Iterator<Item = Text>) -> Self {
        let short = short_queries.map(|k| (k, Vec::new())).collect();
        PrefixIndex {
            prefix_len,
            limit,
            full: HashMap::new(),
            short,
        }
    }

    fn candidates(&self, key: &Text) -> &[u32] {
        let found = if key.len() >= self.prefix_len {
            self.full.get(&key.prefix(self.prefix_len))
        } else {
            self.short.get(key)
        };
        found.map_or(&[], |v| &v[..])
    }

    fn insert(&mut self, key: &Text, index: u32) {
        if key.len() >= self.prefix_len {
            let list = self.full.entry(key.prefix(self.prefix_len)).or_default();
            if list.len() < self.limit {
                list.push(index);
            }
        }
        if !self.short.is_empty() {
            for l in 0..=key.len().min(self.prefix_len.saturating_sub(1)) {
                if let Some(list) = self.short.get_mut(&key.prefix(l)) {
                    if list.len() < self.limit {
                        list.push(index);
                    }
                }
            }
        }
    }
}

/// One replayed label: its index, canonical, outcome and score.
type Decided = (u32, u32, Option<Outcome>, f64);

fn replay_partition(
    m: &mut Matcher,
    members: &[u32],
    stripped: &[Text],
    normalised: &[Text],
    rp: &ReplayParams,
) -> Vec<Decided> {
    let key_of = |i: u32| match rp.prefix_mode {
        PrefixMode::Raw => &stripped[i as usize],
        PrefixMode::Normalised => &normalised[i as usize],
    };
    let short_queries: std::collections::HashSet<Text> = members
        .iter()
        .filter(|&&i| !stripped[i as usize].is_empty() && key_of(i).len() < rp.prefix_len)
        .map(|&i| key_of(i).clone())
        .collect();
    let mut index = PrefixIndex::new(rp.prefix_len, rp.query_limit, short_queries.into_iter());
    let mut out = Vec::with_capacity(members.len());
    for &i in members {
        if stripped[i as usize].is_empty() {
            out.push((i, i, Some(Outcome::Empty), f64::NAN));
            continue;
        }
        let key = key_of(i);
        let mut query = Query::new(normalised[i as usize].clone());
        let hit = index
            .candidates(key)
            .iter()
            .copied()
            .find(|&c| query.matches(m, &normalised[c as usize], &rp.matching));
        match hit {
            Some(c) => {
                let d = query.decide(m, &normalised[c as usize], &rp.matching);
                let reason = d.reason.unwrap_or(Reason::Containment);
                out.push((i, c, Some(Outcome::Collapsed(reason)), d.score));
            }
            None => {
                index.insert(key, i);
                out.push((i, i, Some(Outcome::New), f64::NAN));
            }
        }
    }
    out
}

/// Clusters from matching pairs `(i, j)`, `i < j`.
///
/// `Canonical`: in index order, each label joins the earliest earlier *canonical* it matches, else
/// becomes one (no chains: every member matches its canonical directly). `Components`: single
/// linkage (connected components), canonical = the smallest index; members may be linked only
/// through others (chaining).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterMode {
    Canonical,
    Components,
}

/// For each label: its canonical, and the pair `(partner, label)` that justified the collapse (the
/// canonical itself in `Canonical` mode; the earliest matched label in `Components` mode).
pub fn clusters(n: usize, pairs: &[(u32, u32)], mode: ClusterMode) -> (Vec<u32>, Vec<Option<u32>>) {
    let mut earlier: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &(i, j) in pairs {
        if (i as usize) < n && (j as usize) < n && i < j {
            earlier[j as usize].push(i);
        }
    }
    earlier.iter_mut().for_each(|v| v.sort_unstable());
    let mut canonical: Vec<u32> = (0..n as u32).collect();
    let mut via: Vec<Option<u32>> = vec![None; n];
    match mode {
        ClusterMode::Canonical => {
            for j in 0..n {
                if let Some(&c) = earlier[j].iter().find(|&&i| canonical[i as usize] == i) {
                    canonical[j] = c;
                    via[j] = Some(c);
                }
            }
        }
        ClusterMode::Components => {
            let mut parent: Vec<u32> = (0..n as u32).collect();
            fn find(parent: &mut [u32], mut x: u32) -> u32 {
                while parent[x as usize] != x {
                    let up = parent[parent[x as usize] as usize];
                    parent[x as usize] = up;
                    x = up;
                }
                x
            }
            for &(i, j) in pairs {
                if (i as usize) < n && (j as usize) < n {
                    let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
                    if ri != rj {
                        // The smaller root wins, so every root is its component's smallest index.
                        let (lo, hi) = if ri < rj { (ri, rj) } else { (rj, ri) };
                        parent[hi as usize] = lo;
                    }
                }
            }
            for j in 0..n {
                canonical[j] = find(&mut parent, j as u32);
                via[j] = earlier[j].first().copied();
                if canonical[j] == j as u32 {
                    via[j] = None;
                }
            }
        }
    }
    (canonical, via)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(labels: &[&str]) -> Vec<Text> {
        labels.iter().map(|s| Text::from_text(s)).collect()
    }

    #[test]
    fn replay_follows_the_prefix_gate_and_partitions() {
        let raw = [
            "Uses pytest and ruff",
            "Uses pytest and ruff for Python projects",
            "uses pytest and ruff",
            "Uses pytest and ruff",
            "  ",
            "Prefers dark mode",
            "Prefers dark mode",
        ];
        let stripped: Vec<Text> = texts(&raw).iter().map(Text::strip_py).collect();
        let norm: Vec<Text> = raw
            .iter()
            .map(|s| {
                let mut out = Vec::new();
                crate::normalise::normalise_ascii(s.as_bytes(), &mut out);
                Text::Narrow(out)
            })
            .collect();
        let partition = [0, 0, 0, 1, 0, 0, 0];
        let rp = ReplayParams {
            matching: MatchParams::default(),
            prefix_mode: PrefixMode::Raw,
            prefix_len: 20,
            query_limit: 20,
        };
        let r = replay(&stripped, &norm, &partition, &rp);
        // 1 extends 0 (containment); 2 differs in case at the start: not fetched under the raw gate;
        // 3 is in another partition; 4 is empty; 6 restates 5 (short key: the whole label is the prefix).
        assert_eq!(r.canonical, vec![0, 0, 2, 3, 4, 5, 5]);
        assert_eq!(r.outcome[4], Some(Outcome::Empty));
        let rp = ReplayParams {
            prefix_mode: PrefixMode::Normalised,
            ..rp
        };
        let r = replay(&stripped, &norm, &partition, &rp);
        assert_eq!(r.canonical, vec![0, 0, 0, 3, 4, 5, 5]);
    }

    #[test]
    fn clusters_canonical_and_components() {
        // 0-1, 1-2 match but 0-2 do not: canonical keeps 2 apart, components chain it in.
        let pairs = [(0, 1), (1, 2), (3, 4)];
        let (c, via) = clusters(5, &pairs, ClusterMode::Canonical);
        assert_eq!(c, vec![0, 0, 2, 3, 3]);
        assert_eq!(via, vec![None, Some(0), None, None, Some(3)]);
        let (c, _) = clusters(5, &pairs, ClusterMode::Components);
        assert_eq!(c, vec![0, 0, 0, 3, 3]);
    }
}
