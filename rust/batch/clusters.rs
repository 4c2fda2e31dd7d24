//! Clusters from matching pairs: canonical (no chains) or single-linkage components.

use crate::alloc;
use crate::cancel::Cancel;
use crate::error::{Error, Result};

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
/// canonical itself in `Canonical` mode; the earliest matched label in `Components` mode). Pairs
/// with an index of `n` or more are ignored; `n` is at most `u32::MAX`.
pub fn clusters(
    n: usize,
    pairs: &[(u32, u32)],
    mode: ClusterMode,
    cancel: &Cancel,
) -> Result<(Vec<u32>, Vec<Option<u32>>)> {
    if n > u32::MAX as usize {
        return Err(Error::InvalidInput(format!(
            "clusters takes at most 2**32 - 1 labels, not {n}"
        )));
    }
    // Labels between polls of `cancel` in the loops over every label.
    const POLL: usize = 1 << 16;
    let poll = |k: usize| {
        if k % POLL == 0 {
            cancel.check()
        } else {
            Ok(())
        }
    };
    let mut earlier: Vec<Vec<u32>> = alloc::with_capacity(n)?;
    earlier.resize_with(n, Vec::new);
    for (k, &(i, j)) in pairs.iter().enumerate() {
        poll(k)?;
        if (i as usize) < n && (j as usize) < n && i < j {
            alloc::push(&mut earlier[j as usize], i)?;
        }
    }
    for (k, v) in earlier.iter_mut().enumerate() {
        poll(k)?;
        v.sort_unstable();
    }
    let mut canonical: Vec<u32> = alloc::from_fn(n, |i| i as u32)?;
    let mut via: Vec<Option<u32>> = alloc::filled(None, n)?;
    match mode {
        ClusterMode::Canonical => {
            for j in 0..n {
                poll(j)?;
                if let Some(&c) = earlier[j].iter().find(|&&i| canonical[i as usize] == i) {
                    canonical[j] = c;
                    via[j] = Some(c);
                }
            }
        }
        ClusterMode::Components => {
            let mut parent: Vec<u32> = alloc::from_fn(n, |i| i as u32)?;
            fn find(parent: &mut [u32], mut x: u32) -> u32 {
                while parent[x as usize] != x {
                    let up = parent[parent[x as usize] as usize];
                    parent[x as usize] = up;
                    x = up;
                }
                x
            }
            for (k, &(i, j)) in pairs.iter().enumerate() {
                poll(k)?;
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
                poll(j)?;
                canonical[j] = find(&mut parent, j as u32);
                via[j] = earlier[j].first().copied();
                if canonical[j] == j as u32 {
                    via[j] = None;
                }
            }
        }
    }
    Ok((canonical, via))
}
