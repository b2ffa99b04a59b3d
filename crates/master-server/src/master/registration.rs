//! Registration: heartbeats answered with stateless challenges, the retry schedule, and
//! the infoResponses that list (or verify) a server.

use fragstat_core::Encode;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use fragstat_core::service::Outbox;
use fragstat_quake3_oob::{InfoResponse, Packet};
use tracing::info;

use super::{code_game, heartbeat_code, listable, Listed, Master, Pending, Why, TICK};
use crate::limits::Key;
use crate::stats::Drop;

/// Length of the challenges the master sends.
const CHALLENGE_LEN: usize = 12;

/// Challenges are valid for the epoch they were made in and the next one.
pub(super) const EPOCH_MS: u64 = 16_000;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

impl Master {
    /// The challenge for `addr` in `epoch`, for a heartbeat of game `code`: the code, then 11
    /// base-62 digits of the keyed hash.
    pub(super) fn challenge(&self, addr: SocketAddr, epoch: u64, code: u8) -> [u8; CHALLENGE_LEN] {
        let ip = match addr.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        };
        let mut msg = [0u8; 27];
        msg[..16].copy_from_slice(&ip);
        msg[16..18].copy_from_slice(&addr.port().to_be_bytes());
        msg[18..26].copy_from_slice(&epoch.to_be_bytes());
        msg[26] = code;
        let tag = ring::hmac::sign(&self.key, &msg);
        let mut h = [0u8; 8];
        if let Some(t) = tag.as_ref().get(..8) {
            h.copy_from_slice(t);
        }
        let mut n = u64::from_be_bytes(h);
        let mut out = [0u8; CHALLENGE_LEN];
        out[0] = code;
        for c in out.iter_mut().skip(1) {
            *c = BASE62[(n % 62) as usize];
            n /= 62;
        }
        out
    }

    /// The game code of `challenge` when it is one this master made for `addr` in this epoch
    /// or the one before.
    pub(super) fn check_challenge(&self, addr: SocketAddr, challenge: &[u8], t: u64) -> Option<u8> {
        let &code = challenge.first()?;
        code_game(code)?;
        if challenge.len() != CHALLENGE_LEN {
            return None;
        }
        let epoch = t / EPOCH_MS;
        let ok = |e: u64| self.challenge(addr, e, code)[..] == *challenge;
        (ok(epoch) || (epoch > 0 && ok(epoch - 1))).then_some(code)
    }

    /// Takes `addr`'s retry schedule out of the table (and out of the counts).
    pub(super) fn take_pending(&mut self, addr: SocketAddr) -> Option<Pending> {
        let p = self.pending.remove(&addr)?;
        if p.why == Why::Register {
            self.registering = self.registering.saturating_sub(1);
            let net = Key::net(addr.ip());
            if let Some(n) = self.registering_per_net.get_mut(&net) {
                *n -= 1;
                if *n == 0 {
                    self.registering_per_net.remove(&net);
                }
            }
        }
        Some(p)
    }

    pub(super) fn put_pending(&mut self, addr: SocketAddr, p: Pending) {
        if p.why == Why::Register {
            self.registering += 1;
            *self
                .registering_per_net
                .entry(Key::net(addr.ip()))
                .or_default() += 1;
        }
        self.pending.insert(addr, p);
    }

    /// Sends a challenge to `to` if the limits let it out; true when it went.
    pub(super) fn send_challenge(
        &mut self,
        to: SocketAddr,
        code: u8,
        retry: bool,
        now: Instant,
        t: u64,
        out: &mut Outbox,
    ) -> bool {
        if let Err(r) = self.limits.send_challenge(to.ip(), retry, now) {
            self.stats.drop(r.into());
            return false;
        }
        let challenge = self.challenge(to, t / EPOCH_MS, code);
        let bytes = Packet::GetInfo {
            challenge: Some(challenge.to_vec()),
        }
        .to_bytes()
        .unwrap_or_default();
        self.stats.challenges += 1;
        out.push((to, bytes));
        true
    }

    pub(super) fn on_heartbeat(
        &mut self,
        now: Instant,
        from: SocketAddr,
        name: &[u8],
        out: &mut Outbox,
    ) {
        self.stats.heartbeats += 1;
        if let Err(d) = listable(&self.config, from) {
            self.stats.drop(d);
            return;
        }
        let Some(code) = heartbeat_code(name) else {
            self.stats.drop(Drop::UnknownHeartbeat);
            return;
        };
        if self.pending.contains_key(&from) {
            // One challenge schedule at a time per server; a repeated heartbeat does not
            // reset it.
            self.stats.drop(Drop::AlreadyPending);
            return;
        }
        let t = self.ms(now);
        let timeout = u64::try_from(self.config.challenge_timeout.as_millis()).unwrap_or(2000);
        let tick = TICK.as_millis() as u64;
        if let Some(e) = self.servers.get_mut(&from) {
            // A listed server: limited per address:port, never by its host's allowance (a
            // spoofer heartbeating from the host's other ports cannot starve it). Within
            // `verify_interval` of the last verification, the verification is deferred to
            // the interval's end, not dropped: a server that heartbeats as it shuts down
            // (ioquake3) is challenged and removed however soon after the last one it stops.
            let interval = u64::try_from(self.config.verify_interval.as_millis()).unwrap_or(0);
            let start = e.last_verify.saturating_add(interval).max(t);
            e.last_verify = start;
            let sent = start == t && self.send_challenge(from, code, false, now, t, out);
            let deadline = match (start > t, sent) {
                (true, _) => start,
                (false, true) => t + timeout,
                (false, false) => t + tick,
            };
            self.put_pending(
                from,
                Pending {
                    code,
                    why: Why::Verify,
                    deadline,
                    sent: u8::from(sent),
                    since: start,
                },
            );
            self.arm(now);
            return;
        }
        // A new server: nothing is charged to its host before it answers (a spoofed
        // heartbeat cannot, so it cannot use up the host's allowance); the challenge has
        // budgets of its own. No challenge when it could not be listed anyway.
        if let Err(d) = self.room_for(from) {
            self.stats.drop(d);
            return;
        }
        let sent = self.send_challenge(from, code, false, now, t, out);
        let net = Key::net(from.ip());
        let room = self.registering < self.config.max_pending
            && self.registering_per_net.get(&net).copied().unwrap_or(0)
                < self.config.max_pending_per_net;
        if room {
            self.put_pending(
                from,
                Pending {
                    code,
                    why: Why::Register,
                    deadline: t + if sent { timeout } else { tick },
                    sent: u8::from(sent),
                    since: t,
                },
            );
            self.arm(now);
        } else {
            // The challenge went out (or not) without a retry: an answer is still checked
            // against the keyed hash.
            self.stats.drop(Drop::PendingFull);
        }
    }

    fn arm(&mut self, now: Instant) {
        let t = now + TICK;
        self.next_tick = Some(self.next_tick.map_or(t, |n| n.min(t)));
    }

    pub(super) fn on_info(&mut self, now: Instant, from: SocketAddr, r: &InfoResponse) {
        let t = self.ms(now);
        let code = r
            .info
            .get("challenge")
            .and_then(|c| self.check_challenge(from, c, t));
        let Some(code) = code else {
            // A wrong challenge leaves the schedule in place: the real answer may follow.
            self.stats.drop(if self.pending.contains_key(&from) {
                Drop::BadChallenge
            } else {
                Drop::Unsolicited
            });
            return;
        };
        self.take_pending(from);
        let listed = self.servers.get(&from).copied();
        let int = |k: &str| r.info.get_int(&[k]);
        let (Some(protocol), Some(max), Some(clients)) =
            (int("protocol"), int("sv_maxclients"), int("clients"))
        else {
            self.refuse_answer(from, listed.is_some(), Drop::MissingKeys);
            return;
        };
        let game = match r.info.get("gamename").filter(|g| !g.is_empty()) {
            Some(g) => match std::str::from_utf8(g) {
                Ok(s) => s.to_string(),
                Err(_) => {
                    self.refuse_answer(from, listed.is_some(), Drop::MissingKeys);
                    return;
                }
            },
            // A listed server keeps its game (a spoofed heartbeat naming another anonymous
            // game does not relabel it); a new one takes its heartbeat's.
            None => match listed {
                Some(e) => self.names.get(e.game).to_string(),
                None => code_game(code).unwrap_or_default().to_string(),
            },
        };
        let gametype = r
            .info
            .get("gametype")
            .filter(|g| !g.is_empty())
            .map(|g| String::from_utf8_lossy(g).into_owned())
            .unwrap_or_else(|| "0".into());
        let s = Listed {
            addr: from,
            game,
            protocol: i32::try_from(protocol).unwrap_or(i32::MIN),
            clients: u32::try_from(clients).unwrap_or(u32::MAX),
            max_clients: u32::try_from(max).unwrap_or(0),
            gametype,
        };
        if i32::try_from(protocol).is_err() {
            self.refuse_answer(from, listed.is_some(), Drop::MissingKeys);
            return;
        }
        if let Err(d) = self.check(&s) {
            self.refuse_answer(from, listed.is_some(), d);
            return;
        }
        if listed.is_none() {
            if let Err(d) = self.room_for(from) {
                self.stats.drop(d);
                return;
            }
            // The host's and its network's allowance for new servers, charged only now that
            // the address answered for itself.
            if let Err(r) = self.limits.new_server(from.ip(), now) {
                self.stats.drop(r.into());
                return;
            }
            if !self.insert(&s, t) {
                self.stats.drop(Drop::ServersFull);
                return;
            }
            self.stats.registrations += 1;
            info!(server = %from, game = %s.game, protocol = s.protocol, "registered");
        } else {
            self.stats.verifications += 1;
            self.insert(&s, t);
        }
        self.arm(now);
    }

    /// An answer with the right challenge whose info cannot be listed: a listed server is
    /// taken off (it answered, and what it says is not listable).
    fn refuse_answer(&mut self, from: SocketAddr, listed: bool, why: Drop) {
        self.stats.drop(why);
        if listed && self.remove(from) {
            self.stats.removals += 1;
            info!(server = %from, reason = why.label(), "removed: its answer cannot be listed");
        }
    }
}
