//! `fragstat::Error` as the JavaScript side reads it: a napi error whose message is JSON
//! (`{code, message, …}`), which `index.js` turns into a `FragstatError` with that `code`.
//! (An async napi function can reject only with napi's own status codes.)

use napi::{Error, Status};
use serde_json::{json, Value};

/// The stable code of an error (the `code` of a `FragstatError`).
pub fn code(e: &fragstat::Error) -> &'static str {
    use fragstat::Error as E;
    match e {
        E::Timeout { .. } => "TIMEOUT",
        E::Deadline => "DEADLINE",
        E::Down => "DOWN",
        E::Foreign { .. } => "FOREIGN",
        E::Decode(_) => "DECODE",
        E::Encode(_) => "ENCODE",
        E::Exceeded(_) => "LIMIT",
        E::Resolve { .. } => "RESOLVE",
        E::Http { .. } => "HTTP",
        E::InvalidInput(_) => "INVALID_INPUT",
        E::Unsupported(_) => "UNSUPPORTED",
        E::Io(_) => "IO",
        E::Cancelled => "CANCELLED",
        _ => "ERROR",
    }
}

/// The error's JSON: `code`, `message`, and what the error knows (`attempts`, `replies`,
/// `field` and `offset` of a decode error, `limit`, `target`, `url`, `status`).
pub fn to_json(e: &fragstat::Error) -> Value {
    use fragstat::Error as E;
    let mut v = json!({"code": code(e), "message": e.to_string()});
    let extra = match e {
        E::Timeout { attempts } => json!({"attempts": attempts}),
        E::Foreign { attempts, replies } => json!({"attempts": attempts, "replies": replies}),
        E::Decode(d) => json!({"field": d.field(), "offset": d.offset(), "kind": d.kind()}),
        E::Exceeded(l) => json!({"limit": l.kind.name(), "max": l.max}),
        E::Resolve { target, .. } => json!({"target": target}),
        E::Http { url, status, .. } => json!({"url": url, "status": status}),
        _ => json!({}),
    };
    if let (Some(obj), Value::Object(extra)) = (v.as_object_mut(), extra) {
        obj.extend(extra);
    }
    v
}

/// The napi error that carries `e` to `index.js`.
pub fn js(e: &fragstat::Error) -> Error {
    Error::new(Status::GenericFailure, to_json(e).to_string())
}

/// An argument the library never saw (a bad option): `INVALID_INPUT`.
pub fn invalid(message: impl Into<String>) -> Error {
    js(&fragstat::Error::InvalidInput(message.into()))
}
