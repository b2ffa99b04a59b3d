//! Which addresses of a master's list are probed: [`ListFilter`] and [`ListLimits`].
//!
//! A master list is data from the network: a hostile master, or anyone spoofing a UDP
//! master's reply, can list a victim's every port, hosts inside the prober's own network, or
//! multicast and broadcast groups. By default only public unicast addresses are kept, and
//! at most [`ListLimits::max_ports_per_ip`] ports of one address; what is dropped is counted
//! per reason in the master's report.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why a listed address was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FilterReason {
    /// Port 0.
    PortZero,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `127.0.0.0/8`, `::1` (kept when the master itself is on loopback).
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16` (RFC 1918).
    Private,
    /// `100.64/10` (RFC 6598, carrier-grade NAT).
    SharedCgnat,
    /// `169.254/16`, `fe80::/10`.
    LinkLocal,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `fc00::/7` (unique local).
    UniqueLocal,
    /// Reserved and special-purpose ranges: `240/4`, documentation (`192.0.2/24`,
    /// `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`), benchmarking (`198.18/15`),
    /// IETF protocol assignments (`192.0.0/24`), discard-only `100::/64`.
    Reserved,
}

impl FilterReason {
    /// A short name (as reports and metrics write it).
    pub fn as_str(self) -> &'static str {
        match self {
            FilterReason::PortZero => "port_zero",
            FilterReason::Unspecified => "unspecified",
            FilterReason::Loopback => "loopback",
            FilterReason::Private => "private",
            FilterReason::SharedCgnat => "cgnat",
            FilterReason::LinkLocal => "link_local",
            FilterReason::Multicast => "multicast",
            FilterReason::Broadcast => "broadcast",
            FilterReason::UniqueLocal => "unique_local",
            FilterReason::Reserved => "reserved",
        }
    }

    /// Every reason.
    pub const ALL: [FilterReason; 10] = [
        FilterReason::PortZero,
        FilterReason::Unspecified,
        FilterReason::Loopback,
        FilterReason::Private,
        FilterReason::SharedCgnat,
        FilterReason::LinkLocal,
        FilterReason::Multicast,
        FilterReason::Broadcast,
        FilterReason::UniqueLocal,
        FilterReason::Reserved,
    ];
}

impl std::fmt::Display for FilterReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of address this is, when it is not a public unicast one. An IPv4-mapped IPv6
/// address is judged as its IPv4 address.
pub fn classify(addr: SocketAddr) -> Option<FilterReason> {
    if addr.port() == 0 {
        return Some(FilterReason::PortZero);
    }
    match addr.ip() {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<FilterReason> {
    let o = ip.octets();
    let reason = if o[0] == 0 {
        FilterReason::Unspecified
    } else if ip.is_loopback() {
        FilterReason::Loopback
    } else if ip.is_private() {
        FilterReason::Private
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        FilterReason::SharedCgnat
    } else if ip.is_link_local() {
        FilterReason::LinkLocal
    } else if ip.is_broadcast() {
        FilterReason::Broadcast
    } else if ip.is_multicast() {
        FilterReason::Multicast
    } else if o[0] >= 240
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        || (o[0] == 192 && o[1] == 0 && o[2] == 2)
        || (o[0] == 198 && o[1] == 51 && o[2] == 100)
        || (o[0] == 203 && o[1] == 0 && o[2] == 113)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
    {
        FilterReason::Reserved
    } else {
        return None;
    };
    Some(reason)
}

fn classify_v6(ip: Ipv6Addr) -> Option<FilterReason> {
    let s = ip.segments();
    let reason = if ip.is_unspecified() {
        FilterReason::Unspecified
    } else if ip.is_loopback() {
        FilterReason::Loopback
    } else if (s[0] & 0xffc0) == 0xfe80 {
        FilterReason::LinkLocal
    } else if (s[0] & 0xfe00) == 0xfc00 {
        FilterReason::UniqueLocal
    } else if ip.is_multicast() {
        FilterReason::Multicast
    } else if (s[0] == 0x2001 && s[1] == 0x0db8) || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) {
        FilterReason::Reserved
    } else {
        return None;
    };
    Some(reason)
}

/// Which listed addresses are kept. The default keeps public unicast addresses only (and
/// loopback ones from a master that is itself on loopback).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListFilter {
    keep: [bool; FilterReason::ALL.len()],
}

impl Default for ListFilter {
    fn default() -> Self {
        ListFilter {
            keep: [false; FilterReason::ALL.len()],
        }
    }
}

impl ListFilter {
    /// Keeps every address (still never port 0, which nothing can be sent to): for a master
    /// you run yourself on a private network.
    pub fn keep_all() -> Self {
        let mut f = ListFilter {
            keep: [true; FilterReason::ALL.len()],
        };
        f.set(FilterReason::PortZero, false);
        f
    }

    /// Keeps (or drops) addresses of one kind.
    #[must_use]
    pub fn keep(mut self, reason: FilterReason, keep: bool) -> Self {
        self.set(reason, keep);
        self
    }

    fn set(&mut self, reason: FilterReason, keep: bool) {
        if let Some(k) = FilterReason::ALL
            .iter()
            .position(|r| *r == reason)
            .and_then(|i| self.keep.get_mut(i))
        {
            *k = keep;
        }
    }

    fn keeps(&self, reason: FilterReason) -> bool {
        FilterReason::ALL
            .iter()
            .position(|r| *r == reason)
            .and_then(|i| self.keep.get(i))
            .copied()
            .unwrap_or(false)
    }

    /// Why `addr`, listed by a master at `master`, is left out; `None` to keep it.
    pub fn check(&self, addr: SocketAddr, master: Option<SocketAddr>) -> Option<FilterReason> {
        let reason = classify(addr)?;
        let from_loopback = master.is_some_and(|m| {
            m.ip().is_loopback()
                || matches!(m.ip(), IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()))
        });
        if reason == FilterReason::Loopback && from_loopback {
            return None;
        }
        (!self.keeps(reason)).then_some(reason)
    }
}

/// Bounds on master lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListLimits {
    /// Entries taken from one master's list (default 65,536); the rest are counted as
    /// capped in its report.
    pub max_entries_per_master: usize,
    /// Ports of one IP address kept across the merged list (default 256): a list naming
    /// every port of one host is a port scan waiting to happen.
    pub max_ports_per_ip: usize,
    /// Bytes of one HTTP list (default 16 MiB).
    pub max_http_bytes: usize,
}

impl Default for ListLimits {
    fn default() -> Self {
        ListLimits {
            max_entries_per_master: crate::defaults::MAX_ENTRIES_PER_MASTER,
            max_ports_per_ip: crate::defaults::MAX_PORTS_PER_IP,
            max_http_bytes: crate::defaults::MAX_HTTP_LIST,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn every_special_range_is_named() {
        for (addr, want) in [
            ("1.2.3.4:27960", None),
            ("8.8.8.8:1", None),
            ("[2a01:4f8::1]:27960", None),
            ("1.2.3.4:0", Some(FilterReason::PortZero)),
            ("0.0.0.0:27960", Some(FilterReason::Unspecified)),
            ("0.1.2.3:27960", Some(FilterReason::Unspecified)),
            ("[::]:27960", Some(FilterReason::Unspecified)),
            ("127.0.0.1:27960", Some(FilterReason::Loopback)),
            ("127.255.0.9:1", Some(FilterReason::Loopback)),
            ("[::1]:27960", Some(FilterReason::Loopback)),
            ("[::ffff:127.0.0.1]:27960", Some(FilterReason::Loopback)),
            ("10.0.0.1:27960", Some(FilterReason::Private)),
            ("172.16.0.1:27960", Some(FilterReason::Private)),
            ("172.31.255.1:27960", Some(FilterReason::Private)),
            ("172.32.0.1:27960", None),
            ("192.168.1.1:27960", Some(FilterReason::Private)),
            ("[::ffff:10.1.1.1]:27960", Some(FilterReason::Private)),
            ("100.64.0.1:27960", Some(FilterReason::SharedCgnat)),
            ("100.127.255.255:27960", Some(FilterReason::SharedCgnat)),
            ("100.128.0.1:27960", None),
            ("169.254.1.1:27960", Some(FilterReason::LinkLocal)),
            ("[fe80::1]:27960", Some(FilterReason::LinkLocal)),
            ("224.0.0.1:27960", Some(FilterReason::Multicast)),
            ("239.255.255.250:1900", Some(FilterReason::Multicast)),
            ("[ff02::1]:27960", Some(FilterReason::Multicast)),
            ("255.255.255.255:27960", Some(FilterReason::Broadcast)),
            ("[fd00::1]:27960", Some(FilterReason::UniqueLocal)),
            ("[fc12::1]:27960", Some(FilterReason::UniqueLocal)),
            ("240.0.0.1:27960", Some(FilterReason::Reserved)),
            ("192.0.2.5:27960", Some(FilterReason::Reserved)),
            ("198.51.100.5:27960", Some(FilterReason::Reserved)),
            ("203.0.113.5:27960", Some(FilterReason::Reserved)),
            ("198.18.0.1:27960", Some(FilterReason::Reserved)),
            ("198.19.255.1:27960", Some(FilterReason::Reserved)),
            ("192.0.0.8:27960", Some(FilterReason::Reserved)),
            ("[2001:db8::1]:27960", Some(FilterReason::Reserved)),
            ("[100::1]:27960", Some(FilterReason::Reserved)),
        ] {
            assert_eq!(classify(a(addr)), want, "{addr}");
        }
    }

    #[test]
    fn loopback_is_kept_from_a_loopback_master_and_opt_ins_work() {
        let f = ListFilter::default();
        let local = a("127.0.0.1:27960");
        assert_eq!(
            f.check(local, Some(a("1.2.3.4:27950"))),
            Some(FilterReason::Loopback)
        );
        assert_eq!(f.check(local, Some(a("127.0.0.1:27950"))), None);
        assert_eq!(f.check(local, Some(a("[::1]:27950"))), None);
        assert_eq!(f.check(local, None), Some(FilterReason::Loopback));
        assert_eq!(
            f.check(a("10.0.0.1:1"), Some(a("127.0.0.1:27950"))),
            Some(FilterReason::Private),
            "only loopback follows the master"
        );
        let private = f.keep(FilterReason::Private, true);
        assert_eq!(private.check(a("10.0.0.1:1"), None), None);
        let all = ListFilter::keep_all();
        for addr in ["10.0.0.1:1", "224.0.0.1:1", "[fe80::1]:1", "0.0.0.0:1"] {
            assert_eq!(all.check(a(addr), None), None, "{addr}");
        }
        assert_eq!(
            all.check(a("1.2.3.4:0"), None),
            Some(FilterReason::PortZero)
        );
    }
}
