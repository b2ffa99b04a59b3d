//! What kind of address an IP is, when it is not a public unicast one: the one
//! classification the client's list filter and the master's registrations share.

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
    /// `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`), benchmarking
    /// (`198.18/15`), IETF protocol assignments (`192.0.0/24`), discard-only `100::/64`,
    /// the deprecated site-local `fec0::/10`.
    Reserved,
    /// IPv6 transition addresses that stand for an IPv4 host: 6to4 (`2002::/16`), Teredo
    /// (`2001::/32`), NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`). A server reachable so is
    /// reachable (and listed) at its IPv4 address; listing the translated form lets one
    /// IPv4 host appear under 2^80 addresses.
    Transition,
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
            FilterReason::Transition => "transition",
        }
    }

    /// Every reason.
    pub const ALL: [FilterReason; 11] = [
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
        FilterReason::Transition,
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
    } else if (s[0] == 0x2001 && s[1] == 0x0db8)
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])
        || (s[0] == 0x3fff && (s[1] & 0xf000) == 0)
        || (s[0] & 0xffc0) == 0xfec0
    {
        FilterReason::Reserved
    } else if s[0] == 0x2002
        || (s[0] == 0x2001 && s[1] == 0)
        || (s[0] == 0x0064 && s[1] == 0xff9b && (s[2..6] == [0, 0, 0, 0] || s[2] == 1))
    {
        FilterReason::Transition
    } else {
        return None;
    };
    Some(reason)
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
            ("[3fff::1]:27960", Some(FilterReason::Reserved)),
            ("[3fff:fff::1]:27960", Some(FilterReason::Reserved)),
            ("[3fff:1000::1]:27960", None),
            ("[4000::1]:27960", None),
            ("[fec0::1]:27960", Some(FilterReason::Reserved)),
            ("[2002:102:304::1]:27960", Some(FilterReason::Transition)),
            (
                "[2001:0:4136:e378::1]:27960",
                Some(FilterReason::Transition),
            ),
            ("[2001:1::1]:27960", None),
            ("[64:ff9b::102:304]:27960", Some(FilterReason::Transition)),
            ("[64:ff9b:1::102:304]:27960", Some(FilterReason::Transition)),
            ("[64:ff9b:2::1]:27960", None),
        ] {
            assert_eq!(classify(a(addr)), want, "{addr}");
        }
    }
}
