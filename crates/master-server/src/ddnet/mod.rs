//! The DDNet HTTP master (what DDNet 16 servers register with): registrations by HTTP POST
//! (`/ddnet/15/register`, headers + JSON info), each address proven by a challenge token sent
//! to the game server over UDP, expiry after 30 s without a refresh, and `servers.json` for
//! clients. Sans-IO: the HTTP and UDP layers are in `crate::run`.
//!
//! Facts from DDNet's `src/engine/server/register.cpp` (the client side) and its mastersrv:
//! headers `Address` (`tw-0.6+udp://connecting-address.invalid:PORT`; the IP is the
//! requester's), `Secret`, `Challenge-Secret` (`<uuid>:<protocol>`), `Challenge-Token` (once
//! received), `Connless-Token` (0.7 only, 8 hex digits), `Info-Serial`; the body is the
//! server's JSON info when the serial is new. Replies `{"status": "success" | "need_challenge"
//! | "need_info" | "error", "message"?}`. The challenge datagram is the family crate's
//! ([`fragstat_teeworlds::connless::challenge`]).

use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasher;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fragstat_core::fair::{canonical, FairTable, Level, Prefix, Refusal};
use fragstat_teeworlds::connless;
use serde::Serialize;
use serde_json::value::RawValue;
use subtle::ConstantTimeEq;

mod list;
mod shares;

pub use shares::{
    DdnetLimits, INFO_PER_HOST, INFO_PER_NET, MAX_INFO_BYTES, MAX_LIST_BYTES, MAX_SERVERS,
    SERVERS_PER_HOST, SERVERS_PER_NET,
};

/// Servers not refreshed for this long are dropped (DDNet servers refresh every 15 s).
pub const EXPIRY: Duration = Duration::from_secs(30);
/// Challenge tokens rotate this often; the current and the previous one are accepted.
const TOKEN_EPOCH: Duration = Duration::from_secs(30);
/// Most addresses one server (secret) registers (DDNet: 0.6, 0.7 and ddnet+udp, on IPv4 and
/// IPv6).
pub const MAX_ADDRESSES_PER_SERVER: usize = 8;
/// Largest info (register body) taken: 128 KiB. DDNet 20 servers send up to 100 KiB
/// (`src/engine/server/register.cpp`: `char m_aServerInfo[100 * 1024]`, raised from 16 KiB by
/// ddnet/ddnet commit d98e1e4ea3 "Increase server info size to handle 128 players with 0.7
/// skins", August 2026); DDNet's own mastersrv still takes 32 KiB
/// (`src/mastersrv/src/main.rs`: `content_length_limit(32 * 1024)`).
pub const MAX_INFO: usize = 128 * 1024;
/// Longest header value taken.
const MAX_HEADER: usize = 128;
/// `servers.json` is rebuilt at most this often (DDNet writes its file once a second).
const REBUILD_EVERY: Duration = Duration::from_secs(1);
/// Expiry runs at most this often (not a scan per request).
const EXPIRE_EVERY: Duration = Duration::from_secs(1);

/// A register request, from its headers and body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Register {
    /// `Address`.
    pub address: String,
    /// `Secret`: identifies the server across its addresses.
    pub secret: String,
    /// `Connless-Token` (0.7).
    pub connless_token: Option<String>,
    /// `Challenge-Secret`.
    pub challenge_secret: String,
    /// `Challenge-Token`.
    pub challenge_token: Option<String>,
    /// `Info-Serial`.
    pub info_serial: i64,
    /// The body: the server's JSON info, when sent. It is parsed only once the address is
    /// proven (the token checked).
    pub info: Option<Bytes>,
}

/// The reply to a register request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Status {
    /// Registered (or refreshed).
    Success,
    /// Prove the address: a challenge token was sent over UDP.
    NeedChallenge,
    /// Send the info (a new serial, or none known).
    NeedInfo,
    /// Refused.
    Error {
        /// Why.
        message: String,
    },
}

fn error(message: impl Into<String>) -> Status {
    Status::Error {
        message: message.into(),
    }
}

/// A refusal of the server or info table, in words.
fn refused(what: &str, r: Refusal) -> Status {
    match r {
        Refusal::Share(p) => error(format!("{p} holds its share of the master's {what}")),
        Refusal::Full => error(format!("the master holds no more {what}")),
    }
}

#[derive(Debug, Clone)]
struct Server {
    addresses: BTreeSet<String>,
    /// The info as compact JSON text, checked to be an object.
    info: Option<Box<RawValue>>,
    info_serial: i64,
    /// Order of first registration: past its cap, `servers.json` keeps a network's older
    /// servers.
    since: u64,
}

#[derive(Debug, Clone)]
struct AddrEntry {
    secret: String,
    seen: Instant,
    ip: IpAddr,
}

/// A server's place on one host: (the host's prefix, the secret).
type Slot = (Prefix, String);

/// The host prefix of `ip` (IPv4 address, IPv6 /64).
fn host_of(ip: IpAddr) -> Prefix {
    // Every family has a host level.
    Prefix::of(ip, Level::Host).unwrap_or_else(|| Prefix::widest(ip))
}

/// Counters, for tests and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DdnetStats {
    /// Register bodies parsed (only after the address was proven).
    pub bodies_parsed: u64,
    /// `servers.json` documents built.
    pub rebuilds: u64,
    /// Expiry passes.
    pub expiry_passes: u64,
    /// New servers (or addresses) refused: their network held its share, or the master was
    /// full and their network held the most.
    pub servers_refused: u64,
    /// Servers displaced from a host by a newcomer from a network holding less.
    pub servers_displaced: u64,
    /// Infos refused (the same reasons, in bytes).
    pub infos_refused: u64,
    /// Infos displaced by a newcomer's (the server is asked for its info again).
    pub infos_displaced: u64,
    /// The size of the last `servers.json`.
    pub list_bytes: u64,
    /// Servers with an info left out of the last `servers.json` (over its cap).
    pub list_left_out: u64,
}

/// The registry of DDNet servers.
#[derive(Debug)]
pub struct DdnetMaster {
    servers: HashMap<String, Server>,
    addresses: HashMap<String, AddrEntry>,
    /// Addresses per slot: the slot goes with its last address.
    slot_addresses: HashMap<Slot, usize>,
    /// Servers per host, weighted 1, shared among prefixes.
    slots: FairTable<Slot>,
    /// Infos per secret, weighted by size, charged to the address that sent them.
    infos: FairTable<String>,
    limits: DdnetLimits,
    next_since: u64,
    keys: std::hash::RandomState,
    started: Instant,
    allow_loopback: bool,
    last_expire: Option<Instant>,
    json: Bytes,
    json_built: Option<Instant>,
    dirty: bool,
    stats: DdnetStats,
}

/// A datagram to send: `(to, bytes)`.
pub type Datagram = (SocketAddr, Vec<u8>);

/// Compares two secrets in time that depends on their lengths only.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// A request's address, proven or not.
struct Proof {
    /// `scheme://ip:port`.
    addr: String,
    /// The token was right.
    valid: bool,
    /// A (new) token to send.
    challenge: Option<Datagram>,
}

impl DdnetMaster {
    /// An empty registry with the default [`DdnetLimits`]. `allow_loopback` accepts servers
    /// on loopback addresses.
    pub fn new(now: Instant, allow_loopback: bool) -> Self {
        DdnetMaster::with_limits(now, allow_loopback, DdnetLimits::default())
    }

    /// An empty registry holding at most `limits`.
    pub fn with_limits(now: Instant, allow_loopback: bool, limits: DdnetLimits) -> Self {
        DdnetMaster {
            servers: HashMap::new(),
            addresses: HashMap::new(),
            slot_addresses: HashMap::new(),
            slots: FairTable::new(limits.servers, limits.max_servers),
            infos: FairTable::new(limits.info, limits.max_info_bytes),
            limits,
            next_since: 0,
            keys: std::hash::RandomState::new(),
            started: now,
            allow_loopback,
            last_expire: None,
            json: Bytes::from_static(b"{\"servers\":[]}\n"),
            json_built: None,
            dirty: true,
            stats: DdnetStats::default(),
        }
    }

    /// Registered servers.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// True when none is registered.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Bytes of info stored.
    pub fn stored_bytes(&self) -> usize {
        usize::try_from(self.infos.total()).unwrap_or(usize::MAX)
    }

    /// The limits.
    pub fn limits(&self) -> &DdnetLimits {
        &self.limits
    }

    /// Counters.
    pub fn stats(&self) -> DdnetStats {
        self.stats
    }

    fn token(&self, addr: &str, epoch: u64) -> String {
        format!("{:016x}", self.keys.hash_one((addr, epoch)))
    }

    fn epoch(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.started).as_secs() / TOKEN_EPOCH.as_secs()
    }

    /// Handles a register request from `remote` at `now`: the reply, and maybe a challenge
    /// datagram to send to the game server.
    pub fn register(
        &mut self,
        now: Instant,
        remote: IpAddr,
        r: Register,
    ) -> (Status, Option<Datagram>) {
        self.expire_now_and_then(now);
        let remote = canonical(remote);
        let proof = match self.prove(now, remote, &r) {
            Ok(p) => p,
            Err(e) => return (e, None),
        };
        let challenge = proof.challenge;
        if !proof.valid {
            // The body is not even looked at before the address is proven.
            return (Status::NeedChallenge, challenge);
        }
        let info = match r.info.filter(|b| !b.is_empty()) {
            None => None,
            Some(b) if b.len() > MAX_INFO => {
                return (
                    error(format!("info larger than {MAX_INFO} bytes")),
                    challenge,
                )
            }
            Some(b) => {
                self.stats.bodies_parsed += 1;
                match compact_object(&b) {
                    Ok(raw) => Some(raw),
                    Err(e) => return (error(format!("body: {e}")), challenge),
                }
            }
        };
        if let Err(e) = self.link(now, remote, proof.addr, &r.secret) {
            return (e, challenge);
        }
        (
            self.store_info(remote, &r.secret, r.info_serial, info),
            challenge,
        )
    }

    /// Checks the headers and the token: the address, or why the request is refused.
    fn prove(&self, now: Instant, remote: IpAddr, r: &Register) -> Result<Proof, Status> {
        if !self.allow_loopback && remote.is_loopback() {
            return Err(error("servers on loopback addresses are not listed"));
        }
        for (name, v) in [
            ("Secret", &r.secret),
            ("Challenge-Secret", &r.challenge_secret),
            ("Address", &r.address),
        ] {
            if v.is_empty() || v.len() > MAX_HEADER {
                return Err(error(format!("missing or overlong header {name}")));
            }
        }
        if r.challenge_token
            .as_ref()
            .is_some_and(|t| t.len() > MAX_HEADER)
        {
            return Err(error("overlong header Challenge-Token"));
        }
        let Some((scheme, port)) = parse_address(&r.address) else {
            return Err(error(format!("bad Address {:?}", r.address)));
        };
        let sock = SocketAddr::new(remote, port);
        let addr = format!("{scheme}://{sock}");
        let connless = match (scheme == "tw-0.7+udp", &r.connless_token) {
            (false, _) => None,
            (true, Some(t)) => Some(parse_hex4(t).ok_or_else(|| error("bad Connless-Token"))?),
            (true, None) => {
                return Err(error(
                    "registering with tw-0.7+udp:// requires header Connless-Token",
                ))
            }
        };
        let epoch = self.epoch(now);
        let current = self.token(&addr, epoch);
        let given = r.challenge_token.as_deref();
        let valid = given.is_some_and(|t| {
            same_secret(t, &current) || (epoch > 0 && same_secret(t, &self.token(&addr, epoch - 1)))
        });
        let resend = !given.is_some_and(|t| same_secret(t, &current));
        let challenge = resend.then(|| {
            (
                sock,
                connless::challenge(connless, &r.challenge_secret, &current),
            )
        });
        Ok(Proof {
            addr,
            valid,
            challenge,
        })
    }

    /// Links proven `addr` to `secret`: a new address takes a slot on its host (displacing
    /// the newest slot of the network holding the most when the master is full).
    fn link(
        &mut self,
        now: Instant,
        remote: IpAddr,
        addr: String,
        secret: &str,
    ) -> Result<(), Status> {
        // Addresses move between secrets when a server restarts with a new one.
        if let Some(old) = self.addresses.get(&addr) {
            if !same_secret(&old.secret, secret) {
                let old = old.secret.clone();
                self.unlink(&addr, &old);
            }
        }
        if let Some(e) = self.addresses.get_mut(&addr) {
            e.seen = now;
            return Ok(());
        }
        let held = self.servers.get(secret).map_or(0, |s| s.addresses.len());
        if held >= MAX_ADDRESSES_PER_SERVER {
            self.stats.servers_refused += 1;
            return Err(error("too many addresses for one server"));
        }
        let slot: Slot = (host_of(remote), secret.to_string());
        if !self.slots.contains(&slot) {
            let (r, displaced) = self.slots.admit(slot.clone(), remote, 1);
            for d in displaced {
                self.drop_slot(&d);
            }
            if let Err(e) = r {
                self.stats.servers_refused += 1;
                return Err(refused("servers", e));
            }
        }
        *self.slot_addresses.entry(slot).or_default() += 1;
        self.addresses.insert(
            addr.clone(),
            AddrEntry {
                secret: secret.to_string(),
                seen: now,
                ip: remote,
            },
        );
        let since = self.next_since;
        let server = self
            .servers
            .entry(secret.to_string())
            .or_insert_with(|| Server {
                addresses: BTreeSet::new(),
                info: None,
                info_serial: i64::MIN,
                since,
            });
        if server.since == since {
            self.next_since += 1;
        }
        server.addresses.insert(addr);
        self.dirty = true;
        Ok(())
    }

    /// Stores `secret`'s info when new (displacing the newest info of the network holding the
    /// most bytes when the master is full): the reply to send.
    fn store_info(
        &mut self,
        remote: IpAddr,
        secret: &str,
        serial: i64,
        info: Option<Box<RawValue>>,
    ) -> Status {
        let Some(server) = self.servers.get(secret) else {
            return error("internal");
        };
        if let Some(i) = info.filter(|_| serial > server.info_serial || server.info.is_none()) {
            let weight = i.get().len() as u64;
            let (r, displaced) = self.infos.admit(secret.to_string(), remote, weight);
            for d in displaced {
                if let Some(s) = self.servers.get_mut(&d) {
                    s.info = None;
                    s.info_serial = i64::MIN;
                }
                self.stats.infos_displaced += 1;
                self.dirty = true;
            }
            let kept = self.infos.contains(&secret.to_string());
            let Some(server) = self.servers.get_mut(secret) else {
                return error("internal");
            };
            match r {
                Ok(()) => {
                    server.info = Some(i);
                    server.info_serial = serial;
                    self.dirty = true;
                }
                Err(e) => {
                    if !kept && server.info.take().is_some() {
                        self.dirty = true;
                    }
                    self.stats.infos_refused += 1;
                    return refused("info", e);
                }
            }
        }
        match self.servers.get(secret) {
            Some(s) if s.info.is_some() && serial <= s.info_serial => Status::Success,
            _ => Status::NeedInfo,
        }
    }

    /// A server going away (`Action: delete`) takes this address out.
    pub fn delete(&mut self, remote: IpAddr, address: &str, secret: &str) -> Status {
        let Some((scheme, port)) = parse_address(address) else {
            return error(format!("bad Address {address:?}"));
        };
        let addr = format!("{scheme}://{}", SocketAddr::new(canonical(remote), port));
        match self.addresses.get(&addr) {
            Some(e) if same_secret(&e.secret, secret) => {
                let secret = e.secret.clone();
                self.unlink(&addr, &secret);
                Status::Success
            }
            _ => error("could not find registered server"),
        }
    }

    /// A slot displaced from the table: the server's addresses on that host go.
    fn drop_slot(&mut self, slot: &Slot) {
        self.stats.servers_displaced += 1;
        let (host, secret) = slot;
        let gone: Vec<String> = self
            .servers
            .get(secret)
            .map(|s| {
                s.addresses
                    .iter()
                    .filter(|a| {
                        self.addresses
                            .get(*a)
                            .is_some_and(|e| host_of(e.ip) == *host)
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for a in gone {
            self.unlink(&a, secret);
        }
    }

    fn unlink(&mut self, addr: &str, secret: &str) {
        if let Some(e) = self.addresses.remove(addr) {
            let slot = (host_of(e.ip), e.secret);
            if let Some(n) = self.slot_addresses.get_mut(&slot) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.slot_addresses.remove(&slot);
                    self.slots.remove(&slot);
                }
            }
        }
        if let Some(s) = self.servers.get_mut(secret) {
            s.addresses.remove(addr);
            self.dirty = true;
            if s.addresses.is_empty() {
                self.servers.remove(secret);
                self.infos.remove(&secret.to_string());
            }
        }
    }

    fn expire_now_and_then(&mut self, now: Instant) {
        if self
            .last_expire
            .is_some_and(|t| now.saturating_duration_since(t) < EXPIRE_EVERY)
        {
            return;
        }
        self.expire(now);
    }

    /// Drops addresses not refreshed within [`EXPIRY`].
    pub fn expire(&mut self, now: Instant) {
        self.last_expire = Some(now);
        self.stats.expiry_passes += 1;
        let stale: Vec<(String, String)> = self
            .addresses
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.seen) >= EXPIRY)
            .map(|(a, e)| (a.clone(), e.secret.clone()))
            .collect();
        for (a, s) in stale {
            self.unlink(&a, &s);
        }
    }
}

/// The body as compact JSON text, if it is a JSON object. Parsed once into a tree that is
/// dropped at once (the body is at most [`MAX_INFO`] bytes), and stored as text: never a
/// tree per server.
fn compact_object(body: &[u8]) -> Result<Box<RawValue>, String> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    if !v.is_object() {
        return Err("register info must be an object".into());
    }
    let text = serde_json::to_string(&v).map_err(|e| e.to_string())?;
    RawValue::from_string(text).map_err(|e| e.to_string())
}

/// `tw-0.6+udp://connecting-address.invalid:8303` → (`tw-0.6+udp`, 8303).
fn parse_address(a: &str) -> Option<(&'static str, u16)> {
    let (scheme, rest) = a.split_once("://")?;
    let scheme = ["tw-0.6+udp", "tw-0.7+udp", "ddnet+udp"]
        .into_iter()
        .find(|s| *s == scheme)?;
    let (_, port) = rest.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    (port != 0).then_some((scheme, port))
}

fn parse_hex4(t: &str) -> Option<[u8; 4]> {
    if t.len() != 8 {
        return None;
    }
    let v = u32::from_str_radix(t, 16).ok()?;
    Some(v.to_be_bytes())
}

#[cfg(test)]
mod tests;
