//! Running sans-IO servers on real sockets: `run(socket, handler, shutdown)`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::transport::{Backoff, Transport};
use crate::MAX_DATAGRAM;

/// Serves datagrams until `shutdown` completes: each datagram goes to `handler`, and every
/// `(destination, bytes)` it returns is sent from the same socket. Receive errors are skipped,
/// waiting longer after each consecutive one (1 ms doubling to 128 ms) so a socket that fails
/// persistently does not spin.
pub async fn run<H, S>(
    socket: Arc<dyn Transport>,
    mut handler: H,
    shutdown: S,
) -> std::io::Result<()>
where
    H: FnMut(SocketAddr, &[u8]) -> Vec<(SocketAddr, Vec<u8>)> + Send,
    S: Future<Output = ()> + Send,
{
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut backoff = Backoff::default();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            r = socket.recv_from(&mut buf) => {
                let (n, from) = match r {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::trace!(error = %e, "receive error");
                        tokio::select! {
                            () = &mut shutdown => return Ok(()),
                            () = backoff.wait(&e) => continue,
                        }
                    }
                };
                backoff.reset();
                for (to, reply) in handler(from, buf.get(..n).unwrap_or_default()) {
                    if let Err(e) = socket.send_to(&reply, to).await {
                        tracing::debug!(%to, error = %e, "reply not sent");
                    }
                }
            }
        }
    }
}
