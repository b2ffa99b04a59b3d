//! DDNet's HTTP master list: `servers.json` (`https://master1.ddnet.org/ddnet/15/servers.json`).
//!
//! ```json
//! {"servers": [{"addresses": ["tw-0.6+udp://1.2.3.4:8303", "tw-0.7+udp://1.2.3.4:8303"],
//!               "community": "kog", "location": "eu:de",
//!               "info": {"max_clients": 64, "max_players": 64, "passworded": false,
//!                        "country": 276,
//!                        "game_type": "DDraceNetwork", "name": "…", "map": {"name": "…"},
//!                        "version": "0.6.4, 16.4", "clients": [{"name": "…", "clan": "",
//!                        "country": -1, "score": -9999, "is_player": true}]}}]}
//! ```
//!
//! `community` (set by the master) and `info.country` (the server's `sv_flag`,
//! ISO 3166-1 numeric, sent with a community token) go into the record's
//! [`ServerExtra`] (`community`, `country`), not into its
//! `location`: that is the master's placing of the server's address, these are what the
//! server's operator declared to its community.
//!
//! Validation as the DDNet client does it (serverbrowser_http.cpp `Parse`, serverinfo.cpp
//! `CServerInfo2::FromJsonRaw`): a list without a `servers` array, or a server whose
//! `addresses` is not an array of strings or whose `location` is not a string, fails the
//! whole list; a server whose `info` does not validate (a missing or mistyped field, control
//! characters in a string) is skipped, and reported here. Optional fields of the wrong type
//! (`afk`, `requires_login`, `map.size`…) are ignored. Every address is kept as written
//! ([`MasterEntry::addresses`]); the one to query is the first `tw-0.6+udp://`, else
//! `ddnet+udp://`, else `tw-0.7+udp://` address (DDNet prefers 0.6 too).

use std::net::SocketAddr;

use fragstat_core::model::{Dialect, MasterEntry, ScoreKind, ServerInfo, Text, MAX_PLAYERS};
use fragstat_core::registry::HttpList;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::view::{http_player, ServerExtra};
use crate::DecodeError;

/// The public list (DDNet client `DEFAULT_SERVERLIST_URLS`).
pub const DEFAULT_URL: &str = "https://master1.ddnet.org/ddnet/15/servers.json";

/// Address schemes, in the order an address to query is chosen.
pub const SCHEMES: [&str; 3] = ["tw-0.6+udp://", "ddnet+udp://", "tw-0.7+udp://"];

/// The whole list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct List {
    /// The servers.
    pub servers: Vec<Server>,
}

/// One server of the list, with its `info` still unchecked: kept as the JSON text it was
/// (no tree of values is built for a list of thousands), parsed into [`Info`] on its own.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Server {
    /// Its addresses as URLs (`tw-0.6+udp://IP:PORT`…).
    pub addresses: Vec<String>,
    /// The community it registered with (ddnet `src/mastersrv/src/main.rs` at 28baa427,
    /// lines 191-199 `SerializedServer::community`, omitted when none: the master's name
    /// for the server's `Community-Token`, lines 806-813). The DDNet client does not read
    /// it (its communities come from `ddnet-info.json`): a value that is not a string is
    /// ignored, not an error.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub community: Option<String>,
    /// Where it is (`eu:de`, `as:cn`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// What it says of itself ([`Info`] once validated), as written.
    #[serde(default)]
    pub info: Option<Box<RawValue>>,
}

impl PartialEq for Server {
    fn eq(&self, o: &Self) -> bool {
        self.addresses == o.addresses
            && self.community == o.community
            && self.location == o.location
            && self.info.as_ref().map(|r| r.get()) == o.info.as_ref().map(|r| r.get())
    }
}

impl Server {
    /// A server with `info` serialized as its JSON.
    pub fn new(addresses: Vec<String>, location: Option<String>, info: &Info) -> Self {
        Server {
            addresses,
            community: None,
            location,
            info: serde_json::value::to_raw_value(info).ok(),
        }
    }

    /// The same server listed under `community`.
    pub fn with_community(mut self, community: impl Into<String>) -> Self {
        self.community = Some(community.into());
        self
    }
}

fn lenient<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// A server's `info`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Info {
    /// Client slots.
    pub max_clients: i64,
    /// Player slots.
    pub max_players: i64,
    /// A password is needed.
    pub passworded: bool,
    /// Game type.
    pub game_type: String,
    /// Server name.
    pub name: String,
    /// Map.
    pub map: Map,
    /// Version.
    pub version: String,
    /// Clients.
    pub clients: Vec<Client>,
    /// `points…` or `time…`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_score_kind: Option<String>,
    /// Joining needs an account.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub requires_login: Option<bool>,
    /// The country the server groups itself under in its community: ISO 3166-1 numeric
    /// (ddnet `src/engine/server/server.cpp` at 28baa427, lines 2754-2761: `sv_flag`, sent
    /// only with `sv_register_community_token` and when not −1; `src/engine/shared/
    /// protocol.h` lines 172-177: −1..=999). Of another type: ignored.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub country: Option<i64>,
}

/// A server's map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Map {
    /// Name.
    pub name: String,
    /// SHA-256 of the map file, hex.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub sha256: Option<String>,
    /// Size in bytes.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub size: Option<u64>,
}

/// A client of a listed server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Client {
    /// Name.
    pub name: String,
    /// Clan.
    pub clan: String,
    /// ISO 3166-1 numeric country (out of range: −1).
    pub country: i64,
    /// Score.
    pub score: i64,
    /// Playing (not spectating).
    pub is_player: bool,
    /// Away from keyboard.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub afk: Option<bool>,
}

fn has_cc(s: &str) -> bool {
    s.bytes().any(|b| b < 32)
}

impl Info {
    /// What DDNet's master lists for a server running `c` (as DDNet's `register.cpp` sends
    /// it: the server's own view of itself).
    #[cfg(feature = "emulate")]
    pub fn of_emulated(c: &crate::emulate::ServerConfig) -> Info {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Info {
            max_clients: i64::from(c.max_clients),
            max_players: i64::from(c.max_players),
            passworded: c.password,
            game_type: text(&c.gametype),
            name: text(&c.name),
            map: Map {
                name: text(&c.map),
                sha256: None,
                size: Some(u64::from(c.map_size)),
            },
            version: text(&c.version),
            clients: c
                .clients
                .iter()
                .map(|p| Client {
                    name: text(&p.name),
                    clan: text(&p.clan),
                    country: i64::from(p.country),
                    score: i64::from(p.score),
                    is_player: p.player,
                    afk: Some(false),
                })
                .collect(),
            client_score_kind: Some("points".into()),
            requires_login: None,
            country: None,
        }
    }

    /// The DDNet client's checks beyond the JSON types: no control characters.
    fn check(&self) -> Result<(), String> {
        for (field, s) in [
            ("game_type", &self.game_type),
            ("name", &self.name),
            ("map.name", &self.map.name),
            ("version", &self.version),
        ] {
            if has_cc(s) {
                return Err(format!("{field} holds a control character"));
            }
        }
        for (i, c) in self.clients.iter().enumerate() {
            if has_cc(&c.name) || has_cc(&c.clan) {
                return Err(format!(
                    "client {i}: a control character in its name or clan"
                ));
            }
        }
        Ok(())
    }

    /// The record of this info, listed at `location` under `community` (the server's
    /// entry's fields; both go into the record as they are: `location` the record's own,
    /// `community` and `info.country` its [`ServerExtra`]).
    pub fn server_info(&self, location: Option<&str>, community: Option<&str>) -> ServerInfo {
        let clamp = |v: i64| i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX });
        let count = |v: i64| u32::try_from(v).unwrap_or(0);
        let mut out = ServerInfo::default();
        out.name = Text::new(self.name.as_bytes().to_vec(), Dialect::Plain);
        out.map = Text::new(self.map.name.as_bytes().to_vec(), Dialect::Plain);
        out.gametype = Some(self.game_type.clone());
        out.version = Some(self.version.clone());
        out.num_players = u32::try_from(self.clients.len()).unwrap_or(u32::MAX);
        out.max_players = count(self.max_clients);
        let playing = self.clients.iter().filter(|c| c.is_player).count();
        out.num_spectators = u32::try_from(self.clients.len() - playing).ok();
        out.password = Some(self.passworded);
        // At most MAX_PLAYERS kept (a list's `clients` array is anyone's); all counted.
        let omitted = self.clients.len().saturating_sub(MAX_PLAYERS);
        if omitted > 0 {
            out.warnings.push(format!(
                "{omitted} more clients not kept (at most {MAX_PLAYERS})"
            ));
        }
        out.players = Some(
            self.clients
                .iter()
                .take(MAX_PLAYERS)
                .map(|c| {
                    // serverinfo.cpp: a country out of range becomes -1.
                    let country = if (-1..=999).contains(&c.country) {
                        clamp(c.country)
                    } else {
                        -1
                    };
                    http_player(
                        &c.name,
                        &c.clan,
                        country,
                        clamp(c.score),
                        c.is_player,
                        c.afk,
                    )
                })
                .collect(),
        );
        out.score_kind = self
            .client_score_kind
            .as_deref()
            .and_then(ScoreKind::from_word);
        out.location = location.map(str::to_string);
        out.set_extra(ServerExtra {
            protocol: "http",
            num_players: u32::try_from(playing).unwrap_or(u32::MAX),
            max_players: count(self.max_players),
            map_size: self.map.size.and_then(|s| u32::try_from(s).ok()),
            requires_login: self.requires_login,
            community: community.map(str::to_string),
            // -1 is "none" (the server leaves it out then); out of range: ignored.
            country: self
                .country
                .filter(|c| (0..=999).contains(c))
                .and_then(|c| i32::try_from(c).ok()),
            ..ServerExtra::default()
        });
        out
    }
}

/// Parses the address of a `scheme://[user@]HOST:PORT[/…]` URL (ddnet base/net.cpp
/// `net_addr_from_url`); `None` for another scheme, a host name or port 0.
pub fn parse_address(url: &str) -> Option<SocketAddr> {
    let rest = SCHEMES.iter().find_map(|s| url.strip_prefix(s))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = rest.get(..end)?;
    let host = match host.split_once('@') {
        Some((_, h)) if !h.contains('@') => h,
        Some(_) => return None,
        None => host,
    };
    let addr: SocketAddr = host.parse().ok()?;
    (addr.port() != 0).then_some(addr)
}

/// The address to query among `addresses` (see the module docs).
pub fn preferred_address(addresses: &[String]) -> Option<SocketAddr> {
    SCHEMES.iter().find_map(|scheme| {
        addresses
            .iter()
            .filter(|a| a.starts_with(scheme))
            .find_map(|a| parse_address(a))
    })
}

/// Parses a `servers.json` body: the servers whose info validates, each with its info and
/// every address; a warning for each server skipped.
///
/// ```
/// let body = br#"{"servers":[{"addresses":["tw-0.6+udp://127.0.0.1:8303"],"info":{
///   "max_clients":16,"max_players":16,"passworded":false,"game_type":"DM","name":"x",
///   "map":{"name":"dm1"},"version":"0.6.4","clients":[]}}]}"#;
/// let list = fragstat_teeworlds::http::parse(body)?;
/// assert_eq!(list.servers[0].addr, "127.0.0.1:8303".parse().unwrap());
/// assert_eq!(list.servers[0].info.as_ref().unwrap().map.to_string(), "dm1");
/// # Ok::<(), fragstat_teeworlds::DecodeError>(())
/// ```
pub fn parse(body: &[u8]) -> Result<HttpList, DecodeError> {
    let list: List = serde_json::from_slice(body).map_err(|e| DecodeError::Invalid {
        field: "servers.json",
        offset: fragstat_core::wire::json_error_offset(body, &e),
        reason: "not a DDNet server list (a servers array of {addresses, location, info})",
    })?;
    let mut out = HttpList::default();
    for (i, s) in list.servers.into_iter().enumerate() {
        let what = || format!("server {i} ({})", s.addresses.join(", "));
        let info = match s
            .info
            .as_ref()
            .ok_or_else(|| "no info".to_string())
            .and_then(|raw| serde_json::from_str::<Info>(raw.get()).map_err(|e| e.to_string()))
            .and_then(|info| info.check().map(|()| info))
        {
            Ok(info) => info,
            Err(e) => {
                out.warnings.push(format!(
                    "{} skipped: its info does not validate: {e}",
                    what()
                ));
                continue;
            }
        };
        let Some(addr) = preferred_address(&s.addresses) else {
            out.warnings
                .push(format!("{} skipped: no address fragstat can query", what()));
            continue;
        };
        let mut entry = MasterEntry::new(addr);
        entry.info = Some(info.server_info(s.location.as_deref(), s.community.as_deref()));
        entry.addresses = s.addresses;
        out.servers.push(entry);
    }
    Ok(out)
}

/// Writes a list as JSON (what an emulated HTTP master serves).
pub fn render(list: &List) -> Vec<u8> {
    serde_json::to_vec(list).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(name: &str) -> Value {
        json!({"max_clients": 64, "max_players": 48, "passworded": true, "game_type": "DDraceNetwork",
               "name": name, "map": {"name": "Tutorial", "sha256": "ab", "size": 1234},
               "version": "0.6.4, 16.4", "client_score_kind": "time",
               "clients": [{"name": "a", "clan": "c", "country": 276, "score": -9999, "is_player": true, "afk": true},
                           {"name": "b", "clan": "", "country": 5000, "score": 3, "is_player": false, "afk": "?"}],
               "community": "ddnet", "requires_login": false})
    }

    #[test]
    fn keeps_every_address_and_skips_bad_infos() {
        let body = json!({"servers": [
            {"addresses": ["tw-0.7+udp://1.2.3.4:8304", "tw-0.6+udp://1.2.3.4:8303", "ddnet+udp://1.2.3.4:8303", "ddnet+quic://x#id"],
             "location": "eu:de", "info": info("good")},
            {"addresses": ["tw-0.6+udp://5.6.7.8:8303"], "info": {"name": "no other fields"}},
            {"addresses": ["tw-0.6+udp://5.6.7.9:8303"], "info": info("bad\u{1}name")},
            {"addresses": ["tw-0.7+udp://[2001:db8::1]:8303"], "info": info("seven only")},
            {"addresses": ["ddnet+quic://host#id"], "info": info("nothing to query")}
        ]});
        let list = parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(list.servers.len(), 2, "{:?}", list.warnings);
        assert_eq!(list.warnings.len(), 3, "{:?}", list.warnings);
        let s = &list.servers[0];
        assert_eq!(s.addr, "1.2.3.4:8303".parse().unwrap());
        assert_eq!(s.addresses.len(), 4);
        let i = s.info.as_ref().unwrap();
        assert_eq!(
            (i.num_players, i.max_players, i.num_spectators),
            (2, 64, Some(1))
        );
        assert_eq!(i.password, Some(true));
        let x = i.extra_as::<ServerExtra>().unwrap();
        assert_eq!((x.num_players, x.max_players), (1, 48));
        assert_eq!(i.score_kind, Some(ScoreKind::Time));
        assert_eq!(i.location.as_deref(), Some("eu:de"));
        let players = i.players.as_ref().unwrap();
        let p1 = players[1].extra.as_ref().unwrap().as_any();
        let p1 = p1.downcast_ref::<crate::view::PlayerExtra>().unwrap();
        assert_eq!((p1.country, p1.afk), (-1, None));
        assert_eq!(list.servers[1].addr, "[2001:db8::1]:8303".parse().unwrap());
    }

    /// DDNet 20: the master's `community` and the server's `info.country` (ISO numeric)
    /// go into the record's extra; other types, −1 and out-of-range countries are ignored.
    #[test]
    fn community_and_country() {
        let mut with = info("c");
        with["country"] = json!(276);
        let mut minus = info("m");
        minus["country"] = json!(-1);
        let mut odd = info("o");
        odd["country"] = json!("de");
        let body = json!({"servers": [
            {"addresses": ["tw-0.6+udp://1.2.3.4:8303"], "community": "kog", "location": "eu:de", "info": with},
            {"addresses": ["tw-0.6+udp://1.2.3.5:8303"], "community": 7, "info": minus},
            {"addresses": ["tw-0.6+udp://1.2.3.6:8303"], "info": odd},
            {"addresses": ["tw-0.6+udp://1.2.3.7:8303"], "info": info("none")}
        ]});
        let list = parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(list.servers.len(), 4, "{:?}", list.warnings);
        let got: Vec<_> = list
            .servers
            .iter()
            .map(|s| {
                let i = s.info.as_ref().unwrap();
                let x = i.extra_as::<ServerExtra>().unwrap();
                (x.community.clone(), x.country, i.location.clone())
            })
            .collect();
        assert_eq!(
            got,
            [
                (Some("kog".into()), Some(276), Some("eu:de".into())),
                (None, None, None),
                (None, None, None),
                (None, None, None),
            ]
        );
        // Written back as the master writes them.
        let l: List = serde_json::from_slice(body.to_string().as_bytes()).unwrap();
        let again = String::from_utf8(render(&l)).unwrap();
        assert!(again.contains(r#""community":"kog""#), "{again}");
        assert!(!again.contains(r#""community":7"#), "{again}");
    }

    /// A list's `clients` array is anyone's: at most MAX_PLAYERS kept, every one counted.
    #[test]
    fn a_flooded_clients_array_is_capped_and_counted() {
        let mut i = info("flood");
        let c = json!({"name": "x", "clan": "", "country": -1, "score": 0, "is_player": true});
        i["clients"] = Value::Array(vec![c; 5000]);
        let body = json!({"servers": [{"addresses": ["tw-0.6+udp://1.2.3.4:8303"], "info": i}]});
        let list = parse(body.to_string().as_bytes()).unwrap();
        let s = list.servers[0].info.as_ref().unwrap();
        assert_eq!(s.num_players, 5000);
        assert_eq!(s.players.as_ref().map(Vec::len), Some(MAX_PLAYERS));
        assert_eq!(s.warnings, ["3976 more clients not kept (at most 1024)"]);
    }

    #[test]
    fn a_bad_shape_fails_the_whole_list() {
        for body in [
            &br#"{"servers": 3}"#[..],
            br#"{"servers": [{"addresses": "x", "info": {}}]}"#,
            br#"{"servers": [{"addresses": [1], "info": {}}]}"#,
            br#"{"servers": [{"addresses": [], "location": 5, "info": {}}]}"#,
            b"not json",
            b"",
        ] {
            let e = parse(body).unwrap_err();
            assert_eq!(e.field(), Some("servers.json"));
            assert!(e.offset() <= body.len());
        }
        let e = parse(b"{\n  \"servers\": 3\n}").unwrap_err();
        assert_eq!(e.offset(), 15, "line 2, column 14: the 3 at byte 15 ({e})");
    }

    #[test]
    fn urls() {
        assert_eq!(
            parse_address("tw-0.6+udp://user@1.2.3.4:8303/path?q#f"),
            Some("1.2.3.4:8303".parse().unwrap())
        );
        assert_eq!(parse_address("tw-0.6+udp://a@b@1.2.3.4:8303"), None);
        assert_eq!(parse_address("tw-0.6+udp://1.2.3.4:0"), None);
        assert_eq!(parse_address("tw-0.6+udp://example.org:8303"), None);
        assert_eq!(parse_address("http://1.2.3.4:8303"), None);
    }
}
