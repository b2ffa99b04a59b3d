//! The server-list feed: an HTTP GET (`http://etqw-ipgetter.demonware.net/ipgetter/`, per the
//! Splash Damage forum) whose body is `IP:port` lines. This module parses a body; fetching is
//! the caller's (the CLI uses its HTTP client through `MasterQuery::Http`).

use std::collections::HashSet;
use std::net::SocketAddr;

use fragstat_core::model::MasterEntry;
use fragstat_core::registry::HttpList;
use fragstat_core::wire::bounded;
use fragstat_core::DecodeError;

/// The public feed's address.
pub const DEFAULT_URL: &str = "http://etqw-ipgetter.demonware.net/ipgetter/";

/// Most lines read from one body (far above any real list), checked before parsing.
pub const MAX_LINES: u64 = 1_000_000;

/// Skipped lines reported one by one; past this, one summary line.
const MAX_WARNINGS: usize = 50;

/// Parses a feed body: one `IP:port` (or `[IPv6]:port`) per line, `\n` or `\r\n`, blank lines
/// and surrounding spaces ignored. Lines that are not an address with a non-zero port, and
/// repeated addresses, are skipped and reported in `warnings` (never fatal); only a body of
/// more than [`MAX_LINES`] lines fails.
pub fn parse(body: &[u8]) -> Result<HttpList, DecodeError> {
    let lines = body.split(|&b| b == b'\n').count() as u64;
    bounded(lines, MAX_LINES, "feed lines", 0)?;
    let mut list = HttpList::default();
    let mut seen = HashSet::new();
    let mut skipped = 0usize;
    let mut warn = |list: &mut HttpList, msg: String| {
        skipped += 1;
        if skipped <= MAX_WARNINGS {
            list.warnings.push(msg);
        }
    };
    let mut offset = 0usize;
    for (n, raw) in body.split(|&b| b == b'\n').enumerate() {
        let at = offset;
        offset += raw.len() + 1;
        let line = raw.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let text = String::from_utf8_lossy(line);
        match text.parse::<SocketAddr>() {
            Ok(addr) if addr.port() != 0 => {
                if seen.insert(addr) {
                    list.servers.push(MasterEntry::new(addr));
                } else {
                    warn(
                        &mut list,
                        format!("line {} (offset {at}): {addr} listed again", n + 1),
                    );
                }
            }
            Ok(addr) => warn(
                &mut list,
                format!("line {} (offset {at}): {addr} has port 0", n + 1),
            ),
            Err(_) => {
                let shown: String = text.chars().take(60).collect();
                warn(
                    &mut list,
                    format!("line {} (offset {at}): not IP:port: {shown:?}", n + 1),
                );
            }
        }
    }
    if skipped > MAX_WARNINGS {
        list.warnings
            .push(format!("… {} more lines skipped", skipped - MAX_WARNINGS));
    }
    Ok(list)
}

/// A feed body listing `servers`, one per line.
pub fn encode(servers: &[SocketAddr]) -> String {
    servers.iter().map(|s| format!("{s}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_bad_blank_and_repeated_lines() {
        let body = b"1.2.3.4:27733\r\n\n  5.6.7.8:27734 \nnot an address\n1.2.3.4:27733\n9.9.9.9:0\n[::1]:27733\n300.1.1.1:5";
        let list = parse(body).unwrap();
        let got: Vec<String> = list.servers.iter().map(|e| e.addr.to_string()).collect();
        assert_eq!(got, ["1.2.3.4:27733", "5.6.7.8:27734", "[::1]:27733"]);
        assert_eq!(list.warnings.len(), 4, "{:?}", list.warnings);
        assert!(
            list.warnings[0].starts_with("line 4 (offset 33): not IP:port"),
            "{:?}",
            list.warnings
        );
        assert!(list.warnings[1].contains("listed again"));
        assert!(list.warnings[2].contains("port 0"));
        assert!(parse(b"").unwrap().servers.is_empty());
        let addrs: Vec<SocketAddr> = vec!["10.0.0.1:1".parse().unwrap()];
        assert_eq!(
            parse(encode(&addrs).as_bytes()).unwrap().servers[0].addr,
            addrs[0]
        );
    }

    #[test]
    fn many_bad_lines_are_summarised() {
        let body = "x\n".repeat(80);
        let list = parse(body.as_bytes()).unwrap();
        assert_eq!(list.warnings.len(), MAX_WARNINGS + 1);
        assert_eq!(list.warnings.last().unwrap(), "… 30 more lines skipped");
    }
}
