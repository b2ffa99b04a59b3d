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
//! | "need_info" | "error", "message"?}`. The challenge datagram is the connless header, `chal`,
//! the challenge secret, NUL, the token, NUL.

use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasher;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use subtle::ConstantTimeEq;

use crate::limits::Key;

/// Servers not refreshed for this long are dropped (DDNet servers refresh every 15 s).
pub const EXPIRY: Duration = Duration::from_secs(30);
/// Challenge tokens rotate this often; the current and the previous one are accepted.
const TOKEN_EPOCH: Duration = Duration::from_secs(30);
/// Most registered servers.
pub const MAX_SERVERS: usize = 20_000;
/// Most servers (secrets) with an address on one host (IPv4 address, IPv6 /64).
pub const MAX_PER_HOST: usize = 64;
/// Most addresses one server (secret) registers (DDNet: 0.6, 0.7 and ddnet+udp, on IPv4 and
/// IPv6).
pub const MAX_ADDRESSES_PER_SERVER: usize = 8;
/// Largest info taken (DDNet's own master: 32 KiB).
pub const MAX_INFO: usize = 32 * 1024;
/// Bytes of info stored in all.
pub const MAX_INFO_BYTES: usize = 64 * 1024 * 1024;
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

#[derive(Debug, Clone)]
struct Server {
    addresses: BTreeSet<String>,
    /// The info as compact JSON text, checked to be an object.
    info: Option<Box<RawValue>>,
    info_serial: i64,
}

#[derive(Debug, Clone)]
struct AddrEntry {
    secret: String,
    seen: Instant,
    host: Key,
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
}

/// The registry of DDNet servers.
#[derive(Debug)]
pub struct DdnetMaster {
    servers: HashMap<String, Server>,
    addresses: HashMap<String, AddrEntry>,
    /// Addresses per (host, secret), and distinct secrets per host.
    host_secrets: HashMap<(Key, String), usize>,
    per_host: HashMap<Key, usize>,
    info_bytes: usize,
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

impl DdnetMaster {
    /// An empty registry. `allow_loopback` accepts servers on loopback addresses.
    pub fn new(now: Instant, allow_loopback: bool) -> Self {
        DdnetMaster {
            servers: HashMap::new(),
            addresses: HashMap::new(),
            host_secrets: HashMap::new(),
            per_host: HashMap::new(),
            info_bytes: 0,
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
        self.info_bytes
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
        let remote = crate::limits::canonical_ip(remote);
        if !self.allow_loopback && remote.is_loopback() {
            return (error("servers on loopback addresses are not listed"), None);
        }
        for (name, v) in [
            ("Secret", &r.secret),
            ("Challenge-Secret", &r.challenge_secret),
            ("Address", &r.address),
        ] {
            if v.is_empty() || v.len() > MAX_HEADER {
                return (error(format!("missing or overlong header {name}")), None);
            }
        }
        if r.challenge_token
            .as_ref()
            .is_some_and(|t| t.len() > MAX_HEADER)
        {
            return (error("overlong header Challenge-Token"), None);
        }
        let Some((scheme, port)) = parse_address(&r.address) else {
            return (error(format!("bad Address {:?}", r.address)), None);
        };
        let sock = SocketAddr::new(remote, port);
        let addr = format!("{scheme}://{sock}");
        let sixup = scheme == "tw-0.7+udp";
        let connless = match (sixup, &r.connless_token) {
            (false, _) => None,
            (true, Some(t)) => match parse_hex4(t) {
                Some(t) => Some(t),
                None => return (error("bad Connless-Token"), None),
            },
            (true, None) => {
                return (
                    error("registering with tw-0.7+udp:// requires header Connless-Token"),
                    None,
                )
            }
        };
        let epoch = self.epoch(now);
        let current = self.token(&addr, epoch);
        let valid = r.challenge_token.as_deref().is_some_and(|t| {
            same_secret(t, &current) || (epoch > 0 && same_secret(t, &self.token(&addr, epoch - 1)))
        });
        let resend = !r
            .challenge_token
            .as_deref()
            .is_some_and(|t| same_secret(t, &current));
        let challenge = resend.then(|| {
            let mut d = Vec::with_capacity(64);
            match connless {
                Some(t) => {
                    d.push(0x21);
                    d.extend_from_slice(&t);
                    d.extend_from_slice(&[0xff; 8]);
                }
                None => d.extend_from_slice(&[0xff; 10]),
            }
            d.extend_from_slice(b"chal");
            d.extend_from_slice(r.challenge_secret.as_bytes());
            d.push(0);
            d.extend_from_slice(current.as_bytes());
            d.push(0);
            (sock, d)
        });
        if !valid {
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
        let host = Key::host(remote);
        // Addresses move between secrets when a server restarts with a new one.
        if let Some(old) = self.addresses.get(&addr).cloned() {
            if !same_secret(&old.secret, &r.secret) {
                self.unlink(&addr, &old.secret);
            }
        }
        if !self.addresses.contains_key(&addr) {
            let new_here = !self.host_secrets.contains_key(&(host, r.secret.clone()));
            let server_addresses = self.servers.get(&r.secret).map_or(0, |s| s.addresses.len());
            if self.addresses.len() >= MAX_SERVERS * 4
                || (new_here && self.per_host.get(&host).copied().unwrap_or(0) >= MAX_PER_HOST)
                || server_addresses >= MAX_ADDRESSES_PER_SERVER
            {
                return (error("too many servers"), challenge);
            }
            if !self.servers.contains_key(&r.secret) && self.servers.len() >= MAX_SERVERS {
                return (error("too many servers"), challenge);
            }
            if new_here {
                *self.per_host.entry(host).or_default() += 1;
            }
            *self
                .host_secrets
                .entry((host, r.secret.clone()))
                .or_default() += 1;
        }
        self.addresses.insert(
            addr.clone(),
            AddrEntry {
                secret: r.secret.clone(),
                seen: now,
                host,
            },
        );
        let server = self.servers.entry(r.secret).or_insert_with(|| Server {
            addresses: BTreeSet::new(),
            info: None,
            info_serial: i64::MIN,
        });
        if server.addresses.insert(addr) {
            self.dirty = true;
        }
        let mut refused = None;
        match info {
            Some(i) if r.info_serial > server.info_serial || server.info.is_none() => {
                let old = server.info.as_ref().map_or(0, |o| o.get().len());
                if self.info_bytes - old + i.get().len() > MAX_INFO_BYTES {
                    refused = Some(error("the master stores no more info"));
                } else {
                    self.info_bytes = self.info_bytes - old + i.get().len();
                    server.info = Some(i);
                    server.info_serial = r.info_serial;
                    self.dirty = true;
                }
            }
            _ => {}
        }
        if let Some(e) = refused {
            return (e, challenge);
        }
        let status = if server.info.is_none() || r.info_serial > server.info_serial {
            Status::NeedInfo
        } else {
            Status::Success
        };
        (status, challenge)
    }

    /// A server going away (`Action: delete`) takes this address out.
    pub fn delete(&mut self, remote: IpAddr, address: &str, secret: &str) -> Status {
        let Some((scheme, port)) = parse_address(address) else {
            return error(format!("bad Address {address:?}"));
        };
        let remote = crate::limits::canonical_ip(remote);
        let addr = format!("{scheme}://{}", SocketAddr::new(remote, port));
        match self.addresses.get(&addr) {
            Some(e) if same_secret(&e.secret, secret) => {
                let secret = e.secret.clone();
                self.unlink(&addr, &secret);
                Status::Success
            }
            _ => error("could not find registered server"),
        }
    }

    fn unlink(&mut self, addr: &str, secret: &str) {
        if let Some(e) = self.addresses.remove(addr) {
            let k = (e.host, e.secret);
            if let Some(n) = self.host_secrets.get_mut(&k) {
                *n -= 1;
                if *n == 0 {
                    self.host_secrets.remove(&k);
                    if let Some(h) = self.per_host.get_mut(&k.0) {
                        *h -= 1;
                        if *h == 0 {
                            self.per_host.remove(&k.0);
                        }
                    }
                }
            }
        }
        if let Some(s) = self.servers.get_mut(secret) {
            s.addresses.remove(addr);
            self.dirty = true;
            if s.addresses.is_empty() {
                if let Some(gone) = self.servers.remove(secret) {
                    self.info_bytes -= gone.info.map_or(0, |i| i.get().len());
                }
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

    /// `servers.json`: every registered server with info, its addresses sorted. Built at most
    /// once a second (when something changed); every other request gets the same bytes.
    pub fn servers_json(&mut self, now: Instant) -> Bytes {
        self.expire_now_and_then(now);
        let fresh = self
            .json_built
            .is_some_and(|t| now.saturating_duration_since(t) < REBUILD_EVERY);
        if !self.dirty || fresh {
            return self.json.clone();
        }
        #[derive(Serialize)]
        struct Entry<'a> {
            addresses: &'a BTreeSet<String>,
            info: &'a RawValue,
        }
        #[derive(Serialize)]
        struct Doc<'a> {
            servers: Vec<Entry<'a>>,
        }
        let mut list: Vec<Entry<'_>> = self
            .servers
            .values()
            .filter_map(|s| {
                Some(Entry {
                    addresses: &s.addresses,
                    info: s.info.as_deref()?,
                })
            })
            .collect();
        list.sort_by(|a, b| a.addresses.cmp(b.addresses));
        let mut out = serde_json::to_vec(&Doc { servers: list }).unwrap_or_default();
        out.push(b'\n');
        self.json = Bytes::from(out);
        self.json_built = Some(now);
        self.dirty = false;
        self.stats.rebuilds += 1;
        self.json.clone()
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
