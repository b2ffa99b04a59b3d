//! Sans-IO exchanges: a server's full info and players (getinfo / getstatus, challenge
//! checked, through [`fragstat_quake3_oob::ServerExchange`]), DarkPlaces' status that may
//! come back as its infoResponse, the short `info` query, and a master's list (`getservers
//! <name> <protocol>`).

use crate::Encode;
use crate::EncodeError;
use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::registry::{ListForm, MasterOptions};
use fragstat_core::{DecodeError, Exchange, ExchangeExt, Verdict};
use fragstat_quake3_oob::{
    MasterExchange, Packet as Oob, Quake3Game as Q3Game, Request as Q3Request, ServerExchange,
    ServerReply, OOB_HEADER,
};

use crate::game::WarsowGame;
use crate::packet::{decode, Packet};
use crate::short::{InfoRequest, ShortInfo};
use crate::view::{adapt, short_info};

/// A query of one server: `getinfo <challenge>` for the info alone, `getstatus <challenge>`
/// when players or rules are asked for (a qfusion or DarkPlaces status carries every key the
/// info has, so one request suffices; DarkPlaces also drops a second query from the same
/// address within its flood-blocking time). A DarkPlaces game's status is asked through
/// [`DarkPlacesStatus`], which also takes the infoResponse the engine sends instead when
/// the player lines do not fit.
pub fn server_query(
    game: WarsowGame,
    players_or_rules: bool,
) -> Box<dyn Exchange<Output = ServerInfo>> {
    let q3 = Q3Game::Other(game.protocol());
    if !players_or_rules {
        return ServerExchange::new(Q3Request::Info)
            .map_output(move |reply| adapt(game, reply.into_server_info(q3)))
            .boxed();
    }
    if game.is_darkplaces() {
        return DarkPlacesStatus::new(ServerExchange::new(Q3Request::Status))
            .map_output(move |status| status.into_server_info(game))
            .boxed();
    }
    ServerExchange::new(Q3Request::Status)
        .map_output(move |reply| adapt(game, reply.into_server_info(q3)))
        .boxed()
}

/// The short query as a server record: `info <protocol> full empty` (the game's protocol
/// unless `protocol` names another), its reply read by [`short_info`].
pub fn short_query(
    game: WarsowGame,
    protocol: Option<i32>,
) -> Box<dyn Exchange<Output = ServerInfo>> {
    ShortInfoExchange::new(protocol.unwrap_or(game.protocol()))
        .map_output(|info| short_info(&info))
        .boxed()
}

/// A query of a master: `getservers <name> <protocol> …`, or `getserversExt … ipv4 ipv6`
/// with [`MasterOptions::ext`]; [`MasterOptions::gamename`] and [`MasterOptions::protocol`]
/// replace the game's own ([`WarsowGame::getservers`]), as a catalogue form's name
/// ([`ListForm::Named`], [`ListForm::Ext`]) does; a list without an end marker ends after
/// [`MasterOptions::quiet`].
pub fn master_query(
    game: WarsowGame,
    options: &MasterOptions,
) -> Result<Box<dyn Exchange<Output = Vec<MasterEntry>>>, EncodeError> {
    let (ext, name) = match options.form {
        Some(ListForm::Named(n)) => (options.ext, Some(n)),
        Some(ListForm::Ext(n)) => (true, Some(n)),
        _ => (options.ext, None),
    };
    let name = options.gamename.as_deref().or(name);
    let request = game.getservers(ext, name, options.protocol);
    let ex = MasterExchange::new(&request)?
        .with_quiet(options.quiet)
        .map_output(|list| list.into_iter().map(MasterEntry::new).collect());
    Ok(Box::new(ex))
}

/// What a DarkPlaces server answered to `getstatus`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DarkPlacesReply {
    /// The statusResponse, players and all.
    Status(ServerReply),
    /// The infoResponse the engine sends instead when the player lines do not fit its reply
    /// buffer (1400 bytes in the engine of Nexuiz 2.5.2, 2800 in today's): the reply's
    /// `status` holds its infostring and no players.
    Overflowed(ServerReply),
}

impl DarkPlacesReply {
    /// The record of the reply ([`adapt`]ed to `game`): after an overflow without players
    /// (`players: null`), marked `truncated`, with a warning saying why.
    pub fn into_server_info(self, game: WarsowGame) -> ServerInfo {
        let q3 = Q3Game::Other(game.protocol());
        match self {
            DarkPlacesReply::Status(reply) => adapt(game, reply.into_server_info(q3)),
            DarkPlacesReply::Overflowed(mut reply) => {
                let status = reply.status.take();
                reply.info = status.map(|s| fragstat_quake3_oob::InfoResponse::new(s.info));
                let mut info = adapt(game, reply.into_server_info(q3));
                info.truncated = true;
                info.warnings.push(OVERFLOW_WARNING.into());
                info
            }
        }
    }
}

/// The warning of a status that came back as an infoResponse.
pub const OVERFLOW_WARNING: &str = "the server answered getstatus with its infoResponse: the player lines did not fit its reply buffer (DarkPlaces netconn.c), so no player list";

/// The infostring of a DarkPlaces infoResponse without what follows its first newline, and
/// that rest: when a status does not fit, the engine turns it into an infoResponse by
/// moving the text two bytes to the left (`memmove(out_msg + 17, out_msg + 19, savelength -
/// 19)`) without shortening it, so the infostring's newline is followed by its last two
/// bytes again (`…\challenge\abc\nc\n`). `None` when `datagram` is not an infoResponse.
pub fn split_info_tail(datagram: &[u8]) -> Option<(&[u8], &[u8])> {
    let head_len = OOB_HEADER.len() + b"infoResponse\n".len();
    let body = datagram
        .strip_prefix(&OOB_HEADER)?
        .strip_prefix(b"infoResponse\n")?;
    match body.iter().position(|&b| b == b'\n') {
        Some(nl) => Some((
            datagram.get(..head_len + nl)?,
            datagram.get(head_len + nl..)?,
        )),
        None => Some((datagram, &[])),
    }
}

/// `getstatus <challenge>` to a DarkPlaces server (Nexuiz, Xonotic), taking its
/// statusResponse or, when the player lines did not fit, the infoResponse the engine sends
/// instead (netconn.c `NetConn_BuildStatusResponse`: "better a getinfo response than no
/// response at all if getstatus won't fit"). The infoResponse is checked by the same
/// challenge as a status: it is handed to the inner exchange as the statusResponse without
/// players it stands for.
#[derive(Debug)]
pub struct DarkPlacesStatus {
    inner: ServerExchange,
}

impl DarkPlacesStatus {
    /// Wraps a `getstatus` exchange ([`Q3Request::Status`]).
    pub fn new(inner: ServerExchange) -> Self {
        DarkPlacesStatus { inner }
    }
}

impl Exchange for DarkPlacesStatus {
    type Output = DarkPlacesReply;

    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        self.inner.requests(attempt)
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<DarkPlacesReply> {
        let Some((info, _tail)) = split_info_tail(datagram) else {
            return self
                .inner
                .on_datagram(datagram)
                .map(DarkPlacesReply::Status);
        };
        let body = info.get(OOB_HEADER.len() + b"infoResponse\n".len()..);
        let mut status = Vec::with_capacity(datagram.len() + 2);
        status.extend_from_slice(&OOB_HEADER);
        status.extend_from_slice(b"statusResponse\n");
        status.extend_from_slice(body.unwrap_or_default());
        status.push(b'\n');
        match self.inner.on_datagram(&status) {
            // The rewritten datagram is the server's: an error names offsets two bytes on.
            Verdict::Invalid(_) => match decode(datagram) {
                Err(e) => Verdict::Invalid(e),
                Ok(_) => Verdict::Ignore("an infoResponse this query cannot read"),
            },
            v => v.map(DarkPlacesReply::Overflowed),
        }
    }

    fn on_timeout(&mut self, exhausted: bool) -> Option<Result<DarkPlacesReply, DecodeError>> {
        self.inner
            .on_timeout(exhausted)
            .map(|r| r.map(DarkPlacesReply::Status))
    }
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
            Err(e) => Verdict::Invalid(e),
        }
    }
}

/// Whether `datagram` is a DarkPlaces infoResponse with bytes after its infostring (the
/// overflow form of [`split_info_tail`]).
pub(crate) fn has_info_tail(datagram: &[u8]) -> bool {
    split_info_tail(datagram).is_some_and(|(_, tail)| !tail.is_empty())
        && matches!(decode(datagram), Ok(Packet::Oob(Oob::InfoResponse(_))))
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

    #[test]
    fn short_query_names_the_protocol_asked() {
        let mut ex = short_query(WarsowGame::Warsow, Some(9));
        assert_eq!(
            ex.requests(0).unwrap(),
            vec![b"\xff\xff\xff\xffinfo 9 full empty\n".to_vec()]
        );
        // Warsow 0.3's paddings (zero-padded counts, `%5s` game type) read as qfusion's.
        let Verdict::Done { output: Ok(s), .. } = ex.on_datagram(
            b"\xff\xff\xff\xffinfo\n\\\\n\\\\Old\\\\m\\\\wdm2\\\\u\\\\03/16\\\\g\\\\   ca\\\\b\\\\ 1\\\\EOT",
        ) else {
            panic!()
        };
        assert_eq!((s.num_players, s.max_players), (3, 16));
        assert_eq!(
            (s.gametype.as_deref(), s.num_bots, s.unverified),
            (Some("ca"), Some(1), true)
        );
        // Warfork 2.16's own protocol, 27.
        let mut own = short_query(WarsowGame::Warfork, None);
        assert_eq!(
            own.requests(0).unwrap(),
            vec![b"\xff\xff\xff\xffinfo 27 full empty\n".to_vec()]
        );
    }

    #[test]
    fn master_query_takes_the_options() {
        let mut ex = master_query(
            WarsowGame::Warsow,
            &MasterOptions::default().with_protocol(Some(9)),
        )
        .unwrap();
        assert_eq!(
            ex.requests(0).unwrap(),
            vec![b"\xff\xff\xff\xffgetservers Warsow 9 full empty\n".to_vec()]
        );
        let mut ex = master_query(
            WarsowGame::Xonotic,
            &MasterOptions::default().with_ext(true),
        )
        .unwrap();
        assert_eq!(
            ex.requests(0).unwrap(),
            vec![b"\xff\xff\xff\xffgetserversExt Xonotic 3 empty full ipv4 ipv6\n".to_vec()]
        );
    }

    /// The challenge of a request as [`ServerExchange`] wrote it.
    fn challenge_of(request: &[u8]) -> &[u8] {
        request.strip_prefix(b"\xff\xff\xff\xffgetstatus ").unwrap()
    }

    #[test]
    fn darkplaces_status_takes_the_overflow_inforesponse() {
        let mut ex = DarkPlacesStatus::new(ServerExchange::with_nonce(Q3Request::Status, 0xab));
        let req = ex.requests(0).unwrap();
        assert_eq!(req.len(), 1);
        let ch = challenge_of(&req[0]).to_vec();
        // As netconn.c leaves it: the infostring, its newline, then its last two bytes again.
        let mut reply = b"\xff\xff\xff\xffinfoResponse\n\\gamename\\Nexuiz\\sv_maxclients\\32\\clients\\30\\bots\\0\\mapname\\downer\\hostname\\Big\\protocol\\3\\qcstatus\\dm:2.5.2::score!!\\challenge\\".to_vec();
        reply.extend_from_slice(&ch);
        reply.push(b'\n');
        reply.push(*ch.last().unwrap());
        reply.push(b'\n');
        assert!(has_info_tail(&reply));
        // Someone else's challenge is not taken.
        let mut other = reply.clone();
        let at = other.windows(6).position(|w| w == b"fsab-0").unwrap();
        other[at + 3] = b'c';
        assert!(matches!(ex.on_datagram(&other), Verdict::Ignore(_)));
        let Verdict::Done {
            output: Ok(out),
            attempt: Some(0),
        } = ex.on_datagram(&reply)
        else {
            panic!("taken")
        };
        let info = out.into_server_info(WarsowGame::Nexuiz);
        assert_eq!((info.num_players, info.max_players), (30, 32));
        assert_eq!(info.players, None);
        assert!(info.truncated);
        assert_eq!(info.warnings, [OVERFLOW_WARNING]);
        assert_eq!(info.gametype.as_deref(), Some("dm"));
        assert_eq!(info.rules.get("challenge"), None, "our nonce is not a rule");
    }

    #[test]
    fn darkplaces_status_takes_a_status() {
        let mut ex = DarkPlacesStatus::new(ServerExchange::with_nonce(Q3Request::Status, 7));
        let req = ex.requests(0).unwrap();
        let mut reply =
            b"\xff\xff\xff\xffstatusResponse\n\\gamename\\Xonotic\\clients\\1\\bots\\1\\qcstatus\\dm:0.8.6::score!!\\challenge\\"
                .to_vec();
        reply.extend_from_slice(challenge_of(&req[0]));
        reply.extend_from_slice(b"\n3 0 \"[BOT]Toxic\"\n");
        let Verdict::Done {
            output: Ok(out), ..
        } = ex.on_datagram(&reply)
        else {
            panic!("taken")
        };
        let info = out.into_server_info(WarsowGame::Xonotic);
        let p = info.players.as_ref().unwrap();
        assert_eq!((p.len(), p[0].is_bot), (1, Some(true)));
        assert!(!info.truncated && info.warnings.is_empty());
        assert!(matches!(
            ex.on_datagram(b"\xff\xff\xff\xffinfoResponse\n\\a"),
            Verdict::Invalid(_) | Verdict::Ignore(_)
        ));
    }

    #[test]
    fn split_info_tail_forms() {
        assert_eq!(
            split_info_tail(b"\xff\xff\xff\xffstatusResponse\n\\a\\b"),
            None
        );
        let whole = b"\xff\xff\xff\xffinfoResponse\n\\a\\b";
        assert_eq!(split_info_tail(whole), Some((&whole[..], &b""[..])));
        let (info, tail) = split_info_tail(b"\xff\xff\xff\xffinfoResponse\n\\a\\bc\nc\n").unwrap();
        assert_eq!(
            (info, tail),
            (&b"\xff\xff\xff\xffinfoResponse\n\\a\\bc"[..], &b"\nc\n"[..])
        );
    }
}
