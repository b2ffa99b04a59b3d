//! The output record: one server as every output format shows it (the CLI's JSON, NDJSON,
//! CSV and table; the tracker's rows), built from what a query returned.

use std::net::SocketAddr;

use serde::Serialize;

use crate::model::ServerInfo;

/// `addr` as text, as `Display` writes it; IPv4 without the formatting machinery (it was 3 %
/// of a scan's instructions when written once per record).
pub fn addr_text(addr: SocketAddr) -> String {
    let SocketAddr::V4(v4) = addr else {
        return addr.to_string();
    };
    let mut s = String::with_capacity(21);
    let mut num = itoa::Buffer::new();
    for (i, octet) in v4.ip().octets().into_iter().enumerate() {
        if i > 0 {
            s.push('.');
        }
        s.push_str(num.format(octet));
    }
    s.push(':');
    s.push_str(num.format(v4.port()));
    s
}

/// Whether a server answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// It answered.
    Online,
    /// No answer in time.
    Timeout,
    /// An error (unresolvable address, undecodable reply, send failure…).
    Error,
    /// Nothing listens there: the host answered "port unreachable" (ICMP), or the address
    /// cannot be reached at all.
    Down,
}

/// One server as every output format shows it (the CLI's JSON object; docs/json.md):
/// `address`, `game`, `status`, `error`, `rtt_ms`, then every [`ServerInfo`] key, `null`
/// when the server did not answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Record {
    /// `ip:port` (`[v6]:port`), or the text that could not be resolved; `None` for a decoded
    /// file.
    pub address: Option<String>,
    /// Game id.
    pub game: String,
    /// Answered or not.
    pub status: Status,
    /// Why not.
    pub error: Option<String>,
    /// Round-trip time of the answered attempt, in milliseconds (microsecond precision).
    pub rtt_ms: Option<f64>,
    /// What the server said.
    pub info: Option<ServerInfo>,
}

impl Record {
    /// A server that answered.
    pub fn online(
        address: Option<String>,
        game: &str,
        info: ServerInfo,
        rtt: Option<std::time::Duration>,
    ) -> Self {
        Record {
            address,
            game: game.to_string(),
            status: Status::Online,
            error: None,
            rtt_ms: rtt.map(|d| (d.as_secs_f64() * 1e6).round() / 1e3),
            info: Some(info),
        }
    }

    /// Appends the record as one line of JSON (no newline): the bytes
    /// `serde_json::to_writer` writes for it, several times faster, for writing records by
    /// the thousand (NDJSON).
    ///
    /// ```
    /// use fragstat_core::record::{Record, Status};
    /// let r = Record::failed(Some("127.0.0.1:27960".into()), "q3", Status::Timeout, "no reply".into());
    /// let mut line = Vec::new();
    /// r.write_json(&mut line);
    /// assert_eq!(line, serde_json::to_vec(&r).unwrap());
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) {
        crate::shape::write_record(out, self);
    }

    /// Fuzzing and test oracle: panics unless [`Record::write_json`] writes exactly the bytes
    /// serde_json writes for this record. Not part of the stable API.
    #[doc(hidden)]
    pub fn check_write_json(&self) {
        let mut fast = Vec::new();
        self.write_json(&mut fast);
        let serde = serde_json::to_vec(self).expect("a record always serializes");
        assert!(
            fast == serde,
            "write_json differs from serde_json:\n{}\n{}",
            String::from_utf8_lossy(&fast),
            String::from_utf8_lossy(&serde)
        );
    }

    /// A server that did not answer (`timeout`) or failed (`error`).
    pub fn failed(address: Option<String>, game: &str, status: Status, error: String) -> Self {
        Record {
            address,
            game: game.to_string(),
            status,
            error: Some(error),
            rtt_ms: None,
            info: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addr_text_writes_what_display_writes() {
        for a in [
            "0.0.0.0:0",
            "127.0.0.1:27960",
            "255.255.255.255:65535",
            "10.20.3.40:7",
            "[::1]:27960",
            "[2001:db8::1]:1",
        ] {
            let addr: SocketAddr = a.parse().unwrap();
            assert_eq!(addr_text(addr), addr.to_string(), "{a}");
        }
    }
}
