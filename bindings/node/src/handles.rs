//! The two handles `index.js` wraps: a [`Call`] (one result: a promise) and a [`Feed`] (a
//! stream: an async iterator), each cancellable. Cancelling aborts the task, which drops
//! the library's future or stream, and that cancels its queries.

use std::future::Future;
use std::sync::{Arc, Mutex as StdMutex};

use napi::bindgen_prelude::spawn;
use napi::Error;
use napi_derive::napi;
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio::task::JoinHandle;

/// The JSON a cancelled call rejects with (`index.js` rejects with the signal's reason).
fn cancelled() -> Error {
    crate::errors::js(&fragstat::Error::Cancelled)
}

/// One call in progress: `result()` resolves to its JSON text; `cancel()` stops it.
#[napi]
pub struct Call {
    result: StdMutex<Option<oneshot::Receiver<napi::Result<String>>>>,
    task: JoinHandle<()>,
}

impl Call {
    /// Starts `work` on the runtime.
    pub fn start(work: impl Future<Output = napi::Result<String>> + Send + 'static) -> Call {
        let (tx, rx) = oneshot::channel();
        let task = spawn(async move {
            // The receiver gone: nobody is waiting for the result.
            let _ = tx.send(work.await);
        });
        Call {
            result: StdMutex::new(Some(rx)),
            task,
        }
    }
}

impl Drop for Call {
    /// A call collected by JavaScript's garbage collector stops its queries.
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[napi]
impl Call {
    /// The result as JSON text (once: a second call rejects with `CANCELLED`).
    #[napi]
    pub async fn result(&self) -> napi::Result<String> {
        let rx = self.result.lock().ok().and_then(|mut r| r.take());
        match rx {
            Some(rx) => rx.await.unwrap_or_else(|_| Err(cancelled())),
            None => Err(cancelled()),
        }
    }

    /// Stops the call: its queries are cancelled and `result()` rejects with `CANCELLED`.
    #[napi]
    pub fn cancel(&self) {
        self.task.abort();
    }
}

/// A stream in progress (a scan's records, a watch's events): `next()` resolves to the next
/// item's JSON text, or `null` at the end; `cancel()` stops it. Items wait in a bounded
/// channel: while the reader does not read, the producer waits, and sends no queries.
#[napi]
pub struct Feed {
    rx: Arc<Mutex<mpsc::Receiver<String>>>,
    task: StdMutex<Option<JoinHandle<()>>>,
}

/// The sending side a feed's producer writes to.
pub type Sink = mpsc::Sender<String>;

impl Feed {
    /// Starts `produce` with a channel of `buffer` items.
    pub fn start<F, Fut>(buffer: usize, produce: F) -> Feed
    where
        F: FnOnce(Sink) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(buffer.max(1));
        Feed {
            rx: Arc::new(Mutex::new(rx)),
            task: StdMutex::new(Some(spawn(produce(tx)))),
        }
    }
}

impl Drop for Feed {
    /// A stream collected by JavaScript's garbage collector (never read to its end, never
    /// cancelled) stops its producer: a watch of quiet servers would otherwise poll forever.
    fn drop(&mut self) {
        if let Some(t) = self.task.lock().ok().and_then(|mut t| t.take()) {
            t.abort();
        }
    }
}

#[napi]
impl Feed {
    /// The next items' JSON texts: waits for one, then takes the others already waiting, up
    /// to `max` in all (one wake-up of the JavaScript thread for many records); `null` when
    /// the stream has ended (or was cancelled).
    #[napi]
    pub async fn next_batch(&self, max: u32) -> napi::Result<Option<Vec<String>>> {
        let rx = Arc::clone(&self.rx);
        let mut rx = rx.lock().await;
        let Some(first) = rx.recv().await else {
            return Ok(None);
        };
        let mut batch = vec![first];
        while batch.len() < max.max(1) as usize {
            match rx.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        Ok(Some(batch))
    }

    /// Stops the stream: the producer is aborted, its queries cancelled; `next()` then
    /// resolves to `null`.
    #[napi]
    pub fn cancel(&self) {
        if let Some(t) = self.task.lock().ok().and_then(|mut t| t.take()) {
            t.abort();
        }
    }
}
