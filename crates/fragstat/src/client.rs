//! [`Client`]: query servers, ask masters, scan lists — the library's front door.

use std::future::{Future, IntoFuture};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fragstat_core::manners::Ledger;
use fragstat_core::model::ServerInfo;
use fragstat_core::registry::{Ask, GameRef};
use fragstat_core::resolve::Target as Target2;
use fragstat_core::{Engine, Options, Transport, UdpTransport};

use crate::flight::{Flights, Key};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::filter::{ListFilter, ListLimits};

/// The one defaults table ([`fragstat_core::defaults`]): the [`ClientBuilder`]'s settings,
/// [`Options::default`], `fragstat query` / `master` / `watch` and the tracker all start
/// from it.
pub use fragstat_core::defaults;

/// Settings of a [`Client`]; start from [`Client::builder`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    pub(crate) timeout: Duration,
    pub(crate) min_timeout: Duration,
    pub(crate) adaptive: bool,
    pub(crate) retries: u32,
    pub(crate) concurrency: usize,
    pub(crate) rate: Option<u32>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) master_timeout: Duration,
    pub(crate) master_quiet: Duration,
    pub(crate) resolve_timeout: Duration,
    pub(crate) http_timeout: Duration,
    pub(crate) filter: ListFilter,
    pub(crate) limits: ListLimits,
    pub(crate) new_port_per_scan: bool,
    transports: Option<Transports>,
}

/// Transports given by the caller ([`ClientBuilder::transports`]).
#[derive(Clone)]
struct Transports(Option<Arc<dyn Transport>>, Option<Arc<dyn Transport>>);

impl std::fmt::Debug for Transports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transports")
            .field("v4", &self.0.as_ref().map(|t| t.local_addr().ok()))
            .field("v6", &self.1.as_ref().map(|t| t.local_addr().ok()))
            .finish()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            timeout: defaults::TIMEOUT,
            min_timeout: defaults::MIN_TIMEOUT,
            adaptive: true,
            retries: defaults::RETRIES,
            concurrency: defaults::CONCURRENCY,
            rate: None,
            deadline: None,
            master_timeout: defaults::MASTER_TIMEOUT,
            master_quiet: defaults::MASTER_QUIET,
            resolve_timeout: defaults::RESOLVE_TIMEOUT,
            http_timeout: defaults::HTTP_TIMEOUT,
            filter: ListFilter::default(),
            limits: ListLimits::default(),
            new_port_per_scan: false,
            transports: None,
        }
    }
}

impl ClientBuilder {
    /// How long one attempt waits at most ([`defaults::TIMEOUT`]).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The shortest adaptive timeout ([`defaults::MIN_TIMEOUT`]).
    #[must_use]
    pub fn min_timeout(mut self, min_timeout: Duration) -> Self {
        self.min_timeout = min_timeout;
        self
    }

    /// Adaptive timeouts (on by default): once servers have answered, an attempt that is
    /// not the last is retried after the measured round trip plus four times its variation,
    /// doubled per retry. Off: every attempt waits the whole timeout.
    #[must_use]
    pub fn adaptive(mut self, adaptive: bool) -> Self {
        self.adaptive = adaptive;
        self
    }

    /// Retries after the first attempt ([`defaults::RETRIES`]).
    #[must_use]
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Queries in flight at once ([`defaults::CONCURRENCY`]).
    #[must_use]
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// At most this many datagrams per second (`None`: as fast as the socket takes them).
    #[must_use]
    pub fn rate(mut self, rate: Option<u32>) -> Self {
        self.rate = rate.filter(|r| *r > 0);
        self
    }

    /// A bound on each scan as a whole: queries still running then end with
    /// [`Error::Deadline`].
    #[must_use]
    pub fn deadline(mut self, deadline: Option<Duration>) -> Self {
        self.deadline = deadline;
        self
    }

    /// How long a master's list may keep its query waiting ([`defaults::MASTER_TIMEOUT`]).
    #[must_use]
    pub fn master_timeout(mut self, timeout: Duration) -> Self {
        self.master_timeout = timeout;
        self
    }

    /// Once a master has sent a datagram of its list, how long it may stay quiet before the
    /// list is taken as whole ([`defaults::MASTER_QUIET`]): the end of lists that carry no
    /// end-of-list marker (id's, etmaster.net's, Tremulous' masters), sooner than
    /// [`ClientBuilder::master_timeout`]. Zero: the master timeout.
    #[must_use]
    pub fn master_quiet(mut self, quiet: Duration) -> Self {
        self.master_quiet = quiet;
        self
    }

    /// How long a host name may take to resolve ([`defaults::RESOLVE_TIMEOUT`]).
    #[must_use]
    pub fn resolve_timeout(mut self, timeout: Duration) -> Self {
        self.resolve_timeout = timeout;
        self
    }

    /// How long an HTTP master list may take ([`defaults::HTTP_TIMEOUT`]).
    #[must_use]
    pub fn http_timeout(mut self, timeout: Duration) -> Self {
        self.http_timeout = timeout;
        self
    }

    /// Which addresses of master lists are kept (default: public unicast only; see
    /// [`ListFilter`]).
    #[must_use]
    pub fn list_filter(mut self, filter: ListFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Bounds on master lists (see [`ListLimits`]).
    #[must_use]
    pub fn list_limits(mut self, limits: ListLimits) -> Self {
        self.limits = limits;
        self
    }

    /// A new local port for every scan and master list (default off): servers probed in one
    /// round cannot learn where the next round's replies go (a forger then has to guess the
    /// port as well as the challenge).
    #[must_use]
    pub fn new_port_per_scan(mut self, renew: bool) -> Self {
        self.new_port_per_scan = renew;
        self
    }

    /// Sends and receives through these transports instead of binding UDP sockets (a
    /// simulated network in tests, sockets bound by the caller). Implies one port for
    /// every scan.
    #[must_use]
    pub fn transports(
        mut self,
        v4: Option<Arc<dyn Transport>>,
        v6: Option<Arc<dyn Transport>>,
    ) -> Self {
        self.transports = Some(Transports(v4, v6));
        self
    }

    /// The client. Nothing is bound yet and no runtime is needed: the sockets (one per
    /// address family; IPv6 where the host has it) are bound by the first query, list or
    /// scan, inside its tokio runtime, and a failure to bind is that call's [`Error::Io`].
    ///
    /// Not `async` since issue 32 (it awaited nothing): `build()?`, not `build().await?`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a zero timeout.
    pub fn build(self) -> Result<Client, Error> {
        if self.timeout.is_zero() || self.master_timeout.is_zero() {
            return Err(Error::InvalidInput("timeouts must be above zero".into()));
        }
        Ok(self.into_client())
    }

    /// The client, settings unchecked (the defaults need no check).
    fn into_client(self) -> Client {
        Client {
            inner: Arc::new(Inner {
                engine: Mutex::new(None),
                #[cfg(feature = "http")]
                http: std::sync::OnceLock::new(),
                config: self,
                ledger: Ledger::new(),
                flights: Arc::default(),
            }),
        }
    }

    /// The engine over the given transports, or over newly bound sockets (inside a tokio
    /// runtime: outside one, an error rather than tokio's panic).
    fn make_engine(&self) -> Result<Engine, Error> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::Io(std::io::Error::other(
                "the client's sockets are bound inside a tokio runtime: query from one",
            )));
        }
        match &self.transports {
            Some(Transports(v4, v6)) => Ok(Engine::with_transports(v4.clone(), v6.clone())),
            None => bind_engine(),
        }
    }
}

/// One engine: a UDP socket per address family (IPv6 where the host has it).
fn bind_engine() -> Result<Engine, Error> {
    // ICMP errors reported (a closed port reads as down at once, not as a timeout).
    let v4 = UdpTransport::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0))?
        .report_unreachable()?;
    let v6 = UdpTransport::bind(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0))
        .and_then(UdpTransport::report_unreachable)
        .ok()
        .map(|t| Arc::new(t) as Arc<dyn Transport>);
    Ok(Engine::with_transports(Some(Arc::new(v4)), v6))
}

/// A client: sockets shared by every query, the settings of its [`ClientBuilder`], and (with
/// the `http` feature) an HTTP client for master lists. Cheap to clone; made without a
/// runtime ([`Client::new`], or [`Client::builder`] for other settings), its sockets bound
/// by the first query.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = fragstat::Client::new();
/// let q3 = fragstat::try_game("q3")?;
/// let r = client.query(&q3, "127.0.0.1:27960").players().await?;
/// println!("{} on {}: {} players", r.info.name, r.info.map, r.info.num_players);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    /// Bound by the first query (so that [`ClientBuilder::build`] needs no runtime).
    engine: Mutex<Option<Engine>>,
    /// Made on first use: loading the system's root certificates costs more than a whole
    /// UDP scan of 10,000 servers, and most clients never fetch an HTTP list.
    #[cfg(feature = "http")]
    http: std::sync::OnceLock<Result<reqwest::Client, crate::error::HttpSource>>,
    pub(crate) config: ClientBuilder,
    /// The per-server budgets every scan and query of this client spaces its queries by
    /// (whatever engine, whatever port: servers count queries per address).
    ledger: Ledger,
    /// Identical queries in flight ([`Client::query`]).
    flights: Arc<Flights>,
}

impl Inner {
    /// The HTTP client, made on first use.
    #[cfg(feature = "http")]
    pub(crate) fn http(&self) -> Result<reqwest::Client, Error> {
        self.http
            .get_or_init(|| crate::http::client(self.config.http_timeout))
            .clone()
            .map_err(|e| Error::Http {
                url: String::new(),
                status: None,
                reason: format!("cannot build the HTTP client: {e}"),
                source: Some(e),
            })
    }
}

impl Default for Client {
    fn default() -> Self {
        Client::new()
    }
}

impl Client {
    /// A client with the [`defaults`], like `reqwest::Client::new()`: infallible, and
    /// callable outside a runtime (the sockets are bound by the first query, which reports
    /// a failure to bind as [`Error::Io`]).
    pub fn new() -> Client {
        ClientBuilder::default().into_client()
    }

    /// Settings, starting from the [`defaults`].
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// The settings this client was built with.
    pub fn config(&self) -> &ClientBuilder {
        &self.inner.config
    }

    /// The engine for one scan or list: the shared one, or a fresh one (a new port) with
    /// [`ClientBuilder::new_port_per_scan`].
    pub(crate) fn engine_for_scan(&self) -> Result<Engine, Error> {
        let mut shared = self.inner.engine.lock().unwrap_or_else(|e| e.into_inner());
        let config = &self.inner.config;
        let renew = config.new_port_per_scan && config.transports.is_none();
        match &*shared {
            Some(engine) if !renew => Ok(engine.clone()),
            _ => {
                let engine = config.make_engine()?;
                *shared = Some(engine.clone());
                Ok(engine)
            }
        }
    }

    /// The engine's local addresses (the ports replies come to); binds the sockets if no
    /// query has yet (inside a tokio runtime), none when they cannot be bound.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        let mut shared = self.inner.engine.lock().unwrap_or_else(|e| e.into_inner());
        if shared.is_none() {
            *shared = self.inner.config.make_engine().ok();
        }
        shared.as_ref().map(Engine::local_addrs).unwrap_or_default()
    }

    /// Datagrams dropped because a scan's driver lagged behind a flood (see
    /// [`fragstat_core::Engine::dropped_datagrams`]).
    pub fn dropped_datagrams(&self) -> u64 {
        self.inner
            .engine
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0, Engine::dropped_datagrams)
    }

    /// Engine options for server queries.
    pub(crate) fn options(&self) -> Options {
        let c = &self.inner.config;
        Options::default()
            .with_timeout(c.timeout)
            .with_min_timeout(c.min_timeout)
            .with_adaptive(c.adaptive)
            .with_retries(c.retries)
            .with_concurrency(c.concurrency)
            .with_rate(c.rate)
            .with_deadline(c.deadline)
            .with_ledger(Some(self.inner.ledger.clone()))
    }

    /// One server: `target` is `HOST[:PORT]`, `IP[:PORT]`, `[IPv6]:PORT` (the game's port
    /// when none is given; names are resolved) or a `SocketAddr`. Await it, or first ask
    /// for more with [`Query::players`], [`Query::rules`].
    pub fn query(&self, game: &GameRef, target: impl Into<Target>) -> Query {
        Query {
            client: self.clone(),
            game: game.clone(),
            target: target.into(),
            ask: Ask::info(),
            timeout: None,
            retries: None,
        }
    }

    /// Resolves `targets` (`HOST[:PORT]`, `IP[:PORT]`, `[IPv6]:PORT`), with `default_port`
    /// where a target names none (a game's is
    /// [`Game::default_port`](fragstat_core::registry::Game::default_port)): at most 64
    /// lookups at once, each within [`ClientBuilder::resolve_timeout`]. The results come in
    /// the given order, each with its target's text.
    pub fn resolve(
        &self,
        targets: &[String],
        default_port: u16,
    ) -> impl Future<Output = Vec<(String, Result<SocketAddr, Error>)>> + Send + 'static {
        self.resolve_owned(targets.to_vec(), default_port)
    }

    /// [`Client::resolve`] of a list given away (no copy is made).
    pub fn resolve_owned(
        &self,
        targets: Vec<String>,
        default_port: u16,
    ) -> impl Future<Output = Vec<(String, Result<SocketAddr, Error>)>> + Send + 'static {
        // The future owns its list (one that borrowed it across an await would not be
        // `Send` for every lifetime: rust#64552).
        let timeout = self.inner.config.resolve_timeout;
        async move {
            fragstat_core::resolve::resolve_owned(targets, default_port, timeout)
                .await
                .into_iter()
                .map(|t| {
                    let Target2 { text, addr } = t;
                    let addr = crate::error::resolved(&text, addr);
                    (text, addr)
                })
                .collect()
        }
    }
}

/// A server or master as given: text to parse (and resolve), or an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `HOST[:PORT]`, `IP[:PORT]`, `[IPv6]:PORT`, or for HTTP masters a URL.
    Text(String),
    /// An address.
    Addr(SocketAddr),
}

impl Target {
    /// As text.
    pub fn text(&self) -> String {
        match self {
            Target::Text(t) => t.clone(),
            Target::Addr(a) => a.to_string(),
        }
    }
}

impl From<&str> for Target {
    fn from(s: &str) -> Self {
        Target::Text(s.to_string())
    }
}

impl From<String> for Target {
    fn from(s: String) -> Self {
        Target::Text(s)
    }
}

impl From<&String> for Target {
    fn from(s: &String) -> Self {
        Target::Text(s.clone())
    }
}

impl From<SocketAddr> for Target {
    fn from(a: SocketAddr) -> Self {
        Target::Addr(a)
    }
}

/// An IP address and a port, as [`SocketAddr`] takes them: `(IpAddr, u16)`,
/// `(Ipv4Addr, u16)`, `([127, 0, 0, 1], 27960)`…
impl<I: Into<IpAddr>> From<(I, u16)> for Target {
    fn from((ip, port): (I, u16)) -> Self {
        Target::Addr(SocketAddr::new(ip.into(), port))
    }
}

/// A server's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Response {
    /// The address asked.
    pub addr: SocketAddr,
    /// What it said.
    pub info: ServerInfo,
    /// Round-trip time of the attempt answered: an `Option`, `None` when the reply cannot
    /// be tied to one attempt (a game whose servers echo no challenge, answered after a
    /// retry).
    pub rtt: Option<Duration>,
    /// Attempts sent (1 when the first was answered).
    pub attempts: u32,
}

impl Response {
    /// The record every output format writes for it (docs/json.md).
    pub fn record(self, game: &str) -> fragstat_core::record::Record {
        fragstat_core::record::Record::online(
            Some(fragstat_core::record::addr_text(self.addr)),
            game,
            self.info,
            self.rtt,
        )
    }
}

/// One server query, from [`Client::query`]: await it.
#[derive(Debug)]
#[must_use = "a query does nothing until awaited"]
pub struct Query {
    client: Client,
    game: GameRef,
    target: Target,
    ask: Ask,
    timeout: Option<Duration>,
    retries: Option<u32>,
}

impl Query {
    /// Also the player list.
    pub fn players(mut self) -> Self {
        self.ask = self.ask.with_players(true);
        self
    }

    /// Also every server variable (and the players where they come together).
    pub fn rules(mut self) -> Self {
        self.ask = self.ask.with_players(true).with_rules(true);
        self
    }

    /// What to ask for.
    pub fn ask(mut self, ask: Ask) -> Self {
        self.ask = ask;
        self
    }

    /// This query's attempt timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// This query's retries.
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    fn run(self) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let Query {
            client,
            game,
            target,
            ask,
            timeout,
            retries,
        } = self;
        // The lookup's future owns its text: this future holds no borrow across an await.
        let (known, lookup) = match target {
            Target::Addr(a) => (Some(a), None),
            Target::Text(t) => (
                None,
                Some(client.resolve_owned(vec![t], game.default_port())),
            ),
        };
        async move {
            let addr = match (known, lookup) {
                (Some(a), _) => crate::error::queryable(&a.to_string(), a)?,
                (None, Some(lookup)) => match lookup.await.pop() {
                    Some((_, r)) => r?,
                    None => return Err(Error::Cancelled),
                },
                (None, None) => return Err(Error::Cancelled),
            };
            let key = Key::new(game.id(), addr, ask, timeout, retries);
            let flights = Arc::clone(&client.inner.flights);
            flights
                .join(key, ask_server(client, game, addr, ask, timeout, retries))
                .await
        }
    }
}

/// One query's flight: the server asked once for every identical [`Query`] in the air.
async fn ask_server(
    client: Client,
    game: GameRef,
    addr: SocketAddr,
    ask: Ask,
    timeout: Option<Duration>,
    retries: Option<u32>,
) -> Result<Response, Error> {
    let mut options = client.options();
    if let Some(t) = timeout {
        options = options.with_timeout(t);
    }
    if let Some(r) = retries {
        options = options.with_retries(r);
    }
    let engine = client.engine_for_scan()?;
    let mut batch = engine.run([(addr, game.server_query(ask))], options);
    let Some(o) = batch.next().await else {
        return Err(Error::Cancelled);
    };
    let info = o.result?;
    Ok(Response {
        addr: o.addr,
        info,
        rtt: o.rtt,
        attempts: o.attempts,
    })
}

impl IntoFuture for Query {
    type Output = Result<Response, Error>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Response, Error>> + Send>>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
