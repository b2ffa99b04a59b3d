//! The emulated master server: lists configured servers, and registers servers that
//! heartbeat and answer its challenge, as dpmaster does.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat_core::service::{Outbox, Service};

use crate::daemon::{encode_dual_answer, Link};
use crate::master::{encode_server_list, EotStyle, MAX_MASTER_PACKET};
use crate::packet::{decode, Packet};
use crate::Encode;

/// How long a heartbeat's challenge stays valid (dpmaster: 2 s by default; we allow more).
pub const CHALLENGE_TTL: Duration = Duration::from_secs(5);

/// A challenge not answered within this is sent again until it lapses (a server may drop it:
/// DarkPlaces ignores a `getinfo` that comes within its flood window after another query from
/// the same IP address).
pub const CHALLENGE_RESEND: Duration = Duration::from_millis(1500);

/// At most this many challenges pending at once: a flood of spoofed heartbeats cannot grow
/// the master's memory.
pub const MAX_PENDING: usize = 4096;

impl Service for EmulatedMaster {
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        out.extend(self.respond(now, from, datagram));
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.pending
            .values()
            .map(|p| p.resend_at.map_or(p.until, |r| r.min(p.until)))
            .min()
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.expire(now);
        for (to, p) in &mut self.pending {
            if p.resend_at.is_some_and(|r| r <= now) {
                let next = now + CHALLENGE_RESEND;
                p.resend_at = (next < p.until).then_some(next);
                if let Ok(b) = (Packet::GetInfo {
                    challenge: Some(p.challenge.clone()),
                })
                .to_bytes()
                {
                    out.push((*to, b));
                }
            }
        }
    }
}

impl EmulatedMaster {
    /// The Unvanquished master's answer: featured servers in their groups' packets, the
    /// others in ordinary ones, links only between servers listed.
    fn dual_answer(&self, list: &[SocketAddr], dual: bool) -> Vec<Vec<u8>> {
        let featured: Vec<(Vec<u8>, Vec<SocketAddr>)> = self
            .featured
            .iter()
            .map(|(l, g)| {
                (
                    l.clone(),
                    g.iter().copied().filter(|a| list.contains(a)).collect(),
                )
            })
            .collect();
        let plain: Vec<SocketAddr> = list
            .iter()
            .copied()
            .filter(|a| !featured.iter().any(|(_, g)| g.contains(a)))
            .collect();
        let links: Vec<Link> = self
            .links
            .iter()
            .copied()
            .filter(|l| {
                list.contains(&SocketAddr::V4(l.v4)) || list.contains(&SocketAddr::V6(l.v6))
            })
            .collect();
        encode_dual_answer(&plain, &featured, &links, dual)
    }
}

/// A challenge sent to a server that heartbeated.
#[derive(Debug, Clone)]
struct Pending {
    challenge: Vec<u8>,
    /// When it lapses.
    until: Instant,
    /// When it is sent again, if still unanswered.
    resend_at: Option<Instant>,
}

/// A master server: lists configured servers, and registers servers that heartbeat and then
/// answer its `getinfo` challenge (as dpmaster does; unanswered challenges are sent again
/// every [`CHALLENGE_RESEND`] until they lapse).
#[derive(Debug, Clone)]
pub struct EmulatedMaster {
    /// `(address, protocol)` of every listed server.
    servers: Vec<(SocketAddr, i32)>,
    /// Challenges sent to servers that heartbeated.
    pending: HashMap<SocketAddr, Pending>,
    style: EotStyle,
    max_packet: usize,
    counter: u64,
    /// Answers `getserversExt` as the Unvanquished master does ([`crate::daemon`]).
    daemon: bool,
    /// Dual-stack pairs it reports to `dual` requests.
    links: Vec<Link>,
    /// Featured groups: a label and its servers, sent in their own packets.
    featured: Vec<(Vec<u8>, Vec<SocketAddr>)>,
    /// Catalogue quirks ([`EmulatedMaster::with_quirks`]).
    quirks: Quirks,
}

/// The quirks of real masters an emulated one can show (the master catalogue's tests).
#[derive(Debug, Clone, Default)]
struct Quirks {
    /// Answer only `getservers <protocol>` without a game name (id's RtCW master).
    short_only: bool,
    /// A bare `\EOT` on every datagram but the last (Activision's masters).
    bare_every: bool,
    /// `(address, protocol, game name)` listed only to requests naming the same game
    /// (`None`: anonymous requests only), as dpmaster does.
    named: Vec<(SocketAddr, i32, Option<Vec<u8>>)>,
}

impl EmulatedMaster {
    /// A master listing `servers` (address and protocol), marking lists with `style`.
    pub fn new(servers: Vec<(SocketAddr, i32)>, style: EotStyle) -> Self {
        EmulatedMaster {
            servers,
            pending: HashMap::new(),
            style,
            max_packet: MAX_MASTER_PACKET,
            counter: 0,
            daemon: false,
            links: Vec::new(),
            featured: Vec::new(),
            quirks: Quirks::default(),
        }
    }

    /// Shows real masters' quirks: `short_only` answers only `getservers <protocol>` without
    /// a game name (id's RtCW master, nksmnf/iortcw docs/RU/server.md §2); `bare_every` ends
    /// every datagram but the last with a bare `\EOT` (Activision's, pyq3serverlist
    /// reader.py:70-73); `named` servers are listed only to requests for their protocol
    /// naming their game (`None`: anonymous requests), as dpmaster matches game names.
    pub fn with_quirks(
        mut self,
        short_only: bool,
        bare_every: bool,
        named: Vec<(SocketAddr, i32, Option<String>)>,
    ) -> Self {
        self.quirks = Quirks {
            short_only,
            bare_every,
            named: named
                .into_iter()
                .map(|(a, p, g)| (a, p, g.map(String::into_bytes)))
                .collect(),
        };
        self
    }

    /// Answers `getserversExt` as the Unvanquished master (`master.py:446-481`): for `dual`
    /// the links packet first, then numbered packets of at most 256 entries, each ending in
    /// one `\`, no end marker.
    pub fn daemon(mut self, daemon: bool) -> Self {
        self.daemon = daemon;
        self
    }

    /// The dual-stack pairs (IPv4 and IPv6 address of one server) a `dual` request is told.
    pub fn with_links(mut self, links: Vec<Link>) -> Self {
        self.links = links;
        self
    }

    /// A featured group: its listed servers go in their own packets under `label`
    /// (`config.py:46-49`). The label holds no NUL, `\` or `/`; longer than 31 bytes is cut.
    pub fn with_featured(mut self, label: &[u8], servers: Vec<SocketAddr>) -> Self {
        let label: Vec<u8> = label
            .iter()
            .copied()
            .filter(|b| !matches!(b, 0 | b'\\' | b'/'))
            .take(crate::daemon::MAX_LABEL)
            .collect();
        self.featured.push((label, servers));
        self
    }

    /// Sets the largest datagram (default 1400 bytes, dpmaster's).
    pub fn with_max_packet(mut self, max_packet: usize) -> Self {
        self.max_packet = max_packet;
        self
    }

    /// The servers listed now.
    pub fn servers(&self) -> &[(SocketAddr, i32)] {
        &self.servers
    }

    /// Challenges awaiting an answer (each lapses [`CHALLENGE_TTL`] after it was sent).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Drops the challenges that have lapsed by `now`.
    pub fn expire(&mut self, now: Instant) {
        self.pending.retain(|_, p| p.until > now);
    }

    /// Handles one datagram from `from` at `now`; returns the datagrams to send and where.
    pub fn respond(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Vec<(SocketAddr, Vec<u8>)> {
        match decode(datagram) {
            Ok(Packet::GetServers(req)) => {
                if self.quirks.short_only && (req.ext || req.game.is_some()) {
                    return Vec::new();
                }
                let want_v4 = !req.ext || !req.has_option("ipv6") || req.has_option("ipv4");
                let want_v6 = req.ext && (!req.has_option("ipv4") || req.has_option("ipv6"));
                let family = |a: &SocketAddr| if a.is_ipv4() { want_v4 } else { want_v6 };
                let same_game = |g: &Option<Vec<u8>>| match (g, &req.game) {
                    (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                    (a, b) => a.is_none() && b.is_none(),
                };
                let list: Vec<SocketAddr> = self
                    .servers
                    .iter()
                    .filter(|(a, p)| *p == req.protocol && family(a))
                    .map(|(a, _)| *a)
                    .chain(
                        self.quirks
                            .named
                            .iter()
                            .filter(|(a, p, g)| *p == req.protocol && family(a) && same_game(g))
                            .map(|(a, _, _)| *a),
                    )
                    .collect();
                if self.daemon && req.ext {
                    return self
                        .dual_answer(&list, req.has_option("dual"))
                        .into_iter()
                        .map(|p| (from, p))
                        .collect();
                }
                let style = if self.quirks.bare_every {
                    EotStyle::EveryPacket
                } else {
                    self.style
                };
                let mut packets = encode_server_list(&list, req.ext, style, self.max_packet);
                if self.quirks.bare_every {
                    // `\EOT\0\0\0` → `\EOT` on all but the last.
                    let n = packets.len().saturating_sub(1);
                    for p in packets.iter_mut().take(n) {
                        p.truncate(p.len().saturating_sub(3));
                    }
                }
                packets.into_iter().map(|p| (from, p)).collect()
            }
            Ok(Packet::Heartbeat(h)) if !h.is_flatline() => {
                self.expire(now);
                if self.pending.len() >= MAX_PENDING && !self.pending.contains_key(&from) {
                    return Vec::new();
                }
                self.counter += 1;
                let challenge = format!("m{:x}{:x}", self.counter, from.port()).into_bytes();
                self.pending.insert(
                    from,
                    Pending {
                        challenge: challenge.clone(),
                        until: now + CHALLENGE_TTL,
                        resend_at: Some(now + CHALLENGE_RESEND),
                    },
                );
                Packet::GetInfo {
                    challenge: Some(challenge),
                }
                .to_bytes()
                .map(|b| vec![(from, b)])
                .unwrap_or_default()
            }
            Ok(Packet::InfoResponse(r)) => {
                let expected = self
                    .pending
                    .get(&from)
                    .filter(|p| p.until > now)
                    .map(|p| p.challenge.as_slice());
                if expected.is_some() && r.info.get("challenge") == expected {
                    self.pending.remove(&from);
                    let protocol = r
                        .info
                        .get_int(&["protocol"])
                        .and_then(|p| i32::try_from(p).ok());
                    let max = r.info.get_int(&["sv_maxclients"]).unwrap_or(0);
                    if let (Some(p), true) = (protocol, max > 0) {
                        self.servers.retain(|(a, _)| *a != from);
                        self.servers.push((from, p));
                    }
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}
