//! Challenges, tokens and nonces of queries, unpredictable to anyone outside this process
//! (security review L4). They come from the operating system's cryptographic source
//! ([`getrandom`]), never from a generator seeded by the time: a server that saw a few such
//! values could guess the next ones and forge replies to the queries sent to other servers.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// `N` bytes from the operating system. Should it refuse (no supported system does), a keyed
/// hash (std's `RandomState`, itself keyed from the OS once) of a counter and the time, so a
/// query still goes out with a value no one outside can predict.
fn bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    if getrandom::fill(&mut out).is_ok() {
        return out;
    }
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = std::collections::hash_map::RandomState::new();
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = state.build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_usize(i);
        if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(d.as_nanos());
        }
        let v = h.finish().to_ne_bytes();
        chunk.copy_from_slice(v.get(..chunk.len()).unwrap_or(&v));
    }
    out
}

/// A random `u64`.
pub fn u64() -> u64 {
    u64::from_ne_bytes(bytes())
}

/// A random `u32`.
pub fn u32() -> u32 {
    u32::from_ne_bytes(bytes())
}

/// A random value in `0..n` (uniform, by rejection); 0 when `n` is 0.
pub fn u32_below(n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    // The largest multiple of n that fits: values at or above it would favour the low ones.
    let zone = u32::MAX - (u32::MAX % n);
    loop {
        let v = u32();
        if v < zone {
            return v % n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_below_and_covers_the_range() {
        let mut seen = [false; 7];
        for _ in 0..1_000 {
            let v = u32_below(7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s), "{seen:?}");
        assert_eq!(u32_below(0), 0);
        assert_eq!(u32_below(1), 0);
    }

    #[test]
    fn values_differ() {
        let a: Vec<u64> = (0..64).map(|_| u64()).collect();
        let mut b = a.clone();
        b.sort_unstable();
        b.dedup();
        assert_eq!(a.len(), b.len());
    }
}
