//! [`Client::poll`]: one scan of masters' lists and named servers (what the tracker does
//! every round); [`Client::watch`]: that scan every interval, its [`Event`]s as a stream.

use std::collections::{HashMap, HashSet};
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fragstat_core::record::{Record, Status};
use fragstat_core::registry::{Ask, GameRef};
use futures_core::Stream;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use crate::client::Client;
use crate::events::{Differ, Event};

/// What to scan for one game: its masters' lists and servers named directly.
#[derive(Debug, Clone)]
pub struct Source {
    /// The game.
    pub game: GameRef,
    /// Masters (`HOST[:PORT]`, or a URL for HTTP lists).
    pub masters: Vec<String>,
    /// Servers scanned whatever the masters say (`HOST[:PORT]`; names are resolved each
    /// scan).
    pub servers: Vec<String>,
    /// The masters' extended request (Quake III `getserversExt`).
    pub ext: bool,
}

impl Source {
    /// A game's source with nothing in it yet.
    pub fn new(game: &GameRef) -> Self {
        Source {
            game: game.clone(),
            masters: Vec::new(),
            servers: Vec::new(),
            ext: false,
        }
    }

    /// With these masters.
    #[must_use]
    pub fn masters<T: Into<String>>(mut self, masters: impl IntoIterator<Item = T>) -> Self {
        self.masters.extend(masters.into_iter().map(Into::into));
        self
    }

    /// With these servers.
    #[must_use]
    pub fn servers<T: Into<String>>(mut self, servers: impl IntoIterator<Item = T>) -> Self {
        self.servers.extend(servers.into_iter().map(Into::into));
        self
    }

    /// With the masters' extended request.
    #[must_use]
    pub fn ext(mut self, ext: bool) -> Self {
        self.ext = ext;
        self
    }
}

/// What one master answered in a [`Client::poll`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PolledMaster {
    /// The game asked for.
    pub game: String,
    /// The master as given.
    pub master: String,
    /// Servers it listed, when it answered.
    pub listed: Option<usize>,
    /// Of those, left out by the list filter and caps ([`crate::MasterReport::dropped`]).
    pub dropped: usize,
    /// Why it gave no list.
    pub error: Option<crate::Error>,
}

/// One [`Client::poll`]: every server's record, and every master's answer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Polled {
    /// When the poll started (Unix ms).
    pub at: i64,
    /// When it ended (Unix ms).
    pub finished: i64,
    /// One record per server: the masters' servers (merged, each address once) in list
    /// order, then the named servers not listed, then the named servers that could not be
    /// resolved.
    pub records: Vec<Record>,
    /// How many of `records`, the first, a master listed (the rest were named only).
    pub from_masters: usize,
    /// Every master's answer, source by source.
    pub masters: Vec<PolledMaster>,
}

/// Unix time in milliseconds.
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A Unix time in milliseconds (an event's `at`, [`unix_ms`]) as RFC 3339 UTC to the second,
/// `2026-11-28T05:07:54Z`; clamped to the years 1970 to 9999.
pub fn time_text(ms: i64) -> String {
    // humantime writes years 1970 to 9999 (its Display fails past that).
    let ms = ms.clamp(0, 253_402_300_799_000);
    let t = UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Gives a probed record the location its master listed ([`ServerInfo::location`]: DDNet's
/// servers.json `location`, which the server's own reply does not carry), unless it has one.
///
/// [`ServerInfo::location`]: fragstat_core::model::ServerInfo::location
fn with_location(record: &mut Record, location: &str) {
    if let Some(info) = record.info.as_mut() {
        if info.location.is_none() {
            info.location = Some(location.to_string());
        }
    }
}

impl Client {
    /// Asks every source's masters at once (UDP or HTTP by the game's master kind; lists
    /// merged, filtered and capped by the client), adds the named servers, and scans every
    /// server once with `ask` (each address once, the first source naming it giving its
    /// game). A server a DDNet list places (`location`) has that location in its record.
    ///
    /// Each record is bounded as it arrives ([`ServerInfo::cap`]: at most
    /// [`MAX_PLAYERS`] players and [`MAX_WARNINGS`] warnings, the rest counted), so a poll
    /// holds no more than that per server whatever the servers send.
    ///
    /// [`ServerInfo::cap`]: fragstat_core::model::ServerInfo::cap
    /// [`MAX_PLAYERS`]: fragstat_core::model::MAX_PLAYERS
    /// [`MAX_WARNINGS`]: fragstat_core::model::MAX_WARNINGS
    pub async fn poll(&self, sources: &[Source], ask: Ask) -> Polled {
        let at = unix_ms();
        let with_masters: Vec<&Source> = sources.iter().filter(|s| !s.masters.is_empty()).collect();
        let lists = futures_util::future::join_all(with_masters.iter().map(|s| {
            self.master_list(&s.game, s.masters.iter())
                .ext(s.ext)
                .into_future()
        }))
        .await;
        let mut masters = Vec::new();
        let mut targets: Vec<(GameRef, SocketAddr)> = Vec::new();
        let mut seen = HashSet::new();
        let mut failed: Vec<Record> = Vec::new();
        // Where a list says a server is (DDNet's servers.json `location`), for its record.
        let mut locations: HashMap<SocketAddr, String> = HashMap::new();
        for (source, list) in with_masters.iter().zip(lists) {
            let game = source.game.id().to_string();
            match list {
                Ok(list) => {
                    for l in list.entries() {
                        let location = l.entry.info.as_ref().and_then(|i| i.location.clone());
                        if let Some(loc) = location {
                            locations.insert(l.entry.addr, loc);
                        }
                    }
                    for addr in list.servers() {
                        if seen.insert(addr) {
                            targets.push((source.game.clone(), addr));
                        }
                    }
                    for mut r in list.into_reports() {
                        masters.push(PolledMaster {
                            game: game.clone(),
                            master: std::mem::take(&mut r.master),
                            listed: r.is_online().then_some(r.listed),
                            dropped: r.dropped(),
                            error: r.error.take(),
                        });
                    }
                }
                Err(e) => {
                    for m in &source.masters {
                        masters.push(PolledMaster {
                            game: game.clone(),
                            master: m.clone(),
                            listed: None,
                            dropped: 0,
                            error: Some(e.clone()),
                        });
                    }
                }
            }
        }
        let from_masters = targets.len();
        for source in sources {
            let game = &source.game;
            for (text, addr) in self.resolve(&source.servers, game.default_port()).await {
                match addr {
                    Ok(a) => {
                        if seen.insert(a) {
                            targets.push((game.clone(), a));
                        }
                    }
                    Err(e) => failed.push(Record::failed(
                        Some(text),
                        game.id(),
                        Status::Error,
                        e.to_string(),
                    )),
                }
            }
        }
        let mut records: Vec<Option<Record>> = vec![None; targets.len()];
        let mut scan = self.scan_each(targets).ask(ask).dedupe(false).indexed();
        while let Some(item) = scan.next().await {
            let mut record = crate::record::record(&item.game, item.addr, item.result);
            if let Some(loc) = locations.get(&item.addr) {
                with_location(&mut record, loc);
            }
            // Bounded as it arrives, not after the scan (ServerInfo::cap).
            if let Some(info) = record.info.as_mut() {
                info.cap();
            }
            if let Some(slot) = records.get_mut(item.index) {
                *slot = Some(record);
            }
        }
        let from_masters = records.iter().take(from_masters).flatten().count();
        let mut records: Vec<Record> = records.into_iter().flatten().collect();
        records.extend(failed);
        Polled {
            at,
            finished: unix_ms(),
            records,
            from_masters,
            masters,
        }
    }

    /// [`Client::poll`] of `sources` every `interval` (from the start of one scan to the start
    /// of the next; a scan that overruns is followed at once), each scan's records through a
    /// [`Differ`]: the events as a stream. The first scan is the baseline (see
    /// [`Watch::differ`] for `initial`). Players are asked for ([`Watch::ask`] to change it).
    ///
    /// Nothing is sent until the stream is first polled; dropping it stops the scans. A
    /// reader that falls behind holds the scans (at most [`WATCH_BUFFER`] events wait).
    ///
    /// ```no_run
    /// use futures_util::StreamExt;
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = fragstat::Client::builder().build()?;
    /// let q3 = fragstat::game("q3").ok_or("no q3")?;
    /// let source = fragstat::Source::new(&q3).masters(["127.0.0.1:27950"]);
    /// let mut events = client.watch(vec![source], std::time::Duration::from_secs(60));
    /// while let Some(e) = events.next().await {
    ///     println!("{} {}: {}", e.at, e.server, e.describe());
    ///     println!("{}", serde_json::to_string(&e)?);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn watch(&self, sources: Vec<Source>, interval: Duration) -> Watch {
        Watch {
            state: WatchState::Ready(Box::new(Plan {
                client: self.clone(),
                sources,
                interval: interval.max(Duration::from_millis(1)),
                ask: Ask::players(),
                differ: Differ::new(),
                scans: 0,
                #[cfg(feature = "quake3")]
                pushes: None,
            })),
        }
    }
}

/// Events waiting for a [`Watch`]'s reader at most.
pub const WATCH_BUFFER: usize = 1024;

struct Plan {
    client: Client,
    sources: Vec<Source>,
    interval: Duration,
    ask: Ask,
    differ: Differ,
    scans: u64,
    #[cfg(feature = "quake3")]
    pushes: Option<(std::net::UdpSocket, crate::events::push::PushLimits)>,
}

enum WatchState {
    Ready(Box<Plan>),
    Running {
        rx: mpsc::Receiver<Event>,
        task: tokio::task::JoinHandle<()>,
    },
    Done,
}

/// The events of [`Client::watch`], as a [`Stream`]. Ends after [`Watch::scans`] scans
/// (never by default).
#[must_use = "a watch does nothing until read"]
pub struct Watch {
    state: WatchState,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").finish_non_exhaustive()
    }
}

impl Watch {
    fn plan(&mut self) -> Option<&mut Plan> {
        match &mut self.state {
            WatchState::Ready(p) => Some(p),
            _ => None,
        }
    }

    /// What to ask each server (default: info and players). Before the first poll.
    pub fn ask(mut self, ask: Ask) -> Self {
        if let Some(p) = self.plan() {
            p.ask = ask;
        }
        self
    }

    /// The differ to use (its bounds, `initial`). Before the first poll.
    pub fn differ(mut self, differ: Differ) -> Self {
        if let Some(p) = self.plan() {
            p.differ = differ;
        }
        self
    }

    /// Stop after this many scans (0: never, the default). Before the first poll.
    pub fn scans(mut self, scans: u64) -> Self {
        if let Some(p) = self.plan() {
            p.scans = scans;
        }
        self
    }

    /// Also listens on `socket` for the events servers push (ET: Legacy's `sv_tracker`,
    /// [`crate::events::push`]): datagrams from the servers the last scan saw, within
    /// `limits`, become events at once (marked `pushed`); a scan's events a push already said
    /// are not repeated. Before the first poll; the socket is the caller's (bound, so its
    /// port is known before any server is pointed at it).
    #[cfg(feature = "quake3")]
    pub fn pushes(
        mut self,
        socket: std::net::UdpSocket,
        limits: crate::events::push::PushLimits,
    ) -> Self {
        if let Some(p) = self.plan() {
            p.pushes = Some((socket, limits));
        }
        self
    }
}

/// The push listener of a [`Watch`], shared by its receive task and its scans.
#[cfg(feature = "quake3")]
type SharedPushes = std::sync::Arc<std::sync::Mutex<crate::events::push::PushListener>>;

/// Aborts a task when dropped (the watch's receive task ends with its scans).
#[cfg(feature = "quake3")]
struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

#[cfg(feature = "quake3")]
impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            t.abort();
        }
    }
}

/// Receives pushes on `socket` until `tx` closes; each datagram's events sent at once.
#[cfg(feature = "quake3")]
async fn receive_pushes(
    socket: tokio::net::UdpSocket,
    pushes: SharedPushes,
    tx: mpsc::Sender<Event>,
) {
    let mut buf = vec![0u8; fragstat_core::MAX_DATAGRAM];
    loop {
        let (n, from) = match socket.recv_from(&mut buf).await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!("push receive: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let events = {
            let mut p = pushes.lock().unwrap_or_else(|e| e.into_inner());
            let datagram = buf.get(..n).unwrap_or_default();
            p.handle(std::time::Instant::now(), unix_ms(), from, datagram)
        };
        for e in events.unwrap_or_default() {
            if tx.send(e).await.is_err() {
                return;
            }
        }
    }
}

async fn run(plan: Plan, tx: mpsc::Sender<Event>) {
    let Plan {
        client,
        sources,
        interval,
        ask,
        mut differ,
        scans,
        #[cfg(feature = "quake3")]
        pushes,
    } = plan;
    #[cfg(feature = "quake3")]
    let (pushes, _receiver) = match pushes {
        Some((socket, limits)) => {
            let listener =
                crate::events::push::PushListener::new(limits, std::time::Instant::now());
            let shared: SharedPushes = std::sync::Arc::new(std::sync::Mutex::new(listener));
            let task = socket
                .set_nonblocking(true)
                .and_then(|()| tokio::net::UdpSocket::from_std(socket))
                .map(|s| tokio::spawn(receive_pushes(s, shared.clone(), tx.clone())));
            match task {
                Ok(t) => (Some(shared), AbortOnDrop(Some(t))),
                Err(e) => {
                    tracing::warn!("not listening for pushes: {e}");
                    (None, AbortOnDrop(None))
                }
            }
        }
        None => (None, AbortOnDrop(None)),
    };
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n = 0u64;
    loop {
        ticker.tick().await;
        let polled = client.poll(&sources, ask).await;
        for m in &polled.masters {
            if let Some(e) = &m.error {
                tracing::warn!(master = %m.master, game = %m.game, "no list: {e}");
            }
        }
        #[allow(unused_mut)]
        let mut events = differ.update(polled.at, &polled.records);
        #[cfg(feature = "quake3")]
        if let Some(p) = &pushes {
            let mut p = p.lock().unwrap_or_else(|e| e.into_inner());
            events = p.reconcile(polled.at, &polled.records, events);
            p.know(&polled.records);
        }
        for e in events {
            if tx.send(e).await.is_err() {
                return;
            }
        }
        n += 1;
        if scans > 0 && n >= scans {
            return;
        }
    }
}

impl Stream for Watch {
    type Item = Event;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        loop {
            match &mut self.state {
                WatchState::Ready(_) => {
                    let WatchState::Ready(plan) =
                        std::mem::replace(&mut self.state, WatchState::Done)
                    else {
                        continue;
                    };
                    let (tx, rx) = mpsc::channel(WATCH_BUFFER);
                    let task = tokio::spawn(run(*plan, tx));
                    self.state = WatchState::Running { rx, task };
                }
                WatchState::Running { rx, .. } => {
                    let r = rx.poll_recv(cx);
                    if let Poll::Ready(None) = r {
                        self.state = WatchState::Done;
                    }
                    return r;
                }
                WatchState::Done => return Poll::Ready(None),
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let WatchState::Running { task, .. } = &self.state {
            task.abort();
        }
    }
}

#[cfg(test)]
mod location_tests {
    use fragstat_core::model::ServerInfo;

    use super::*;

    /// Any game's probed record takes its list's location, unless it says one itself; a
    /// record without an answer has nowhere to put it.
    #[test]
    fn a_probed_record_takes_its_lists_location() {
        let mut info = ServerInfo::default();
        let mut r = Record::online(Some("127.0.0.1:1".into()), "any", info.clone(), None);
        with_location(&mut r, "eu:de");
        assert_eq!(r.info.unwrap().location.as_deref(), Some("eu:de"));
        info.location = Some("na:us".into());
        let mut r = Record::online(Some("127.0.0.1:1".into()), "any", info, None);
        with_location(&mut r, "eu:de");
        assert_eq!(r.info.unwrap().location.as_deref(), Some("na:us"));
        let mut r = Record::failed(None, "any", Status::Timeout, "x".into());
        with_location(&mut r, "eu:de");
        assert!(r.info.is_none());
    }
}
