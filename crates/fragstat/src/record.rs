//! A server's result as a record (docs/json.md), as the CLI, the tracker and the Node.js
//! binding write it: error texts that say only what is known, and DDNet's "no time"
//! sentinels as no score.

use std::net::SocketAddr;

use fragstat_core::model::{ScoreKind, ServerInfo};
use fragstat_core::record::{addr_text, Record, Status};
use fragstat_core::registry::GameRef;

use crate::client::Response;
use crate::error::Error;

/// DDNet's "no finish time" in 0.6 server info and its HTTP list
/// (`FinishTime::NOT_FINISHED_TIMESCORE`, ddnet/ddnet `src/engine/shared/protocol.h:187` at
/// 28baa427; sent by `CServer::CacheServerInfo`, `src/engine/server/server.cpp:2485-2499`,
/// and in the JSON list, `server.cpp:2838`).
const NO_TIME_SIX: i32 = -9999;

/// DDNet's "no finish time" in 0.7 server info, where the server sets the time-score flag
/// (`m_Score.value_or(-1)` under `SERVER_FLAG_TIMESCORE`, ddnet/ddnet
/// `src/engine/server/server.cpp:2575` and `:2596` at 28baa427). A points server's -1 is a
/// score (a suicide), so only time-score servers lose it.
const NO_TIME_SEVEN: i32 = -1;

/// The record of one server's result, answered or not (docs/json.md): `game` names the
/// game in the record; Teeworlds-family scores that mean "no time" become none.
pub fn record(game: &GameRef, addr: SocketAddr, result: Result<Response, Error>) -> Record {
    match result {
        Ok(mut r) => {
            if game.family() == "teeworlds" {
                no_time(&mut r.info, game.id() == "teeworlds07");
            }
            r.record(game.id())
        }
        Err(e @ (Error::Timeout { .. } | Error::Foreign { .. })) => {
            let status = if e.is_timeout() {
                Status::Timeout
            } else {
                Status::Error
            };
            Record::failed(
                Some(addr_text(addr)),
                game.id(),
                status,
                unanswered(game, &e),
            )
        }
        Err(e) => {
            let status = match &e {
                Error::Down => Status::Down,
                e if e.is_timeout() => Status::Timeout,
                _ => Status::Error,
            };
            Record::failed(Some(addr_text(addr)), game.id(), status, e.to_string())
        }
    }
}

/// A DDNet player without a finish time has no score (`null` in JSON, empty in CSV, `-` in
/// the table), not a time of -9999 s. `seven`: a 0.7 reply.
pub fn no_time(info: &mut ServerInfo, seven: bool) {
    let seven_time = seven && info.score_kind == Some(ScoreKind::Time);
    for p in info.players.iter_mut().flatten() {
        if p.score == Some(NO_TIME_SIX) || (seven_time && p.score == Some(NO_TIME_SEVEN)) {
            p.score = None;
        }
    }
}

/// What a server that did not answer this query is told: the error, and a hint only where
/// it cannot mislead (a Teeworlds 0.6 query unanswered says what a 0.7 server would need,
/// without taking the server for one).
fn unanswered(game: &GameRef, e: &Error) -> String {
    let mut text = match e {
        Error::Foreign { replies, attempts } => format!(
            "{replies} repl{} from the server in {attempts} attempt{}, none an answer to this query (answers to another request, or another game's)",
            if *replies == 1 { "y" } else { "ies" },
            if *attempts == 1 { "" } else { "s" },
        ),
        e => e.to_string(),
    };
    let hint = match game.id() {
        "teeworlds" | "ddnet" => Some("if it is a Teeworlds 0.7 server, query it as teeworlds07"),
        "teeworlds07" => {
            Some("if it is a Teeworlds 0.6 or DDNet server, query it as teeworlds or ddnet")
        }
        _ => game.unanswered_hint(),
    };
    if let Some(h) = hint {
        text.push_str(" (");
        text.push_str(h);
        text.push(')');
    }
    text
}

/// Why `text` (a server as given) did not resolve, without naming it again: the resolver's
/// reason names the host, and a record shows the address beside it.
pub fn resolve_error(text: &str, e: &Error) -> String {
    match e {
        Error::Resolve { source, .. } => source.to_string(),
        e => e.to_string().replace(&format!("{text}: "), ""),
    }
}
