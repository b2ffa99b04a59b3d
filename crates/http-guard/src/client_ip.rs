//! The client's address: the TCP peer's, or behind a trusted proxy the one its header names.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, HeaderName};

/// Where the client's address comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientIp {
    /// A header the proxy sets to the client's IP (`X-Real-IP`; for `X-Forwarded-For` the
    /// last address is taken, the one the proxy added). `None`: the TCP peer's address.
    ///
    /// When the header appears more than once, its last line is the one read: a proxy that
    /// appends its own line (HAProxy's `option forwardfor`) puts it after whatever the client
    /// forged.
    pub header: Option<HeaderName>,
    /// Networks of the proxies whose header is believed. A connection from anywhere else is
    /// taken at its TCP address, whatever headers it sends.
    pub trusted: Vec<ipnet::IpNet>,
}

impl ClientIp {
    /// The client's address from `header`, believed from the `trusted` networks only
    /// (`--connecting-ip-header`, `--trusted-proxy`).
    pub fn from_header(header: &str, trusted: &[String]) -> Result<ClientIp, String> {
        let header = HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| format!("{header:?} is not a header name"))?;
        let trusted = Self::parse_networks(trusted)?;
        if trusted.is_empty() {
            return Err("a client IP header needs at least one trusted proxy".into());
        }
        Ok(ClientIp {
            header: Some(header),
            trusted,
        })
    }

    /// Parses `--trusted-proxy` values: CIDR networks or single addresses.
    pub fn parse_networks(values: &[String]) -> Result<Vec<ipnet::IpNet>, String> {
        values
            .iter()
            .map(|v| {
                v.parse::<ipnet::IpNet>()
                    .or_else(|_| v.parse::<IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| format!("{v:?} is not a network (CIDR) or an address"))
            })
            .collect()
    }

    /// Whether connections from `ip` come from a trusted proxy.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.trusted.iter().any(|n| n.contains(&ip))
    }

    /// The client's address for a request from `peer`: `None` when a trusted proxy did not
    /// say who the client is (the request is refused).
    pub fn resolve(&self, peer: SocketAddr, headers: &HeaderMap) -> Option<SocketAddr> {
        let peer = SocketAddr::new(canonical(peer.ip()), peer.port());
        let Some(name) = &self.header else {
            return Some(peer);
        };
        if !self.trusts(peer.ip()) {
            return Some(peer);
        }
        // The last line: the one the proxy wrote (earlier ones may be the client's).
        let value = headers.get_all(name).iter().next_back()?.to_str().ok()?;
        let last = value.rsplit(',').next()?.trim();
        let ip = last
            .parse::<IpAddr>()
            .ok()
            .or_else(|| last.parse::<SocketAddr>().ok().map(|s| s.ip()))?;
        Some(SocketAddr::new(canonical(ip), peer.port()))
    }
}

/// The client's address, in every request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub SocketAddr);

pub(crate) use fragstat_core::fair::canonical;

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn the_client_ip_comes_from_a_trusted_proxy_only() {
        let c = ClientIp {
            header: Some(HeaderName::from_static("x-real-ip")),
            trusted: ClientIp::parse_networks(&["127.0.0.1".into(), "10.0.0.0/8".into()]).unwrap(),
        };
        let proxy: SocketAddr = "10.1.2.3:5555".parse().unwrap();
        let other: SocketAddr = "198.51.100.4:6666".parse().unwrap();
        let h = headers(&[("x-real-ip", "203.0.113.9")]);
        assert_eq!(
            c.resolve(proxy, &h),
            Some("203.0.113.9:5555".parse().unwrap())
        );
        assert_eq!(
            c.resolve(other, &h),
            Some(other),
            "an untrusted peer's header is ignored"
        );
        assert_eq!(
            c.resolve(proxy, &HeaderMap::new()),
            None,
            "a trusted proxy must say"
        );
        let xff = ClientIp {
            header: Some(HeaderName::from_static("x-forwarded-for")),
            ..c.clone()
        };
        let h = headers(&[("x-forwarded-for", "1.2.3.4, 2001:db8::7")]);
        assert_eq!(
            xff.resolve(proxy, &h).map(|a| a.ip()),
            Some("2001:db8::7".parse().unwrap())
        );
        // No header configured: always the peer.
        assert_eq!(ClientIp::default().resolve(proxy, &h), Some(proxy));
        assert!(ClientIp::parse_networks(&["nope".into()]).is_err());
    }

    #[test]
    fn the_proxys_line_is_the_last_one() {
        let proxy: SocketAddr = "10.1.2.3:5555".parse().unwrap();
        let c = ClientIp {
            header: Some(HeaderName::from_static("x-real-ip")),
            trusted: ClientIp::parse_networks(&["10.0.0.0/8".into()]).unwrap(),
        };
        // The client forged the first line; the proxy appended its own.
        let h = headers(&[("x-real-ip", "192.0.2.66"), ("x-real-ip", "203.0.113.9")]);
        assert_eq!(
            c.resolve(proxy, &h).map(|a| a.ip()),
            Some("203.0.113.9".parse().unwrap())
        );
        let xff = ClientIp {
            header: Some(HeaderName::from_static("x-forwarded-for")),
            ..c
        };
        let h = headers(&[
            ("x-forwarded-for", "192.0.2.66, 192.0.2.67"),
            ("x-forwarded-for", "198.51.100.1, 203.0.113.9"),
        ]);
        assert_eq!(
            xff.resolve(proxy, &h).map(|a| a.ip()),
            Some("203.0.113.9".parse().unwrap())
        );
    }
}
