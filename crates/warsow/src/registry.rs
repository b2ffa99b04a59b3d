//! The family in the game registry: `warsow`, `warfork`, `nexuiz` and `xonotic`.

use std::sync::Arc;

use fragstat_core::model::ServerInfo;
use fragstat_core::registry::MasterQueryError;
use fragstat_core::registry::{
    Ask, Decoded, Family, FamilyGame, GameMeta, ListForm, MasterOptions, MasterQuery,
};
use fragstat_core::{DecodeError, Exchange};
use fragstat_quake3_oob::Quake3Game as Q3Game;
use serde::Serialize;

use crate::exchange::{has_info_tail, master_query, server_query, short_query, split_info_tail};
use crate::game::WarsowGame;
use crate::packet::{decode, Packet};
use crate::view::{adapt, short_info};

/// The family as the facade registers it.
pub const FAMILY: Family = Family::of::<WarsowGame>();

#[derive(Debug, PartialEq, Serialize)]
struct InfoRequestFields {
    protocol: i32,
    full: bool,
    empty: bool,
}

impl FamilyGame for WarsowGame {
    const FAMILY: &'static str = "warsow";
    const FAMILY_TITLE: &'static str =
        "qfusion and DarkPlaces on Quake III out-of-band (Warsow, Warfork, Nexuiz, Xonotic)";
    const ALL: &'static [Self] = &WarsowGame::ALL;

    fn meta(self) -> GameMeta {
        GameMeta::new(Self::FAMILY, self.id(), self.title(), self.default_port())
            .aliases(self.aliases())
            .master_port(self.master_port())
            // qfusion's `info <protocol>`; DarkPlaces has no such query.
            .short_query(self.is_qfusion())
            // Warsow/qfusion `source/qcommon/version.warsow.h`: `APP_URI_SCHEME APPLICATION
            // "://"`, `APPLICATION "Warsow"` (schemes are case-insensitive).
            .join_scheme((self == WarsowGame::Warsow).then_some("warsow://"))
            .engine(if self.is_qfusion() {
                fragstat_core::manners::ServerEngine::Qfusion
            } else {
                fragstat_core::manners::ServerEngine::DarkPlaces
            })
    }

    /// `getinfo`/`getstatus` ([`server_query`]), or with [`Ask::short`] the short `info`
    /// query ([`short_query`], naming [`Ask::protocol`] or the game's own).
    fn server_query(self, ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        if ask.short {
            return short_query(self, ask.protocol);
        }
        server_query(self, ask.players || ask.rules)
    }

    /// `getservers <name> …` (or Ext); of the catalogue's forms only the game's own, a name
    /// and the extended one (dpmaster's named games have no anonymous form).
    fn master_query(self, options: &MasterOptions) -> Result<MasterQuery, MasterQueryError> {
        if matches!(
            options.form,
            Some(ListForm::Anonymous | ListForm::Short | ListForm::Http)
        ) {
            return Err(MasterQueryError::option(
                self.id(),
                "its masters know it by name: there is no anonymous request",
            ));
        }
        Ok(MasterQuery::Udp(master_query(self, options)?))
    }

    fn decode(self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        match decode(datagram)? {
            Packet::InfoReply(i) => Ok(Decoded::Server(Box::new(short_info(&i)))),
            Packet::Info(r) => Ok(Decoded::Packet {
                kind: "info".into(),
                fields: Arc::new(InfoRequestFields {
                    protocol: r.protocol,
                    full: r.full,
                    empty: r.empty,
                }),
            }),
            // Everything else is a Quake III packet: decoded the same way, then read with
            // this engine's meanings.
            Packet::Oob(_) => {
                let q3 = Q3Game::Other(self.protocol());
                // DarkPlaces' status turned into an infoResponse: the infostring is read
                // up to its newline, the repeated bytes after it are reported.
                if self.is_darkplaces() && has_info_tail(datagram) {
                    if let Some((info, tail)) = split_info_tail(datagram) {
                        if let Decoded::Server(mut s) = q3.decode(info)? {
                            s.warnings.push(format!(
                                "{} bytes after the infostring at offset {}: {:?} (a DarkPlaces status that did not fit, sent as its infoResponse)",
                                tail.len(),
                                info.len(),
                                String::from_utf8_lossy(tail)
                            ));
                            // The player lines were dropped for want of room.
                            s.truncated = true;
                            return Ok(Decoded::Server(Box::new(adapt(self, *s))));
                        }
                    }
                }
                Ok(match q3.decode(datagram)? {
                    Decoded::Server(info) => Decoded::Server(Box::new(adapt(self, *info))),
                    other => other,
                })
            }
        }
    }

    #[cfg(feature = "emulate")]
    fn emulator(&self) -> Option<&dyn fragstat_core::registry::Emulate> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstat_core::registry::{Entry, Game};

    #[test]
    fn join_scheme_of_warsow_only() {
        for g in WarsowGame::ALL {
            let want = (g == WarsowGame::Warsow).then_some("warsow://127.0.0.1:44400");
            assert_eq!(
                g.meta().join_url("127.0.0.1:44400").as_deref(),
                want,
                "{g:?}"
            );
        }
    }

    #[test]
    fn only_qfusion_has_the_short_query() {
        for g in WarsowGame::ALL {
            let e = Entry::new(g);
            assert_eq!(e.has_short_query(), g.is_qfusion(), "{g}");
        }
        let x = Entry::new(WarsowGame::Xonotic);
        assert_eq!(
            x.check_ask(Ask::short()).unwrap_err().to_string(),
            "xonotic (Xonotic) has no short query"
        );
        let mut w =
            Entry::new(WarsowGame::Warsow).server_query(Ask::short().with_protocol(Some(9)));
        assert_eq!(
            w.requests(0).unwrap(),
            vec![b"\xff\xff\xff\xffinfo 9 full empty\n".to_vec()]
        );
    }

    #[test]
    fn the_overflow_inforesponse_decodes_without_its_tail() {
        let d = b"\xff\xff\xff\xffinfoResponse\n\\gamename\\Nexuiz\\clients\\30\\bots\\0\\qcstatus\\dm:2.5.2::score!!\\challenge\\abc\nc\n";
        let Decoded::Server(s) = WarsowGame::Nexuiz.decode(d).unwrap() else {
            panic!("a server")
        };
        assert_eq!(s.num_players, 30);
        assert_eq!(s.gametype.as_deref(), Some("dm"));
        assert!(s.truncated && s.players.is_none());
        assert_eq!(s.warnings.len(), 1);
        assert!(
            s.warnings[0].starts_with("3 bytes after the infostring at offset 92: \"\\nc\\n\""),
            "{}",
            s.warnings[0]
        );
    }
}
