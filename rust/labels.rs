//! Label batches as a caller reads them, and `match_pairs` decided while they are read.
//!
//! Reading labels may need a lock deciding them does not (the bindings read Python objects under
//! the GIL), so [`match_pairs_while_reading`] reads on the calling thread while worker threads
//! decide what was read so far.

use std::borrow::Cow;
use std::sync::mpsc::{sync_channel, TrySendError};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::alloc;
use crate::cancel::Cancel;
use crate::contract::{MatchParams, PairDecider};
use crate::error::Result;
use crate::normalise::normalise_ascii;
use crate::text::Text;

/// Labels as read, for deciding elsewhere: byte strings back to back in one buffer (ASCII labels
/// as they are, normalised by whichever thread decides them; other labels below 256 normalised),
/// wider labels normalised, apart.
///
/// Performance notes: the strs of a large Python batch lie scattered in memory and each one misses
/// the cache; copying each label while it is in the cache (and normalising ASCII ones on the
/// deciding threads) keeps the reading loop short (docs/perf.md, "match_pairs").
#[derive(Default)]
pub struct LabelBatch {
    bytes: Vec<u8>,
    wide: Vec<Text>,
    views: Vec<LabelView>,
}

/// Where a label of a [`LabelBatch`] is.
#[derive(Clone, Copy)]
enum LabelView {
    /// An ASCII label as read: a range of the bytes.
    Ascii(usize, usize),
    /// A normalised label below 256: a range of the bytes.
    Normalised(usize, usize),
    /// A normalised wider label: an index of the wide texts.
    Wide(usize),
}

impl LabelBatch {
    /// An ASCII label as read (not normalised yet). Grows fallibly: a batch read from an endless
    /// iterator runs out of memory with an error.
    pub fn push_ascii(&mut self, raw: &[u8]) -> Result<()> {
        debug_assert!(raw.is_ascii());
        self.bytes.try_reserve(raw.len())?;
        let start = self.bytes.len();
        self.bytes.extend_from_slice(raw);
        alloc::push(&mut self.views, LabelView::Ascii(start, self.bytes.len()))
    }

    /// A normalised label.
    pub fn push_normalised(&mut self, text: Text) -> Result<()> {
        let view = match text {
            Text::Narrow(v) => {
                self.bytes.try_reserve(v.len())?;
                let start = self.bytes.len();
                self.bytes.extend_from_slice(&v);
                LabelView::Normalised(start, self.bytes.len())
            }
            wide => {
                alloc::push(&mut self.wide, wide)?;
                LabelView::Wide(self.wide.len() - 1)
            }
        };
        alloc::push(&mut self.views, view)
    }

    pub fn len(&self) -> usize {
        self.views.len()
    }

    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    /// Label `k` normalised, as bytes (in `scratch` for an ASCII one), or None for a wide label.
    pub fn normalised<'a>(
        &'a self,
        k: usize,
        scratch: &'a mut Vec<u8>,
    ) -> Result<Option<&'a [u8]>> {
        match self.views[k] {
            LabelView::Ascii(start, end) => {
                normalise_ascii(&self.bytes[start..end], scratch)?;
                Ok(Some(scratch))
            }
            LabelView::Normalised(start, end) => Ok(Some(&self.bytes[start..end])),
            LabelView::Wide(_) => Ok(None),
        }
    }

    /// Label `k` normalised, as a text (a wide one borrowed, a narrow one copied fallibly).
    pub fn text(&self, k: usize, scratch: &mut Vec<u8>) -> Result<Cow<'_, Text>> {
        if let LabelView::Wide(i) = self.views[k] {
            return Ok(Cow::Borrowed(&self.wide[i]));
        }
        let bytes = self.normalised(k, scratch)?.unwrap_or_default();
        Ok(Cow::Owned(Text::Narrow(alloc::copy_of(bytes)?)))
    }
}

/// One thread's state for deciding pairs of [`LabelBatch`]es without allocating.
#[derive(Default)]
pub struct BatchDecider {
    decider: PairDecider,
    stored: Vec<u8>,
    incoming: Vec<u8>,
}

impl BatchDecider {
    /// A decider whose searches poll `cancel`.
    pub fn with_cancel(cancel: &Cancel) -> Self {
        BatchDecider {
            decider: PairDecider::with_cancel(cancel),
            ..BatchDecider::default()
        }
    }

    /// `labels_match` of pair `k` of two label batches, as 0 or 1.
    pub fn decide(
        &mut self,
        a: &LabelBatch,
        b: &LabelBatch,
        k: usize,
        p: &MatchParams,
    ) -> Result<u8> {
        let BatchDecider {
            decider,
            stored,
            incoming,
        } = self;
        let matched = match (a.normalised(k, stored)?, b.normalised(k, incoming)?) {
            (Some(x), Some(y)) => decider.matches_bytes(x, y, p)?,
            _ => decider.matches(&*a.text(k, stored)?, &*b.text(k, incoming)?, p)?,
        };
        Ok(matched as u8)
    }

    /// `decide` for every pair of two equally long label batches (pairs left undecided once
    /// `cancel` is: the caller then drops the answer).
    pub fn decide_all(
        &mut self,
        a: &LabelBatch,
        b: &LabelBatch,
        p: &MatchParams,
        cancel: &Cancel,
    ) -> Result<Vec<u8>> {
        let n = a.len().min(b.len());
        let mut out = alloc::with_capacity(n)?;
        for k in 0..n {
            out.push(if cancel.is_cancelled() {
                0
            } else {
                self.decide(a, b, k, p)?
            });
        }
        Ok(out)
    }
}

/// `labels_match(stored[k], incoming[k])` for every pair of two equally long batches, as 0 or 1,
/// decided in parallel.
pub fn match_pairs(
    stored: &LabelBatch,
    incoming: &LabelBatch,
    p: &MatchParams,
    cancel: &Cancel,
) -> Result<Vec<u8>> {
    let n = stored.len().min(incoming.len());
    let decided = alloc::par_collect(
        (0..n).into_par_iter(),
        || BatchDecider::with_cancel(cancel),
        |d, k| {
            if cancel.is_cancelled() {
                Ok(0)
            } else {
                d.decide(stored, incoming, k, p)
            }
        },
    )?;
    cancel.check()?;
    Ok(decided)
}

/// Reads pairs of labels for [`match_pairs_while_reading`], on the calling thread, holding
/// whatever reading needs (the bindings: the GIL).
pub trait PairReader {
    /// The stored and the incoming labels of pairs `start..end`.
    fn read(&mut self, start: usize, end: usize) -> Result<(LabelBatch, LabelBatch)>;

    /// Run `f` with what reading holds released (the bindings: without the GIL).
    fn unlocked<R: Send>(&mut self, f: impl FnOnce() -> R + Send) -> R;
}

/// Pairs [`match_pairs_while_reading`] reads and hands to the deciding threads at a time.
pub const PIPELINE_CHUNK: usize = 2048;

/// `match_pairs` of `n` pairs, decided while they are read: this thread reads them chunk by chunk
/// (`reader`), `workers` threads decide the chunks read so far, and this thread joins them,
/// unlocked, once every pair is read. A chunk read while the deciding threads are behind is
/// decided here at once (so this thread never waits on them while it holds the reader's lock).
///
/// Performance notes: reading a large batch's scattered Python strs is bound by cache misses and
/// took about as long as deciding its pairs on one core; decided while read, 188,479 real prefix
/// pairs took 0.34-0.48 us a pair on two cores, against 1.1-1.3 read first and decided after
/// (docs/perf.md, "match_pairs").
pub fn match_pairs_while_reading(
    n: usize,
    p: &MatchParams,
    workers: usize,
    cancel: &Cancel,
    reader: &mut impl PairReader,
) -> Result<Vec<u8>> {
    type Chunk = (usize, LabelBatch, LabelBatch);
    let (sender, receiver) = sync_channel::<Chunk>(2 * workers.max(1));
    let receiver = Mutex::new(receiver);
    // Decide chunks until the channel is closed and empty.
    // A chunk that fails (out of memory) ends its thread's share with the error.
    let decide_chunks = || -> Result<Vec<(usize, Vec<u8>)>> {
        let mut d = BatchDecider::with_cancel(cancel);
        let mut decided = Vec::new();
        loop {
            let next = match receiver.lock() {
                Ok(receiver) => receiver.recv(),
                Err(_) => return Ok(decided),
            };
            let Ok((at, a, b)) = next else {
                return Ok(decided);
            };
            let out = d.decide_all(&a, &b, p, cancel)?;
            alloc::push(&mut decided, (at, out))?;
        }
    };
    std::thread::scope(|scope| -> Result<Vec<u8>> {
        let handles: Vec<_> = (0..workers).map(|_| scope.spawn(decide_chunks)).collect();
        let mut own = Vec::new();
        let mut d = BatchDecider::with_cancel(cancel);
        let read = (|| -> Result<()> {
            for start in (0..n).step_by(PIPELINE_CHUNK) {
                cancel.check()?;
                let end = (start + PIPELINE_CHUNK).min(n);
                let (a, b) = reader.read(start, end)?;
                if let Err(
                    TrySendError::Full((at, a, b)) | TrySendError::Disconnected((at, a, b)),
                ) = sender.try_send((start, a, b))
                {
                    let out = d.decide_all(&a, &b, p, cancel)?;
                    alloc::push(&mut own, (at, out))?;
                }
            }
            Ok(())
        })();
        if read.is_err() {
            // The answer is lost: the deciding threads stop at their next poll.
            cancel.cancel();
        }
        drop(sender);
        let mut failed = None;
        let mut chunks = reader.unlocked(decide_chunks).unwrap_or_else(|e| {
            failed = Some(e);
            Vec::new()
        });
        chunks.append(&mut own);
        for handle in handles {
            match handle.join() {
                Ok(Ok(decided)) => chunks.extend(decided),
                Ok(Err(e)) => {
                    failed.get_or_insert(e);
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        read?;
        if let Some(err) = failed {
            return Err(err);
        }
        cancel.check()?;
        let mut decided = alloc::filled(0u8, n)?;
        for (at, out) in chunks {
            decided[at..at + out.len()].copy_from_slice(&out);
        }
        Ok(decided)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn batch(labels: &[&str]) -> LabelBatch {
        let mut b = LabelBatch::default();
        for s in labels {
            if s.is_ascii() {
                b.push_ascii(s.as_bytes()).unwrap();
            } else {
                // Test labels are lower-case already: collapse only.
                b.push_normalised(Text::from_text(s).collapse_lowered().unwrap())
                    .unwrap();
            }
        }
        b
    }

    struct Reader<'a> {
        stored: &'a [&'a str],
        incoming: &'a [&'a str],
        reads: usize,
        fail_at: Option<usize>,
    }

    impl PairReader for Reader<'_> {
        fn read(&mut self, start: usize, end: usize) -> Result<(LabelBatch, LabelBatch)> {
            self.reads += 1;
            if Some(start) == self.fail_at {
                return Err(Error::InvalidInput("the labels changed".into()));
            }
            Ok((
                batch(&self.stored[start..end]),
                batch(&self.incoming[start..end]),
            ))
        }

        fn unlocked<R: Send>(&mut self, f: impl FnOnce() -> R + Send) -> R {
            f()
        }
    }

    fn corpus(n: usize) -> (Vec<String>, Vec<String>) {
        let words = [
            "uses", "pytest", "and", "ruff", "prefers", "dark", "mode", "café", "ΟΔΟΣ",
        ];
        let mut rng = crate::test_rng::Rng(17);
        let label = |rng: &mut crate::test_rng::Rng| {
            (0..1 + rng.below(6))
                .map(|_| words[rng.below(words.len())])
                .collect::<Vec<_>>()
                .join("  ")
        };
        let stored: Vec<String> = (0..n).map(|_| label(&mut rng)).collect();
        let incoming: Vec<String> = stored
            .iter()
            .map(|s| {
                if rng.below(2) == 0 {
                    format!("{s} more")
                } else {
                    label(&mut rng)
                }
            })
            .collect();
        (stored, incoming)
    }

    #[test]
    fn decided_while_read_equals_decided_one_by_one() {
        let (stored, incoming) = corpus(3 * PIPELINE_CHUNK + 17);
        let stored: Vec<&str> = stored.iter().map(String::as_str).collect();
        let incoming: Vec<&str> = incoming.iter().map(String::as_str).collect();
        let p = MatchParams::default();
        let mut m = PairDecider::default();
        let expected: Vec<u8> = stored
            .iter()
            .zip(&incoming)
            .map(|(a, b)| {
                let (a, b) = (Text::from_text(a), Text::from_text(b));
                m.matches(
                    &a.collapse_lowered().unwrap(),
                    &b.collapse_lowered().unwrap(),
                    &p,
                )
                .unwrap() as u8
            })
            .collect();
        assert!(expected.contains(&1) && expected.contains(&0));
        let whole = match_pairs(&batch(&stored), &batch(&incoming), &p, &Cancel::never());
        assert_eq!(whole.unwrap(), expected);
        for workers in [0, 1, 3] {
            let mut reader = Reader {
                stored: &stored,
                incoming: &incoming,
                reads: 0,
                fail_at: None,
            };
            let got =
                match_pairs_while_reading(stored.len(), &p, workers, &Cancel::never(), &mut reader);
            assert_eq!(got.unwrap(), expected, "{workers} workers");
            assert_eq!(reader.reads, 4);
        }
    }

    #[test]
    fn a_failed_read_or_a_cancel_drops_the_answer() {
        let (stored, incoming) = corpus(3 * PIPELINE_CHUNK);
        let stored: Vec<&str> = stored.iter().map(String::as_str).collect();
        let incoming: Vec<&str> = incoming.iter().map(String::as_str).collect();
        let p = MatchParams::default();
        let mut reader = Reader {
            stored: &stored,
            incoming: &incoming,
            reads: 0,
            fail_at: Some(PIPELINE_CHUNK),
        };
        let got = match_pairs_while_reading(stored.len(), &p, 2, &Cancel::new(), &mut reader);
        assert!(matches!(got, Err(Error::InvalidInput(_))));
        let cancel = Cancel::new();
        cancel.cancel();
        let mut reader = Reader {
            stored: &stored,
            incoming: &incoming,
            reads: 0,
            fail_at: None,
        };
        let got = match_pairs_while_reading(stored.len(), &p, 2, &cancel, &mut reader);
        assert_eq!(got, Err(Error::Interrupted));
        assert_eq!(reader.reads, 0);
        let got = match_pairs(&batch(&stored), &batch(&incoming), &p, &cancel);
        assert_eq!(got, Err(Error::Interrupted));
    }
}
