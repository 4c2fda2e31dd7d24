//! Fallible allocation for sizes that come from the caller (a matrix, an expanded join, one slot
//! per label): checked before anything is allocated, and a failure is [`Error::OutOfMemory`],
//! never an abort. (Small, bounded buffers use the infallible `Vec` methods.)

use crate::error::{Error, Result};

/// An empty vector with room for `n` items.
pub fn with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)?;
    Ok(v)
}

/// `n` clones of `value` (`vec![value; n]`).
pub fn filled<T: Clone>(value: T, n: usize) -> Result<Vec<T>> {
    let mut v = with_capacity(n)?;
    v.resize(n, value);
    Ok(v)
}

/// `n` items made by `f` (`(0..n).map(f).collect()`).
pub fn from_fn<T>(n: usize, f: impl FnMut(usize) -> T) -> Result<Vec<T>> {
    let mut v = with_capacity(n)?;
    v.extend((0..n).map(f));
    Ok(v)
}

/// Room for `additional` more items in `v` (a no-op when it has them).
#[inline]
pub fn reserve<T>(v: &mut Vec<T>, additional: usize) -> Result<()> {
    if v.capacity() - v.len() < additional {
        v.try_reserve(additional)?;
    }
    Ok(())
}

/// Capacity for `n` items in all in `v` (a no-op when it has it).
#[inline]
pub fn reserve_total<T>(v: &mut Vec<T>, n: usize) -> Result<()> {
    if v.capacity() < n {
        v.try_reserve(n - v.len())?;
    }
    Ok(())
}

/// A copy of `items` (`items.to_vec()`).
pub fn copy_of<T: Copy>(items: &[T]) -> Result<Vec<T>> {
    let mut v = with_capacity(items.len())?;
    v.extend_from_slice(items);
    Ok(v)
}

/// `iter` mapped in parallel by `f` (with one `init()` state per rayon job, as `map_init`) into a
/// vector reserved fallibly up front, so the collect itself allocates nothing. The first error an
/// item gives is the call's (the items after it are skipped, given `T::default()`): an allocation
/// failure inside a worker is an `Err`, never a panic.
pub fn par_collect<I, S, T>(
    iter: I,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, I::Item) -> Result<T> + Sync + Send,
) -> Result<Vec<T>>
where
    I: rayon::iter::IndexedParallelIterator,
    T: Default + Send,
{
    use rayon::iter::ParallelExtend;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let mut out = with_capacity(iter.len())?;
    let failed = AtomicBool::new(false);
    let first = std::sync::Mutex::new(None);
    out.par_extend(iter.map_init(init, |state, item| {
        if failed.load(Relaxed) {
            return T::default();
        }
        f(state, item).unwrap_or_else(|err| {
            failed.store(true, Relaxed);
            if let Ok(mut slot) = first.lock() {
                slot.get_or_insert(err);
            }
            T::default()
        })
    }));
    match first.into_inner().ok().flatten() {
        Some(err) => Err(err),
        None => Ok(out),
    }
}

/// Push `x`, growing `v` fallibly (amortised as `push` grows it).
#[inline]
pub fn push<T>(v: &mut Vec<T>, x: T) -> Result<()> {
    if v.len() == v.capacity() {
        v.try_reserve(1)?;
    }
    v.push(x);
    Ok(())
}

/// `a * b`, or an error naming `what` when the product does not fit memory's address range.
pub fn product(a: usize, b: usize, what: &str) -> Result<usize> {
    a.checked_mul(b)
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| Error::OutOfMemory(format!("{what} is too large for memory ({a} x {b})")))
}

/// `a + b`, or an error naming `what` when the sum overflows.
pub fn sum(a: usize, b: usize, what: &str) -> Result<usize> {
    a.checked_add(b)
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| Error::OutOfMemory(format!("{what} is too large for memory")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_sizes_are_errors() {
        assert!(matches!(
            with_capacity::<u64>(usize::MAX / 2),
            Err(Error::OutOfMemory(_))
        ));
        assert!(matches!(
            filled(0u8, isize::MAX as usize),
            Err(Error::OutOfMemory(_))
        ));
        assert!(matches!(
            product(1 << 40, 1 << 40, "x"),
            Err(Error::OutOfMemory(_))
        ));
        assert!(matches!(
            sum(usize::MAX, 1, "x"),
            Err(Error::OutOfMemory(_))
        ));
        assert_eq!(product(3, 4, "x"), Ok(12));
        assert_eq!(filled(7u8, 3).unwrap(), vec![7, 7, 7]);
        let mut v = Vec::new();
        for k in 0..100 {
            push(&mut v, k).unwrap();
        }
        assert_eq!(v.len(), 100);
    }
}
