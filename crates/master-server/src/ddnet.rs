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

use serde::Serialize;

/// Servers not refreshed for this long are dropped (DDNet servers refresh every 15 s).
pub const EXPIRY: Duration = Duration::from_secs(30);
/// Challenge tokens rotate this often; the current and the previous one are accepted.
const TOKEN_EPOCH: Duration = Duration::from_secs(30);
/// Most registered servers.
pub const MAX_SERVERS: usize = 20_000;
/// Most addresses registered from one IP address.
pub const MAX_PER_IP: usize = 64;
/// Longest header value taken.
const MAX_HEADER: usize = 128;

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
    /// The JSON info, when sent.
    pub info: Option<serde_json::Value>,
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
    info: Option<serde_json::Value>,
    info_serial: i64,
}

#[derive(Debug, Clone)]
struct AddrEntry {
    secret: String,
    seen: Instant,
    ip: IpAddr,
}

/// The registry of DDNet servers.
#[derive(Debug)]
pub struct DdnetMaster {
    servers: HashMap<String, Server>,
    addresses: HashMap<String, AddrEntry>,
    per_ip: HashMap<IpAddr, usize>,
    keys: std::hash::RandomState,
    started: Instant,
    allow_loopback: bool,
}

/// A datagram to send: `(to, bytes)`.
pub type Datagram = (SocketAddr, Vec<u8>);

impl DdnetMaster {
    /// An empty registry. `allow_loopback` accepts servers on loopback addresses.
    pub fn new(now: Instant, allow_loopback: bool) -> Self {
        DdnetMaster {
            servers: HashMap::new(),
            addresses: HashMap::new(),
            per_ip: HashMap::new(),
            keys: std::hash::RandomState::new(),
            started: now,
            allow_loopback,
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
        self.expire(now);
        let remote = match remote {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
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
        let valid = r
            .challenge_token
            .as_deref()
            .is_some_and(|t| t == current || (epoch > 0 && t == self.token(&addr, epoch - 1)));
        let resend = r.challenge_token.as_deref() != Some(current.as_str());
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
            return (Status::NeedChallenge, challenge);
        }
        let info = match r.info {
            Some(serde_json::Value::Object(o)) => Some(serde_json::Value::Object(o)),
            Some(_) => return (error("register info must be an object"), challenge),
            None => None,
        };
        // Addresses move between secrets when a server restarts with a new one.
        if let Some(old) = self.addresses.get(&addr).cloned() {
            if old.secret != r.secret {
                self.unlink(&addr, &old.secret);
            }
        }
        if !self.addresses.contains_key(&addr) {
            if self.addresses.len() >= MAX_SERVERS * 4
                || self.per_ip.get(&remote).copied().unwrap_or(0) >= MAX_PER_IP
            {
                return (error("too many servers"), challenge);
            }
            if !self.servers.contains_key(&r.secret) && self.servers.len() >= MAX_SERVERS {
                return (error("too many servers"), challenge);
            }
            *self.per_ip.entry(remote).or_default() += 1;
        }
        self.addresses.insert(
            addr.clone(),
            AddrEntry {
                secret: r.secret.clone(),
                seen: now,
                ip: remote,
            },
        );
        let server = self.servers.entry(r.secret).or_insert_with(|| Server {
            addresses: BTreeSet::new(),
            info: None,
            info_serial: i64::MIN,
        });
        server.addresses.insert(addr);
        match info {
            Some(i) if r.info_serial > server.info_serial || server.info.is_none() => {
                server.info = Some(i);
                server.info_serial = r.info_serial;
            }
            _ => {}
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
        let addr = format!("{scheme}://{}", SocketAddr::new(remote, port));
        match self.addresses.get(&addr) {
            Some(e) if e.secret == secret => {
                let secret = e.secret.clone();
                self.unlink(&addr, &secret);
                Status::Success
            }
            _ => error("could not find registered server"),
        }
    }

    fn unlink(&mut self, addr: &str, secret: &str) {
        if let Some(e) = self.addresses.remove(addr) {
            if let Some(n) = self.per_ip.get_mut(&e.ip) {
                *n -= 1;
                if *n == 0 {
                    self.per_ip.remove(&e.ip);
                }
            }
        }
        if let Some(s) = self.servers.get_mut(secret) {
            s.addresses.remove(addr);
            if s.addresses.is_empty() {
                self.servers.remove(secret);
            }
        }
    }

    /// Drops addresses not refreshed within [`EXPIRY`].
    pub fn expire(&mut self, now: Instant) {
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

    /// `servers.json`: every registered server with info, its addresses sorted.
    pub fn servers_json(&mut self, now: Instant) -> String {
        self.expire(now);
        #[derive(Serialize)]
        struct Entry<'a> {
            addresses: &'a BTreeSet<String>,
            info: &'a serde_json::Value,
        }
        let mut list: Vec<Entry<'_>> = self
            .servers
            .values()
            .filter_map(|s| {
                Some(Entry {
                    addresses: &s.addresses,
                    info: s.info.as_ref()?,
                })
            })
            .collect();
        list.sort_by(|a, b| a.addresses.cmp(b.addresses));
        serde_json::json!({ "servers": list }).to_string() + "\n"
    }
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
mod tests {
    use super::*;

    fn req(token: Option<&str>, serial: i64, info: Option<serde_json::Value>) -> Register {
        Register {
            address: "tw-0.6+udp://connecting-address.invalid:8303".into(),
            secret: "s1".into(),
            connless_token: None,
            challenge_secret: "uuid:ipv4".into(),
            challenge_token: token.map(String::from),
            info_serial: serial,
            info,
        }
    }

    #[test]
    fn challenge_then_info_then_listed() {
        let now = Instant::now();
        let mut m = DdnetMaster::new(now, false);
        let ip: IpAddr = "203.0.113.9".parse().unwrap();
        let (st, chal) = m.register(now, ip, req(None, 1, None));
        assert_eq!(st, Status::NeedChallenge);
        let (to, d) = chal.unwrap();
        assert_eq!(to, "203.0.113.9:8303".parse().unwrap());
        assert!(d.starts_with(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffchaluuid:ipv4\0"));
        let fields: Vec<&[u8]> = d[14..].split(|&b| b == 0).collect();
        assert_eq!(fields[0], b"uuid:ipv4");
        let token = std::str::from_utf8(fields[1]).unwrap().to_string();
        // A wrong token still needs the challenge.
        assert_eq!(
            m.register(now, ip, req(Some("nope"), 1, None)).0,
            Status::NeedChallenge
        );
        assert_eq!(
            m.register(now, ip, req(Some(&token), 1, None)).0,
            Status::NeedInfo
        );
        let info = serde_json::json!({"name": "My DDNet", "max_clients": 16});
        let (st, chal) = m.register(now, ip, req(Some(&token), 1, Some(info)));
        assert_eq!((st, chal), (Status::Success, None));
        let json: serde_json::Value = serde_json::from_str(&m.servers_json(now)).unwrap();
        assert_eq!(
            json["servers"][0]["addresses"][0],
            "tw-0.6+udp://203.0.113.9:8303"
        );
        assert_eq!(json["servers"][0]["info"]["name"], "My DDNet");
        // The same token from another address is not valid there.
        let other: IpAddr = "203.0.113.10".parse().unwrap();
        assert_eq!(
            m.register(now, other, req(Some(&token), 1, None)).0,
            Status::NeedChallenge
        );
        // Expiry.
        assert_eq!(m.servers_json(now + EXPIRY), "{\"servers\":[]}\n");
        assert!(m.is_empty());
    }

    #[test]
    fn refuses_what_it_cannot_list() {
        let now = Instant::now();
        let mut m = DdnetMaster::new(now, false);
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(matches!(
            m.register(now, lo, req(None, 1, None)).0,
            Status::Error { .. }
        ));
        let ip: IpAddr = "203.0.113.9".parse().unwrap();
        let mut r = req(None, 1, None);
        r.address = "http://x:1".into();
        assert!(matches!(m.register(now, ip, r).0, Status::Error { .. }));
        let mut r = req(None, 1, None);
        r.address = "tw-0.7+udp://connecting-address.invalid:8303".into();
        assert!(matches!(
            m.register(now, ip, r.clone()).0,
            Status::Error { .. }
        ));
        r.connless_token = Some("0a0b0c0d".into());
        let (st, chal) = m.register(now, ip, r);
        assert_eq!(st, Status::NeedChallenge);
        assert!(chal
            .unwrap()
            .1
            .starts_with(b"\x21\x0a\x0b\x0c\x0d\xff\xff\xff\xff\xff\xff\xff\xffchal"));
    }
}
