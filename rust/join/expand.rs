//! The join's answer on groups expanded into label pairs: counted first, then written in parallel
//! into the caller's buffer, each label's row sorted.

use rayon::prelude::*;

use crate::alloc;
use crate::cancel::Cancel;
use crate::error::{Error, Result};

use super::Joined;

/// Labels whose rows are counted or written between polls of the caller's [`Cancel`].
const EXPAND_CHUNK: usize = 1024;

/// The members of each group, ascending (CSR: group `g`'s are `members[start[g]..start[g + 1]]`).
type Members = (Vec<usize>, Vec<u32>);

impl Joined {
    /// The matching ordered group pairs, every one listed (for a threshold `<= 0` too: then every
    /// realised pair of non-empty groups, which can be quadratic in the number of groups).
    pub(super) fn explicit_group_pairs(&self, cancel: &Cancel) -> Result<Vec<(u32, u32)>> {
        if !self.every_pair {
            return alloc::copy_of(&self.group_pairs);
        }
        let ngroups = self.empty.len();
        let (mut first, mut last, mut size) = (
            alloc::filled(u32::MAX, ngroups)?,
            alloc::filled(0u32, ngroups)?,
            alloc::filled(0u32, ngroups)?,
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

    /// The members of each group ([`Members`]).
    fn members(&self) -> Result<Members> {
        let ngroups = self.empty.len();
        let mut start = alloc::filled(0usize, ngroups + 1)?;
        for &g in &self.group_of_label {
            start[g as usize + 1] += 1;
        }
        for g in 0..ngroups {
            start[g + 1] += start[g];
        }
        let mut fill = alloc::copy_of(&start)?;
        let mut members = alloc::filled(0u32, self.group_of_label.len())?;
        for (i, &g) in self.group_of_label.iter().enumerate() {
            members[fill[g as usize]] = i as u32;
            fill[g as usize] += 1;
        }
        Ok((start, members))
    }

    /// For each label, where its row starts in the expanded pairs (and the total, last).
    fn row_starts(&self, members: &Members, cancel: &Cancel) -> Result<Vec<usize>> {
        let n = self.group_of_label.len();
        let mut lens: Vec<usize> = alloc::filled(0, n)?;
        lens.par_chunks_mut(EXPAND_CHUNK)
            .enumerate()
            .try_for_each(|(c, chunk)| {
                cancel.check()?;
                for (k, len) in chunk.iter_mut().enumerate() {
                    *len = self
                        .runs(c * EXPAND_CHUNK + k, members)
                        .map(<[u32]>::len)
                        .sum();
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

    /// The row of label `i` when the group pairs are listed (not `every_pair`): the later labels
    /// it matches as the stored label, as sorted runs, one per matching group (sorted together when
    /// there are several). Nothing is allocated: rows are counted, then written, label by label.
    fn runs<'m>(
        &'m self,
        i: usize,
        (start, members): &'m Members,
    ) -> impl Iterator<Item = &'m [u32]> + 'm {
        let g = self.group_of_label[i];
        let from = self.group_pairs.partition_point(|&(a, _)| a < g);
        let to = self.group_pairs.partition_point(|&(a, _)| a <= g);
        self.group_pairs[from..to]
            .iter()
            .map(move |&(_, h)| {
                let m = &members[start[h as usize]..start[h as usize + 1]];
                &m[m.partition_point(|&j| j as usize <= i)..]
            })
            .filter(|run| !run.is_empty())
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
        self.write(out, |i, j| [i, j], cancel)
    }

    /// Every label pair `(i, j)`, `i < j`, sorted, in a vector allocated for them.
    pub(super) fn pairs(&self, cancel: &Cancel) -> Result<Vec<(u32, u32)>> {
        let mut out = alloc::filled((0, 0), self.pair_count(cancel)?)?;
        self.write(&mut out, |i, j| (i, j), cancel)?;
        Ok(out)
    }

    /// [`Joined::expand_into`] for any representation `pair(i, j)` of a pair that sorts as `(i, j)`.
    fn write<T: Copy + Ord + Send>(
        &self,
        out: &mut [T],
        pair: impl Fn(u32, u32) -> T + Sync,
        cancel: &Cancel,
    ) -> Result<()> {
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
        let mut slices = alloc::with_capacity(n.div_ceil(EXPAND_CHUNK))?;
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
                if self.every_pair {
                    // Every later non-empty label, when this one is non-empty.
                    if !self.empty[self.group_of_label[i] as usize] {
                        for j in i + 1..n {
                            if !self.empty[self.group_of_label[j] as usize] {
                                slice[at] = pair(i as u32, j as u32);
                                at += 1;
                            }
                        }
                    }
                    continue;
                }
                let row_start = at;
                let mut nruns = 0;
                for run in self.runs(i, &members) {
                    for &j in run {
                        slice[at] = pair(i as u32, j);
                        at += 1;
                    }
                    nruns += 1;
                }
                if nruns > 1 {
                    slice[row_start..at].sort_unstable();
                }
            }
            Ok(())
        })
    }
}
