//! The serve loop, in paused time.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fragstat_core::{serve, Transport};

/// A socket whose every receive fails at once (a persistent error), counting the calls. After
/// 10,000 calls it stops answering, so a receive loop that spins shows up as a count rather
/// than a hung test.
#[derive(Default)]
struct BrokenRecv {
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl Transport for BrokenRecv {
    async fn send_to(&self, _: &[u8], _: SocketAddr) -> std::io::Result<()> {
        Ok(())
    }
    async fn recv_from(&self, _: &mut [u8]) -> std::io::Result<(usize, SocketAddr)> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= 10_000 {
            std::future::pending::<()>().await;
        }
        Err(std::io::Error::other("persistent failure"))
    }
    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(SocketAddr::from(([127, 0, 0, 1], 27960)))
    }
}

#[tokio::test(start_paused = true)]
async fn a_persistent_receive_error_is_backed_off() {
    let socket = Arc::new(BrokenRecv::default());
    serve::run(
        Arc::clone(&socket) as Arc<dyn Transport>,
        |_from: SocketAddr, _datagram: &[u8]| Vec::new(),
        tokio::time::sleep(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let calls = socket.calls.load(Ordering::SeqCst);
    assert!(calls < 50, "{calls} receive calls in 1 s");
}
