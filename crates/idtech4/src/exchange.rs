//! The sans-IO exchanges: `getInfo` to a server, `getServers` to a master. They compile
//! without the `client` feature; the engine (or any caller) drives them.

use crate::Encode;
use crate::EncodeError;
use std::net::SocketAddrV4;
use std::time::Duration;

use fragstat_core::collect::ListCollector;
use fragstat_core::{DecodeError, Exchange, Verdict};

use crate::game::Idtech4Game;
use crate::master::{GetServers, ENTRY};
use crate::packet::{decode_as, GetInfo, InfoResponse, Packet};

/// One `getInfo` query. The challenge is a random 24-bit nonce with the attempt number in its
/// low byte: a reply must echo this query's nonce, and says which attempt it answers.
#[derive(Debug)]
pub struct ServerExchange {
    game: Idtech4Game,
    nonce: i32,
}

impl ServerExchange {
    /// A query of a `game` server with a random challenge.
    pub fn new(game: Idtech4Game) -> Self {
        Self::with_nonce(game, fragstat_core::nonce::u32())
    }

    /// A query with a given nonce (its low byte is replaced by the attempt).
    pub fn with_nonce(game: Idtech4Game, nonce: u32) -> Self {
        ServerExchange {
            game,
            nonce: i32::from_le_bytes((nonce & !0xff).to_le_bytes()),
        }
    }

    /// The challenge sent on `attempt`.
    pub fn challenge(&self, attempt: u32) -> i32 {
        self.nonce | i32::try_from(attempt.min(0xff)).unwrap_or(0xff)
    }
}

impl Exchange for ServerExchange {
    type Output = InfoResponse;

    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        let request = Packet::GetInfo(GetInfo {
            challenge: Some(self.challenge(attempt)),
            trailing: Vec::new(),
        });
        Ok(vec![request.to_bytes()?])
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<InfoResponse> {
        match decode_as(self.game, datagram) {
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
            Err(e) => Verdict::Invalid(e),
        }
    }
}

/// One `getServers` query: a list spanning any number of `servers` datagrams with no count
/// and no end marker. A datagram with room for more entries is probably the last: the
/// exchange then lingers [`DEFAULT_SETTLE`] for datagrams it overtook, and only that long
/// after any later one; until such a datagram, each full one restarts the attempt timeout
/// (or waits the quiet period, [`MasterExchange::with_quiet`]: a list whose last datagram
/// happens to be full). Duplicates are listed once; entries with port 0 or address 0.0.0.0
/// are left out.
#[derive(Debug)]
pub struct MasterExchange {
    game: Idtech4Game,
    request: Vec<u8>,
    list: ListCollector<SocketAddrV4>,
    quiet: Option<Duration>,
}

/// How long to wait after a datagram that is not full (see [`MasterExchange`]).
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(150);

/// A `servers` datagram this long or longer is taken as full: more may follow.
const FULL: usize = 1400 - ENTRY;

impl MasterExchange {
    /// A query sending `request` to a `game` master.
    pub fn new(game: Idtech4Game, request: &GetServers) -> Result<Self, crate::EncodeError> {
        Ok(MasterExchange {
            game,
            request: Packet::GetServers(request.clone()).to_bytes()?,
            list: ListCollector::new(DEFAULT_SETTLE),
            quiet: None,
        })
    }

    /// Once a datagram has come, waits at most `quiet` for the next one while no datagram
    /// has ended the list (`None`: the attempt timeout).
    pub fn with_quiet(mut self, quiet: Option<Duration>) -> Self {
        self.quiet = quiet;
        self
    }

    /// Sets the wait after a datagram that is not full.
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.list = self.list.with_settle(settle);
        self
    }
}

impl Exchange for MasterExchange {
    type Output = Vec<SocketAddrV4>;

    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        Ok(vec![self.request.clone()])
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Vec<SocketAddrV4>> {
        let list = match decode_as(self.game, datagram) {
            Ok(Packet::Servers(l)) => l,
            Ok(_) => return Verdict::Ignore("not a server list"),
            Err(e) => return Verdict::Invalid(e),
        };
        // An entry with port 0 or address 0.0.0.0 cannot be queried (decode keeps it).
        self.list.add(
            list.servers
                .into_iter()
                .filter(|s| s.port() != 0 && !s.ip().is_unspecified()),
        );
        match self.list.progress(datagram.len() < FULL) {
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

    fn on_timeout(&mut self, _exhausted: bool) -> Option<Result<Vec<SocketAddrV4>, DecodeError>> {
        self.list.on_timeout()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::{EmulatedServer, ServerConfig};

    #[test]
    fn server_exchange_matches_its_nonce_and_names_the_attempt() {
        let emu = EmulatedServer::new(ServerConfig::sample(Idtech4Game::Quake4, b"x", b"", 2, 8))
            .unwrap();
        let mut ex = ServerExchange::with_nonce(Idtech4Game::Quake4, 0xabcd_ef00);
        let first = ex.requests(0).unwrap().remove(0);
        let second = ex.requests(1).unwrap().remove(0);
        // Another query's reply is ignored; a reply to the first attempt, arriving after the
        // retry, still completes the query and names attempt 0.
        assert!(matches!(
            ex.on_datagram(&emu.reply(0x1234_5600)),
            Verdict::Ignore("wrong challenge")
        ));
        assert!(matches!(
            ex.on_datagram(b"\xff\xffservers\0"),
            Verdict::Ignore(_)
        ));
        assert!(matches!(
            ex.on_datagram(b"\xff\xffinfoResponse\0\0"),
            Verdict::Invalid(_)
        ));
        let reply = emu.respond(&first).unwrap();
        let Verdict::Done { output, attempt } = ex.on_datagram(&reply) else {
            panic!()
        };
        assert_eq!(attempt, Some(0));
        let r = output.unwrap();
        assert_eq!(r.challenge, ex.challenge(0));
        assert_ne!(emu.respond(&second).unwrap(), reply);
    }

    #[test]
    fn master_exchange_assembles_datagrams_and_drops_duplicates() {
        let servers: Vec<SocketAddrV4> = (1..=300u16)
            .map(|p| SocketAddrV4::new([10, 0, 0, 1].into(), p))
            .collect();
        let grams = crate::master::encode_server_list(&servers);
        assert_eq!(grams.len(), 2);
        let mut ex =
            MasterExchange::new(Idtech4Game::Doom3, &GetServers::new(Idtech4Game::Doom3, 0))
                .unwrap();
        assert_eq!(ex.on_timeout(false).map(|r| r.is_ok()), None, "nothing yet");
        // A full datagram: more may follow.
        let mut first =
            MasterExchange::new(Idtech4Game::Doom3, &GetServers::new(Idtech4Game::Doom3, 0))
                .unwrap();
        let Verdict::Progress { wait, .. } = first.on_datagram(&grams[0]) else {
            panic!()
        };
        assert_eq!(wait, None, "a full datagram: more may follow");
        // The last (short) datagram overtakes the first: a short wait, and only a short one
        // for the datagram it overtook.
        let Verdict::Progress { wait, .. } = ex.on_datagram(&grams[1]) else {
            panic!()
        };
        assert_eq!(wait, Some(DEFAULT_SETTLE));
        let Verdict::Progress { wait, .. } = ex.on_datagram(&grams[0]) else {
            panic!()
        };
        assert_eq!(
            wait,
            Some(DEFAULT_SETTLE),
            "the list has ended: it was overtaken"
        );
        let _ = ex.on_datagram(&grams[1]);
        let junk = b"\xff\xffservers\0\x0a\0\0\x01\0\0\0\0\0\0\x87\x6c";
        let _ = ex.on_datagram(junk);
        let list = ex.on_timeout(false).unwrap().unwrap();
        assert_eq!(list.len(), 300);
        let mut sorted = list.clone();
        sorted.sort_by_key(|a| a.port());
        assert_eq!(sorted, servers);
    }

    /// A list whose last datagram is full ends on the quiet period, when one is set; a short
    /// datagram still ends it after the settle.
    #[test]
    fn a_full_last_datagram_waits_the_quiet_period() {
        let servers: Vec<SocketAddrV4> = (1..=crate::master::MAX_ENTRIES as u16)
            .map(|p| SocketAddrV4::new([10, 0, 0, 2].into(), p))
            .collect();
        let grams = crate::master::encode_server_list(&servers);
        assert_eq!(grams.len(), 1);
        assert!(grams[0].len() >= FULL);
        let quiet = Duration::from_millis(400);
        let mut ex = MasterExchange::new(
            Idtech4Game::Quake4,
            &GetServers::new(Idtech4Game::Quake4, 0),
        )
        .unwrap()
        .with_quiet(Some(quiet));
        let Verdict::Progress { wait, .. } = ex.on_datagram(&grams[0]) else {
            panic!()
        };
        assert_eq!(wait, Some(quiet));
        let short = crate::master::encode_server_list(&servers[..3]);
        let Verdict::Progress { wait, .. } = ex.on_datagram(&short[0]) else {
            panic!()
        };
        assert_eq!(wait, Some(DEFAULT_SETTLE));
        assert_eq!(ex.on_timeout(false).unwrap().unwrap(), servers);
    }
}
