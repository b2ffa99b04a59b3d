//! Reading the model back from the JSON it writes (docs/json.md): results can be cached,
//! stored and read again.
//!
//! What round-trips exactly: every number, flag and list; names (`name_raw` is lossless);
//! text that is valid UTF-8. What cannot: the JSON keeps `map`, `clan` and rules only as
//! shown, so their bytes come back as the UTF-8 of the text shown (for text that was not
//! UTF-8 on the wire: the ISO-8859-1 characters it was shown as, as UTF-8); and a family's
//! `extra` comes back as a JSON value ([`serde_json::Value`], itself an [`Extra`]), not as
//! the family's own type. Writing what was read gives the same JSON: the `Serialize` impls
//! are the definition of the shape, and `json_shapes.rs` reads back what they write for
//! every record shape.

use std::net::SocketAddr;
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use crate::model::{Dialect, ExtraRef, MasterEntry, Player, Rules, ServerInfo, Text};
use crate::record::{Record, Status};

impl<'de> Deserialize<'de> for Dialect {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let id = String::deserialize(d)?;
        id.parse().map_err(|_| {
            const IDS: [&str; Dialect::ALL.len()] = {
                let mut ids = [""; Dialect::ALL.len()];
                let mut i = 0;
                while i < ids.len() {
                    ids[i] = Dialect::ALL[i].id();
                    i += 1;
                }
                ids
            };
            D::Error::unknown_variant(&id, &IDS)
        })
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)?.as_str() {
            "online" => Ok(Status::Online),
            "timeout" => Ok(Status::Timeout),
            "error" => Ok(Status::Error),
            "down" => Ok(Status::Down),
            other => Err(D::Error::unknown_variant(
                other,
                &["online", "timeout", "error", "down"],
            )),
        }
    }
}

/// The bytes of a lossless `*_raw` string: Quake text is one character per byte
/// (ISO-8859-1). Plain text is its UTF-8 — unless the bytes were not UTF-8, which is when
/// the shown form (decoded lossily) differs from the raw one (decoded as ISO-8859-1): then
/// one byte per character again.
fn raw_bytes<E: serde::de::Error>(
    raw: &str,
    shown: Option<&str>,
    dialect: Dialect,
    field: &str,
) -> Result<Vec<u8>, E> {
    let latin1 = || {
        raw.chars()
            .map(|c| u8::try_from(u32::from(c)))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| E::custom(format!("{field}: a character above U+00FF in 8-bit text")))
    };
    match dialect {
        Dialect::Plain if shown.is_none_or(|s| s == raw) => Ok(raw.as_bytes().to_vec()),
        _ => latin1(),
    }
}

/// Text kept only as shown: its UTF-8.
fn shown(text: String, dialect: Dialect) -> Text {
    Text::new(text.into_bytes(), dialect)
}

/// A player as written.
#[derive(Deserialize)]
struct PlayerJson {
    #[serde(default)]
    name: Option<String>,
    name_raw: String,
    #[serde(default)]
    clan: Option<String>,
    #[serde(default)]
    score: Option<i32>,
    #[serde(default)]
    ping: Option<i32>,
    #[serde(default)]
    team: Option<i32>,
    #[serde(default)]
    is_bot: Option<bool>,
    #[serde(default)]
    is_spectator: Option<bool>,
    #[serde(default)]
    extra: Option<serde_json::Value>,
}

impl PlayerJson {
    fn player<E: serde::de::Error>(self, dialect: Dialect) -> Result<Player, E> {
        let mut p = Player::new(Text::new(
            raw_bytes::<E>(
                &self.name_raw,
                self.name.as_deref(),
                dialect,
                "players.name_raw",
            )?,
            dialect,
        ));
        p.clan = self.clan.map(|c| shown(c, dialect));
        p.score = self.score;
        p.ping = self.ping;
        p.team = self.team;
        p.is_bot = self.is_bot;
        p.is_spectator = self.is_spectator;
        p.extra = extra(self.extra);
        Ok(p)
    }
}

fn extra(v: Option<serde_json::Value>) -> Option<ExtraRef> {
    v.filter(|v| !v.is_null()).map(|v| Arc::new(v) as ExtraRef)
}

/// A server's keys as written (inside a record, where they are all `null` for a server
/// that did not answer, or alone).
#[derive(Deserialize)]
struct InfoJson {
    #[serde(default)]
    name_raw: Option<String>,
    #[serde(default)]
    map: Option<String>,
    #[serde(default)]
    gametype: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    num_players: Option<u32>,
    #[serde(default)]
    max_players: Option<u32>,
    #[serde(default)]
    num_bots: Option<u32>,
    #[serde(default)]
    num_spectators: Option<u32>,
    #[serde(default)]
    password: Option<bool>,
    /// Unknown kinds read as none.
    #[serde(default)]
    score_kind: Option<String>,
    #[serde(default)]
    location: Option<String>,
    #[serde(default)]
    players: Option<Vec<PlayerJson>>,
    #[serde(default, deserialize_with = "pairs")]
    rules: Vec<(String, String)>,
    #[serde(default)]
    extra: Option<serde_json::Value>,
    #[serde(default)]
    warnings: Option<Vec<String>>,
    #[serde(default)]
    truncated: Option<bool>,
    #[serde(default)]
    unverified: Option<bool>,
    #[serde(default)]
    dialect: Option<Dialect>,
    /// The name as shown (tells whether Plain text was UTF-8).
    #[serde(default)]
    name: Option<String>,
}

impl InfoJson {
    /// The server; `None` when it did not answer (no `name_raw`).
    fn info<E: serde::de::Error>(self) -> Result<Option<ServerInfo>, E> {
        let Some(name_raw) = self.name_raw else {
            return Ok(None);
        };
        let missing = |k: &str| E::custom(format!("{k}: missing in an answered server"));
        let dialect = self.dialect.unwrap_or_default();
        let players = match self.players {
            Some(ps) => Some(
                ps.into_iter()
                    .map(|p| p.player::<E>(dialect))
                    .collect::<Result<_, _>>()?,
            ),
            None => None,
        };
        // Records written before `score_kind` and `location` were the model's carry them in
        // the family's `extra` (Teeworlds/DDNet): read there when the record has none.
        let earlier = |k: &str| {
            let v = self.extra.as_ref()?.get(k)?.as_str()?;
            Some(v.to_string())
        };
        let score_kind = self.score_kind.or_else(|| earlier("score_kind"));
        let location = self.location.or_else(|| earlier("location"));
        let info = ServerInfo {
            name: Text::new(
                raw_bytes::<E>(&name_raw, self.name.as_deref(), dialect, "name_raw")?,
                dialect,
            ),
            map: shown(self.map.ok_or_else(|| missing("map"))?, dialect),
            gametype: self.gametype,
            version: self.version,
            num_players: self.num_players.ok_or_else(|| missing("num_players"))?,
            max_players: self.max_players.ok_or_else(|| missing("max_players"))?,
            num_bots: self.num_bots,
            num_spectators: self.num_spectators,
            password: self.password,
            score_kind: score_kind.and_then(|k| k.parse().ok()),
            location,
            players,
            rules: self
                .rules
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            extra: extra(self.extra),
            warnings: self.warnings.unwrap_or_default(),
            truncated: self.truncated.unwrap_or(false),
            unverified: self.unverified.unwrap_or(false),
        };
        Ok(Some(info))
    }
}

/// Rules are a JSON object in wire order, a key possibly repeated: read as pairs (`null`:
/// none).
fn pairs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    struct Pairs;
    impl<'de> serde::de::Visitor<'de> for Pairs {
        type Value = Vec<(String, String)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object of strings")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0).min(4096));
            while let Some((k, v)) = m.next_entry::<String, String>()? {
                out.push((k, v));
            }
            Ok(out)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
    }
    d.deserialize_any(Pairs)
}

impl<'de> Deserialize<'de> for Rules {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let p = pairs(d)?;
        Ok(p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
    }
}

/// `ServerInfo` as its `Serialize` writes it.
impl<'de> Deserialize<'de> for ServerInfo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        InfoJson::deserialize(d)?
            .info::<D::Error>()?
            .ok_or_else(|| D::Error::custom("name_raw: missing"))
    }
}

impl<'de> Deserialize<'de> for MasterEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct EntryJson {
            address: SocketAddr,
            #[serde(default)]
            addresses: Vec<String>,
            #[serde(default)]
            info: Option<ServerInfo>,
        }
        let e = EntryJson::deserialize(d)?;
        let mut entry = MasterEntry::new(e.address);
        entry.addresses = e.addresses;
        entry.info = e.info;
        Ok(entry)
    }
}

/// A record as written: the server's keys are all `null` when it did not answer.
impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct RecordJson {
            address: Option<String>,
            game: String,
            status: Status,
            #[serde(default)]
            error: Option<String>,
            #[serde(default)]
            rtt_ms: Option<f64>,
            #[serde(flatten)]
            info: InfoJson,
        }
        let r = RecordJson::deserialize(d)?;
        Ok(Record {
            address: r.address,
            game: r.game,
            status: r.status,
            error: r.error,
            rtt_ms: r.rtt_ms,
            info: r.info.info::<D::Error>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(dialect: Dialect) -> ServerInfo {
        let mut info = ServerInfo {
            name: Text::new(b"^1R\xe9d ^7\xff".to_vec(), dialect),
            map: Text::new(b"q3dm17".to_vec(), dialect),
            gametype: Some("ctf".into()),
            num_players: 2,
            max_players: 16,
            num_bots: Some(1),
            password: Some(false),
            score_kind: Some(crate::model::ScoreKind::Time),
            location: Some("eu:de".into()),
            ..ServerInfo::default()
        };
        let mut p = Player::new(Text::new(b"\x01^3Bot\xfe".to_vec(), dialect));
        p.score = Some(-3);
        p.is_bot = Some(true);
        p.clan = Some(Text::new(b"[fs]".to_vec(), dialect));
        info.players = Some(vec![p, Player::new(Text::new(Vec::new(), dialect))]);
        info.rules = [
            ("sv_hostname", "x"),
            ("g_gametype", "4"),
            ("sv_hostname", "again"),
        ]
        .into_iter()
        .collect();
        info.set_extra(serde_json::json!({"crc": 7, "nested": {"a": [1, 2]}}));
        info.warnings = vec!["skipped line 3".into()];
        info.truncated = true;
        info.unverified = true;
        info
    }

    #[test]
    fn what_is_written_reads_back_and_writes_the_same() {
        for dialect in Dialect::ALL {
            let mut info = sample(dialect);
            if dialect == Dialect::Plain {
                info.name = Text::new("Ünï ☃".as_bytes().to_vec(), dialect);
            }
            let json = serde_json::to_string(&info).unwrap();
            let back: ServerInfo = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
            assert_eq!(
                back.name.as_bytes(),
                info.name.as_bytes(),
                "names are lossless"
            );
            assert_eq!(back.rules.get("sv_hostname"), Some(&b"x"[..]));
            assert_eq!(back.rules.len(), 3, "repeated keys kept");
            assert_eq!(
                back.players.as_ref().unwrap()[0].name,
                info.players.as_ref().unwrap()[0].name
            );
            let x = back.extra.as_ref().unwrap().as_any();
            assert!(x.downcast_ref::<serde_json::Value>().is_some());
            assert!(back.unverified && back.truncated);
            assert_eq!(back.name.dialect(), dialect, "the dialect reads back");
        }
    }

    #[test]
    fn records_read_back_answered_or_not() {
        let online = Record::online(
            Some("127.0.0.1:27960".into()),
            "q3",
            sample(Dialect::Quake),
            Some(std::time::Duration::from_micros(1234)),
        );
        let failed = Record::failed(
            Some("127.0.0.1:1".into()),
            "q3",
            Status::Timeout,
            "timed out after 6 attempts".into(),
        );
        for r in [online, failed] {
            let json = serde_json::to_string(&r).unwrap();
            let back: Record = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
            assert_eq!(back.status, r.status);
            assert_eq!(back.info.is_some(), r.info.is_some());
        }
        let mut e = MasterEntry::new("1.2.3.4:8303".parse().unwrap());
        e.addresses = vec!["tw-0.6+udp://1.2.3.4:8303".into()];
        e.info = Some(sample(Dialect::Plain));
        let json = serde_json::to_string(&e).unwrap();
        let back: MasterEntry = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }

    /// A record stored before `score_kind` and `location` were the model's (a DDNet server's,
    /// with both in its `extra`) reads them from there; a record's own fields win; an
    /// unknown kind reads as none.
    #[test]
    fn earlier_records_keep_their_score_kind_and_location() {
        use crate::model::ScoreKind;
        let head = r#"{"name_raw": "x", "map": "", "num_players": 0, "max_players": 0"#;
        let read = |rest: &str| -> ServerInfo {
            serde_json::from_str(&format!("{head}{rest}}}")).unwrap()
        };
        let old =
            read(r#", "extra": {"protocol": "http", "score_kind": "time", "location": "eu:de"}"#);
        assert_eq!(old.score_kind, Some(ScoreKind::Time));
        assert_eq!(old.location.as_deref(), Some("eu:de"));
        let new = read(
            r#", "score_kind": "points", "location": "na:us", "extra": {"score_kind": "time", "location": "eu:de"}"#,
        );
        assert_eq!(new.score_kind, Some(ScoreKind::Points));
        assert_eq!(new.location.as_deref(), Some("na:us"));
        let none = read(r#", "score_kind": "laps", "extra": {"location": 5}"#);
        assert_eq!((none.score_kind, none.location), (None, None));
        let bare = read("");
        assert_eq!((bare.score_kind, bare.location), (None, None));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for bad in [
            "{}",
            r#"{"name_raw": "\u0100", "map": "", "num_players": 0, "max_players": 0, "dialect": "quake"}"#,
            r#"{"name_raw": "x", "map": "", "num_players": -1, "max_players": 0}"#,
            r#"{"name_raw": "x", "map": "", "num_players": 0, "max_players": 0, "rules": {"a": 1}}"#,
            r#"{"name_raw": "x", "map": "", "num_players": 0, "max_players": 0, "dialect": "klingon"}"#,
            "[]",
        ] {
            assert!(serde_json::from_str::<ServerInfo>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_json_value_is_an_extra() {
        let v: ExtraRef = Arc::new(serde_json::json!({"x": 1}));
        assert!(v.dyn_eq(&serde_json::json!({"x": 1})));
    }
}
