//! `fragstat serve --master` for games whose master sends its list over TCP (CoD4X): each
//! client that sends a request (`FF FF FF FF getservers …`, ended by a NUL or a newline)
//! gets the list, and the master closes the connection, as CoD4X's does (CoD4x_Client_pub
//! `src/cl_main.c:1440-1443` reads until the close).
//!
//! Every client may be hostile (TCP's handshake at least proves its address, so nothing is
//! sent to a spoofed one, and nothing is sent before a well-formed request):
//! - at most [`Limits::per_prefix`] connections per IPv4 address or IPv6 /64;
//! - at most [`Limits::max_conns`] in all; when full, a newcomer whose prefix holds fewer
//!   than the prefix holding most takes that prefix's oldest connection (a fair share for
//!   every prefix, so one network cannot keep others out); otherwise the newcomer is closed;
//! - the request must come within [`Limits::request_timeout`] and fit [`Limits::max_request`]
//!   bytes; a connection lasts at most [`Limits::lifetime`].

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// The listener's bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections one IPv4 address or IPv6 /64 may hold.
    pub per_prefix: usize,
    /// Connections in all.
    pub max_conns: usize,
    /// Time for the request to come.
    pub request_timeout: Duration,
    /// Longest request.
    pub max_request: usize,
    /// Longest connection.
    pub lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_prefix: 8,
            max_conns: 256,
            request_timeout: Duration::from_secs(5),
            max_request: 1024,
            lifetime: Duration::from_secs(20),
        }
    }
}

/// What a connection is counted under: an IPv4 address, or an IPv6 address's /64.
fn prefix(ip: IpAddr) -> IpAddr {
    match fragstat::core::canonical(SocketAddr::new(ip, 0)).ip() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        v4 => v4,
    }
}

/// The open connections, by prefix, oldest first.
#[derive(Default)]
struct Table {
    by_prefix: HashMap<IpAddr, Vec<(u64, AbortHandle)>>,
    total: usize,
    next: u64,
}

impl Table {
    /// Room for a connection from `p`: `Some(id)` when admitted (evicting another prefix's
    /// oldest when full), `None` when refused.
    fn admit(&mut self, p: IpAddr, limits: &Limits) -> Option<u64> {
        let mine = self.by_prefix.get(&p).map_or(0, Vec::len);
        if mine >= limits.per_prefix {
            return None;
        }
        if self.total >= limits.max_conns {
            let (top, most) = self
                .by_prefix
                .iter()
                .map(|(k, v)| (*k, v.len()))
                .max_by_key(|(_, n)| *n)?;
            if mine + 1 >= most {
                return None;
            }
            let conns = self.by_prefix.get_mut(&top)?;
            let (_, oldest) = conns.remove(0);
            oldest.abort();
            self.total -= 1;
            if conns.is_empty() {
                self.by_prefix.remove(&top);
            }
        }
        self.next += 1;
        Some(self.next)
    }

    fn insert(&mut self, p: IpAddr, id: u64, handle: AbortHandle) {
        self.by_prefix.entry(p).or_default().push((id, handle));
        self.total += 1;
    }

    fn remove(&mut self, p: IpAddr, id: u64) {
        if let Some(conns) = self.by_prefix.get_mut(&p) {
            let before = conns.len();
            conns.retain(|(i, _)| *i != id);
            self.total -= before - conns.len();
            if conns.is_empty() {
                self.by_prefix.remove(&p);
            }
        }
    }
}

/// Serves `body` to every client that asks until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    body: Arc<[u8]>,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let table = Arc::new(Mutex::new(Table::default()));
    tokio::pin!(shutdown);
    loop {
        let (stream, from) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of descriptors and the like: wait a little instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        admit(&table, stream, from, &body, limits);
    }
    let open = match table.lock() {
        Ok(mut t) => std::mem::take(&mut t.by_prefix),
        Err(_) => HashMap::new(),
    };
    for (_, h) in open.values().flatten() {
        h.abort();
    }
}

/// Admits the connection from `from` (or drops it) and answers it in a task of its own,
/// registered before it can finish, so its own removal always finds it.
fn admit(
    table: &Arc<Mutex<Table>>,
    stream: TcpStream,
    from: SocketAddr,
    body: &Arc<[u8]>,
    limits: Limits,
) {
    let p = prefix(from.ip());
    let Ok(mut t) = table.lock() else { return };
    let Some(id) = t.admit(p, &limits) else {
        return;
    };
    let (body, done) = (body.clone(), table.clone());
    let task = tokio::spawn(async move {
        let _ = tokio::time::timeout(limits.lifetime, answer(stream, &body, &limits)).await;
        if let Ok(mut t) = done.lock() {
            t.remove(p, id);
        }
    });
    t.insert(p, id, task.abort_handle());
}

/// Reads one request and sends the list.
async fn answer(mut stream: TcpStream, body: &[u8], limits: &Limits) {
    let mut req = Vec::with_capacity(64);
    let mut buf = [0u8; 256];
    let read = async {
        loop {
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 {
                return Some(());
            }
            req.extend_from_slice(buf.get(..n)?);
            if req.len() > limits.max_request {
                return None;
            }
            if req.iter().any(|b| matches!(b, 0 | b'\n')) {
                return Some(());
            }
        }
    };
    if !matches!(
        tokio::time::timeout(limits.request_timeout, read).await,
        Ok(Some(()))
    ) {
        return;
    }
    if !req.starts_with(b"\xff\xff\xff\xffgetservers") {
        return;
    }
    let _ = stream.write_all(body).await;
    let _ = stream.shutdown().await;
}
