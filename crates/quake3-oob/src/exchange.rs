//! The sans-IO exchanges behind every query: getinfo/getstatus to a server, getservers to a
//! master. They compile without the `client` feature; the engine (or the registry's callers)
//! drive them.

use crate::{Encode, EncodeError};
use std::net::SocketAddr;
use std::time::Duration;

use fragstat_core::collect::ListCollector;
use fragstat_core::{DecodeError, Exchange, Verdict};

use crate::game::Quake3Game;
use crate::master::{GetServers, MAX_MASTER_PACKET};
use crate::packet::{decode, InfoResponse, Packet, StatusResponse, OOB_HEADER};

/// What to ask a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
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
    /// A reply was accepted without this query's challenge (only with
    /// [`ServerExchange::accept_unverified`]): anyone who can send from the server's
    /// address could have written it.
    pub unverified: bool,
}

impl ServerReply {
    /// The shared record of this reply (see [`crate::view::server_info`]), copying it.
    pub fn server_info(&self, game: Quake3Game) -> fragstat_core::model::ServerInfo {
        let mut info = crate::view::server_info(game, self.info.clone(), self.status.clone());
        info.unverified = self.unverified;
        info
    }

    /// The shared record of this reply, consuming it (no copies).
    pub fn into_server_info(self, game: Quake3Game) -> fragstat_core::model::ServerInfo {
        let mut info = crate::view::server_info(game, self.info, self.status);
        info.unverified = self.unverified;
        info
    }
}

/// Challenges are `fs<nonce hex>-<attempt>`: unique per query, valid for every engine
/// (protocol notes §1.6), and they say which attempt a reply answers (for the RTT).
#[cfg(test)]
pub(crate) fn challenge(nonce: u64, attempt: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    push_challenge(&mut out, nonce, attempt);
    out
}

/// [`challenge`], appended to `out` (built without format!: this runs on every request).
fn push_challenge(out: &mut Vec<u8>, nonce: u64, attempt: u32) {
    let mut digits = [0u8; 16];
    out.extend_from_slice(b"fs");
    out.extend_from_slice(lower_hex(nonce, &mut digits));
    out.push(b'-');
    let mut decimal = [0u8; 10];
    let mut start = decimal.len();
    let mut n = attempt;
    loop {
        start -= 1;
        if let (Some(slot), Ok(d)) = (decimal.get_mut(start), u8::try_from(n % 10)) {
            *slot = b'0' + d;
        }
        n /= 10;
        if n == 0 || start == 0 {
            break;
        }
    }
    out.extend_from_slice(decimal.get(start..).unwrap_or_default());
}

/// `getinfo`/`getstatus` with our challenge: the bytes `Packet::GetInfo`/`GetStatus`
/// `.to_bytes()` writes, without building the packet and checking a challenge that is valid
/// by construction (this runs for every request of a scan).
///
/// Nothing follows the challenge: DarkPlaces echoes everything after `getstatus ` into
/// `challenge`, a trailing newline included (netconn.c `challenge = string + 10`), while
/// ioq3, id Q3, W:ET and qfusion tokenise the line and lose nothing without one
/// (`MSG_ReadStringLine` stops at NUL, newline or the end). DarkPlaces' own browser sends
/// `getstatus <challenge>` the same way.
///
/// `direction`: Medal of Honor's servers skip one byte after the marker before reading the
/// command, the direction of the datagram, 2 from a client (OpenMoHAA `net_chan.c`,
/// `sv_main.c` "skip the direction byte").
fn request(command: &[u8], nonce: u64, attempt: u32, direction: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(OOB_HEADER.len() + command.len() + 33);
    out.extend_from_slice(&OOB_HEADER);
    if direction {
        out.push(2);
    }
    out.extend_from_slice(command);
    out.push(b' ');
    push_challenge(&mut out, nonce, attempt);
    out
}

/// Checks an echoed challenge: `Ok(Some(attempt))` when it is ours, `Ok(None)` when the
/// server echoed none (some old servers do not), `Err` when it is someone else's.
pub(crate) fn check_challenge(echo: Option<&[u8]>, nonce: u64) -> Result<Option<u32>, ()> {
    let Some(echo) = echo else { return Ok(None) };
    // `fs<nonce>-` compared without building it (this runs on every reply).
    let mut digits = [0u8; 16];
    let hex = lower_hex(nonce, &mut digits);
    let attempt = echo
        .strip_prefix(b"fs")
        .and_then(|e| e.strip_prefix(hex))
        .and_then(|e| e.strip_prefix(b"-"))
        .ok_or(())?;
    std::str::from_utf8(attempt)
        .ok()
        .and_then(|a| a.parse().ok())
        .map(Some)
        .ok_or(())
}

/// `n` in lowercase hexadecimal without leading zeros (as `format!("{n:x}")`), in `buf`.
fn lower_hex(mut n: u64, buf: &mut [u8; 16]) -> &[u8] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut start = buf.len();
    loop {
        start -= 1;
        if let (Some(slot), Some(d)) = (
            buf.get_mut(start),
            DIGITS.get(u8::try_from(n & 0xf).map_or(0, usize::from)),
        ) {
            *slot = *d;
        }
        n >>= 4;
        if n == 0 || start == 0 {
            break;
        }
    }
    buf.get(start..).unwrap_or_default()
}

/// The exchange behind `client::Client::scan` (feature `client`): getinfo and/or getstatus
/// to one server.
///
/// A reply must carry this query's challenge: one without a challenge could have been
/// written by anyone able to send from the server's address (a forger who knows only that a
/// scan is running), so it is ignored — unless the game's servers are known not to echo one
/// ([`ServerExchange::accept_unverified`]), when it is taken and marked
/// [`ServerReply::unverified`].
#[derive(Debug)]
pub struct ServerExchange {
    ask: Request,
    nonce: u64,
    /// Replies without a challenge are taken (and marked).
    accept_unverified: bool,
    /// Requests carry Medal of Honor's direction byte.
    direction_byte: bool,
    /// What has come so far; boxed on the first reply, so a scan's queued queries stay small
    /// (a scan creates one exchange per server up front).
    reply: Option<Box<ServerReply>>,
}

impl ServerExchange {
    /// A query with a random challenge.
    pub fn new(ask: Request) -> Self {
        Self::with_nonce(ask, fragstat_core::nonce::u64())
    }

    /// A query with a given challenge nonce (for tests).
    pub fn with_nonce(ask: Request, nonce: u64) -> Self {
        ServerExchange {
            ask,
            nonce,
            accept_unverified: false,
            direction_byte: false,
            reply: None,
        }
    }

    /// Takes replies that carry no challenge at all (servers of games that do not echo
    /// one), marking the reply [`ServerReply::unverified`]. A reply with someone else's
    /// challenge is never taken.
    #[must_use]
    pub fn accept_unverified(mut self, accept: bool) -> Self {
        self.accept_unverified = accept;
        self
    }

    /// Sends Medal of Honor's direction byte (2, client to server) after the marker, which
    /// its servers skip before reading the command (OpenMoHAA `sv_main.c`).
    #[must_use]
    pub fn direction_byte(mut self, on: bool) -> Self {
        self.direction_byte = on;
        self
    }

    fn wants_info(&self) -> bool {
        self.ask != Request::Status && self.reply.as_ref().is_none_or(|r| r.info.is_none())
    }

    fn wants_status(&self) -> bool {
        self.ask != Request::Info && self.reply.as_ref().is_none_or(|r| r.status.is_none())
    }

    fn take_reply(&mut self) -> ServerReply {
        self.reply.take().map(|r| *r).unwrap_or_default()
    }

    fn complete(&self) -> bool {
        !self.wants_info() && !self.wants_status()
    }
}

impl Exchange for ServerExchange {
    type Output = ServerReply;

    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        let mut out = Vec::with_capacity(2);
        if self.wants_info() {
            out.push(request(
                b"getinfo",
                self.nonce,
                attempt,
                self.direction_byte,
            ));
        }
        if self.wants_status() {
            out.push(request(
                b"getstatus",
                self.nonce,
                attempt,
                self.direction_byte,
            ));
        }
        Ok(out)
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<ServerReply> {
        let packet = match decode(datagram) {
            Ok(p) => p,
            Err(e) => return Verdict::Invalid(e),
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
        // `Ok(None)`: the reply echoes no challenge at all.
        let unverified = attempt.is_none();
        if unverified && !self.accept_unverified {
            return Verdict::Ignore("reply without this query's challenge");
        }
        let reply = self.reply.get_or_insert_with(Box::default);
        reply.unverified |= unverified;
        match packet {
            Packet::InfoResponse(r) => reply.info = Some(r),
            Packet::StatusResponse(r) => reply.status = Some(r),
            _ => {}
        }
        if self.complete() {
            Verdict::Done {
                output: Ok(self.take_reply()),
                attempt,
            }
        } else {
            // The other reply is asked for again on a retry: time it as an attempt.
            Verdict::Partial { attempt }
        }
    }

    fn on_timeout(&mut self, exhausted: bool) -> Option<Result<ServerReply, DecodeError>> {
        // With both asked, the status alone is a useful answer (it has the players); the info
        // alone only once the status has had every retry.
        let (info, status) = self
            .reply
            .as_ref()
            .map_or((false, false), |r| (r.info.is_some(), r.status.is_some()));
        let partial = status || (exhausted && info);
        (self.ask == Request::Both && partial).then(|| Ok(self.take_reply()))
    }
}

/// The exchange behind `client::Client::master` (feature `client`): one `getservers`
/// request, a list spanning any number of datagrams.
///
/// The list is complete shortly after an end marker (`\EOT`, `\EOF`) on a datagram that is
/// not full: the exchange lingers [`DEFAULT_SETTLE`] for datagrams the marker overtook (UDP
/// reorders, and lists carry no count). Masters before dpmaster 2.0 put the marker on every
/// datagram, so a marker on a full datagram, or no marker at all, means waiting until the
/// master has been quiet for one timeout. Duplicate entries (a datagram delivered twice) are
/// listed once.
///
/// A catalogue master's quirks change that: [`MasterExchange::with_quiet`] ends a list
/// that has no marker after a short silence instead of a whole timeout, and
/// [`MasterExchange::bare_eot_ends`] `false` reads a bare `\EOT` as the end of one
/// datagram only (Activision's masters: pyq3serverlist reader.py:70-73 "EOT can indicate
/// either the end of the entire response or the end of a response packet (Activision).
/// However, EOT followed by trailing nil-bytes always indicates the end of the response.").
#[derive(Debug)]
pub struct MasterExchange {
    request: Vec<u8>,
    list: ListCollector<SocketAddr>,
    /// The wait after a datagram that does not end the list (`None`: the attempt timeout).
    quiet: Option<Duration>,
    /// Whether a bare `\EOT` (without its NULs) ends the list.
    bare_eot_ends: bool,
}

impl MasterExchange {
    /// A query sending `request`.
    pub fn new(request: &GetServers) -> Result<Self, crate::EncodeError> {
        Ok(MasterExchange {
            request: Packet::GetServers(request.clone()).to_bytes()?,
            list: ListCollector::new(DEFAULT_SETTLE),
            quiet: None,
            bare_eot_ends: true,
        })
    }

    /// Once a datagram has come, waits at most `quiet` for the next one when the list has not
    /// ended (`None`: the attempt timeout): the end of a list without an end marker.
    pub fn with_quiet(mut self, quiet: Option<Duration>) -> Self {
        self.quiet = quiet;
        self
    }

    /// Whether a bare `\EOT` (no NULs) ends the list (default: yes; no for masters that put
    /// one on every datagram, where only `\EOT\0\0\0` or `\EOF` is final).
    pub fn bare_eot_ends(mut self, ends: bool) -> Self {
        self.bare_eot_ends = ends;
        self
    }

    /// How long to wait after an end marker for datagrams it overtook (default 100 ms).
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.list = self.list.with_settle(settle);
        self
    }
}

/// The default wait after an end marker (see [`MasterExchange::with_settle`]).
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(100);

impl Exchange for MasterExchange {
    type Output = Vec<SocketAddr>;

    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        Ok(vec![self.request.clone()])
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Vec<SocketAddr>> {
        let list = match decode(datagram) {
            Ok(Packet::ServersResponse(l)) => l,
            Ok(_) => return Verdict::Ignore("not a server list"),
            Err(e) => return Verdict::Invalid(e),
        };
        // Room for fewer than two more entries: the master filled this datagram, and an old
        // master marks every datagram, so more may follow.
        let full = datagram.len() + 14 > MAX_MASTER_PACKET;
        let marker = match list.terminator {
            Some(crate::master::Terminator::EotBare) => self.bare_eot_ends,
            t => t.is_some(),
        };
        let ends = marker && !full;
        self.list.add(list.servers);
        match self.list.progress(ends) {
            Verdict::Progress {
                attempt,
                wait: None,
            } => Verdict::Progress {
                attempt,
                wait: self.quiet,
            },
            v => v,
        }
    }

    fn on_timeout(&mut self, _exhausted: bool) -> Option<Result<Vec<SocketAddr>, DecodeError>> {
        self.list.on_timeout()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// L4: a query's challenge does not follow a seeded generator: with the process's
    /// generator seeded alike twice, two queries still carry different challenges.
    #[test]
    fn challenges_do_not_follow_a_seeded_generator() {
        fastrand::seed(7);
        let a = ServerExchange::new(Request::Both).nonce;
        fastrand::seed(7);
        let b = ServerExchange::new(Request::Both).nonce;
        assert_ne!(a, b);
    }

    fn wait_after(ex: &mut MasterExchange, datagram: &[u8]) -> Option<Duration> {
        match ex.on_datagram(datagram) {
            Verdict::Progress { wait, .. } => wait,
            v => panic!("{v:?}"),
        }
    }

    /// A list without an end marker: after a datagram the exchange waits the quiet period
    /// (the catalogue's masters without a marker), not the attempt timeout.
    #[test]
    fn a_list_without_a_marker_ends_on_the_quiet_period() {
        let quiet = Duration::from_millis(300);
        let mut ex = MasterExchange::new(&GetServers::anonymous(68))
            .unwrap()
            .with_quiet(Some(quiet));
        let d = b"\xff\xff\xff\xffgetserversResponse\\\x01\x02\x03\x04\x6d\x38\\";
        assert_eq!(wait_after(&mut ex, d), Some(quiet));
        let Some(Ok(list)) = ex.on_timeout(false) else {
            panic!("no list")
        };
        assert_eq!(list, ["1.2.3.4:27960".parse::<SocketAddr>().unwrap()]);
    }

    /// Activision's masters end every datagram with a bare `\EOT`: with
    /// `bare_eot_ends(false)` that is not the end (the quiet period runs), `\EOT\0\0\0` is.
    #[test]
    fn a_bare_eot_on_every_datagram_is_not_the_end() {
        let quiet = Duration::from_millis(300);
        let mut ex = MasterExchange::new(&GetServers::anonymous(6))
            .unwrap()
            .with_quiet(Some(quiet))
            .bare_eot_ends(false);
        let first = b"\xff\xff\xff\xffgetserversResponse\\\x01\x02\x03\x04\x6d\x38\\EOT";
        assert_eq!(wait_after(&mut ex, first), Some(quiet));
        let last = b"\xff\xff\xff\xffgetserversResponse\\\x01\x02\x03\x05\x6d\x38\\EOT\0\0\0";
        assert_eq!(wait_after(&mut ex, last), Some(DEFAULT_SETTLE));
        // By default a bare marker ends a list (it is seen as the last one too).
        let mut plain = MasterExchange::new(&GetServers::anonymous(6)).unwrap();
        assert_eq!(wait_after(&mut plain, first), Some(DEFAULT_SETTLE));
    }

    /// Requests end with the challenge (DarkPlaces echoes whatever follows `getstatus `), and
    /// Medal of Honor's carry the client's direction byte, which its server skips.
    #[test]
    fn request_bytes() {
        let mut ex = ServerExchange::with_nonce(Request::Both, 0xab);
        let reqs = ex.requests(1).unwrap();
        assert_eq!(reqs[0], b"\xff\xff\xff\xffgetinfo fsab-1");
        assert_eq!(reqs[1], b"\xff\xff\xff\xffgetstatus fsab-1");
        let mut moh = ServerExchange::with_nonce(Request::Status, 0xab).direction_byte(true);
        assert_eq!(
            moh.requests(0).unwrap(),
            [b"\xff\xff\xff\xff\x02getstatus fsab-0".to_vec()]
        );
        // Its reply carries the server's direction byte and is taken.
        let reply = b"\xff\xff\xff\xff\x01statusResponse\n\\challenge\\fsab-0\\sv_hostname\\moh\n58 \"UnnamedSoldier\"\n";
        assert!(matches!(
            moh.on_datagram(reply),
            Verdict::Done { output: Ok(_), .. }
        ));
        // And the server side reads the request either way.
        assert_eq!(
            decode(b"\xff\xff\xff\xff\x02getstatus fsab-0").unwrap(),
            Packet::GetStatus {
                challenge: Some(b"fsab-0".to_vec())
            }
        );
    }
}
