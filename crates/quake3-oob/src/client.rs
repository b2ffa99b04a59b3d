//! Querying servers and masters through `fragstat-core` (the default `client` feature).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use fragstat_quake3_oob::{client::Client, text, Game};
//!
//! let client = Client::new().await?;
//! // One server: getinfo and getstatus in one exchange.
//! let server = client.server("127.0.0.1:27960".parse()?).await?;
//! let s = server.reply.summary();
//! println!("{} on {} ({}/{}) in {:?}", text::display(&s.name), text::display(&s.map),
//!     s.num_players, s.max_players, server.rtt);
//!
//! // A master's list, then every server on it, streamed as each answers.
//! let list = client.master("127.0.0.1:27950".parse()?, &Game::Quake3.getservers()).await?;
//! let mut batch = client.scan(list.reply, true);
//! while let Some(outcome) = batch.next().await {
//!     if let Ok(reply) = outcome.result {
//!         println!("{} {}", outcome.addr, text::display(&reply.summary().name));
//!     }
//! }
//! # Ok(()) }
//! ```

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use fragstat_core::{Batch, BoxError, Engine, Exchange, Options, QueryError, Verdict};

use crate::master::{GetServers, MAX_MASTER_PACKET};
use crate::packet::{decode, InfoResponse, Packet, StatusResponse};
use crate::view::Summary;
use crate::DecodeError;

/// What to ask a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// `getinfo` only: name, map, counts (one small datagram each way).
    Info,
    /// `getstatus` only: every cvar and the player list.
    Status,
    /// Both at once: the player list plus the bot count only `getinfo` has. A lost
    /// infoResponse does not fail the query: the status alone is returned after one timeout.
    /// If only the infoResponse comes back, `getstatus` is retried; when no retry is left the
    /// server is still reported (it answered), without players.
    Both,
}

/// What a server answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerReply {
    /// The infoResponse, when asked for and received.
    pub info: Option<InfoResponse>,
    /// The statusResponse, when asked for and received.
    pub status: Option<StatusResponse>,
}

impl ServerReply {
    /// The browser view of this reply.
    pub fn summary(&self) -> Summary {
        Summary::new(self.info.as_ref(), self.status.as_ref())
    }

    /// The browser view of this reply, consuming it (no copies).
    pub fn into_summary(self) -> Summary {
        Summary::from_replies(self.info, self.status)
    }
}

/// A reply with its timing.
#[derive(Debug, Clone)]
pub struct Timed<T> {
    /// The reply.
    pub reply: T,
    /// Round-trip time of the attempt answered.
    pub rtt: Option<Duration>,
    /// Attempts sent.
    pub attempts: u32,
}

impl Timed<ServerReply> {
    /// Keeps one of the replies, with the same timing.
    fn take<U>(
        self,
        pick: impl FnOnce(ServerReply) -> Option<U>,
        what: &'static str,
    ) -> Result<Timed<U>, QueryError> {
        let reply = pick(self.reply).ok_or_else(|| missing(what))?;
        Ok(Timed {
            reply,
            rtt: self.rtt,
            attempts: self.attempts,
        })
    }
}

/// Challenges are `fs<nonce hex>-<attempt>`: unique per query, valid for every engine
/// (protocol notes §1.6), and they say which attempt a reply answers (for the RTT).
fn challenge(nonce: u64, attempt: u32) -> Vec<u8> {
    format!("fs{nonce:x}-{attempt}").into_bytes()
}

/// Checks an echoed challenge: `Ok(Some(attempt))` when it is ours, `Ok(None)` when the
/// server echoed none (some old servers do not), `Err` when it is someone else's.
fn check_challenge(echo: Option<&[u8]>, nonce: u64) -> Result<Option<u32>, ()> {
    let Some(echo) = echo else { return Ok(None) };
    let prefix = format!("fs{nonce:x}-");
    let attempt = echo.strip_prefix(prefix.as_bytes()).ok_or(())?;
    std::str::from_utf8(attempt)
        .ok()
        .and_then(|a| a.parse().ok())
        .map(Some)
        .ok_or(())
}

/// The exchange behind [`Client::scan`]: getinfo and/or getstatus to one server.
#[derive(Debug)]
pub struct ServerExchange {
    ask: Ask,
    nonce: u64,
    reply: ServerReply,
}

impl ServerExchange {
    /// A query with a random challenge.
    pub fn new(ask: Ask) -> Self {
        Self::with_nonce(ask, fastrand::u64(..))
    }

    /// A query with a given challenge nonce (for tests).
    pub fn with_nonce(ask: Ask, nonce: u64) -> Self {
        ServerExchange {
            ask,
            nonce,
            reply: ServerReply::default(),
        }
    }

    fn wants_info(&self) -> bool {
        self.ask != Ask::Status && self.reply.info.is_none()
    }

    fn wants_status(&self) -> bool {
        self.ask != Ask::Info && self.reply.status.is_none()
    }

    fn complete(&self) -> bool {
        !self.wants_info() && !self.wants_status()
    }
}

impl Exchange for ServerExchange {
    type Output = ServerReply;

    fn requests(&mut self, attempt: u32) -> Vec<Vec<u8>> {
        let c = challenge(self.nonce, attempt);
        let mut out = Vec::with_capacity(2);
        if self.wants_info() {
            out.extend(
                Packet::GetInfo {
                    challenge: Some(c.clone()),
                }
                .to_bytes()
                .ok(),
            );
        }
        if self.wants_status() {
            out.extend(Packet::GetStatus { challenge: Some(c) }.to_bytes().ok());
        }
        out
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<ServerReply> {
        let packet = match decode(datagram) {
            Ok(p) => p,
            Err(e) => return Verdict::Invalid(Box::new(e)),
        };
        let attempt = match &packet {
            Packet::InfoResponse(r) if self.wants_info() => {
                check_challenge(r.info.get("challenge"), self.nonce)
            }
            Packet::StatusResponse(r) if self.wants_status() => {
                check_challenge(r.info.get("challenge"), self.nonce)
            }
            _ => return Verdict::Ignore("not a reply this query waits for"),
        };
        let Ok(attempt) = attempt else {
            return Verdict::Ignore("wrong challenge");
        };
        match packet {
            Packet::InfoResponse(r) => self.reply.info = Some(r),
            Packet::StatusResponse(r) => self.reply.status = Some(r),
            _ => {}
        }
        if self.complete() {
            Verdict::Done {
                output: Ok(std::mem::take(&mut self.reply)),
                attempt,
            }
        } else {
            Verdict::Progress {
                attempt,
                wait: None,
            }
        }
    }

    fn on_timeout(&mut self, exhausted: bool) -> Option<Result<ServerReply, BoxError>> {
        // With both asked, the status alone is a useful answer (it has the players); the info
        // alone only once the status has had every retry.
        let partial = self.reply.status.is_some() || (exhausted && self.reply.info.is_some());
        (self.ask == Ask::Both && partial).then(|| Ok(std::mem::take(&mut self.reply)))
    }
}

/// The exchange behind [`Client::master`]: one `getservers` request, a list spanning any
/// number of datagrams.
///
/// The list is complete shortly after an end marker (`\EOT`, `\EOF`) on a datagram that is
/// not full: the exchange lingers [`DEFAULT_SETTLE`] for datagrams the marker overtook (UDP
/// reorders, and lists carry no count). Masters before dpmaster 2.0 put the marker on every
/// datagram, so a marker on a full datagram, or no marker at all, means waiting until the
/// master has been quiet for one timeout. Duplicate entries (a datagram delivered twice) are
/// listed once.
#[derive(Debug)]
pub struct MasterExchange {
    request: Vec<u8>,
    servers: Vec<SocketAddr>,
    seen: HashSet<SocketAddr>,
    datagrams: u32,
    settle: Duration,
    /// A final marker (on a datagram that is not full) has arrived.
    ended: bool,
}

impl MasterExchange {
    /// A query sending `request`.
    pub fn new(request: &GetServers) -> Result<Self, crate::EncodeError> {
        Ok(MasterExchange {
            request: Packet::GetServers(request.clone()).to_bytes()?,
            servers: Vec::new(),
            seen: HashSet::new(),
            datagrams: 0,
            settle: DEFAULT_SETTLE,
            ended: false,
        })
    }

    /// How long to wait after an end marker for datagrams it overtook (default 100 ms).
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }
}

/// The default wait after an end marker (see [`MasterExchange::with_settle`]).
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(100);

impl Exchange for MasterExchange {
    type Output = Vec<SocketAddr>;

    fn requests(&mut self, _attempt: u32) -> Vec<Vec<u8>> {
        vec![self.request.clone()]
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Vec<SocketAddr>> {
        let list = match decode(datagram) {
            Ok(Packet::ServersResponse(l)) => l,
            Ok(_) => return Verdict::Ignore("not a server list"),
            Err(e) => return Verdict::Invalid(Box::new(e)),
        };
        self.datagrams += 1;
        for s in list.servers {
            if self.seen.insert(s) {
                self.servers.push(s);
            }
        }
        // Room for fewer than two more entries: the master filled this datagram, and an old
        // master marks every datagram, so more may follow.
        let full = datagram.len() + 14 > MAX_MASTER_PACKET;
        // Even a final marker may overtake earlier datagrams of the list: linger briefly, and
        // only briefly for every datagram after it.
        self.ended |= list.terminator.is_some() && !full;
        let wait = self.ended.then_some(self.settle);
        Verdict::Progress {
            attempt: None,
            wait,
        }
    }

    fn on_timeout(&mut self, _exhausted: bool) -> Option<Result<Vec<SocketAddr>, BoxError>> {
        (self.datagrams > 0).then(|| Ok(std::mem::take(&mut self.servers)))
    }
}

/// A Quake III protocol client over a shared [`Engine`].
#[derive(Debug, Clone)]
pub struct Client {
    engine: Engine,
    options: Options,
}

impl Client {
    /// Binds the engine's sockets, with qstat-like defaults for a single query
    /// (500 ms per attempt, 3 retries).
    pub async fn new() -> std::io::Result<Self> {
        Ok(Self::with_engine(Engine::bind().await?))
    }

    /// Uses an existing engine (share one between families and tasks).
    pub fn with_engine(engine: Engine) -> Self {
        Client {
            engine,
            options: Options::default()
                .with_timeout(Duration::from_millis(500))
                .with_retries(3),
        }
    }

    /// Replaces the options used for every query.
    pub fn with_options(mut self, options: Options) -> Self {
        self.options = options;
        self
    }

    /// The options in use.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    async fn one(&self, addr: SocketAddr, ask: Ask) -> Result<Timed<ServerReply>, QueryError> {
        let o = self
            .engine
            .query(addr, ServerExchange::new(ask), self.options.clone())
            .await;
        Ok(Timed {
            reply: o.result?,
            rtt: o.rtt,
            attempts: o.attempts,
        })
    }

    /// `getinfo`.
    pub async fn info(&self, addr: SocketAddr) -> Result<Timed<InfoResponse>, QueryError> {
        self.one(addr, Ask::Info)
            .await?
            .take(|r| r.info, "infoResponse")
    }

    /// `getstatus`.
    pub async fn status(&self, addr: SocketAddr) -> Result<Timed<StatusResponse>, QueryError> {
        self.one(addr, Ask::Status)
            .await?
            .take(|r| r.status, "statusResponse")
    }

    /// `getinfo` and `getstatus` together.
    pub async fn server(&self, addr: SocketAddr) -> Result<Timed<ServerReply>, QueryError> {
        self.one(addr, Ask::Both).await
    }

    /// Queries many servers; outcomes stream out as each finishes. `players` asks for the
    /// player list too ([`Ask::Both`]), otherwise only `getinfo` is sent.
    pub fn scan(
        &self,
        addrs: impl IntoIterator<Item = SocketAddr>,
        players: bool,
    ) -> Batch<ServerReply> {
        let ask = if players { Ask::Both } else { Ask::Info };
        self.engine.run(
            addrs.into_iter().map(|a| (a, ServerExchange::new(ask))),
            self.options.clone(),
        )
    }

    /// Fetches a master's server list.
    pub async fn master(
        &self,
        master: SocketAddr,
        request: &GetServers,
    ) -> Result<Timed<Vec<SocketAddr>>, QueryError> {
        let ex = MasterExchange::new(request).map_err(|e| QueryError::Decode(Box::new(e)))?;
        let o = self.engine.query(master, ex, self.options.clone()).await;
        Ok(Timed {
            reply: o.result?,
            rtt: o.rtt,
            attempts: o.attempts,
        })
    }
}

fn missing(what: &'static str) -> QueryError {
    QueryError::Decode(Box::new(DecodeError::Missing {
        field: what,
        offset: 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::master::{encode_server_list, EotStyle};
    use crate::server::{EmulatedServer, ServerConfig};
    use crate::Game;
    use fragstat_core::testing::{Faults, SimNet};
    use fragstat_core::Transport;
    use std::sync::{Arc, Mutex};

    fn addr(p: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], p))
    }

    #[test]
    fn challenges_identify_the_attempt() {
        assert_eq!(
            check_challenge(Some(&challenge(0xabc, 3)), 0xabc),
            Ok(Some(3))
        );
        assert_eq!(check_challenge(Some(b"fsabd-3"), 0xabc), Err(()));
        assert_eq!(check_challenge(None, 1), Ok(None));
        assert!(crate::valid_challenge(&challenge(u64::MAX, u32::MAX)));
    }

    #[tokio::test(start_paused = true)]
    async fn scan_emulated_servers_with_loss() {
        let net = SimNet::new(
            Faults {
                request_loss: 0.2,
                duplicate: 0.2,
                latency: Duration::from_millis(10),
                ..Faults::default()
            },
            5,
        );
        for p in 0..50u16 {
            let emu = Mutex::new(EmulatedServer::new(ServerConfig::sample(
                Game::Quake3,
                format!("s{p}").as_bytes(),
                usize::from(p % 5),
            )));
            net.add_server(
                addr(27960 + p),
                Arc::new(move |req: &[u8]| emu.lock().unwrap().handle(req).into_iter().collect()),
            );
        }
        let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
        let client = Client::with_engine(engine).with_options(
            Options::default()
                .with_timeout(Duration::from_millis(100))
                .with_retries(6),
        );
        let all = client
            .scan((0..50).map(|p| addr(27960 + p)), true)
            .collect_sorted()
            .await;
        for (p, o) in all.iter().enumerate() {
            let s = o.result.as_ref().unwrap().summary();
            assert_eq!(s.name, format!("s{p}").into_bytes());
            assert_eq!(s.num_players as usize, p % 5);
            assert_eq!(s.players.len(), p % 5);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_whose_status_never_arrives_is_online_without_players() {
        let net = SimNet::new(Faults::default(), 1);
        let emu = Mutex::new(EmulatedServer::new(ServerConfig::sample(
            Game::Quake3,
            b"info only",
            2,
        )));
        // This server answers getinfo but never getstatus.
        net.add_server(
            addr(27960),
            Arc::new(move |req: &[u8]| {
                if req.starts_with(b"\xff\xff\xff\xffgetinfo") {
                    emu.lock().unwrap().handle(req).into_iter().collect()
                } else {
                    vec![]
                }
            }),
        );
        let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
        let client = Client::with_engine(engine);
        let t = client.server(addr(27960)).await.unwrap();
        assert!(t.reply.status.is_none());
        assert_eq!(
            t.reply.summary().num_players,
            2,
            "from the info clients count"
        );
        assert_eq!(
            t.attempts, 4,
            "getstatus was retried before giving up on it"
        );
        let getinfos = net
            .sent()
            .iter()
            .filter(|s| s.data.starts_with(b"\xff\xff\xff\xffgetinfo"))
            .count();
        assert_eq!(getinfos, 1, "retries ask only for what is missing");
    }

    /// Regression: the small last datagram (with `\EOT`) arrived before a full one and the
    /// client stopped at the marker, losing a datagram's worth of servers.
    #[tokio::test(start_paused = true)]
    async fn a_marker_that_overtakes_earlier_datagrams_does_not_cut_the_list() {
        let servers: Vec<SocketAddr> = (0..500u16)
            .map(|i| SocketAddr::from(([10, 3, (i >> 8) as u8, i as u8], 27960)))
            .collect();
        let packets = encode_server_list(&servers, false, EotStyle::LastPacket, MAX_MASTER_PACKET);
        assert_eq!(packets.len(), 3);
        let net = SimNet::new(Faults::default(), 1);
        let weak = Arc::downgrade(&net);
        net.add_server(
            addr(27950),
            Arc::new(move |_req: &[u8]| {
                let net = weak.upgrade().unwrap();
                // Delivered last-first, 20 ms apart.
                for (i, p) in packets.iter().rev().enumerate() {
                    net.inject(
                        addr(27950),
                        p.clone(),
                        Duration::from_millis(5 + 20 * i as u64),
                    );
                }
                vec![]
            }),
        );
        let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
        let start = tokio::time::Instant::now();
        let got = Client::with_engine(engine)
            .master(addr(27950), &Game::Quake3.getservers())
            .await
            .unwrap()
            .reply;
        assert_eq!(got.len(), 500);
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(5 + 40 + 100),
            "finished one settle after the last datagram"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn master_ext_list_with_ipv6_entries() {
        let mut servers: Vec<SocketAddr> = (0..150u16)
            .map(|i| SocketAddr::from(([10, 2, 0, i as u8], 27960 + i)))
            .collect();
        servers.extend(
            (0..100u16).map(|i| SocketAddr::from(([0x2001, 0xdb8, 0, 0, 0, 0, 0, i + 1], 27960))),
        );
        let net = SimNet::new(
            Faults {
                jitter: Duration::from_millis(5),
                ..Faults::default()
            },
            2,
        );
        let master = crate::server::EmulatedMaster::new(
            servers.iter().map(|s| (*s, 68)).collect(),
            EotStyle::LastPacket,
        );
        let master = Mutex::new(master);
        net.add_server(
            addr(27950),
            Arc::new(move |req: &[u8]| {
                master
                    .lock()
                    .unwrap()
                    .handle(addr(40000), req)
                    .into_iter()
                    .map(|(_, d)| d)
                    .collect()
            }),
        );
        let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
        let client = Client::with_engine(engine);
        let mut got = client
            .master(addr(27950), &GetServers::ext("Quake3Arena", 68))
            .await
            .unwrap()
            .reply;
        got.sort();
        let mut want = servers.clone();
        want.sort();
        assert_eq!(got, want, "IPv4 and IPv6 entries over several datagrams");
        // The plain request lists IPv4 only.
        let got = client
            .master(addr(27950), &Game::Quake3.getservers())
            .await
            .unwrap()
            .reply;
        assert_eq!(got.len(), 150);
        assert!(got.iter().all(SocketAddr::is_ipv4));
    }

    #[tokio::test(start_paused = true)]
    async fn master_lists_every_terminator_style() {
        let servers: Vec<SocketAddr> = (0..600u16)
            .map(|i| SocketAddr::from(([10, 1, (i >> 8) as u8, i as u8], 27960)))
            .collect();
        for style in [
            EotStyle::LastPacket,
            EotStyle::EveryPacket,
            EotStyle::EofLast,
            EotStyle::None,
        ] {
            let net = SimNet::new(
                Faults {
                    jitter: Duration::from_millis(5),
                    ..Faults::default()
                },
                1,
            );
            let packets = encode_server_list(&servers, false, style, MAX_MASTER_PACKET);
            net.add_server(addr(27950), Arc::new(move |_req: &[u8]| packets.clone()));
            let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
            let client = Client::with_engine(engine);
            let got = client
                .master(addr(27950), &Game::Quake3.getservers())
                .await
                .unwrap()
                .reply;
            let mut got_sorted = got.clone();
            got_sorted.sort();
            let mut want = servers.clone();
            want.sort();
            assert_eq!(got_sorted, want, "{style:?}");
        }
    }
}
