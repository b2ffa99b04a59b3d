//! The sans-IO exchanges: `getInfo` to a server, `getServers` to a master. They compile
//! without the `client` feature; the engine (or any caller) drives them.

use std::collections::HashSet;
use std::net::SocketAddrV4;
use std::time::Duration;

use fragstat_core::{BoxError, Exchange, Verdict};

use crate::game::Game;
use crate::master::{GetServers, ENTRY};
use crate::packet::{decode, GetInfo, InfoResponse, Packet};

/// One `getInfo` query. The challenge is a random 24-bit nonce with the attempt number in its
/// low byte: a reply must echo this query's nonce, and says which attempt it answers.
#[derive(Debug)]
pub struct ServerExchange {
    game: Game,
    nonce: i32,
}

impl ServerExchange {
    /// A query of a `game` server with a random challenge.
    pub fn new(game: Game) -> Self {
        Self::with_nonce(game, fastrand::u32(..))
    }

    /// A query with a given nonce (its low byte is replaced by the attempt).
    pub fn with_nonce(game: Game, nonce: u32) -> Self {
        ServerExchange {
            game,
            nonce: (nonce & !0xff) as i32,
        }
    }

    /// The challenge sent on `attempt`.
    pub fn challenge(&self, attempt: u32) -> i32 {
        self.nonce | (attempt.min(0xff) as i32)
    }
}

impl Exchange for ServerExchange {
    type Output = InfoResponse;

    fn requests(&mut self, attempt: u32) -> Vec<Vec<u8>> {
        Packet::GetInfo(GetInfo {
            challenge: Some(self.challenge(attempt)),
            trailing: Vec::new(),
        })
        .to_bytes()
        .into_iter()
        .collect()
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<InfoResponse> {
        match decode(self.game, datagram) {
            Ok(Packet::InfoResponse(r)) => {
                if r.challenge & !0xff != self.nonce {
                    return Verdict::Ignore("wrong challenge");
                }
                let attempt = u32::try_from(r.challenge & 0xff).ok();
                Verdict::Done {
                    output: Ok(r),
                    attempt,
                }
            }
            Ok(_) => Verdict::Ignore("not an infoResponse"),
            Err(e) => Verdict::Invalid(Box::new(e)),
        }
    }
}

/// One `getServers` query: a list spanning any number of `servers` datagrams with no count
/// and no end marker. A datagram with room for more entries is probably the last: the
/// exchange then lingers [`DEFAULT_SETTLE`] for datagrams it overtook; after a full one it
/// waits the attempt timeout. Duplicates are listed once.
#[derive(Debug)]
pub struct MasterExchange {
    game: Game,
    request: Vec<u8>,
    servers: Vec<SocketAddrV4>,
    seen: HashSet<SocketAddrV4>,
    datagrams: u32,
    settle: Duration,
}

/// How long to wait after a datagram that is not full (see [`MasterExchange`]).
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(150);

/// A `servers` datagram this long or longer is taken as full: more may follow.
const FULL: usize = 1400 - ENTRY;

impl MasterExchange {
    /// A query sending `request` to a `game` master.
    pub fn new(game: Game, request: &GetServers) -> Result<Self, crate::EncodeError> {
        Ok(MasterExchange {
            game,
            request: Packet::GetServers(request.clone()).to_bytes()?,
            servers: Vec::new(),
            seen: HashSet::new(),
            datagrams: 0,
            settle: DEFAULT_SETTLE,
        })
    }

    /// Sets the wait after a datagram that is not full.
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }
}

impl Exchange for MasterExchange {
    type Output = Vec<SocketAddrV4>;

    fn requests(&mut self, _attempt: u32) -> Vec<Vec<u8>> {
        vec![self.request.clone()]
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Vec<SocketAddrV4>> {
        let list = match decode(self.game, datagram) {
            Ok(Packet::Servers(l)) => l,
            Ok(_) => return Verdict::Ignore("not a server list"),
            Err(e) => return Verdict::Invalid(Box::new(e)),
        };
        self.datagrams += 1;
        for s in list.servers {
            if self.seen.insert(s) {
                self.servers.push(s);
            }
        }
        let wait = (datagram.len() < FULL).then_some(self.settle);
        Verdict::Progress {
            attempt: None,
            wait,
        }
    }

    fn on_timeout(&mut self, _exhausted: bool) -> Option<Result<Vec<SocketAddrV4>, BoxError>> {
        (self.datagrams > 0).then(|| Ok(std::mem::take(&mut self.servers)))
    }
}
