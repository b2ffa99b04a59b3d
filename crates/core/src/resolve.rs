//! Server addresses as people write them: `HOST[:PORT]`, `IP[:PORT]`, `[IPv6]:PORT`, a bare
//! IPv6 address. Host names resolve concurrently, each within a timeout.
//!
//! ```no_run
//! # async fn run() {
//! use std::time::Duration;
//! let targets = fragstat_core::resolve::resolve_all(
//!     &["127.0.0.1".into(), "localhost:27961".into(), "[::1]:27960".into()],
//!     27960,
//!     Duration::from_secs(2),
//! ).await;
//! for t in &targets {
//!     println!("{} -> {:?}", t.text, t.addr);
//! }
//! # }
//! ```

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// One address as given, and what it resolved to.
#[derive(Debug, Clone)]
pub struct Target {
    /// As written.
    pub text: String,
    /// The address, or why there is none.
    pub addr: Result<SocketAddr, ResolveError>,
}

/// Why an address as written cannot be read (before any lookup).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddrError {
    /// Nothing was given.
    #[error("empty address")]
    Empty,
    /// The text after the last `:` is not a port (0 to 65535).
    #[error("bad port in {0:?}")]
    BadPort(String),
    /// Neither `HOST[:PORT]`, `IP[:PORT]`, `[IPv6]:PORT` nor a bare IPv6 address.
    #[error("cannot read address {0:?}")]
    Unreadable(String),
}

/// Why an address has no [`SocketAddr`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The text cannot be read as an address (the caller's mistake: nothing was looked up).
    #[error(transparent)]
    Address(#[from] AddrError),
    /// The resolver gave no answer within the timeout.
    #[error("{host}: no answer from the resolver in {} ms", timeout.as_millis())]
    Timeout {
        /// The host name.
        host: String,
        /// The time allowed.
        timeout: Duration,
    },
    /// The resolver failed (the system's message is the source).
    #[error("{host}: {source}")]
    Lookup {
        /// The host name.
        host: String,
        /// The resolver's error (shared: a [`Target`] is `Clone`).
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// The name resolved to no address.
    #[error("{host}: no address")]
    NoAddress {
        /// The host name.
        host: String,
    },
    /// The lookup's task ended without an answer (it panicked or was cancelled).
    #[error("resolver task failed")]
    TaskFailed,
}

/// Splits `text` into host and port (`default_port` when none is given).
pub fn split(text: &str, default_port: u16) -> Result<(String, u16), AddrError> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok((ip.to_string(), default_port));
    }
    if let Ok(sa) = text.parse::<SocketAddr>() {
        return Ok((sa.ip().to_string(), sa.port()));
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return Ok((inner.to_string(), default_port));
    }
    match text.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && !host.is_empty() => {
            let port = port
                .parse::<u16>()
                .map_err(|_| AddrError::BadPort(text.to_string()))?;
            Ok((host.to_string(), port))
        }
        Some(_) => Err(AddrError::Unreadable(text.to_string())),
        None if text.is_empty() => Err(AddrError::Empty),
        None => Ok((text.to_string(), default_port)),
    }
}

/// The first IPv4 address of a name, else its first address: most game servers listen on
/// IPv4 only, while names like `localhost` often list `::1` first. Write `[v6]:port` to
/// choose IPv6.
pub fn prefer_ipv4(addrs: impl IntoIterator<Item = SocketAddr>) -> Option<SocketAddr> {
    let all: Vec<SocketAddr> = addrs.into_iter().collect();
    all.iter().find(|a| a.is_ipv4()).or(all.first()).copied()
}

/// Resolves one address; a host name is looked up (at most `timeout`).
pub async fn resolve(text: &str, default_port: u16, timeout: Duration) -> Target {
    let addr: Result<SocketAddr, ResolveError> = async {
        let (host, port) = split(text, default_port)?;
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(SocketAddr::new(ip, port));
        }
        let lookup =
            tokio::time::timeout(timeout, tokio::net::lookup_host((host.clone(), port))).await;
        match lookup {
            Err(_) => Err(ResolveError::Timeout { host, timeout }),
            Ok(Err(e)) => Err(ResolveError::Lookup {
                host,
                source: std::sync::Arc::new(e),
            }),
            Ok(Ok(addrs)) => prefer_ipv4(addrs).ok_or(ResolveError::NoAddress { host }),
        }
    }
    .await;
    Target {
        text: text.to_string(),
        addr,
    }
}

/// `IP:PORT`, `[IPv6]:PORT` or a bare IP (with `default_port`), as [`split`] reads them;
/// `None` for anything that needs [`split`] or the resolver.
fn literal(text: &str, default_port: u16) -> Option<SocketAddr> {
    text.parse::<SocketAddr>()
        .ok()
        .or_else(|| Some(SocketAddr::new(text.parse::<IpAddr>().ok()?, default_port)))
}

/// Resolves every address concurrently (at most 64 lookups at once), in the given order.
///
/// The future owns a copy of the list, so it is `Send + 'static` (one that borrowed `texts`
/// across an await would not be `Send` for every lifetime, rust#64552, and could not be
/// boxed as `dyn Future + Send`).
pub fn resolve_all(
    texts: &[String],
    default_port: u16,
    timeout: Duration,
) -> impl std::future::Future<Output = Vec<Target>> + Send + 'static {
    resolve_owned(texts.to_vec(), default_port, timeout)
}

/// [`resolve_all`] of a list the caller gives away (no copy of it is made).
pub async fn resolve_owned(
    texts: Vec<String>,
    default_port: u16,
    timeout: Duration,
) -> Vec<Target> {
    // Literal addresses (most of a scan list) need no task and no resolver.
    let mut out: Vec<Option<Target>> = texts
        .iter()
        .map(|text| {
            literal(text, default_port).map(|addr| Target {
                text: text.clone(),
                addr: Ok(addr),
            })
        })
        .collect();
    let mut names = out
        .iter()
        .enumerate()
        .filter(|(_, t)| t.is_none())
        .map(|(i, _)| i)
        .collect::<Vec<_>>()
        .into_iter();
    let mut set = tokio::task::JoinSet::new();
    loop {
        while set.len() < 64 {
            let Some(i) = names.next() else { break };
            let text = texts.get(i).cloned().unwrap_or_default();
            set.spawn(async move { (i, resolve(&text, default_port, timeout).await) });
        }
        match set.join_next().await {
            Some(Ok((i, t))) => {
                if let Some(slot) = out.get_mut(i) {
                    *slot = Some(t);
                }
            }
            Some(Err(_)) => {}
            None => break,
        }
    }
    out.into_iter()
        .zip(texts)
        .map(|(t, text)| {
            t.unwrap_or(Target {
                text,
                addr: Err(ResolveError::TaskFailed),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_read_as_split_and_resolve_read_them() {
        for (text, want) in [
            ("127.0.0.1", Some("127.0.0.1:27960")),
            ("127.0.0.1:5", Some("127.0.0.1:5")),
            ("[::1]:5", Some("[::1]:5")),
            ("::1", Some("[::1]:27960")),
            ("[::1]", None),
            ("localhost:5", None),
            ("", None),
        ] {
            let got = literal(text, 27960);
            assert_eq!(got, want.map(|w| w.parse().unwrap()), "{text}");
            if let Some(addr) = got {
                let (host, port) = split(text, 27960).unwrap();
                assert_eq!(SocketAddr::new(host.parse().unwrap(), port), addr);
            }
        }
    }

    #[test]
    fn names_prefer_ipv4() {
        let v6: SocketAddr = "[::1]:1".parse().unwrap();
        let v4: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(prefer_ipv4([v6, v4]), Some(v4));
        assert_eq!(prefer_ipv4([v6]), Some(v6));
        assert_eq!(prefer_ipv4([]), None);
    }

    #[test]
    fn address_forms() {
        let ok = |t: &str| split(t, 27960).unwrap();
        assert_eq!(ok("127.0.0.1"), ("127.0.0.1".into(), 27960));
        assert_eq!(ok("127.0.0.1:27961"), ("127.0.0.1".into(), 27961));
        assert_eq!(ok("[::1]:27961"), ("::1".into(), 27961));
        assert_eq!(ok("::1"), ("::1".into(), 27960));
        assert_eq!(ok("[::1]"), ("::1".into(), 27960));
        assert_eq!(ok("localhost:1"), ("localhost".into(), 1));
        assert!(split("host:notaport", 27960).is_err());
        assert!(split("", 27960).is_err());
        assert!(split(":5", 27960).is_err());
    }

    #[tokio::test]
    async fn resolves_in_order_and_reports_errors() {
        let texts: Vec<String> = ["127.0.0.1:5", "bad:port", "[::1]:7", "localhost:9"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let t = resolve_all(&texts, 1, Duration::from_secs(5)).await;
        assert_eq!(
            t[0].addr.as_ref().ok(),
            Some(&"127.0.0.1:5".parse().unwrap())
        );
        assert!(matches!(
            &t[1].addr,
            Err(ResolveError::Address(AddrError::BadPort(p))) if p == "bad:port"
        ));
        assert_eq!(t[2].addr.as_ref().ok(), Some(&"[::1]:7".parse().unwrap()));
        assert_eq!(t[3].addr.as_ref().ok().map(|a| a.port()), Some(9));
        assert_eq!(t[3].text, "localhost:9");
    }
}
