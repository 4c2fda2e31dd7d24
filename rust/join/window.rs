//! Rules 2 and 3 of the module doc, the ratio rule: distinct labels in (length, group) order
//! ("positions"), each length's window of partner lengths, and the scan of every window pair
//! through the character-histogram and LCS bounds to the contract.

use rayon::prelude::*;

use crate::alloc;
use crate::bounds::{fold, m_min, Lcs};
use crate::cancel::Cancel;
use crate::contract::MatchParams;
use crate::error::Result;
use crate::histogram::{coarse_filter_run, coarse_histogram, histogram, BUCKETS, COARSE};
use crate::matcher::{ratio_of, Matcher};
use crate::simd::histogram::prefetch_slice;
use crate::text::Text;

use super::decide::{decide, decide_bytes, Found, Prepared};
use super::groups::Groups;
use super::JoinStats;

/// The non-empty groups in order of (length, group id): "positions".
pub(super) struct Order {
    /// The group at each position, and its length.
    pub(super) group_at: Vec<u32>,
    pub(super) len_at: Vec<u32>,
    /// Distinct lengths, ascending, and the first position of each (plus the end).
    lens: Vec<usize>,
    len_start: Vec<usize>,
}

impl Order {
    pub(super) fn new(groups: &Groups) -> Result<Order> {
        let mut group_at = alloc::with_capacity(groups.reps.len())?;
        group_at
            .extend((0..groups.reps.len() as u32).filter(|&g| !groups.reps[g as usize].is_empty()));
        group_at.par_sort_unstable_by_key(|&g| (groups.reps[g as usize].len(), g));
        let len_at = alloc::from_fn(group_at.len(), |p| {
            groups.reps[group_at[p] as usize]
                .len()
                .min(u32::MAX as usize) as u32
        })?;
        let (mut lens, mut len_start) = (Vec::new(), Vec::new());
        for (p, &l) in len_at.iter().enumerate() {
            if lens.last() != Some(&(l as usize)) {
                alloc::push(&mut lens, l as usize)?;
                alloc::push(&mut len_start, p)?;
            }
        }
        alloc::push(&mut len_start, len_at.len())?;
        Ok(Order {
            group_at,
            len_at,
            lens,
            len_start,
        })
    }

    /// The index into `lens` of the first distinct length `>= l`.
    fn len_index_at_least(&self, l: usize) -> usize {
        self.lens.partition_point(|&x| x < l)
    }
}

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
fn window_starts(order: &Order, t: f64) -> Result<Vec<usize>> {
    alloc::par_collect(
        (0..order.lens.len()).into_par_iter(),
        || (),
        |_, d| {
            Ok(match shortest_partner(order.lens[d], t) {
                Some(lo) => order.len_start[order.len_index_at_least(lo)],
                None => usize::MAX,
            })
        },
    )
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
    fn new(
        groups: &'g Groups<'a>,
        order: &'g Order,
        p: &MatchParams,
        cancel: &Cancel,
    ) -> Result<Self> {
        let n = order.group_at.len();
        let text = |pos: usize| groups.reps[order.group_at[pos] as usize].as_ref();
        let mut len_index = alloc::filled(0u32, n)?;
        for d in 0..order.lens.len() {
            for x in &mut len_index[order.len_start[d]..order.len_start[d + 1]] {
                *x = d as u32;
            }
        }
        let mut hist = alloc::filled([0u8; BUCKETS], n)?;
        let mut hist_ok = alloc::filled(false, n)?;
        let mut coarse = alloc::filled([0u8; COARSE], n)?;
        (&mut hist, &mut hist_ok, &mut coarse)
            .into_par_iter()
            .enumerate()
            .for_each(|(pos, (h, ok, c))| {
                if let Some(fine) = histogram(text(pos)) {
                    (*h, *ok) = (fine, true);
                }
                if let Some(coarse) = coarse_histogram(text(pos)) {
                    *c = coarse;
                }
            });
        let mut total = 0usize;
        for pos in 0..n {
            total = alloc::sum(total, text(pos).len(), "the join's folded labels")?;
        }
        let mut arena = alloc::with_capacity(total)?;
        let mut arena_off = alloc::with_capacity(n + 1)?;
        let mut is_narrow = alloc::with_capacity(n)?;
        arena_off.push(0);
        for pos in 0..n {
            let text = text(pos);
            match text {
                Text::Narrow(v) => arena.extend_from_slice(v),
                Text::Wide(v) => arena.extend(v.iter().map(|&c| fold(c))),
            }
            arena_off.push(arena.len());
            is_narrow.push(matches!(text, Text::Narrow(_)));
        }
        Ok(Ctx {
            cancel: cancel.clone(),
            groups,
            order,
            p: *p,
            len_index,
            lo_pos: window_starts(order, p.threshold)?,
            hist,
            coarse,
            hist_ok,
            arena,
            arena_off,
            is_narrow,
        })
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
    fn scan(
        &self,
        sc: &mut WorkerScratch,
        x0: usize,
        x1: usize,
        out: &mut Found,
        c: &mut JoinStats,
    ) {
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
        c: &mut JoinStats,
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

/// The ratio rule's matching ordered pairs of distinct groups (blocks of positions scanned in
/// parallel), with the work done and the time it took (`seconds_prepare`, `seconds_ratio`).
pub(super) fn ratio_pairs(
    groups: &Groups,
    order: &Order,
    p: &MatchParams,
    cancel: &Cancel,
) -> Result<(Found, JoinStats)> {
    let n = order.group_at.len();
    let t0 = std::time::Instant::now();
    let ctx = Ctx::new(groups, order, p, cancel)?;
    let seconds_prepare = t0.elapsed().as_secs_f64();
    cancel.check()?;
    let (found, mut stats) = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map_init(
            || {
                let mut sc = WorkerScratch::default();
                sc.m.set_cancel(cancel);
                sc
            },
            |sc, b| {
                let mut out = Found::default();
                let mut c = JoinStats::default();
                if cancel.is_cancelled() {
                    return (out, c);
                }
                let (x0, x1) = (b * BLOCK, ((b + 1) * BLOCK).min(n));
                ctx.scan(sc, x0, x1, &mut out, &mut c);
                (out, c)
            },
        )
        .reduce(
            || (Found::default(), JoinStats::default()),
            |(v, c), (o, oc)| (v.append(o), c.add(oc)),
        );
    stats.seconds_prepare = seconds_prepare;
    stats.seconds_ratio = t0.elapsed().as_secs_f64() - seconds_prepare;
    Ok((found, stats))
}
