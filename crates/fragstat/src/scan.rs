//! [`Scan`]: many servers at once, as a stream of results.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use fragstat_core::model::ServerInfo;
use fragstat_core::registry::{Ask, GameRef};
use fragstat_core::{Batch, Exchange, Outcome};
use futures_core::Stream;
use tokio::sync::mpsc;

use crate::client::{Client, Response};
use crate::error::Error;

type Job = (SocketAddr, Box<dyn Exchange<Output = ServerInfo>>);

/// Where a scan's servers come from.
enum Input {
    /// A list (or any iterator), taken as the scan needs more.
    Iter(Box<dyn Iterator<Item = (GameRef, SocketAddr)> + Send>),
    /// Servers that arrive while the scan runs (a master list still coming in).
    Stream(Pin<Box<dyn Stream<Item = (GameRef, SocketAddr)> + Send>>),
}

enum State {
    /// Not started: starts on the first poll, so settings can still be changed.
    Ready(Input),
    Running {
        batch: Batch<ServerInfo>,
        /// The game of each job, by index (for stream input the index is the order jobs
        /// were fed).
        games: GameOf,
    },
    Failed(Option<Error>),
    Done,
}

/// How to find a result's game: one game for the whole scan, or one per job.
enum GameOf {
    One(GameRef),
    /// Filled by the job feeder as it goes (stream input of several games).
    Each(std::sync::Arc<std::sync::Mutex<Vec<GameRef>>>),
}

/// A scan: the servers' results as they come, `(address, result)`, each server once.
///
/// Queries start only as the stream is read: a reader that stops holds the scan where it
/// is (a bounded number of queries in flight and results waiting), however long the list.
/// Made by [`Client::scan`] (one game) or [`Client::scan_each`] (a game per server), and
/// [`Client::scan_stream`] for servers that are still arriving.
///
/// ```no_run
/// # async fn run(client: fragstat::Client, addrs: Vec<std::net::SocketAddr>) {
/// use futures_util::StreamExt;
/// let q3 = fragstat::game("q3").unwrap();
/// let mut scan = client.scan(&q3, addrs).players();
/// while let Some((addr, result)) = scan.next().await {
///     match result {
///         Ok(r) => println!("{addr}: {} ({} players)", r.info.name, r.info.num_players),
///         Err(e) => println!("{addr}: {e}"),
///     }
/// }
/// # }
/// ```
#[must_use = "a scan does nothing until read"]
pub struct Scan {
    client: Client,
    ask: Ask,
    dedupe: bool,
    /// Overrides the client's deadline for this scan.
    deadline: Option<Option<std::time::Duration>>,
    /// Overrides the client's timeout, retries, concurrency and rate for this scan.
    overrides: Overrides,
    /// The game of every server, when the scan has one.
    one_game: Option<GameRef>,
    /// The game an error of a scan that cannot start is reported under.
    fallback: Option<GameRef>,
    state: State,
}

impl std::fmt::Debug for Scan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("ask", &self.ask)
            .field("dedupe", &self.dedupe)
            .finish_non_exhaustive()
    }
}

/// One result of [`Scan::indexed`]: the position of the server in the input (counting
/// each server once).
#[derive(Debug)]
pub struct ScanItem {
    /// Position in the input (duplicates not counted).
    pub index: usize,
    /// The server's game.
    pub game: GameRef,
    /// The server.
    pub addr: SocketAddr,
    /// Its answer.
    pub result: Result<Response, Error>,
}

impl Client {
    /// Scans `addrs`, all servers of `game`.
    pub fn scan(&self, game: &GameRef, addrs: impl IntoIterator<Item = SocketAddr>) -> Scan {
        let g = game.clone();
        let list: Vec<SocketAddr> = addrs.into_iter().collect();
        Scan::new(
            self.clone(),
            Some(game.clone()),
            Input::Iter(Box::new(list.into_iter().map(move |a| (g.clone(), a)))),
        )
    }

    /// Scans servers of several games at once, each with its own game's query.
    pub fn scan_each(&self, targets: impl IntoIterator<Item = (GameRef, SocketAddr)>) -> Scan {
        let list: Vec<(GameRef, SocketAddr)> = targets.into_iter().collect();
        // The first server's game names the error of a scan that cannot start.
        let first = list.first().map(|(g, _)| g.clone());
        let mut scan = Scan::new(self.clone(), None, Input::Iter(Box::new(list.into_iter())));
        scan.fallback = first;
        scan
    }

    /// Scans servers as they arrive on `addrs` (a master list still coming in): queries
    /// start as soon as addresses come, and the scan ends when the stream has ended and
    /// every query has finished.
    pub fn scan_stream(
        &self,
        game: &GameRef,
        addrs: impl Stream<Item = SocketAddr> + Send + 'static,
    ) -> Scan {
        let g = game.clone();
        let stream = Mapped {
            inner: Box::pin(addrs),
            game: g,
        };
        Scan::new(
            self.clone(),
            Some(game.clone()),
            Input::Stream(Box::pin(stream)),
        )
    }
}

/// A stream of addresses paired with one game.
struct Mapped {
    inner: Pin<Box<dyn Stream<Item = SocketAddr> + Send>>,
    game: GameRef,
}

impl Stream for Mapped {
    type Item = (GameRef, SocketAddr);
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(a)) => Poll::Ready(Some((this.game.clone(), a))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A scan's own settings in place of its client's ([`Scan::timeout`], [`Scan::retries`],
/// [`Scan::concurrency`], [`Scan::rate`]).
#[derive(Debug, Clone, Copy, Default)]
struct Overrides {
    timeout: Option<std::time::Duration>,
    retries: Option<u32>,
    concurrency: Option<usize>,
    rate: Option<Option<u32>>,
}

impl Overrides {
    fn apply(self, mut options: fragstat_core::Options) -> fragstat_core::Options {
        if let Some(t) = self.timeout {
            options = options.with_timeout(t);
        }
        if let Some(r) = self.retries {
            options = options.with_retries(r);
        }
        if let Some(c) = self.concurrency {
            options = options.with_concurrency(c);
        }
        if let Some(r) = self.rate {
            options = options.with_rate(r);
        }
        options
    }
}

/// Jobs fed to a channel batch at most this far ahead of the queries that can start.
const FEED_AHEAD: usize = 64;

impl Scan {
    fn new(client: Client, one_game: Option<GameRef>, input: Input) -> Scan {
        Scan {
            client,
            ask: Ask::info(),
            dedupe: true,
            deadline: None,
            overrides: Overrides::default(),
            fallback: one_game.clone(),
            one_game,
            state: State::Ready(input),
        }
    }

    /// Also each server's players.
    pub fn players(mut self) -> Self {
        self.ask = self.ask.with_players(true);
        self
    }

    /// Also every server variable (and the players where they come together).
    pub fn rules(mut self) -> Self {
        self.ask = self.ask.with_players(true).with_rules(true);
        self
    }

    /// What to ask each server.
    pub fn ask(mut self, ask: Ask) -> Self {
        self.ask = ask;
        self
    }

    /// A bound on this scan as a whole (instead of the client's
    /// [`crate::ClientBuilder::deadline`]): queries still running then end with
    /// [`Error::Deadline`].
    pub fn deadline(mut self, deadline: Option<std::time::Duration>) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// This scan's attempt timeout (instead of the client's [`crate::ClientBuilder::timeout`]).
    pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.overrides.timeout = Some(timeout);
        self
    }

    /// This scan's retries (instead of the client's [`crate::ClientBuilder::retries`]).
    pub fn retries(mut self, retries: u32) -> Self {
        self.overrides.retries = Some(retries);
        self
    }

    /// This scan's queries in flight at once (instead of the client's
    /// [`crate::ClientBuilder::concurrency`]; at least 1).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.overrides.concurrency = Some(concurrency.max(1));
        self
    }

    /// This scan's datagrams per second (instead of the client's
    /// [`crate::ClientBuilder::rate`]; `None`: as fast as the socket takes them).
    pub fn rate(mut self, rate: Option<u32>) -> Self {
        self.overrides.rate = Some(rate.filter(|r| *r > 0));
        self
    }

    /// Ask a server listed twice once (default true).
    pub fn dedupe(mut self, dedupe: bool) -> Self {
        self.dedupe = dedupe;
        self
    }

    /// The same results with each server's position in the input.
    pub fn indexed(self) -> Indexed {
        Indexed { scan: self }
    }

    /// The next result if one is ready now, without waiting (`None` also before the scan
    /// has started: poll it first).
    pub fn try_next(&mut self) -> Option<(SocketAddr, Result<Response, Error>)> {
        self.try_next_item().map(|i| (i.addr, i.result))
    }

    fn try_next_item(&mut self) -> Option<ScanItem> {
        match &mut self.state {
            State::Running { batch, games } => loop {
                let o = batch.try_next()?;
                if let Some(i) = item(o, games) {
                    return Some(i);
                }
            },
            _ => None,
        }
    }

    fn start(&mut self, input: Input) -> Result<State, Error> {
        let engine = self.client.engine_for_scan()?;
        let mut options = self.overrides.apply(self.client.options());
        if let Some(d) = self.deadline {
            options = options.with_deadline(d);
        }
        let ask = self.ask;
        let dedupe = self.dedupe;
        let mut seen: HashSet<SocketAddr, foldhash::fast::RandomState> = HashSet::default();
        let mut first = move |a: SocketAddr| !dedupe || seen.insert(fragstat_core::canonical(a));
        match input {
            Input::Iter(iter) => {
                let (games, shared) = match &self.one_game {
                    Some(g) => (GameOf::One(g.clone()), None),
                    None => {
                        let shared = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
                        (GameOf::Each(shared.clone()), Some(shared))
                    }
                };
                let jobs = iter.filter(move |(_, a)| first(*a)).map(move |(g, a)| {
                    if let Some(s) = &shared {
                        s.lock().unwrap_or_else(|e| e.into_inner()).push(g.clone());
                    }
                    (a, crate::error::server_query(&g, a, ask))
                });
                let batch = engine.run_iter(jobs, options);
                Ok(State::Running { batch, games })
            }
            Input::Stream(mut stream) => {
                let (tx, rx) = mpsc::channel::<Job>(FEED_AHEAD);
                let shared = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
                let games = match &self.one_game {
                    Some(g) => GameOf::One(g.clone()),
                    None => GameOf::Each(shared.clone()),
                };
                let record_games = self.one_game.is_none();
                tokio::spawn(async move {
                    while let Some((g, a)) =
                        std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await
                    {
                        if !first(a) {
                            continue;
                        }
                        if record_games {
                            shared
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(g.clone());
                        }
                        let job = (a, crate::error::server_query(&g, a, ask));
                        if tx.send(job).await.is_err() {
                            return;
                        }
                    }
                });
                let batch = engine.run_receiver(rx, options);
                Ok(State::Running { batch, games })
            }
        }
    }

    fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<ScanItem>> {
        loop {
            match &mut self.state {
                State::Ready(_) => {
                    let State::Ready(input) = std::mem::replace(&mut self.state, State::Done)
                    else {
                        continue;
                    };
                    self.state = match self.start(input) {
                        Ok(s) => s,
                        Err(e) => State::Failed(Some(e)),
                    };
                }
                State::Running { batch, games } => {
                    return match batch.poll_next_unpin(cx) {
                        Poll::Ready(Some(o)) => match item(o, games) {
                            Some(i) => Poll::Ready(Some(i)),
                            None => continue,
                        },
                        Poll::Ready(None) => {
                            self.state = State::Done;
                            Poll::Ready(None)
                        }
                        Poll::Pending => Poll::Pending,
                    };
                }
                State::Failed(e) => {
                    // A scan that could not start (no socket) ends with that error once.
                    let Some(e) = e.take() else {
                        self.state = State::Done;
                        return Poll::Ready(None);
                    };
                    let addr = SocketAddr::from(([0, 0, 0, 0], 0));
                    // Nothing to report against when the input was empty.
                    let Some(game) = self.fallback.clone() else {
                        self.state = State::Done;
                        return Poll::Ready(None);
                    };
                    return Poll::Ready(Some(ScanItem {
                        index: 0,
                        game,
                        addr,
                        result: Err(e),
                    }));
                }
                State::Done => return Poll::Ready(None),
            }
        }
    }
}

trait PollNext<T> {
    fn poll_next_unpin(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>>;
}

impl<O> PollNext<Outcome<O>> for Batch<O> {
    fn poll_next_unpin(&mut self, cx: &mut Context<'_>) -> Poll<Option<Outcome<O>>> {
        Pin::new(self).poll_next(cx)
    }
}

/// The item of an outcome; `None` only if its job's game was not recorded, which cannot
/// happen (a job's game is recorded before its query is made).
fn item(o: Outcome<ServerInfo>, games: &GameOf) -> Option<ScanItem> {
    let game = match games {
        GameOf::One(g) => g.clone(),
        GameOf::Each(all) => all
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(o.index)?
            .clone(),
    };
    let result = match o.result {
        Ok(info) => Ok(Response {
            addr: o.addr,
            info,
            rtt: o.rtt,
            attempts: o.attempts,
        }),
        // Port 0 was refused before anything was sent: say why.
        Err(e) => Err(crate::error::queryable(&o.addr.to_string(), o.addr)
            .err()
            .unwrap_or_else(|| Error::from(e))),
    };
    Some(ScanItem {
        index: o.index,
        game,
        addr: o.addr,
        result,
    })
}

impl Stream for Scan {
    type Item = (SocketAddr, Result<Response, Error>);
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut()
            .poll_item(cx)
            .map(|o| o.map(|i| (i.addr, i.result)))
    }
}

/// [`Scan`] with each server's position in the input ([`Scan::indexed`]).
#[derive(Debug)]
#[must_use = "a scan does nothing until read"]
pub struct Indexed {
    scan: Scan,
}

impl Indexed {
    /// The next result if one is ready now, without waiting.
    pub fn try_next(&mut self) -> Option<ScanItem> {
        self.scan.try_next_item()
    }
}

impl Stream for Indexed {
    type Item = ScanItem;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().scan.poll_item(cx)
    }
}
