//! What is stored of a record: its caps (players, warnings, bytes, names), its JSON, the
//! status and dialect codes, and the hash that tells a changed record.

use std::hash::{Hash, Hasher};

use fragstat::core::model::Dialect;
use fragstat::core::record::{Record, Status};

use crate::store::StoreError;

use super::*;

/// Most players of one server stored per round (R8): a hostile server can list ~9,000 in a
/// datagram.
pub const MAX_PLAYERS: usize = 1024;
/// Most warnings kept in a record (R8); the rest are counted in one more ("and N more").
pub const MAX_WARNINGS: usize = 32;
/// Most bytes of a server's stored JSON record (R8).
pub const MAX_RECORD_BYTES: usize = 64 * 1024;
/// Most bytes of a player's or clan's name stored (a name is an index key: PostgreSQL's
/// B-tree entries are limited to about 2.7 KB).
pub const MAX_NAME_BYTES: usize = 256;

pub(in crate::store) fn status_str(s: Status) -> &'static str {
    match s {
        Status::Online => "online",
        Status::Timeout => "timeout",
        Status::Down => "down",
        _ => "error",
    }
}

/// The series' status code.
pub(in crate::store) fn status_code(s: &str) -> i64 {
    match s {
        "online" => 0,
        "timeout" => 1,
        "down" => 2,
        _ => 3,
    }
}

/// The status a series code stands for.
pub(in crate::store) fn code_status(c: i64) -> &'static str {
    match c {
        0 => "online",
        1 => "timeout",
        2 => "down",
        _ => "error",
    }
}

/// The dialect as stored: its id (`quake`, `plain`, `idq3`, `dp`…; `Dialect::id`).
pub(in crate::store) fn dialect_str(d: Dialect) -> &'static str {
    d.id()
}

/// Caps what a server controls in a record (R8): at most [`MAX_PLAYERS`] players and
/// [`MAX_WARNINGS`] warnings (the rest said in one more warning). The round applies it to
/// every record as it arrives, so a round holds no more than that per server; the store
/// applies it again before writing.
pub fn cap_record(rec: &mut Record) {
    let Some(info) = rec.info.as_mut() else {
        return;
    };
    if let Some(players) = info.players.as_mut() {
        if players.len() > MAX_PLAYERS {
            let n = players.len() - MAX_PLAYERS;
            players.truncate(MAX_PLAYERS);
            info.warnings.push(format!(
                "{n} more players not stored (at most {MAX_PLAYERS})"
            ));
        }
    }
    if info.warnings.len() > MAX_WARNINGS {
        let n = info.warnings.len() - MAX_WARNINGS;
        info.warnings.truncate(MAX_WARNINGS);
        info.warnings.push(format!("and {n} more"));
    }
}

/// The JSON record stored on the server's row: players left out (they are sessions), and the
/// numbers that change every round (`rtt_ms`, `num_players`, `num_bots`, `num_spectators`:
/// they are the row's columns and the series), so the record is rewritten only when the
/// rest changes. At most [`MAX_RECORD_BYTES`]: a bigger one loses its rules and extra
/// fields, then everything but its address, game and status, and says so.
pub fn stored_record(rec: &Record) -> Result<String, StoreError> {
    let over = rec.info.as_ref().is_some_and(|i| {
        i.warnings.len() > MAX_WARNINGS || i.players.as_ref().is_some_and(|p| p.len() > MAX_PLAYERS)
    });
    let capped;
    let rec = if over {
        let mut r = rec.clone();
        cap_record(&mut r);
        capped = r;
        &capped
    } else {
        rec
    };
    let mut v = serde_json::to_value(rec)?;
    if let Some(o) = v.as_object_mut() {
        for k in [
            "players",
            "rtt_ms",
            "num_players",
            "num_bots",
            "num_spectators",
        ] {
            o.remove(k);
        }
    }
    let json = v.to_string();
    if json.len() <= MAX_RECORD_BYTES {
        return Ok(json);
    }
    let note = format!(
        "record of {} bytes over the store's {MAX_RECORD_BYTES}: rules and extra fields not stored",
        json.len()
    );
    if let Some(o) = v.as_object_mut() {
        o.insert("rules".into(), serde_json::json!({}));
        o.remove("extra");
        let warnings = o
            .entry("warnings")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(w) = warnings.as_array_mut() {
            w.push(note.into());
        }
    }
    let json = v.to_string();
    if json.len() <= MAX_RECORD_BYTES {
        return Ok(json);
    }
    Ok(serde_json::json!({
        "address": rec.address,
        "game": rec.game,
        "status": rec.status,
        "warnings": [format!("record of {} bytes over the store's {MAX_RECORD_BYTES}: not stored", json.len())],
    })
    .to_string())
}

/// A hash of what [`stored_record`] keeps of a record, computed without writing the JSON (a
/// round writes the record only of the servers whose hash changed).
pub(in crate::store) fn record_hash(rec: &Record) -> u64 {
    let mut h = stable_hasher();
    (&rec.address, &rec.game, rec.status, &rec.error).hash(&mut h);
    if let Some(i) = &rec.info {
        (i.name.as_bytes(), i.name.dialect().id(), i.map.as_bytes()).hash(&mut h);
        (&i.gametype, &i.version, i.max_players, i.password).hash(&mut h);
        (&i.warnings, i.truncated, i.unverified, i.rules.len()).hash(&mut h);
        for pair in i.rules.pairs() {
            pair.hash(&mut h);
        }
        if let Some(e) = &i.extra {
            serde_json::to_vec(&**e).ok().hash(&mut h);
        }
    }
    h.finish()
}

/// PostgreSQL's `TEXT` cannot hold U+0000, which a server can send in a name or a map
/// (DDNet's JSON, a reply's fields): text columns get U+FFFD in its place. Nothing is lost —
/// `name_raw` keeps the bytes and `record` the JSON, where it is written `\u0000`.
pub(in crate::store) fn no_nul(s: String) -> String {
    if s.contains('\0') {
        s.replace('\0', "\u{FFFD}")
    } else {
        s
    }
}

pub(in crate::store) fn capped(bytes: &[u8]) -> Vec<u8> {
    bytes.get(..MAX_NAME_BYTES).unwrap_or(bytes).to_vec()
}
