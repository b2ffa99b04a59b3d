//! The Dæmon engine's (Unvanquished) `dual` master lists: `getserversExt <game> <protocol>
//! dual …`, the `getserversExtResponseLinks` packet pairing each dual-stack server's IPv4 and
//! IPv6 address, and the list packets' `\0<index>\0<count>\0<label>` framing.
//!
//! Sources (docs/protocols/quake3.md, "Dæmon `dual`"):
//! * request: DaemonEngine/Daemon `src/engine/client/cl_serverlist.cpp:776-787` @`b276137b`
//!   (`"getserversExt %s %d dual"` + the keywords), `cl_gamename` `UNVANQUISHED`
//!   (`src/common/Defs.h:36,49`), protocol 86 (`qcommon.h:231`);
//! * links packet: Unvanquished/unvanquished-master `master.py:383-387, 452-458` @`792e5f65`
//!   (sent once, before the list, even empty); read by `cl_serverlist.cpp:187-227`;
//! * list packets: `master.py:460-481` (`'\0{0}\0{1}\0{2}'.format(index, numpackets, label)`,
//!   entries `\`+4+2 or `/`+16+2, one trailing `\`, no EOT, `GSR_MAXSERVERS` 256 per packet,
//!   `config.py:154`); read by `CL_GSRSequenceInformation` (`cl_serverlist.cpp:104-145`) and
//!   `CL_GSRFeaturedLabel` (`:158-179`, `MAX_FEATLABEL_CHARS` 32).
//!
//! The Dæmon client reads a `/` entry's 16 address bytes twice (`cl_serverlist.cpp:378-385`),
//! so it misreads IPv6 entries; this reads `/` + 16 + 2 as the master writes them.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use fragstat_core::model::MasterEntry;
use fragstat_core::wire::Reader;
use fragstat_core::{DecodeError, EncodeError, Exchange, Verdict};

use crate::master::{push_entry, GetServers, ServerList, MAX_MASTER_PACKET};
use crate::packet::{decode, Packet};
use crate::Encode;

/// Most list packets one answer may announce: 1024 packets of 256 entries is 262,144
/// servers, far above any list; a larger count is refused before anything is allocated.
pub const MAX_LIST_PACKETS: u32 = 1024;

/// Most entries per list packet (`GSR_MAXSERVERS`, unv-master `config.py:154`).
pub const ENTRIES_PER_PACKET: usize = 256;

/// The longest featured label the Dæmon client keeps (`MAX_FEATLABEL_CHARS` 32, with its NUL).
pub const MAX_LABEL: usize = 31;

/// Most links kept from one answer (the master sends them all in one datagram, so at most
/// 2,728 pairs of 24 bytes in 65,507; more links packets than one add up to this cap).
pub const MAX_LINKS: usize = 8192;

/// A Dæmon list packet's place in the answer and its featured label.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sequence {
    /// This packet's number, from 1.
    pub index: u32,
    /// Packets in the whole answer (at most [`MAX_LIST_PACKETS`]).
    pub count: u32,
    /// The featured group's label; empty for ordinary servers (`config.py:46-49`).
    pub label: Vec<u8>,
}

impl Sequence {
    /// Packet `index` of `count`, with `label`.
    pub fn new(index: u32, count: u32, label: &[u8]) -> Self {
        Sequence {
            index,
            count,
            label: label.to_vec(),
        }
    }

    /// Reads `\0<index>\0<count>\0<label>` (the label ends at NUL, `\` or `/`).
    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.expect("sequence", b"\0", "expected NUL")?;
        let index = number(r, "sequence index")?;
        r.expect("sequence", b"\0", "expected NUL after the index")?;
        let at = r.offset();
        let count = number(r, "sequence count")?;
        r.expect("sequence", b"\0", "expected NUL after the count")?;
        if count > MAX_LIST_PACKETS {
            return Err(DecodeError::TooMany {
                field: "list packets",
                offset: at,
                count: u64::from(count),
                max: u64::from(MAX_LIST_PACKETS),
            });
        }
        // The Dæmon client refuses `num <= 0 || ind <= 0 || ind > num` (`cl_serverlist.cpp:104-145`).
        if index == 0 || count == 0 || index > count {
            return Err(DecodeError::Invalid {
                field: "sequence",
                offset: at,
                reason: "packet number not within 1..=count",
            });
        }
        let label = r.take_while(|b| !matches!(b, 0 | b'\\' | b'/')).to_vec();
        Ok(Sequence {
            index,
            count,
            label,
        })
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if self.index == 0 || self.index > self.count || self.count > MAX_LIST_PACKETS {
            return Err(EncodeError::forbidden("sequence numbers"));
        }
        if self.label.iter().any(|b| matches!(b, 0 | b'\\' | b'/')) {
            return Err(EncodeError::forbidden("featured label"));
        }
        out.extend_from_slice(format!("\0{}\0{}\0", self.index, self.count).as_bytes());
        out.extend_from_slice(&self.label);
        Ok(())
    }
}

/// Decimal digits (at most 10) as a `u32`.
fn number(r: &mut Reader<'_>, field: &'static str) -> Result<u32, DecodeError> {
    let at = r.offset();
    let digits = r.take_while(|b| b.is_ascii_digit());
    std::str::from_utf8(digits)
        .ok()
        .filter(|d| !d.is_empty() && d.len() <= 10)
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| DecodeError::BadNumber {
            field,
            offset: at,
            text: fragstat_core::wire::excerpt(digits),
        })
}

/// One dual-stack server: its IPv4 and IPv6 address, as the links packet pairs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Link {
    /// The IPv4 address.
    pub v4: SocketAddrV4,
    /// The IPv6 address of the same server.
    pub v6: SocketAddrV6,
}

/// `getserversExtResponseLinks`: the dual-stack servers, pairs of 24 bytes after the NUL at
/// offset 30 (`master.py:452-458`): IPv4 (4) + port (2, big-endian) + IPv6 (16) + port (2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLinks {
    /// The pairs, in wire order.
    pub links: Vec<Link>,
    /// Fewer than 24 bytes after the last pair (a partial pair: reported, not read).
    pub trailing: Vec<u8>,
}

/// Bytes of one pair.
const LINK_LEN: usize = 24;

impl ServerLinks {
    /// Reads the pairs after the command word (the NUL first: the client drops the packet
    /// otherwise, `cl_serverlist.cpp:187-227`). The count is the length over 24, so bounded by
    /// the datagram.
    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.expect("links header", b"\0", "expected NUL after the command")?;
        let rest = r.take_rest();
        let mut chunks = rest.chunks_exact(LINK_LEN);
        let links = chunks
            .by_ref()
            .filter_map(|c| {
                let (v4, v6) = c.split_first_chunk::<6>()?;
                let v6: &[u8; 18] = v6.try_into().ok()?;
                Some(Link {
                    v4: v4_of(v4),
                    v6: v6_of(v6),
                })
            })
            .collect();
        Ok(ServerLinks {
            links,
            trailing: chunks.remainder().to_vec(),
        })
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if self.trailing.len() >= LINK_LEN {
            return Err(EncodeError::forbidden(
                "trailing bytes (would be read as a pair)",
            ));
        }
        out.extend_from_slice(b"getserversExtResponseLinks\0");
        for l in &self.links {
            out.extend_from_slice(&l.v4.ip().octets());
            out.extend_from_slice(&l.v4.port().to_be_bytes());
            out.extend_from_slice(&l.v6.ip().octets());
            out.extend_from_slice(&l.v6.port().to_be_bytes());
        }
        out.extend_from_slice(&self.trailing);
        Ok(())
    }
}

fn v4_of(b: &[u8; 6]) -> SocketAddrV4 {
    let [a, b2, c, d, hi, lo] = *b;
    SocketAddrV4::new(Ipv4Addr::new(a, b2, c, d), u16::from_be_bytes([hi, lo]))
}

fn v6_of(b: &[u8; 18]) -> SocketAddrV6 {
    let (ip, port) = b.split_at(16);
    let ip: [u8; 16] = ip.try_into().unwrap_or([0; 16]);
    let port = u16::from_be_bytes([
        port.first().copied().unwrap_or(0),
        port.get(1).copied().unwrap_or(0),
    ]);
    SocketAddrV6::new(Ipv6Addr::from(ip), port, 0, 0)
}

/// The request of the Dæmon client: `getserversExt <game> <protocol> dual empty full`
/// (the keywords as the server browser adds them).
pub fn dual_request(game: &str, protocol: i32) -> GetServers {
    let mut g = GetServers::ext(game, protocol);
    g.options = ["dual", "empty", "full"]
        .iter()
        .map(|o| o.as_bytes().to_vec())
        .collect();
    g
}

/// The servers of a `dual` answer, each dual-stack server once: the entries in list order,
/// a linked pair as one [`MasterEntry`] at its IPv4 address (the Dæmon client's default
/// preference) with both addresses in `addresses`. Port-0 entries are already left out by
/// the list decoder.
pub fn pair_entries(servers: &[SocketAddr], links: &[Link]) -> Vec<MasterEntry> {
    let mut by_addr: HashMap<SocketAddr, usize> = HashMap::with_capacity(links.len() * 2);
    for (i, l) in links.iter().enumerate() {
        by_addr.entry(SocketAddr::V4(l.v4)).or_insert(i);
        by_addr.entry(SocketAddr::V6(l.v6)).or_insert(i);
    }
    let mut done = vec![false; links.len()];
    let mut out = Vec::with_capacity(servers.len());
    for s in servers {
        match by_addr.get(s).and_then(|&i| Some((i, links.get(i)?))) {
            Some((i, l)) => {
                if done.get(i).copied().unwrap_or(true) {
                    continue;
                }
                if let Some(d) = done.get_mut(i) {
                    *d = true;
                }
                let mut e = MasterEntry::new(SocketAddr::V4(l.v4));
                e.addresses = vec![l.v4.to_string(), l.v6.to_string()];
                out.push(e);
            }
            None => out.push(MasterEntry::new(*s)),
        }
    }
    out
}

/// The exchange for a Dæmon `dual` list: the links packet and the sequenced list packets.
/// The list is complete when every packet 1..=count has come (and the links, which the
/// master sends first); a short linger then takes a late links packet or duplicate. Lists
/// without sequence numbers (another master) end as [`crate::MasterExchange`]'s do: on an end
/// marker, else when the master has been quiet for one timeout.
#[derive(Debug)]
pub struct DualMasterExchange {
    request: Vec<u8>,
    servers: Vec<SocketAddr>,
    seen: std::collections::HashSet<SocketAddr>,
    links: Vec<Link>,
    links_seen: bool,
    /// Packets announced by the first sequenced packet, and which have come.
    count: Option<u32>,
    got: Vec<bool>,
    datagrams: u32,
    ended: bool,
}

/// The wait after the last packet of a complete list.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

impl DualMasterExchange {
    /// A query sending `request` (see [`dual_request`]).
    pub fn new(request: &GetServers) -> Result<Self, EncodeError> {
        Ok(DualMasterExchange {
            request: Packet::GetServers(request.clone()).to_bytes()?,
            servers: Vec::new(),
            seen: std::collections::HashSet::new(),
            links: Vec::new(),
            links_seen: false,
            count: None,
            got: Vec::new(),
            datagrams: 0,
            ended: false,
        })
    }

    fn add_list(&mut self, list: ServerList, full: bool) -> Result<(), &'static str> {
        match &list.sequence {
            Some(seq) => {
                let count = *self.count.get_or_insert(seq.count);
                if seq.count != count {
                    return Err("a list packet announcing another packet count");
                }
                if self.got.is_empty() {
                    self.got = vec![false; count as usize];
                }
                if let Some(g) = self.got.get_mut((seq.index as usize).saturating_sub(1)) {
                    *g = true;
                }
            }
            None => self.ended |= list.terminator.is_some() && !full,
        }
        for s in list.servers {
            if self.seen.insert(s) {
                self.servers.push(s);
            }
        }
        Ok(())
    }

    fn complete(&self) -> bool {
        self.ended || (!self.got.is_empty() && self.got.iter().all(|g| *g))
    }
}

impl Exchange for DualMasterExchange {
    type Output = Vec<MasterEntry>;

    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        Ok(vec![self.request.clone()])
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Vec<MasterEntry>> {
        match decode(datagram) {
            Ok(Packet::ServerLinks(l)) => {
                let room = MAX_LINKS.saturating_sub(self.links.len());
                self.links.extend(l.links.into_iter().take(room));
                self.links_seen = true;
            }
            Ok(Packet::ServersResponse(list)) => {
                let full = datagram.len() + 14 > MAX_MASTER_PACKET;
                if let Err(why) = self.add_list(list, full) {
                    return Verdict::Ignore(why);
                }
            }
            Ok(_) => return Verdict::Ignore("not a server list"),
            Err(e) => return Verdict::Invalid(e),
        }
        self.datagrams += 1;
        // Done at once when links and every packet have come; else linger a little for a
        // links packet the list overtook.
        let wait = self.complete().then_some(if self.links_seen {
            std::time::Duration::ZERO
        } else {
            SETTLE
        });
        Verdict::Progress {
            attempt: None,
            wait,
        }
    }

    fn on_timeout(&mut self, _exhausted: bool) -> Option<Result<Vec<MasterEntry>, DecodeError>> {
        (self.datagrams > 0).then(|| Ok(pair_entries(&self.servers, &self.links)))
    }
}

/// The datagrams of the Unvanquished master's answer to a `getserversExt … dual` request
/// (`master.py:446-481`): the links packet first (when `dual`), then the ordinary servers'
/// packets and each featured group's own packets, numbered 1..=count over all of them, at
/// most [`ENTRIES_PER_PACKET`] entries each, each ending in one `\`.
pub fn encode_dual_answer(
    servers: &[SocketAddr],
    featured: &[(Vec<u8>, Vec<SocketAddr>)],
    links: &[Link],
    dual: bool,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if dual {
        let mut p = crate::OOB_HEADER.to_vec();
        let body = ServerLinks {
            links: links.to_vec(),
            trailing: Vec::new(),
        };
        if body.encode_body(&mut p).is_ok() {
            out.push(p);
        }
    }
    let mut groups: Vec<(&[u8], &[SocketAddr])> = Vec::new();
    for chunk in servers.chunks(ENTRIES_PER_PACKET) {
        groups.push((&[], chunk));
    }
    if servers.is_empty() {
        groups.push((&[], &[]));
    }
    for (label, members) in featured {
        for chunk in members.chunks(ENTRIES_PER_PACKET) {
            groups.push((label.as_slice(), chunk));
        }
    }
    let count = u32::try_from(groups.len()).unwrap_or(u32::MAX);
    for (i, (label, chunk)) in (1u32..).zip(groups) {
        let mut p = crate::OOB_HEADER.to_vec();
        p.extend_from_slice(b"getserversExtResponse");
        let _ = Sequence::new(i, count, label).encode(&mut p);
        for s in chunk {
            push_entry(&mut p, s);
        }
        p.push(b'\\');
        out.push(p);
    }
    out
}

/// `unvanquished`'s master query: the Dæmon client's `dual` request (the game name and
/// protocol may be overridden; `--ext` changes nothing, the request is already extended).
pub(crate) fn master_query(
    game: crate::Quake3Game,
    options: &fragstat_core::registry::MasterOptions,
) -> Result<fragstat_core::registry::MasterQuery, fragstat_core::registry::MasterQueryError> {
    let protocol = options.protocol.unwrap_or(game.protocol());
    let name = options
        .gamename
        .clone()
        .or_else(|| game.master_gamename().map(str::to_string))
        .unwrap_or_else(|| "UNVANQUISHED".to_string());
    let ex = DualMasterExchange::new(&dual_request(&name, protocol))?;
    Ok(fragstat_core::registry::MasterQuery::Udp(Box::new(ex)))
}

#[cfg(test)]
#[path = "daemon_tests.rs"]
mod tests;
