//! The JSON shape of the model (docs/json.md), defined once.
//!
//! [`PlayerShape`], [`InfoShape`], [`RecordShape`] and [`EntryShape`] are the keys, their
//! order and their types, each written once, in a `shape!` block that makes the struct with
//! serde's derives and, from the same field list, its fast NDJSON writer ([`FastJson`], keys
//! as byte literals). Writing: the model's `Serialize` impls borrow the model into a shape
//! and serialize it; `Record::write_json` borrows it and writes it fast, the same bytes.
//! Reading: the model's `Deserialize` impls read a shape and convert it, leniently: a key
//! missing or `null` where the model has an option reads as none.
//!
//! What round-trips exactly: every number, flag and list; names (`name_raw` is lossless);
//! text that is valid UTF-8. What cannot: the JSON keeps `map`, `clan` and rules only as
//! shown, so their bytes come back as the UTF-8 of the text shown (for text that was not
//! UTF-8 on the wire: the ISO-8859-1 characters it was shown as, as UTF-8); and a family's
//! `extra` comes back as a JSON value ([`serde_json::Value`], itself an [`Extra`]), not as
//! the family's own type.
//!
//! [`Extra`]: crate::model::Extra

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::json::FastJson;
use crate::model::{Dialect, ExtraRef, MasterEntry, Player, Rules, ServerInfo, Text};
use crate::record::{Record, Status};

/// Text as shown (`name`, `map`, `clan`): the model's, or as read.
pub(crate) enum Shown<'a> {
    Model(&'a Text),
    Read(String),
}

/// Text in its lossless form (`name_raw`): the model's, or as read.
pub(crate) enum Raw<'a> {
    Model(&'a Text),
    Read(String),
}

/// A player list: the model's, or as read.
pub(crate) enum Players<'a> {
    Model(&'a [Player]),
    Read(Vec<PlayerShape<'a>>),
}

/// Server variables: the model's, or as read (pairs in order, a key possibly repeated).
pub(crate) enum RulesField<'a> {
    Model(&'a Rules),
    Read(Vec<(String, String)>),
}

/// A family's part: the model's, or as read (any JSON value).
pub(crate) enum ExtraField<'a> {
    Model(&'a ExtraRef),
    Read(serde_json::Value),
}

/// Makes a shape from one field list: the struct, with serde's derives (the attributes
/// given), and its [`FastJson`] impl, `{"field":value,…}` in the same order with each key a
/// byte literal. A last field written `..name: Type` is flattened: `#[serde(flatten)]` for
/// serde, its keys written in this object by the fast writer. The key is the field's name:
/// no `rename`, `rename_all`, `skip_serializing_if` or `serialize_with`, no `r#` names (the
/// macro cannot refuse them; `shape/tests.rs` and `json_shapes.rs` hold every shape's two
/// writers to the same bytes, so one that slips in fails there).
macro_rules! shape {
    (
        $(#[$meta:meta])*
        struct $name:ident<'a> {
            $( $(#[$fmeta:meta])* $field:ident: $ty:ty, )*
            ..$flat:ident: $flatty:ty,
        }
    ) => {
        $(#[$meta])*
        pub(crate) struct $name<'a> {
            $( $(#[$fmeta])* $field: $ty, )*
            #[serde(flatten)]
            $flat: $flatty,
        }

        impl FastJson for $name<'_> {
            fn write_json(&self, out: &mut Vec<u8>) {
                out.push(b'{');
                shape!(@fields self, out, true, $($field)*);
                self.$flat.write_fields(out, false);
                out.push(b'}');
            }
        }
    };
    (
        $(#[$meta:meta])*
        struct $name:ident<'a> {
            $( $(#[$fmeta:meta])* $field:ident: $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        pub(crate) struct $name<'a> {
            $( $(#[$fmeta])* $field: $ty, )*
        }

        impl $name<'_> {
            /// Each `"key":value`, after a comma unless `first`.
            #[inline]
            fn write_fields(&self, out: &mut Vec<u8>, first: bool) {
                shape!(@fields self, out, first, $($field)*);
            }
        }

        impl FastJson for $name<'_> {
            fn write_json(&self, out: &mut Vec<u8>) {
                out.push(b'{');
                self.write_fields(out, true);
                out.push(b'}');
            }
        }
    };
    (@fields $self:ident, $out:ident, $first:expr, $head:ident $($field:ident)*) => {
        $out.extend_from_slice(if $first {
            concat!("\"", stringify!($head), "\":").as_bytes()
        } else {
            concat!(",\"", stringify!($head), "\":").as_bytes()
        });
        FastJson::write_json(&$self.$head, $out);
        $(
            $out.extend_from_slice(concat!(",\"", stringify!($field), "\":").as_bytes());
            FastJson::write_json(&$self.$field, $out);
        )*
    };
}

shape! {
/// A player: every key always written (`null` where not sent).
#[derive(Serialize, Deserialize)]
struct PlayerShape<'a> {
    name: Option<Shown<'a>>,
    name_raw: Raw<'a>,
    clan: Option<Shown<'a>>,
    score: Option<i32>,
    ping: Option<i32>,
    team: Option<i32>,
    is_bot: Option<bool>,
    is_spectator: Option<bool>,
    extra: Option<ExtraField<'a>>,
}
}

shape! {
/// A server: the keys of [`ServerInfo::JSON_FIELDS`], in that order. Inside a record every
/// one is `null` for a server that did not answer.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct InfoShape<'a> {
    name: Option<Shown<'a>>,
    name_raw: Option<Raw<'a>>,
    map: Option<Shown<'a>>,
    gametype: Option<Cow<'a, str>>,
    version: Option<Cow<'a, str>>,
    num_players: Option<u32>,
    max_players: Option<u32>,
    num_bots: Option<u32>,
    num_spectators: Option<u32>,
    password: Option<bool>,
    /// An unknown kind reads as none.
    score_kind: Option<Cow<'a, str>>,
    location: Option<Cow<'a, str>>,
    players: Option<Players<'a>>,
    rules: Option<RulesField<'a>>,
    extra: Option<ExtraField<'a>>,
    warnings: Option<Cow<'a, [String]>>,
    truncated: Option<bool>,
    unverified: Option<bool>,
    dialect: Option<Dialect>,
}
}

shape! {
/// A record: the query's keys, then the server's.
#[derive(Serialize, Deserialize)]
struct RecordShape<'a> {
    address: Option<Cow<'a, str>>,
    game: Cow<'a, str>,
    status: Status,
    #[serde(default)]
    error: Option<Cow<'a, str>>,
    #[serde(default)]
    rtt_ms: Option<f64>,
    ..info: InfoShape<'a>,
}
}

shape! {
/// One server of a master's list.
#[derive(Serialize, Deserialize)]
struct EntryShape<'a> {
    address: SocketAddr,
    #[serde(default)]
    addresses: Cow<'a, [String]>,
    #[serde(default)]
    info: Option<InfoShape<'a>>,
}
}

// Writing: the model, borrowed into its shape.

impl<'a> From<&'a Player> for PlayerShape<'a> {
    fn from(p: &'a Player) -> Self {
        PlayerShape {
            name: Some(Shown::Model(&p.name)),
            name_raw: Raw::Model(&p.name),
            clan: p.clan.as_ref().map(Shown::Model),
            score: p.score,
            ping: p.ping,
            team: p.team,
            is_bot: p.is_bot,
            is_spectator: p.is_spectator,
            extra: p.extra.as_ref().map(ExtraField::Model),
        }
    }
}

impl<'a> From<&'a ServerInfo> for InfoShape<'a> {
    fn from(s: &'a ServerInfo) -> Self {
        InfoShape {
            name: Some(Shown::Model(&s.name)),
            name_raw: Some(Raw::Model(&s.name)),
            map: Some(Shown::Model(&s.map)),
            gametype: s.gametype.as_deref().map(Cow::Borrowed),
            version: s.version.as_deref().map(Cow::Borrowed),
            num_players: Some(s.num_players),
            max_players: Some(s.max_players),
            num_bots: s.num_bots,
            num_spectators: s.num_spectators,
            password: s.password,
            score_kind: s.score_kind.map(|k| Cow::Borrowed(k.id())),
            location: s.location.as_deref().map(Cow::Borrowed),
            players: s.players.as_deref().map(Players::Model),
            rules: Some(RulesField::Model(&s.rules)),
            extra: s.extra.as_ref().map(ExtraField::Model),
            warnings: Some(Cow::Borrowed(&s.warnings)),
            truncated: Some(s.truncated),
            unverified: Some(s.unverified),
            dialect: Some(s.name.dialect()),
        }
    }
}

impl<'a> From<&'a Record> for RecordShape<'a> {
    fn from(r: &'a Record) -> Self {
        RecordShape {
            address: r.address.as_deref().map(Cow::Borrowed),
            game: Cow::Borrowed(&r.game),
            status: r.status,
            error: r.error.as_deref().map(Cow::Borrowed),
            rtt_ms: r.rtt_ms,
            info: r.info.as_ref().map(InfoShape::from).unwrap_or_default(),
        }
    }
}

impl Serialize for Shown<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Shown::Model(t) => t.with_shown(|t| s.serialize_str(t)),
            Shown::Read(t) => s.serialize_str(t),
        }
    }
}

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Raw::Model(t) => s.serialize_str(&t.raw_cow()),
            Raw::Read(t) => s.serialize_str(t),
        }
    }
}

impl Serialize for Players<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Players::Model(ps) => s.collect_seq(ps.iter().map(PlayerShape::from)),
            Players::Read(ps) => s.collect_seq(ps),
        }
    }
}

impl Serialize for RulesField<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RulesField::Model(r) => r.serialize(s),
            RulesField::Read(pairs) => s.collect_map(pairs.iter().map(|(k, v)| (k, v))),
        }
    }
}

impl Serialize for ExtraField<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ExtraField::Model(e) => e.serialize(s),
            ExtraField::Read(v) => v.serialize(s),
        }
    }
}

impl Serialize for Player {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PlayerShape::from(self).serialize(s)
    }
}

impl Serialize for ServerInfo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        InfoShape::from(self).serialize(s)
    }
}

impl Serialize for Record {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RecordShape::from(self).serialize(s)
    }
}

impl<'a> From<&'a MasterEntry> for EntryShape<'a> {
    fn from(e: &'a MasterEntry) -> Self {
        EntryShape {
            address: e.addr,
            addresses: Cow::Borrowed(&e.addresses),
            info: e.info.as_ref().map(InfoShape::from),
        }
    }
}

impl Serialize for MasterEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        EntryShape::from(self).serialize(s)
    }
}

/// A record as one line of JSON (no newline): the fast writer.
pub(crate) fn write_record(out: &mut Vec<u8>, r: &Record) {
    RecordShape::from(r).write_json(out);
}

// Reading: a shape, converted.

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

impl<'de> Deserialize<'de> for Shown<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Shown::Read)
    }
}

impl<'de> Deserialize<'de> for Raw<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Raw::Read)
    }
}

impl<'de, 'a> Deserialize<'de> for Players<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<PlayerShape<'a>>::deserialize(d).map(Players::Read)
    }
}

impl<'de> Deserialize<'de> for RulesField<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        pairs(d).map(RulesField::Read)
    }
}

impl<'de> Deserialize<'de> for ExtraField<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(d).map(ExtraField::Read)
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

/// What was read of a text (reading only ever makes `Read`).
fn read_text(t: Shown<'_>) -> String {
    match t {
        Shown::Read(t) => t,
        Shown::Model(t) => t.display(),
    }
}

fn read_raw(t: Raw<'_>) -> String {
    match t {
        Raw::Read(t) => t,
        Raw::Model(t) => t.raw(),
    }
}

/// Text kept only as shown: its UTF-8.
fn shown(text: Shown<'_>, dialect: Dialect) -> Text {
    Text::new(read_text(text).into_bytes(), dialect)
}

fn extra(v: Option<ExtraField<'_>>) -> Option<ExtraRef> {
    match v? {
        ExtraField::Model(e) => Some(Arc::clone(e)),
        ExtraField::Read(v) if v.is_null() => None,
        ExtraField::Read(v) => Some(Arc::new(v) as ExtraRef),
    }
}

impl PlayerShape<'_> {
    fn player<E: serde::de::Error>(self, dialect: Dialect) -> Result<Player, E> {
        let name = self.name.map(read_text);
        let raw = read_raw(self.name_raw);
        let bytes = raw_bytes::<E>(&raw, name.as_deref(), dialect, "players.name_raw")?;
        let mut p = Player::new(Text::new(bytes, dialect));
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

impl InfoShape<'_> {
    /// The server; `None` when it did not answer (no `name_raw`).
    fn info<E: serde::de::Error>(self) -> Result<Option<ServerInfo>, E> {
        let Some(name_raw) = self.name_raw.map(read_raw) else {
            return Ok(None);
        };
        let missing = |k: &str| E::custom(format!("{k}: missing in an answered server"));
        let dialect = self.dialect.unwrap_or_default();
        let players = match self.players {
            Some(Players::Read(ps)) => Some(
                ps.into_iter()
                    .map(|p| p.player::<E>(dialect))
                    .collect::<Result<_, _>>()?,
            ),
            Some(Players::Model(ps)) => Some(ps.to_vec()),
            None => None,
        };
        // Records written before `score_kind` and `location` were the model's carry them in
        // the family's `extra` (Teeworlds/DDNet): read there when the record has none.
        let earlier = |k: &str| match &self.extra {
            Some(ExtraField::Read(v)) => Some(v.get(k)?.as_str()?.to_string()),
            _ => None,
        };
        let score_kind = self
            .score_kind
            .map(Cow::into_owned)
            .or_else(|| earlier("score_kind"));
        let location = self
            .location
            .map(Cow::into_owned)
            .or_else(|| earlier("location"));
        let name = self.name.map(read_text);
        let info = ServerInfo {
            name: Text::new(
                raw_bytes::<E>(&name_raw, name.as_deref(), dialect, "name_raw")?,
                dialect,
            ),
            map: shown(self.map.ok_or_else(|| missing("map"))?, dialect),
            gametype: self.gametype.map(Cow::into_owned),
            version: self.version.map(Cow::into_owned),
            num_players: self.num_players.ok_or_else(|| missing("num_players"))?,
            max_players: self.max_players.ok_or_else(|| missing("max_players"))?,
            num_bots: self.num_bots,
            num_spectators: self.num_spectators,
            password: self.password,
            score_kind: score_kind.and_then(|k| k.parse().ok()),
            location,
            players,
            rules: match self.rules {
                Some(RulesField::Read(p)) => {
                    p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
                }
                Some(RulesField::Model(r)) => r.clone(),
                None => Rules::default(),
            },
            extra: extra(self.extra),
            warnings: self.warnings.map(Cow::into_owned).unwrap_or_default(),
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

impl<'de> Deserialize<'de> for ServerInfo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        InfoShape::deserialize(d)?
            .info::<D::Error>()?
            .ok_or_else(|| D::Error::custom("name_raw: missing"))
    }
}

impl<'de> Deserialize<'de> for MasterEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let e = EntryShape::deserialize(d)?;
        let mut entry = MasterEntry::new(e.address);
        entry.addresses = e.addresses.into_owned();
        entry.info = match e.info {
            Some(i) => Some(
                i.info::<D::Error>()?
                    .ok_or_else(|| D::Error::custom("info.name_raw: missing"))?,
            ),
            None => None,
        };
        Ok(entry)
    }
}

/// A record: the server's keys are all `null` when it did not answer.
impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RecordShape::deserialize(d)?;
        Ok(Record {
            address: r.address.map(Cow::into_owned),
            game: r.game.into_owned(),
            status: r.status,
            error: r.error.map(Cow::into_owned),
            rtt_ms: r.rtt_ms,
            info: r.info.info::<D::Error>()?,
        })
    }
}

mod fast;

#[cfg(test)]
mod tests;
