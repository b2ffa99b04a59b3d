//! `fragstat serve --master` for games whose master sends its list over TCP (CoD4X): each
//! client that sends a request (`FF FF FF FF getservers …`, ended by a NUL or a newline)
//! gets the list, and the master closes the connection, as CoD4X's does (CoD4x_Client_pub
//! `src/cl_main.c:1440-1443` reads until the close).
//!
//! Every client may be hostile (TCP's handshake at least proves its address, so nothing is
//! sent to a spoofed one, and nothing is sent before a well-formed request):
//! - connections are shared among address prefixes at every level ([`Limits::caps`]: an
//!   IPv4 address, /24 and /16; an IPv6 /64, /56, /48 and /32), through the project's
//!   [`FairTable`];
//! - at most [`Limits::max_conns`] in all; when full, a newcomer displaces a connection of
//!   the prefix holding most (a fair share for every prefix, so one network cannot keep
//!   others out); a newcomer whose own network holds most is closed;
//! - the request must come within [`Limits::request_timeout`] and fit [`Limits::max_request`]
//!   bytes; a connection lasts at most [`Limits::lifetime`].

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fragstat::core::fair::{Caps, FairTable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// The listener's bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections each prefix may hold: IPv4 address, /24, /16; IPv6 /64, /56, /48, /32.
    pub caps: Caps,
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
            caps: Caps {
                v4: [8, 64, 128],
                v6: [8, 64, 128, 128],
            },
            max_conns: 256,
            request_timeout: Duration::from_secs(5),
            max_request: 1024,
            lifetime: Duration::from_secs(20),
        }
    }
}

/// The open connections: their shares, and how to close each.
struct Table {
    fair: FairTable<u64>,
    handles: HashMap<u64, AbortHandle>,
    next: u64,
}

impl Table {
    fn new(limits: &Limits) -> Self {
        Table {
            fair: FairTable::new(limits.caps, limits.max_conns as u64),
            handles: HashMap::new(),
            next: 0,
        }
    }

    /// Room for a connection from `ip`: `Some(id)` when admitted (closing the connections
    /// it displaced), `None` when refused.
    fn admit(&mut self, ip: IpAddr) -> Option<u64> {
        self.next += 1;
        let id = self.next;
        let (admitted, displaced) = self.fair.admit(id, ip, 1);
        for d in displaced {
            if let Some(h) = self.handles.remove(&d) {
                h.abort();
            }
        }
        admitted.ok().map(|()| id)
    }

    fn insert(&mut self, id: u64, handle: AbortHandle) {
        self.handles.insert(id, handle);
    }

    fn remove(&mut self, id: u64) {
        self.fair.remove(&id);
        self.handles.remove(&id);
    }
}

/// Serves `body` to every client that asks until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    body: Arc<[u8]>,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let table = Arc::new(Mutex::new(Table::new(&limits)));
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
        Ok(mut t) => std::mem::take(&mut t.handles),
        Err(_) => HashMap::new(),
    };
    for h in open.values() {
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
    let ip = fragstat::core::canonical(from).ip();
    let Ok(mut t) = table.lock() else { return };
    let Some(id) = t.admit(ip) else {
        return;
    };
    let (body, done) = (body.clone(), table.clone());
    let task = tokio::spawn(async move {
        let _ = tokio::time::timeout(limits.lifetime, answer(stream, &body, &limits)).await;
        if let Ok(mut t) = done.lock() {
            t.remove(id);
        }
    });
    t.insert(id, task.abort_handle());
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
