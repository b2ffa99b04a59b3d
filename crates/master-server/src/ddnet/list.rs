//! `servers.json`, within [`DdnetLimits::max_list_bytes`](super::DdnetLimits): past the cap,
//! the bytes are shared among networks (IPv4 /16, IPv6 /32, where each info was sent from)
//! the way water fills vessels: the network listed with the fewest bytes so far adds its
//! next server (its oldest first), so a network with a few servers is always listed whole
//! and the ones listing the most lose their newest.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use bytes::Bytes;
use fragstat_core::fair::Prefix;
use serde::Serialize;
use serde_json::value::RawValue;

use super::{DdnetMaster, Server, REBUILD_EVERY};

#[derive(Serialize)]
struct Entry<'a> {
    addresses: &'a BTreeSet<String>,
    info: &'a RawValue,
}

#[derive(Serialize)]
struct Doc<'a> {
    servers: Vec<Entry<'a>>,
}

/// `{"servers":[` `]}` and a newline, at most.
const DOC_OVERHEAD: u64 = 16;

/// At least the bytes `s` takes in the list: `{"addresses":["…",…],"info":…}` and a comma
/// (addresses are `scheme://ip:port`: nothing to escape).
fn entry_size(s: &Server, info: &RawValue) -> u64 {
    let addresses: usize = s.addresses.iter().map(|a| a.len() + 3).sum();
    (32 + addresses + info.get().len()) as u64
}

impl DdnetMaster {
    /// `servers.json`: the registered servers with an info, their addresses sorted, at most
    /// [`DdnetLimits::max_list_bytes`](super::DdnetLimits) (see the module documentation for
    /// who is left out past it). Built at most once a second (when something changed); every
    /// other request gets the same bytes.
    pub fn servers_json(&mut self, now: Instant) -> Bytes {
        self.expire_now_and_then(now);
        let fresh = self
            .json_built
            .is_some_and(|t| now.saturating_duration_since(t) < REBUILD_EVERY);
        if !self.dirty || fresh {
            return self.json.clone();
        }
        let (chosen, left_out) = self.choose();
        let mut list: Vec<Entry<'_>> = chosen
            .into_iter()
            .map(|(s, info)| Entry {
                addresses: &s.addresses,
                info,
            })
            .collect();
        list.sort_by(|a, b| a.addresses.cmp(b.addresses));
        let mut out = serde_json::to_vec(&Doc { servers: list }).unwrap_or_default();
        out.push(b'\n');
        self.stats.list_bytes = out.len() as u64;
        self.stats.list_left_out = left_out;
        self.json = Bytes::from(out);
        self.json_built = Some(now);
        self.dirty = false;
        self.stats.rebuilds += 1;
        self.json.clone()
    }

    /// The servers `servers.json` lists, and how many with an info it leaves out.
    fn choose(&self) -> (Vec<(&Server, &RawValue)>, u64) {
        let mut groups: BTreeMap<Prefix, Vec<(&Server, &RawValue)>> = BTreeMap::new();
        for (secret, s) in &self.servers {
            let Some(info) = s.info.as_deref() else {
                continue;
            };
            let ip = self
                .infos
                .get(secret)
                .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |(ip, _)| ip);
            groups
                .entry(Prefix::widest(ip))
                .or_default()
                .push((s, info));
        }
        let groups: Vec<Vec<(&Server, &RawValue)>> = groups
            .into_values()
            .map(|mut g| {
                g.sort_by_key(|(s, _)| s.since);
                g
            })
            .collect();
        let budget = self.limits.max_list_bytes.saturating_sub(DOC_OVERHEAD);
        let mut used = 0u64;
        let mut left_out = 0u64;
        let mut next = vec![0usize; groups.len()];
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> =
            (0..groups.len()).map(|g| Reverse((0, g))).collect();
        let mut chosen = Vec::new();
        // Each turn takes one server of the network listed with the fewest bytes so far.
        while let Some(Reverse((bytes, g))) = heap.pop() {
            let (Some(i), Some(group)) = (next.get_mut(g), groups.get(g)) else {
                continue;
            };
            let Some(&(s, info)) = group.get(*i) else {
                continue;
            };
            *i += 1;
            let size = entry_size(s, info);
            if used.saturating_add(size) <= budget {
                used += size;
                chosen.push((s, info));
                heap.push(Reverse((bytes.saturating_add(size), g)));
            } else {
                left_out += 1;
                heap.push(Reverse((bytes, g)));
            }
        }
        (chosen, left_out)
    }
}
