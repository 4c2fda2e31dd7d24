//! Rule 4 of the module doc, the containment rule: each label of at least `min_chars` elements
//! probes the posting list of its rarest hashed `min_chars`-gram for the longer labels it may occur
//! in, and tests each by substring search.

use rayon::prelude::*;

use crate::alloc;
use crate::cancel::Cancel;
use crate::contract::MatchParams;
use crate::error::Result;
use crate::sym::Sym;
use crate::text::Text;

use super::decide::Found;
use super::groups::Groups;
use super::window::Order;
use super::JoinStats;

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
    fn new(groups: &Groups, order: &Order, mc: usize) -> Result<ContainIndex> {
        let n = order.group_at.len();
        // 2^pos_bits > n, so a position never fills its field and u64::MAX is no key.
        let pos_bits = u64::BITS - (n as u64).leading_zeros();
        let first = order.len_at.partition_point(|&l| (l as usize) < mc);
        let mut off = alloc::with_capacity(n - first + 1)?;
        off.push(0usize);
        for p in first..n {
            let grams = (order.len_at[p] as usize + 1).saturating_sub(mc);
            off.push(off[p - first] + grams);
        }
        let mut keys = alloc::filled(u64::MAX, off[n - first])?;
        {
            let mut slices: Vec<&mut [u64]> = alloc::with_capacity(n - first)?;
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
                    match groups.reps[order.group_at[p] as usize].as_ref() {
                        Text::Narrow(s) => rolling_grams(s, mc, grams),
                        Text::Wide(s) => rolling_grams(s, mc, grams),
                    }
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
        let mut rarest = alloc::filled((usize::MAX, 0usize), n)?;
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
        // (run length, run start) becomes the run's range.
        for r in &mut rarest {
            let (len, at) = *r;
            *r = if len == usize::MAX {
                (0, 0)
            } else {
                (at, at + len)
            };
        }
        Ok(ContainIndex {
            keys,
            pos_bits,
            rarest,
        })
    }

    /// The position of a key.
    #[inline]
    fn pos(&self, key: u64) -> usize {
        (key & ((1u64 << self.pos_bits.min(63)) - 1)) as usize
    }
}

/// Whether the shorter of two texts occurs in the longer (on code points).
fn occurs_in(short: &Text, long: &Text) -> bool {
    match (short, long) {
        (Text::Narrow(s), Text::Narrow(l)) => u8::contains(l, s),
        _ => u32::contains(&long.codepoints(), &short.codepoints()),
    }
}

/// The containment rule's matching ordered pairs of distinct groups: each eligible label probes
/// the run of its rarest `mc`-gram for longer labels.
pub(super) fn containment_pairs(
    groups: &Groups,
    order: &Order,
    p: &MatchParams,
    cancel: &Cancel,
) -> Result<(Found, JoinStats)> {
    let n = order.group_at.len();
    let text = |pos: usize| groups.reps[order.group_at[pos] as usize].as_ref();
    let mc = p.min_chars.max(1);
    let ci = ContainIndex::new(groups, order, mc)?;
    cancel.check()?;
    let first = order.len_at.partition_point(|&l| (l as usize) < mc);
    Ok((first..n)
        .into_par_iter()
        .map(|s| {
            let mut out = Found::default();
            let mut c = JoinStats::default();
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
            || (Found::default(), JoinStats::default()),
            |(v, c), (o, oc)| (v.append(o), c.add(oc)),
        ))
}
