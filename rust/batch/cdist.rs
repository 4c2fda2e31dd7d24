//! One-vs-many scores: the exact-ratio matrix (`cdist`) computed on the calling thread, on every
//! core or on a pool of its own, with bounds that skip cells below the cutoff.

use rayon::prelude::*;

use crate::alloc;
use crate::bounds::{folded, m_min, Lcs};
use crate::cancel::Cancel;
use crate::error::{Error, Result};
use crate::matcher::{BSide, Matcher};
use crate::text::Text;

/// Buffers for difflib ratios of one text against many: a thread's share of a matrix.
#[derive(Default)]
pub struct RatioScratch {
    matcher: Matcher,
    narrow: BSide<u8>,
    wide: BSide<u32>,
    a_wide: Vec<u32>,
    b_wide: Vec<u32>,
}

impl RatioScratch {
    /// Scratch whose searches poll `cancel`.
    pub fn with_cancel(cancel: &Cancel) -> Self {
        let mut scratch = RatioScratch::default();
        scratch.matcher.set_cancel(cancel);
        scratch
    }

    /// difflib's ratio of two texts (no normalisation), `a` first.
    pub fn ratio(&mut self, a: &Text, b: &Text, autojunk: bool) -> Result<f64> {
        match (a, b) {
            (Text::Narrow(a), Text::Narrow(b)) => {
                self.matcher
                    .try_ratio_with(&mut self.narrow, a, b, autojunk)
            }
            _ => {
                a.codepoints_into(&mut self.a_wide)?;
                b.codepoints_into(&mut self.b_wide)?;
                let (a, b) = (&self.a_wide, &self.b_wide);
                self.matcher.try_ratio_with(&mut self.wide, a, b, autojunk)
            }
        }
    }
}

/// The ratio matrix `ratio(queries[i], choices[j])`, row-major; entries below `cutoff` are 0.0.
/// With a cutoff, a cell is computed exactly only when the length bound (`real_quick_ratio`) and
/// the LCS bound (tighter than `quick_ratio`) both reach it.
///
/// Performance notes: 20 label queries over 100,000 real labels at cutoff 0.6 spent most of their
/// time on exact ratios of unrelated labels that `quick_ratio` admits (English letter counts are
/// alike); the LCS bound, ~5 word operations per element, rejects most of them.
pub fn cdist(
    queries: &[Text],
    choices: &[Text],
    autojunk: bool,
    cutoff: f64,
    workers: Workers,
    cancel: &Cancel,
) -> Result<Vec<f64>> {
    let cells = alloc::product(queries.len(), choices.len(), "the ratio matrix")?;
    let mut out = alloc::filled(0.0, cells)?;
    let mut fill = |parallel| {
        cdist_into(
            queries, choices, autojunk, cutoff, &mut out, parallel, cancel,
        )
    };
    match workers.pool()? {
        Some(pool) => pool.install(|| fill(true)),
        None => fill(workers == Workers::All),
    }?;
    Ok(out)
}

/// At most this many threads for one call's `workers`: more than a machine's cores, few enough to
/// start (a typo such as `10**9` is refused, not tried).
pub const MAX_WORKERS: usize = 1024;

/// Who computes a parallel call (rapidfuzz's `workers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workers {
    /// rayon's global pool, every core (`-1`).
    All,
    /// The calling thread alone, no pool (`1`).
    Calling,
    /// A pool of this many threads (2 to [`MAX_WORKERS`]) built for the call.
    Threads(usize),
}

impl Workers {
    /// rapidfuzz's `workers` count: -1 for every core, else 1 to [`MAX_WORKERS`].
    pub fn from_count(n: i64) -> Result<Workers> {
        match n {
            -1 => Ok(Workers::All),
            1 => Ok(Workers::Calling),
            n if n >= 2 && n.unsigned_abs() <= MAX_WORKERS as u64 => {
                Ok(Workers::Threads(n as usize))
            }
            n if n >= 2 => Err(Error::InvalidInput(format!(
                "workers must be at most {MAX_WORKERS} threads (-1: every core), not {n}"
            ))),
            n => Err(Error::InvalidInput(format!(
                "workers must be -1 (every core) or 1 or more, not {n}"
            ))),
        }
    }

    /// The pool of [`Workers::Threads`], built now (threads named `memdedup-w<k>`); None for the
    /// others. A pool the system cannot start is an error, never a panic.
    pub fn pool(self) -> Result<Option<rayon::ThreadPool>> {
        let Workers::Threads(n) = self else {
            return Ok(None);
        };
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|k| format!("memdedup-w{k}"))
            .build()
            .map(Some)
            .map_err(|e| Error::OutOfMemory(format!("cannot start {n} worker threads: {e}")))
    }
}

/// [`cdist`] into `out` (`queries.len() * choices.len()` cells, every one written): the caller
/// allocates the matrix where it will be read (the bindings: a Python buffer). `parallel`: rows on
/// the current rayon pool, else every row on the calling thread.
pub fn cdist_into(
    queries: &[Text],
    choices: &[Text],
    autojunk: bool,
    cutoff: f64,
    out: &mut [f64],
    parallel: bool,
    cancel: &Cancel,
) -> Result<()> {
    let n = choices.len();
    if out.len() != queries.len() * n {
        return Err(Error::InvalidInput(format!(
            "a {} x {n} matrix needs {} cells, not {}",
            queries.len(),
            queries.len() * n,
            out.len()
        )));
    }
    if n == 0 {
        return Ok(());
    }
    let bounded = cutoff > 0.0;
    let init = || {
        let scratch = RatioScratch::with_cancel(cancel);
        (scratch, Lcs::default(), Vec::new())
    };
    let fill_row = |(scratch, lcs, buf): &mut (RatioScratch, Lcs, Vec<u8>),
                    (row, q): (&mut [f64], &Text)| {
        if bounded {
            lcs.load(folded(q, buf));
        }
        for (cell, c) in row.iter_mut().zip(choices) {
            cancel.check()?;
            *cell = 0.0;
            let (la, lb) = (q.len(), c.len());
            if bounded {
                let Some(need) = m_min(la + lb, cutoff) else {
                    continue;
                };
                if need > la.min(lb) || !lcs.at_least(folded(c, buf), need) {
                    continue;
                }
            }
            let r = scratch.ratio(q, c, autojunk)?;
            if r >= cutoff {
                *cell = r;
            }
        }
        Ok::<(), Error>(())
    };
    if parallel {
        out.par_chunks_mut(n)
            .zip(queries.par_iter())
            .try_for_each_init(init, fill_row)?;
    } else {
        let mut state = init();
        for row in out.chunks_mut(n).zip(queries) {
            fill_row(&mut state, row)?;
        }
    }
    cancel.check()
}
