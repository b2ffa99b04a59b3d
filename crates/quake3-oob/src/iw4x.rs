//! IW4x's server list: an HTTP GET of JSON, `{"servers":[{"ip","port","protocol",…}]}`, which
//! the IW4x client reads before asking each server over UDP (iw4x-client
//! `src/Components/Modules/ServerList.cpp:282-356`, `425-449`). Sans-IO: the CLI fetches the
//! body, [`parse`] reads it.

use std::net::{IpAddr, SocketAddr};

use fragstat_core::model::MasterEntry;
use fragstat_core::registry::{HttpBody, HttpList};
use fragstat_core::DecodeError;
use serde::{Deserialize, Serialize};

/// The public list of the client's protocol (`master.iw4x.io`).
pub const DEFAULT_URL: &str = "http://master.iw4x.io/v1/servers/iw4x?protocol=152";

/// The list body.
#[derive(Debug, Default, Deserialize, Serialize)]
struct List {
    #[serde(default)]
    servers: Vec<Entry>,
}

/// One server as the list describes it; the fields the browser does not need are ignored.
#[derive(Debug, Deserialize, Serialize)]
struct Entry {
    #[serde(default)]
    ip: Option<String>,
    #[serde(default)]
    port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    protocol: Option<i64>,
}

/// Parses a list body: each server with an address and a port, a warning for each entry
/// skipped.
///
/// ```
/// let l = fragstat_quake3_oob::iw4x::parse(
///     br#"{"servers":[{"ip":"127.0.0.1","port":28960,"protocol":152},{"ip":"x","port":1}]}"#,
/// )?;
/// assert_eq!(l.servers.len(), 1);
/// assert_eq!(l.warnings.len(), 1);
/// # Ok::<(), fragstat_quake3_oob::DecodeError>(())
/// ```
pub fn parse(body: &[u8]) -> Result<HttpList, DecodeError> {
    let list: List = serde_json::from_slice(body).map_err(|e| DecodeError::Invalid {
        field: "IW4x server list",
        offset: fragstat_core::wire::json_error_offset(body, &e),
        reason: "not an IW4x server list (a servers array of {ip, port, protocol})",
    })?;
    let mut out = HttpList::default();
    for (i, s) in list.servers.into_iter().enumerate() {
        let ip = s.ip.as_deref().and_then(|ip| ip.parse::<IpAddr>().ok());
        let port = s
            .port
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p != 0);
        match (ip, port) {
            (Some(ip), Some(port)) => out
                .servers
                .push(MasterEntry::new(SocketAddr::new(ip, port))),
            _ => out.warnings.push(format!(
                "server {i}: no usable address ({:?} port {:?})",
                s.ip, s.port
            )),
        }
    }
    Ok(out)
}

/// The body the list would have for `servers` (the emulated master's).
pub fn render(servers: &[SocketAddr], protocol: i32) -> HttpBody {
    let list = List {
        servers: servers
            .iter()
            .map(|a| Entry {
                ip: Some(a.ip().to_string()),
                port: Some(i64::from(a.port())),
                protocol: Some(i64::from(protocol)),
            })
            .collect(),
    };
    HttpBody {
        content_type: "application/json",
        body: serde_json::to_vec(&list).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_list_and_skips_what_it_cannot_use() {
        let body = br#"{"servers":[
            {"ip":"127.0.0.1","port":28960,"protocol":152,"clients":3,"hostname":"x"},
            {"ip":"::1","port":28961},
            {"ip":"127.0.0.1","port":0},
            {"ip":"127.0.0.1","port":70000},
            {"port":28960},
            {"ip":"nope","port":1}
        ]}"#;
        let l = parse(body).unwrap();
        let addrs: Vec<String> = l.servers.iter().map(|s| s.addr.to_string()).collect();
        assert_eq!(addrs, ["127.0.0.1:28960", "[::1]:28961"]);
        assert_eq!(l.warnings.len(), 4, "{:?}", l.warnings);
        let e = parse(b"{\"servers\": 3}").unwrap_err();
        assert_eq!(
            (e.kind(), e.field(), e.offset()),
            ("invalid", Some("IW4x server list"), 12)
        );
        assert!(parse(b"{}").unwrap().servers.is_empty());
        let addrs = ["127.0.0.1:1".parse().unwrap(), "[::1]:2".parse().unwrap()];
        let round = parse(&render(&addrs, 152).body).unwrap();
        assert_eq!(round.servers.len(), 2);
    }
}
