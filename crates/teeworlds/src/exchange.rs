//! Sans-IO exchanges: server info over 0.6 (vanilla, DDNet extended, legacy 64) and 0.7
//! (token handshake first), and the UDP masters of both.
//!
//! Tokens are random per query and kept over retries, so a late answer to an earlier attempt
//! still counts; anything with another token is ignored (it answers someone else).

use crate::Encode;
use crate::EncodeError;
use std::net::SocketAddr;
use std::time::Duration;

use fragstat_core::collect::ListCollector;
use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::{DecodeError, Exchange, Verdict};

use crate::assemble::Assembly;
use crate::seven::{self, Body};
use crate::six;
use crate::view::{from_seven, from_six, Form};

/// Which 0.6 request to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// `gie3` with a token byte: `inf3` (vanilla servers; DDNet lists at most 16 clients).
    Vanilla,
    /// `gie3` behind DDNet's extended header: `iext` + `iex+` from DDNet, `inf3` from vanilla
    /// servers (which skip the header they do not know). What DDNet's browser sends.
    Extended,
    /// `fstd`: DDNet's legacy 64-client `dtsf` replies, 24 clients each.
    Legacy64,
}

/// A 0.6 server info query.
#[derive(Debug)]
pub struct Query6 {
    mode: Mode,
    /// 24 bits: the low 8 go in the request ("basic token"), the upper 16 in the extended
    /// header ("extra token"); DDNet echoes `basic | extra << 8`.
    token: u32,
    assembly: Assembly,
}

impl Query6 {
    /// A query with a random token.
    pub fn new(mode: Mode) -> Self {
        Self::with_token(mode, fragstat_core::nonce::u32_below(0x0100_0000))
    }

    /// A query with a given 24-bit token (for tests).
    pub fn with_token(mode: Mode, token: u32) -> Self {
        Query6 {
            mode,
            token: token & 0x00FF_FFFF,
            assembly: Assembly::new(),
        }
    }

    /// The token byte sent in the request.
    pub fn basic_token(&self) -> u8 {
        (self.token & 0xFF) as u8
    }

    /// The extra token sent in the extended header.
    pub fn extra_token(&self) -> u16 {
        (self.token >> 8) as u16
    }

    /// The token an extended reply carries: `basic | extra << 8` (the seed's combination).
    pub fn combined_token(&self) -> i32 {
        i32::try_from(self.token).unwrap_or(-1)
    }

    /// The request datagram.
    pub fn request(&self) -> six::Packet {
        match self.mode {
            Mode::Vanilla => six::Packet::GetInfo {
                token: self.basic_token(),
                extra_token: None,
            },
            Mode::Extended => six::Packet::GetInfo {
                token: self.basic_token(),
                extra_token: Some(self.extra_token()),
            },
            Mode::Legacy64 => six::Packet::GetInfo64 {
                token: self.basic_token(),
            },
        }
    }

    fn assembled(&mut self, form: Form) -> Verdict<ServerInfo> {
        if self.assembly.complete() {
            let a = std::mem::take(&mut self.assembly);
            let datagrams = a.datagrams();
            if let Some((info, complete)) = a.finish() {
                return Verdict::Done {
                    output: Ok(from_six(&info, form, datagrams, complete)),
                    attempt: None,
                };
            }
        }
        Verdict::Progress {
            attempt: None,
            wait: None,
        }
    }
}

impl Exchange for Query6 {
    type Output = ServerInfo;

    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        Ok(vec![self.request().to_bytes()?])
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<ServerInfo> {
        let packet = match six::decode(datagram) {
            Ok(p) => p,
            Err(e) => return Verdict::Invalid(e),
        };
        let basic = i32::from(self.basic_token());
        let combined = self.combined_token();
        match (self.mode, packet) {
            // A vanilla reply: the token byte (vanilla servers, DDNet's plain gie3) or the
            // combination (DDNet answering an extended request the vanilla way).
            (Mode::Vanilla | Mode::Extended, six::Packet::Info(i)) => {
                if i.token != basic && i.token != combined {
                    return Verdict::Ignore("inf3 with another token");
                }
                Verdict::Done {
                    output: Ok(from_six(&i, Form::Vanilla, 1, true)),
                    attempt: None,
                }
            }
            (Mode::Extended, six::Packet::InfoExtended(i)) => {
                if i.token != combined {
                    return Verdict::Ignore("iext with another token");
                }
                self.assembly.add_main(i);
                self.assembled(Form::Extended)
            }
            (Mode::Extended, six::Packet::InfoMore(m)) => {
                if m.token != combined {
                    return Verdict::Ignore("iex+ with another token");
                }
                self.assembly.add_more(m);
                self.assembled(Form::Extended)
            }
            (Mode::Legacy64, six::Packet::Info64(i)) => {
                if i.token != basic {
                    return Verdict::Ignore("dtsf with another token");
                }
                self.assembly.add_legacy(i);
                self.assembled(Form::Legacy64)
            }
            _ => Verdict::Ignore("not a reply to this request"),
        }
    }

    fn on_timeout(&mut self, exhausted: bool) -> Option<Result<ServerInfo, DecodeError>> {
        // Before the last attempt a retry brings the whole reply again (duplicates are
        // dropped, the missing datagrams fill in); after it, what came is the answer.
        if !exhausted || self.assembly.main().is_none() {
            return None;
        }
        let a = std::mem::take(&mut self.assembly);
        let datagrams = a.datagrams();
        let form = match self.mode {
            Mode::Legacy64 => Form::Legacy64,
            _ => Form::Extended,
        };
        a.finish()
            .map(|(info, complete)| Ok(from_six(&info, form, datagrams, complete)))
    }
}

fn random_token() -> u32 {
    // Any value but NET_TOKEN_NONE.
    fragstat_core::nonce::u32_below(seven::TOKEN_NONE)
}

/// A 0.7 server info query: the token handshake, then `gie3` with the server's token
/// ([`Verdict::Advance`] between the two).
#[derive(Debug)]
pub struct Query7 {
    client_token: u32,
    server_token: Option<u32>,
    browse_token: i32,
}

impl Query7 {
    /// A query with random tokens (the browse token a random 24-bit number: never negative,
    /// so never [`seven::CRASHING_BROWSE_TOKEN`]).
    pub fn new() -> Self {
        Self::with_tokens(
            random_token(),
            i32::try_from(fragstat_core::nonce::u32_below(0x0100_0000)).unwrap_or(0),
        )
    }

    /// A query with given tokens (for tests). A negative browse token loses its sign bit
    /// (−1 would crash a Teeworlds 0.7.5 server, [`seven::CRASHING_BROWSE_TOKEN`]; no
    /// non-negative number has the varint's sign bit, so nothing sent starts `0x40`).
    pub fn with_tokens(client_token: u32, browse_token: i32) -> Self {
        Query7 {
            client_token,
            server_token: None,
            browse_token: browse_token & i32::MAX,
        }
    }

    /// The browse token the info request carries (never negative).
    pub fn browse_token(&self) -> i32 {
        self.browse_token
    }

    /// The server's token, once the handshake is done.
    pub fn server_token(&self) -> Option<u32> {
        self.server_token
    }
}

impl Default for Query7 {
    fn default() -> Self {
        Self::new()
    }
}

/// The handshake step shared by 0.7 queries: `Some(verdict)` when `packet` was a token reply.
fn handshake<O>(
    client_token: u32,
    server_token: &mut Option<u32>,
    packet: &seven::Packet,
) -> Option<Verdict<O>> {
    match packet {
        seven::Packet::Token { to, token } => Some(if *to != client_token {
            Verdict::Ignore("token reply to another client token")
        } else if server_token.is_some() {
            Verdict::Ignore("token reply already received")
        } else {
            *server_token = Some(*token);
            Verdict::Advance
        }),
        _ => None,
    }
}

/// Checks a connectionless 0.7 packet's header against the handshake's tokens.
fn ours(client_token: u32, server_token: Option<u32>, token: u32, response_token: u32) -> bool {
    token == client_token && server_token == Some(response_token)
}

impl Exchange for Query7 {
    type Output = ServerInfo;

    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        let p = match self.server_token {
            None => seven::Packet::token_request(self.client_token),
            Some(server) => seven::Packet::Connless {
                token: server,
                response_token: self.client_token,
                body: Body::GetInfo {
                    token: self.browse_token,
                },
            },
        };
        Ok(vec![p.to_bytes()?])
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<ServerInfo> {
        let packet = match seven::decode(datagram) {
            Ok(p) => p,
            Err(e) => return Verdict::Invalid(e),
        };
        if let Some(v) = handshake(self.client_token, &mut self.server_token, &packet) {
            return v;
        }
        match packet {
            seven::Packet::Connless {
                token,
                response_token,
                body: Body::Info(i),
            } => {
                if !ours(self.client_token, self.server_token, token, response_token) {
                    return Verdict::Ignore("0.7 reply with other connection tokens");
                }
                if i.token != self.browse_token {
                    return Verdict::Ignore("0.7 info with another browse token");
                }
                Verdict::Done {
                    output: Ok(from_seven(&i)),
                    attempt: None,
                }
            }
            _ => Verdict::Ignore("not a reply to this request"),
        }
    }
}

/// A master's list being collected: `siz2` gives the count, `lis2` datagrams the servers.
#[derive(Debug)]
struct ListState {
    list: ListCollector<SocketAddr>,
    count: Option<u16>,
}

impl Default for ListState {
    fn default() -> Self {
        ListState {
            // No end marker: the count or the master's silence ends the list.
            list: ListCollector::new(Duration::ZERO),
            count: None,
        }
    }
}

impl ListState {
    fn count(&mut self, n: u16) {
        self.list.add_empty();
        self.count = Some(n);
    }

    fn add(&mut self, servers: Vec<SocketAddr>) {
        self.list.add(servers);
    }

    fn verdict(&mut self) -> Verdict<Vec<MasterEntry>> {
        // The count says when the list is whole; without it, the master's silence does.
        if self
            .count
            .is_some_and(|c| self.list.len() >= usize::from(c))
        {
            return Verdict::Done {
                output: Ok(self.take()),
                attempt: None,
            };
        }
        self.list.progress(false)
    }

    fn take(&mut self) -> Vec<MasterEntry> {
        self.list.take().into_iter().map(MasterEntry::new).collect()
    }

    fn on_timeout(&mut self) -> Option<Result<Vec<MasterEntry>, DecodeError>> {
        (self.list.datagrams() > 0).then(|| Ok(self.take()))
    }
}

/// A 0.6 UDP master query: `cou2` and `req2` at once; complete when the servers listed reach
/// the count, else when the master has been quiet for one timeout.
#[derive(Debug, Default)]
pub struct Master6 {
    list: ListState,
}

impl Master6 {
    /// A new query.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Exchange for Master6 {
    type Output = Vec<MasterEntry>;

    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        [six::Packet::GetCount, six::Packet::GetList]
            .iter()
            .map(Encode::to_bytes)
            .collect()
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Vec<MasterEntry>> {
        match six::decode(datagram) {
            Ok(six::Packet::Count(n)) => self.list.count(n),
            Ok(six::Packet::List(s)) => self.list.add(s),
            Ok(_) => return Verdict::Ignore("not a list or count"),
            Err(e) => return Verdict::Invalid(e),
        }
        self.list.verdict()
    }

    fn on_timeout(&mut self, _exhausted: bool) -> Option<Result<Vec<MasterEntry>, DecodeError>> {
        self.list.on_timeout()
    }
}

/// A 0.7 UDP master query: the token handshake, then `cou2` and `req2`.
#[derive(Debug)]
pub struct Master7 {
    client_token: u32,
    server_token: Option<u32>,
    list: ListState,
}

impl Master7 {
    /// A query with a random token.
    pub fn new() -> Self {
        Self::with_token(random_token())
    }

    /// A query with a given token (for tests).
    pub fn with_token(client_token: u32) -> Self {
        Master7 {
            client_token,
            server_token: None,
            list: ListState::default(),
        }
    }
}

impl Default for Master7 {
    fn default() -> Self {
        Self::new()
    }
}

impl Exchange for Master7 {
    type Output = Vec<MasterEntry>;

    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        match self.server_token {
            None => Ok(vec![
                seven::Packet::token_request(self.client_token).to_bytes()?
            ]),
            Some(server) => [Body::GetCount, Body::GetList]
                .into_iter()
                .map(|body| {
                    seven::Packet::Connless {
                        token: server,
                        response_token: self.client_token,
                        body,
                    }
                    .to_bytes()
                })
                .collect(),
        }
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Vec<MasterEntry>> {
        let packet = match seven::decode(datagram) {
            Ok(p) => p,
            Err(e) => return Verdict::Invalid(e),
        };
        if let Some(v) = handshake(self.client_token, &mut self.server_token, &packet) {
            return v;
        }
        let seven::Packet::Connless {
            token,
            response_token,
            body,
        } = packet
        else {
            return Verdict::Ignore("not a list or count");
        };
        if !ours(self.client_token, self.server_token, token, response_token) {
            return Verdict::Ignore("0.7 packet with other connection tokens");
        }
        match body {
            Body::Count(n) => self.list.count(n),
            Body::List(s) => self.list.add(s),
            _ => return Verdict::Ignore("not a list or count"),
        }
        self.list.verdict()
    }

    fn on_timeout(&mut self, _exhausted: bool) -> Option<Result<Vec<MasterEntry>, DecodeError>> {
        self.list.on_timeout()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::six::{Client, Info, More};

    fn info(token: i32, n: i32, clients: usize) -> Info {
        Info {
            token,
            version: b"0.6.4, 16.4".to_vec(),
            name: b"s".to_vec(),
            map: b"m".to_vec(),
            map_crc: Some(1),
            map_size: Some(2),
            gametype: b"DDraceNetwork".to_vec(),
            num_players: n,
            max_players: 64,
            num_clients: n,
            max_clients: 64,
            reserved: Some(Vec::new()),
            clients: (0..clients)
                .map(|i| Client {
                    name: format!("c{i}").into_bytes(),
                    is_player: 1,
                    reserved: Some(Vec::new()),
                    ..Client::default()
                })
                .collect(),
            ..Info::default()
        }
    }

    fn more(token: i32, packet_no: i32, clients: usize) -> Vec<u8> {
        six::Packet::InfoMore(More {
            token,
            packet_no,
            clients: info(token, 0, clients).clients,
            ..More::default()
        })
        .to_bytes()
        .unwrap()
    }

    #[test]
    fn extended_assembles_drops_duplicates_and_ignores_other_tokens() {
        let mut q = Query6::with_token(Mode::Extended, 0x12342a);
        assert_eq!(
            q.requests(0).unwrap(),
            vec![b"xe\x12\x34\x00\x00\xff\xff\xff\xffgie3\x2a".to_vec()]
        );
        let t = 0x12342a;
        assert_eq!(q.combined_token(), 1193002);
        let main = six::Packet::InfoExtended(info(t, 64, 52))
            .to_bytes()
            .unwrap();
        assert!(matches!(
            q.on_datagram(&more(t + 1, 1, 12)),
            Verdict::Ignore(_)
        ));
        assert!(matches!(q.on_datagram(&main), Verdict::Progress { .. }));
        assert!(matches!(q.on_datagram(&main), Verdict::Progress { .. }));
        let Verdict::Done { output: Ok(s), .. } = q.on_datagram(&more(t, 1, 12)) else {
            panic!()
        };
        assert_eq!(s.num_players, 64);
        assert_eq!(s.players.as_ref().unwrap().len(), 64);
        assert!(!s.truncated);
    }

    #[test]
    fn a_lost_more_packet_is_a_partial_answer_only_at_the_end() {
        let mut q = Query6::with_token(Mode::Extended, 7);
        let main = six::Packet::InfoExtended(info(7, 64, 52))
            .to_bytes()
            .unwrap();
        assert!(matches!(q.on_datagram(&main), Verdict::Progress { .. }));
        assert!(q.on_timeout(false).is_none(), "retry first");
        let s = q.on_timeout(true).unwrap().unwrap();
        assert!(s.truncated);
        assert_eq!(s.players.unwrap().len(), 52);
        assert_eq!(s.warnings, ["52 of 64 clients received (1 datagrams)"]);
    }

    #[test]
    fn vanilla_reply_to_the_extended_request_is_accepted() {
        let mut q = Query6::with_token(Mode::Extended, 0x12342a);
        let mut v = info(0x2a, 1, 1);
        v.map_crc = None;
        v.map_size = None;
        v.reserved = None;
        v.clients[0].reserved = None;
        let bytes = six::Packet::Info(v.clone()).to_bytes().unwrap();
        assert!(matches!(
            q.on_datagram(&bytes),
            Verdict::Done { output: Ok(_), .. }
        ));
        v.token = 0x2b;
        let bytes = six::Packet::Info(v).to_bytes().unwrap();
        let mut q = Query6::with_token(Mode::Extended, 0x12342a);
        assert!(matches!(q.on_datagram(&bytes), Verdict::Ignore(_)));
    }

    #[test]
    fn seven_handshake_then_info() {
        let mut q = Query7::with_tokens(0x0badbeef, 77);
        assert_eq!(q.requests(0).unwrap()[0].len(), 519);
        let other = seven::Packet::Token { to: 1, token: 2 }.to_bytes().unwrap();
        assert!(matches!(q.on_datagram(&other), Verdict::Ignore(_)));
        let tok = seven::Packet::Token {
            to: 0x0badbeef,
            token: 0x11223344,
        }
        .to_bytes()
        .unwrap();
        assert!(matches!(q.on_datagram(&tok), Verdict::Advance));
        assert!(q.requests(0).unwrap()[0].starts_with(b"\x21\x11\x22\x33\x44\x0b\xad\xbe\xef"));
        let reply = |token, response_token, browse| {
            seven::Packet::Connless {
                token,
                response_token,
                body: Body::Info(seven::Info {
                    token: browse,
                    num_clients: 0,
                    ..seven::Info::default()
                }),
            }
            .to_bytes()
            .unwrap()
        };
        assert!(matches!(
            q.on_datagram(&reply(0x0badbeef, 0x11223344, 78)),
            Verdict::Ignore(_)
        ));
        assert!(matches!(
            q.on_datagram(&reply(0x0badbeee, 0x11223344, 77)),
            Verdict::Ignore(_)
        ));
        assert!(matches!(
            q.on_datagram(&reply(0x0badbeef, 0x11223344, 77)),
            Verdict::Done { output: Ok(_), .. }
        ));
    }

    /// Teeworlds 0.7.5 crashes on browse token −1 (varint `0x40`): no query sends it, nor
    /// any negative token; the request carries the token the reply is checked against.
    #[test]
    fn no_query_sends_browse_token_minus_one() {
        let sent = |mut q: Query7| {
            let tok = seven::Packet::Token {
                to: q.client_token,
                token: 9,
            };
            assert!(matches!(
                q.on_datagram(&tok.to_bytes().unwrap()),
                Verdict::Advance
            ));
            let req = q.requests(1).unwrap().remove(0);
            let Ok(seven::Packet::Connless {
                body: Body::GetInfo { token },
                ..
            }) = seven::decode(&req)
            else {
                panic!("not a gie3")
            };
            assert_eq!(token, q.browse_token());
            assert!(token >= 0, "{token}");
            assert!(!req.ends_with(b"gie3\x40"));
            token
        };
        assert_eq!(sent(Query7::with_tokens(5, -1)), i32::MAX);
        assert_eq!(sent(Query7::with_tokens(5, i32::MIN)), 0);
        assert_eq!(sent(Query7::with_tokens(5, 77)), 77);
        for _ in 0..1000 {
            sent(Query7::new());
        }
    }

    #[test]
    fn master_finishes_on_the_count() {
        let mut m = Master6::new();
        let servers: Vec<SocketAddr> = (0..80u16)
            .map(|i| SocketAddr::from(([10, 0, 0, 1], 8300 + i)))
            .collect();
        let count = six::Packet::Count(80).to_bytes().unwrap();
        let a = six::Packet::List(servers[..75].to_vec())
            .to_bytes()
            .unwrap();
        let b = six::Packet::List(servers[75..].to_vec())
            .to_bytes()
            .unwrap();
        assert!(matches!(m.on_datagram(&a), Verdict::Progress { .. }));
        assert!(matches!(m.on_datagram(&a), Verdict::Progress { .. }));
        assert!(matches!(m.on_datagram(&count), Verdict::Progress { .. }));
        let Verdict::Done {
            output: Ok(list), ..
        } = m.on_datagram(&b)
        else {
            panic!()
        };
        assert_eq!(list.len(), 80);
    }
}
