//! Batch decisions: pairs, one-vs-many scores, and replay of a store's writes. Pure Rust; the
//! bindings normalise labels (with the GIL) and call these without it.
//!
//! Every answer equals the pairwise contract (`Query::matches`), and no result depends on the
//! number of worker threads: work is split by pair or by partition, never by order-dependent state.
//!
//! One file per concept: [`cdist`] (one-vs-many scores), [`replay`] (the write-time replay) and
//! [`clusters`]; pair decisions here.

use rayon::prelude::*;

use crate::alloc;
use crate::cancel::Cancel;
use crate::contract::{MatchParams, PairDecider};
use crate::error::{Error, Result};
use crate::text::Text;

mod cdist;
mod clusters;
mod replay;
#[cfg(test)]
mod tests;

pub use cdist::*;
pub use clusters::*;
pub use replay::*;

/// The seed's `DEDUP_PREFIX_LEN` and `DEDUP_QUERY_LIMIT`: replay's defaults.
pub const DEFAULT_PREFIX_LEN: usize = 20;
pub const DEFAULT_QUERY_LIMIT: usize = 20;

/// The decision (reason and exact ratio, stored label first) of each `(stored, incoming)` pair of
/// indices into `labels` (normalised), in parallel.
pub fn pair_reasons(
    labels: &[Text],
    pairs: &[(u32, u32)],
    p: &MatchParams,
    cancel: &Cancel,
) -> Result<Vec<crate::Decision>> {
    if let Some(&(i, j)) = pairs
        .iter()
        .find(|&&(i, j)| i as usize >= labels.len() || j as usize >= labels.len())
    {
        return Err(Error::InvalidInput(format!(
            "pair ({i}, {j}) is out of range for {} labels",
            labels.len()
        )));
    }
    let decided = alloc::par_collect(
        pairs.par_iter(),
        || PairDecider::with_cancel(cancel),
        |d, &(i, j)| {
            if cancel.is_cancelled() {
                return Ok(crate::Decision {
                    reason: None,
                    score: f64::NAN,
                });
            }
            d.decide(&labels[i as usize], &labels[j as usize], p)
        },
    )?;
    cancel.check()?;
    Ok(decided)
}
