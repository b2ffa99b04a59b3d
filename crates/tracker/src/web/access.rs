//! Who may ask the API how often (`[web.api]`, [`crate::config::ApiConfig`]): a request to
//! `/api/*` with a key (`Authorization: Bearer KEY` or `X-Api-Key: KEY`) takes one from its
//! key's bucket; one without takes one from its client's buckets per address prefix (host,
//! IPv4 /24 or IPv6 /56, IPv4 /16 or IPv6 /48: [`fragstat::core::fair::RateTable`], so one
//! host takes only its own rate of its networks'). Beyond: `429 Too Many Requests` with
//! `Retry-After` and a JSON body. An unknown key is a 401 (never served as keyless: a client
//! with a wrong key should learn it).
//!
//! Keys are compared by their SHA-256 digests in constant time (`subtle`), every key each
//! time; a key is never logged, only its name. The client is the one the web guard names
//! ([`fragstat_http_guard::ClientAddr`]: behind a trusted proxy, the address its header
//! gives). State is bounded: a bucket per configured key, and the prefix buckets in the
//! generational table (at most 65,536 per level in each of two generations).

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use fragstat::core::fair::{Bucket, Rate, RateTable};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::ApiConfig;
use crate::metrics::Metrics;

/// One configured key.
struct Key {
    name: String,
    digest: [u8; 32],
    rate: Rate,
    bucket: Mutex<Bucket>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KeyLabel {
    key: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClientLabel {
    client: String,
}

/// The API's keys and rates (see the module documentation).
pub struct Access {
    keys: Vec<Key>,
    keyless: Mutex<RateTable>,
    origin: Instant,
    keyed_requests: Family<KeyLabel, Counter>,
    limited: Family<ClientLabel, Counter>,
    unknown_keys: Counter,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.keys.iter().map(|k| k.name.as_str()).collect();
        f.debug_struct("Access").field("keys", &names).finish()
    }
}

/// Why a request was not let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It sent a key no one configured.
    UnknownKey,
    /// Over its key's rate (`keyed`) or its prefixes'; a request would be taken after `wait`.
    TooMany {
        /// Over a key's rate.
        keyed: bool,
        /// How long until one would be taken.
        wait: Duration,
    },
}

/// SHA-256 of `b`.
fn digest(b: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&Sha256::digest(b));
    out
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Access {
    /// The keys and rates of `config`, their counters registered in `metrics`
    /// (`api_key_requests_total{key}`, `api_rate_limited_total{client}`,
    /// `api_unknown_key_total`).
    pub fn new(config: &ApiConfig, metrics: &Metrics) -> Access {
        let a = Access::of(config);
        metrics.register(
            "api_key_requests",
            "API requests with a key, by the key's name",
            a.keyed_requests.clone(),
        );
        metrics.register(
            "api_rate_limited",
            "API requests answered 429 (client: key or keyless)",
            a.limited.clone(),
        );
        metrics.register(
            "api_unknown_key",
            "API requests answered 401: a key no one configured",
            a.unknown_keys.clone(),
        );
        a
    }

    /// The keys and rates of `config`, counted nowhere.
    pub fn of(config: &ApiConfig) -> Access {
        let origin = Instant::now();
        let rate = |per_sec, burst| Rate { per_sec, burst };
        Access {
            keys: config
                .keys
                .iter()
                .map(|k| Key {
                    name: k.name.clone(),
                    digest: digest(k.key.expose().as_bytes()),
                    rate: config.key_rate(k),
                    bucket: Mutex::new(Bucket::default()),
                })
                .collect(),
            keyless: Mutex::new(RateTable::per_level(
                rate(config.rate, config.burst),
                rate(config.site_rate, config.site_burst),
                rate(config.net_rate, config.net_burst),
                origin,
            )),
            origin,
            keyed_requests: Family::default(),
            limited: Family::default(),
            unknown_keys: Counter::default(),
        }
    }

    /// The key a request sends: `X-Api-Key`, else `Authorization: Bearer`.
    fn presented(headers: &HeaderMap) -> Option<&[u8]> {
        if let Some(k) = headers.get("x-api-key") {
            return Some(k.as_bytes());
        }
        let auth = headers.get(header::AUTHORIZATION)?.as_bytes();
        let (scheme, rest) = auth.split_at_checked(7)?;
        scheme
            .eq_ignore_ascii_case(b"bearer ")
            .then(|| rest.trim_ascii())
    }

    /// The configured key `presented` is: its digest compared with every key's in constant
    /// time.
    fn find(&self, presented: &[u8]) -> Option<usize> {
        let digest = digest(presented);
        let mut found = None;
        for (i, k) in self.keys.iter().enumerate() {
            let same: bool = k.digest[..].ct_eq(&digest[..]).into();
            if same && found.is_none() {
                found = Some(i);
            }
        }
        found
    }

    /// Takes one request of a client at `ip` (`None`: unknown, no per-prefix rate) sending
    /// `headers`, at `now`.
    pub fn check(
        &self,
        headers: &HeaderMap,
        ip: Option<IpAddr>,
        now: Instant,
    ) -> Result<(), Refusal> {
        let ns = u64::try_from(now.saturating_duration_since(self.origin).as_nanos())
            .unwrap_or(u64::MAX);
        let (r, label) = match Self::presented(headers) {
            Some(p) => {
                let Some(i) = self.find(p) else {
                    self.unknown_keys.inc();
                    return Err(Refusal::UnknownKey);
                };
                let k = &self.keys[i];
                self.keyed_requests
                    .get_or_create(&KeyLabel {
                        key: k.name.clone(),
                    })
                    .inc();
                (lock(&k.bucket).take(k.rate, ns), "key")
            }
            None => match ip {
                Some(ip) => (lock(&self.keyless).check(ip, now), "keyless"),
                None => (Ok(()), "keyless"),
            },
        };
        r.map_err(|wait| {
            self.limited
                .get_or_create(&ClientLabel {
                    client: label.into(),
                })
                .inc();
            Refusal::TooMany {
                keyed: label == "key",
                wait,
            }
        })
    }

    /// Buckets held for keyless clients (every level, both generations): bounded whatever
    /// the number of addresses.
    pub fn keyless_buckets(&self) -> usize {
        lock(&self.keyless).len()
    }
}

/// A JSON error answer: `{"error": message, "status": code}`.
pub(super) fn json_error(code: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message, "status": code.as_u16() });
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The middleware: requests to `api` (the `/api/` prefix under the base path) go through
/// [`Access::check`].
pub(super) async fn limit(
    access: Arc<Access>,
    api: Arc<str>,
    req: Request,
    next: Next,
) -> Response {
    if !req.uri().path().starts_with(&*api) {
        return next.run(req).await;
    }
    let ip = req
        .extensions()
        .get::<fragstat_http_guard::ClientAddr>()
        .map(|c| c.0.ip());
    match access.check(req.headers(), ip, Instant::now()) {
        Ok(()) => next.run(req).await,
        Err(Refusal::UnknownKey) => {
            let mut r = json_error(
                StatusCode::UNAUTHORIZED,
                "unknown API key (send a configured key, or none)",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
        Err(Refusal::TooMany { keyed, wait }) => {
            let secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
            let whose = if keyed { "this key's" } else { "this client's" };
            let body = serde_json::json!({
                "error": format!("too many requests: over {whose} API rate; try again in {secs} s"),
                "status": 429,
                "retry_after": secs,
            });
            let mut r = (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response();
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ApiKey, Secret};

    fn config() -> ApiConfig {
        ApiConfig {
            rate: 1,
            burst: 2,
            site_rate: 1,
            site_burst: 3,
            net_rate: 1,
            net_burst: 4,
            key_rate: 1,
            key_burst: 5,
            keys: vec![ApiKey {
                name: "bot".into(),
                key: Secret::new("0123456789abcdef-key"),
                rate: None,
                burst: None,
            }],
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    /// The keyless buckets per prefix, a key's own bucket, an unknown key refused, and a
    /// flood of addresses keeps the table bounded while a key is still served.
    #[test]
    fn keys_and_prefixes_have_their_own_rates() {
        let a = Access::of(&config());
        let t = Instant::now();
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        let none = HeaderMap::new();
        assert!(a.check(&none, ip("10.0.0.1"), t).is_ok());
        assert!(a.check(&none, ip("10.0.0.1"), t).is_ok());
        let r = a.check(&none, ip("10.0.0.1"), t).unwrap_err();
        assert!(matches!(r, Refusal::TooMany { keyed: false, .. }), "{r:?}");
        assert!(a.check(&none, ip("10.0.0.2"), t).is_ok(), "a neighbour");
        assert!(
            a.check(&none, ip("10.0.0.3"), t).is_err(),
            "the /24's 3 spent"
        );
        // The key, from the same host: its own bucket (5).
        let keyed = headers(&[("authorization", "Bearer 0123456789abcdef-key")]);
        for _ in 0..5 {
            assert!(a.check(&keyed, ip("10.0.0.1"), t).is_ok());
        }
        assert!(matches!(
            a.check(&keyed, ip("10.0.0.1"), t),
            Err(Refusal::TooMany { keyed: true, .. })
        ));
        let other = headers(&[("x-api-key", "0123456789abcdef-kez")]);
        assert_eq!(a.check(&other, ip("10.0.0.9"), t), Err(Refusal::UnknownKey));
        let basic = headers(&[("authorization", "Basic 0123456789abcdef-key")]);
        assert!(
            a.check(&basic, ip("10.9.0.1"), t).is_ok(),
            "not a bearer key: keyless"
        );
        // A flood of addresses: the table stays bounded, and a later key is served.
        let b = Access::of(&config());
        for i in 0..300_000u32 {
            let _ = b.check(&none, Some(IpAddr::from(std::net::Ipv4Addr::from(i))), t);
        }
        assert!(b.keyless_buckets() <= 3 * 65_536, "{}", b.keyless_buckets());
        assert!(b.check(&keyed, ip("0.0.0.1"), t).is_ok());
        // Unknown clients (no guard): only keys count.
        assert!(b.check(&none, None, t).is_ok());
        assert!(format!("{a:?}").contains("bot") && !format!("{a:?}").contains("abcdef"));
    }
}
