//! Rule 5 of the module doc: each pair that survives the bounds is decided by the contract itself,
//! in each realised direction, with the incoming label prepared once (as `Query::matches` does);
//! and the matching group pairs a worker finds, gathered without aborting when memory runs out.

use crate::contract::{self, MatchParams};
use crate::error::{Error, Result};
use crate::matcher::{BSide, Matcher};
use crate::text::Text;

/// An incoming label prepared as difflib's `b`, rebuilt in place for each new label.
#[derive(Default)]
pub(super) struct Prepared {
    narrow: BSide<u8>,
    wide: BSide<u32>,
    /// Which side holds the current label (`None`: not built yet).
    narrow_for: Option<u32>,
    wide_for: Option<u32>,
}

/// Matching group pairs found by one worker, gathered without aborting when memory runs out (the
/// output of a join can be quadratic): a push that cannot grow the vector marks it failed.
#[derive(Default)]
pub(super) struct Found {
    pairs: Vec<(u32, u32)>,
    failed: bool,
}

impl Found {
    #[inline]
    pub(super) fn push(&mut self, pair: (u32, u32)) {
        if self.pairs.len() < self.pairs.capacity() || self.pairs.try_reserve(1).is_ok() {
            self.pairs.push(pair);
        } else {
            self.failed = true;
        }
    }

    pub(super) fn append(mut self, other: Found) -> Found {
        if self.pairs.try_reserve(other.pairs.len()).is_ok() {
            self.pairs.extend(other.pairs);
        } else {
            self.failed = true;
        }
        self.failed |= other.failed;
        self
    }

    pub(super) fn into_pairs(self) -> Result<Vec<(u32, u32)>> {
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
pub(super) fn decide(
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
pub(super) fn decide_bytes(
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
