//! Which addresses of a master's list are probed: [`ListFilter`] and [`ListLimits`].
//!
//! A master list is data from the network: a hostile master, or anyone spoofing a UDP
//! master's reply, can list a victim's every port, hosts inside the prober's own network, or
//! multicast and broadcast groups. By default only public unicast addresses are kept, and
//! at most [`ListLimits::max_ports_per_ip`] ports of one address; what is dropped is counted
//! per reason in the master's report.

use std::net::{IpAddr, SocketAddr};

pub use fragstat_core::addr::{classify, FilterReason};

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
    /// Ports of one IPv4 address, or of one IPv6 /64, kept across the merged list (default
    /// 256): a list naming every port of one host, or every address of one IPv6 network, is
    /// a scan waiting to happen.
    pub max_ports_per_ip: usize,
    /// Servers kept in one merged list, from every master together (default 131,072): the
    /// per-master cap alone lets several masters add up.
    pub max_servers_total: usize,
    /// Bytes of one HTTP list (default 16 MiB).
    pub max_http_bytes: usize,
}

impl Default for ListLimits {
    fn default() -> Self {
        ListLimits {
            max_entries_per_master: crate::defaults::MAX_ENTRIES_PER_MASTER,
            max_ports_per_ip: crate::defaults::MAX_PORTS_PER_IP,
            max_servers_total: crate::defaults::MAX_SERVERS_TOTAL,
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
