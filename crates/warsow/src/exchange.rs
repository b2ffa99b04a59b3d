//! Sans-IO exchanges: a server's full info and players (getinfo / getstatus, challenge
//! checked, through [`fragstat_quake3_oob::ServerExchange`]), the short `info` query, and a
//! master's list (`getservers <name> <protocol>`).

use crate::Encode;
use crate::EncodeError;
use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::{Exchange, ExchangeExt, Verdict};
use fragstat_quake3_oob::{
    MasterExchange, Quake3Game as Q3Game, Request as Q3Request, ServerExchange,
};

use crate::game::WarsowGame;
use crate::packet::{decode, Packet};
use crate::short::{InfoRequest, ShortInfo};
use crate::view::adapt;

/// A query of one server: `getinfo <challenge>` for the info alone, `getstatus <challenge>`
/// when players or rules are asked for (a qfusion or DarkPlaces status carries every key the
/// info has, so one request suffices; DarkPlaces also drops a second query from the same
/// address within its flood-blocking time).
pub fn server_query(
    game: WarsowGame,
    players_or_rules: bool,
) -> Box<dyn Exchange<Output = ServerInfo>> {
    let ask = if players_or_rules {
        Q3Request::Status
    } else {
        Q3Request::Info
    };
    let q3 = Q3Game::Other(game.protocol());
    ServerExchange::new(ask)
        .map_output(move |reply| adapt(game, reply.into_server_info(q3)))
        .boxed()
}

/// A query of a master: `getservers <name> <protocol> full empty`, or `getserversExt … ipv4
/// ipv6` with `ext`.
pub fn master_query(
    game: WarsowGame,
    ext: bool,
    gamename: Option<&str>,
) -> Result<Box<dyn Exchange<Output = Vec<MasterEntry>>>, EncodeError> {
    let ex = MasterExchange::new(&game.getservers(ext, gamename))?
        .map_output(|list| list.into_iter().map(MasterEntry::new).collect());
    Ok(Box::new(ex))
}

/// The short `info <protocol> full empty` query of qfusion servers. The reply carries no
/// challenge, so the first short reply from the server's address answers it.
#[derive(Debug)]
pub struct ShortInfoExchange {
    request: InfoRequest,
}

impl ShortInfoExchange {
    /// A query for `protocol`, asking for an answer whether the server is full or empty.
    pub fn new(protocol: i32) -> Self {
        ShortInfoExchange {
            request: InfoRequest::any(protocol),
        }
    }
}

impl Exchange for ShortInfoExchange {
    type Output = ShortInfo;

    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        Ok(vec![Packet::Info(self.request.clone()).to_bytes()?])
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<ShortInfo> {
        match decode(datagram) {
            Ok(Packet::InfoReply(info)) => Verdict::Done {
                output: Ok(info),
                attempt: None,
            },
            Ok(_) => Verdict::Ignore("not a short info reply"),
            Err(e) => Verdict::Invalid(Box::new(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_exchange_takes_the_reply() {
        let mut ex = ShortInfoExchange::new(22);
        assert_eq!(
            ex.requests(0).unwrap(),
            vec![b"\xff\xff\xff\xffinfo 22 full empty\n".to_vec()]
        );
        assert!(matches!(
            ex.on_datagram(b"\xff\xff\xff\xffstatusResponse\n\\a\\b"),
            Verdict::Ignore(_)
        ));
        assert!(matches!(
            ex.on_datagram(b"\xff\xff\xff\xffinfo\nx"),
            Verdict::Invalid(_)
        ));
        let Verdict::Done { output: Ok(i), .. } =
            ex.on_datagram(b"\xff\xff\xff\xffinfo\n\\\\n\\\\x\\\\EOT")
        else {
            panic!()
        };
        assert_eq!(i.name(), Some(&b"x"[..]));
    }
}
