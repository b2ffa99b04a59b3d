//! The webhook's headers: who sends (`User-Agent`), which batch (`X-Fragstat-Delivery`, the
//! same on every attempt of one batch, for a receiver to drop a repeat), and with
//! `webhook_secret` the signature: `X-Fragstat-Timestamp` (Unix seconds, when the attempt was
//! sent) and `X-Fragstat-Signature: sha256=HEX`, the HMAC-SHA256 under the secret of the
//! timestamp's digits, a `.` and the body's bytes. A receiver computes the same over what it
//! got, compares in constant time, and refuses a timestamp more than a few minutes old
//! (docs/tracker.md, "Webhook signatures", has the recipe).

use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header naming the batch.
pub const DELIVERY: &str = "x-fragstat-delivery";
/// The header with the attempt's time (Unix seconds).
pub const TIMESTAMP: &str = "x-fragstat-timestamp";
/// The header with the signature (`sha256=` and 64 hex digits).
pub const SIGNATURE: &str = "x-fragstat-signature";
/// The webhook's `User-Agent`.
pub const USER_AGENT: &str = concat!("fragstat-track/", env!("CARGO_PKG_VERSION"));

/// `sha256=HEX`: the HMAC-SHA256 under `secret` of `timestamp`, `.` and `body`.
pub fn sign(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for b in tag.iter() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Delivery ids: a random prefix for this process and a counter, so ids differ across
/// restarts too.
#[derive(Debug)]
pub(super) struct Deliveries {
    prefix: u64,
    next: std::sync::atomic::AtomicU64,
}

impl Deliveries {
    pub(super) fn new() -> Self {
        use std::hash::{BuildHasher, Hasher};
        // The standard library's per-process random hash keys: randomness without a crate.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        Deliveries {
            prefix: h.finish(),
            next: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// The next batch's id: 32 hex digits.
    pub(super) fn next(&self) -> String {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{:016x}{n:016x}", self.prefix)
    }
}

/// The time now, Unix seconds.
pub(super) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against Python's `hmac.new(b"Jefe", b"1700000000.{}", hashlib.sha256)`.
    #[test]
    fn the_signature_is_hmac_sha256_of_timestamp_dot_body() {
        let s = sign(b"Jefe", 1_700_000_000, b"{}");
        assert_eq!(
            s,
            "sha256=d3793e2b4103edfbd98cc19591832f5fad701d413db9fcae0ae7dab8184ed207"
        );
        assert_ne!(s, sign(b"Jefe", 1_700_000_001, b"{}"));
        assert_ne!(s, sign(b"Jefe", 1_700_000_000, b"{ }"));
        assert_ne!(s, sign(b"jefe", 1_700_000_000, b"{}"));
        let d = Deliveries::new();
        let (a, b) = (d.next(), d.next());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
    }
}
