//! Masters that send their list over TCP ([`MasterQuery::Tcp`]: CoD4X's): connect, send the
//! request, read until the master closes, parse.
//!
//! Bounds, as the CoD4X client's own (`CL_GetServersThread`, CoD4x_Client_pub
//! `src/cl_main.c:1382-1533`: 256 KiB, 15 s): the connection must open within the master
//! timeout; the stream may pause at most the master timeout between reads (a master that
//! goes quiet without closing has sent what it will: what came is parsed); the whole list
//! takes at most the HTTP timeout; at most [`max_bytes`] are kept, and a master sending
//! more ends its query with [`Error::Exceeded`].
//!
//! [`MasterQuery::Tcp`]: fragstat_core::registry::MasterQuery::Tcp

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::{timeout, timeout_at, Instant};

use super::{send, Answer, HttpParse, Plan};
use crate::client::{Client, Target};
use crate::error::{Error, Limit, LimitKind};

/// The time and size bounds of one TCP list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// To open the connection.
    pub connect: Duration,
    /// The longest pause between reads.
    pub idle: Duration,
    /// The whole exchange.
    pub total: Duration,
    /// Bytes kept.
    pub max_bytes: usize,
}

/// The most a TCP list may be, whatever the entry cap: the CoD4X client's own buffer
/// (`CL_GetServersThread`, 256 KiB).
const MAX_TCP_LIST: usize = 256 * 1024;

/// Bytes of one list: enough for `max_entries` entries of the largest form (CoD4X: `\`, 4
/// bytes and three IPv6 addresses, 62 bytes), and a header, within [`MAX_TCP_LIST`].
pub(crate) fn max_bytes(max_entries: usize) -> usize {
    max_entries
        .saturating_mul(64)
        .saturating_add(1 << 10)
        .min(MAX_TCP_LIST)
}

/// Asks every master of `plan` over TCP, each in its own task.
pub(super) async fn spawn_tcp(
    client: &Client,
    plan: &Plan,
    request: Vec<u8>,
    parse: HttpParse,
    tx: &mpsc::UnboundedSender<Answer>,
) {
    let port = plan.game.master_port().unwrap_or(0);
    let texts: Vec<String> = plan.masters.iter().map(Target::text).collect();
    let resolved = client.resolve(&texts, port).await;
    let config = client.config();
    let bounds = Bounds {
        connect: config.master_timeout,
        idle: config.master_timeout,
        total: config.http_timeout.max(config.master_timeout),
        max_bytes: max_bytes(config.limits.max_entries_per_master),
    };
    for (index, (t, (_, r))) in plan.masters.iter().zip(resolved).enumerate() {
        let addr = match t {
            Target::Addr(a) => crate::error::queryable(&a.to_string(), *a),
            Target::Text(_) => r,
        };
        let addr = match addr {
            Ok(a) => a,
            Err(e) => {
                send(tx, index, None, None, Err(e));
                continue;
            }
        };
        let tx = tx.clone();
        let wanted = tx.clone();
        let request = request.clone();
        tokio::spawn(super::while_wanted(wanted, async move {
            let t0 = std::time::Instant::now();
            let body = fetch(addr, &request, bounds).await;
            let rtt = t0.elapsed();
            let (result, warnings) = match body.and_then(|b| parse(&b).map_err(Error::Decode)) {
                Ok(list) => (Ok(list.servers), list.warnings),
                Err(e) => (Err(e), Vec::new()),
            };
            let _ = tx.send(Answer {
                index,
                round: 0,
                addr: Some(addr),
                url: None,
                rtt: result.is_ok().then_some(rtt),
                result,
                warnings,
                skipped: false,
            });
        }));
    }
}

/// Connects to `addr`, sends `request` and reads the stream within `bounds`.
pub(crate) async fn fetch(
    addr: SocketAddr,
    request: &[u8],
    bounds: Bounds,
) -> Result<Vec<u8>, Error> {
    let deadline = Instant::now() + bounds.total;
    let mut stream = match timeout(bounds.connect, TcpStream::connect(addr)).await {
        Err(_) => return Err(Error::Timeout { attempts: 1 }),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Err(Error::Down),
        Ok(Err(e)) => return Err(Error::Io(e)),
        Ok(Ok(s)) => s,
    };
    match timeout_at(deadline, stream.write_all(request)).await {
        Err(_) => return Err(lifetime(bounds.total)),
        Ok(Err(e)) => return Err(Error::Io(e)),
        Ok(Ok(())) => {}
    }
    let mut body = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let until = (Instant::now() + bounds.idle).min(deadline);
        match timeout_at(until, stream.read(&mut buf)).await {
            // Quiet without closing: what came is the list; nothing at all is a timeout.
            Err(_) if body.is_empty() => return Err(Error::Timeout { attempts: 1 }),
            Err(_) if Instant::now() >= deadline => return Err(lifetime(bounds.total)),
            Err(_) | Ok(Ok(0)) => break,
            Ok(Ok(n)) => {
                if body.len() + n > bounds.max_bytes {
                    return Err(Error::Exceeded(Limit {
                        kind: LimitKind::Bytes,
                        max: bounds.max_bytes as u64,
                    }));
                }
                body.extend_from_slice(buf.get(..n).unwrap_or_default());
            }
            // A reset after the list (a master that closes hard) keeps what came.
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset && !body.is_empty() => {
                break
            }
            Ok(Err(e)) => return Err(Error::Io(e)),
        }
    }
    Ok(body)
}

fn lifetime(total: Duration) -> Error {
    Error::Exceeded(Limit {
        kind: LimitKind::Lifetime,
        max: u64::try_from(total.as_millis()).unwrap_or(u64::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list's bytes follow the entry cap, within the CoD4X client's 256 KiB: a cap of
    /// 65,536 entries (the default) would otherwise let a master send 4 MiB.
    #[test]
    fn the_byte_bound_follows_the_entry_cap_within_256_kib() {
        assert_eq!(max_bytes(10), 10 * 64 + 1024);
        assert_eq!(max_bytes(65_536), MAX_TCP_LIST);
        assert_eq!(max_bytes(usize::MAX), MAX_TCP_LIST);
    }
}
