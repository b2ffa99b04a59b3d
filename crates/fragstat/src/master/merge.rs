//! Merging the masters' answers into one list: the filter, the caps per host, per master
//! and in all, and each master's report of what it added and what was left out.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use fragstat_core::registry::CatalogueMaster;

use super::{Answer, Listed, MasterList, MasterReport};
use crate::{Client, Target};

/// Merges answers into one list.
pub(super) struct Merge {
    filter: crate::filter::ListFilter,
    limits: crate::filter::ListLimits,
    entries: Vec<Listed>,
    /// Position in `entries` of each address.
    seen: HashMap<SocketAddr, usize, foldhash::fast::RandomState>,
    /// Ports kept per host ([`host_key`]).
    ports: HashMap<IpAddr, usize, foldhash::fast::RandomState>,
    reports: Vec<MasterReport>,
}

/// What the per-address port cap counts under: an IPv4 address, or an IPv6 address's /64.
/// One IPv6 host (one subnet's router, too) answers for its whole /64: counted per /128, a
/// list could name 65,536 addresses of one victim network with one port each and pass (an
/// NDP-exhausting scan; security review L8).
fn host_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => IpAddr::V6(std::net::Ipv6Addr::from(
            u128::from(v6) & !u128::from(u64::MAX),
        )),
    }
}

impl Merge {
    pub(super) fn new(
        client: &Client,
        n: usize,
        masters: &[Target],
        specs: &[Option<CatalogueMaster>],
    ) -> Merge {
        Merge {
            filter: client.config().filter,
            limits: client.config().limits,
            entries: Vec::new(),
            seen: HashMap::default(),
            ports: HashMap::default(),
            reports: masters
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let mut r = MasterReport::new(t.text());
                    r.catalogue = specs.get(i).cloned().flatten();
                    r
                })
                .take(n)
                .collect(),
        }
    }

    /// Adds one of a master's answers (a master asked for several protocols answers once
    /// each: its report sums them, and it is online when any gave a list); returns the
    /// servers it added.
    pub(super) fn add(&mut self, a: Answer) -> Vec<SocketAddr> {
        let mut added = Vec::new();
        let Some(report) = self.reports.get_mut(a.index) else {
            return added;
        };
        report.addr = report.addr.or(a.addr);
        report.url = report.url.take().or(a.url);
        report.rtt = report.rtt.or(a.rtt);
        report.warnings.extend(a.warnings);
        let list = match a.result {
            Ok(list) => list,
            Err(e) if report.status != "online" => {
                report.status = if a.skipped {
                    "skipped"
                } else if e.is_timeout() {
                    "timeout"
                } else {
                    "error"
                };
                report.error = Some(e);
                return added;
            }
            Err(_) => return added,
        };
        report.status = "online";
        report.error = None;
        // The entry cap counts every list of this master.
        let before = report.listed;
        report.listed += list.len();
        for (n, mut entry) in list.into_iter().enumerate() {
            if before + n >= self.limits.max_entries_per_master {
                report.over_entry_cap += report.listed - before - n;
                break;
            }
            entry.addr = fragstat_core::canonical(entry.addr);
            if let Some(&at) = self.seen.get(&entry.addr) {
                report.duplicates += 1;
                if let Some(l) = self.entries.get_mut(at) {
                    if !l.masters.contains(&a.index) {
                        l.masters.push(a.index);
                    }
                }
                continue;
            }
            if let Some(reason) = self.filter.check(entry.addr, a.addr) {
                *report.filtered.entry(reason).or_default() += 1;
                continue;
            }
            if self.entries.len() >= self.limits.max_servers_total {
                report.over_total_cap += 1;
                continue;
            }
            let ports = self.ports.entry(host_key(entry.addr.ip())).or_default();
            if *ports >= self.limits.max_ports_per_ip {
                report.over_ip_cap += 1;
                continue;
            }
            *ports += 1;
            report.kept += 1;
            self.seen.insert(entry.addr, self.entries.len());
            added.push(entry.addr);
            self.entries.push(Listed {
                entry,
                masters: vec![a.index],
            });
        }
        added
    }

    pub(super) fn finish(self) -> MasterList {
        MasterList {
            entries: self.entries,
            reports: self.reports,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstat_core::model::MasterEntry;

    fn merge(limits: crate::ListLimits) -> Merge {
        Merge {
            filter: crate::ListFilter::keep_all(),
            limits,
            entries: Vec::new(),
            seen: HashMap::default(),
            ports: HashMap::default(),
            reports: vec![MasterReport::new("a".into()), MasterReport::new("b".into())],
        }
    }

    fn answer(index: usize, addrs: impl IntoIterator<Item = SocketAddr>) -> Answer {
        Answer {
            index,
            round: 0,
            addr: None,
            url: None,
            rtt: None,
            result: Ok(addrs.into_iter().map(MasterEntry::new).collect()),
            warnings: Vec::new(),
            skipped: false,
        }
    }

    /// A master asked for two protocols: one list and one timeout make it online, the
    /// counts are summed, and a server on both lists is listed once, by it.
    #[test]
    fn a_masters_answers_for_several_protocols_add_up() {
        let mut m = merge(crate::ListLimits::default());
        let a: SocketAddr = "9.9.9.1:27960".parse().unwrap();
        let b: SocketAddr = "9.9.9.2:27960".parse().unwrap();
        assert_eq!(m.add(answer(0, [a])).len(), 1);
        let mut late = answer(0, []);
        late.round = 1;
        late.result = Err(crate::Error::Timeout { attempts: 1 });
        assert!(m.add(late).is_empty());
        let mut second = answer(0, [a, b]);
        second.round = 2;
        assert_eq!(m.add(second), [b]);
        let r = &m.reports[0];
        assert_eq!(
            (r.status, r.listed, r.kept, r.duplicates),
            ("online", 3, 2, 1)
        );
        assert!(r.error.is_none());
        let list = m.finish();
        assert!(list.entries.iter().all(|l| l.masters == [0]));
    }

    /// 65,534 addresses of one IPv6 /64, one port each: one host's network, capped as one
    /// address; the next /64 and IPv4 are not charged for it.
    #[test]
    fn the_port_cap_counts_an_ipv6_64_as_one_host() {
        let mut m = merge(crate::ListLimits::default());
        let victim = (0..65_536u128).map(|i| {
            let ip = std::net::Ipv6Addr::from((0x2a00_1450_0001_0002u128 << 64) | i);
            SocketAddr::new(ip.into(), 27960)
        });
        let other: SocketAddr = "[2a00:1450:1:3::1]:27960".parse().unwrap();
        let v4: SocketAddr = "1.2.3.4:27960".parse().unwrap();
        let added = m.add(answer(
            0,
            [other, v4].into_iter().chain(victim.take(65_534)),
        ));
        assert_eq!(added.len(), 256 + 2);
        let r = &m.reports[0];
        assert_eq!((r.kept, r.over_ip_cap), (258, 65_534 - 256));
        assert!(added.contains(&other) && added.contains(&v4));
    }

    /// Two masters of 40 servers each under a total of 50: the second adds 10, and its report
    /// counts the other 30 as over the total cap.
    #[test]
    fn the_total_cap_holds_across_masters() {
        let limits = crate::ListLimits {
            max_servers_total: 50,
            ..crate::ListLimits::default()
        };
        let mut m = merge(limits);
        let net = |n: u8| (1..=40u8).map(move |i| SocketAddr::from(([9, n, 0, i], 27960)));
        assert_eq!(m.add(answer(0, net(1))).len(), 40);
        assert_eq!(m.add(answer(1, net(2))).len(), 10);
        assert_eq!(m.reports[1].over_total_cap, 30);
        assert_eq!(m.reports[1].dropped(), 30);
        assert_eq!(m.finish().entries.len(), 50);
    }
}
