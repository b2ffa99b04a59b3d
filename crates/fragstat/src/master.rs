//! [`Client::master_list`]: every master of a game asked at once (UDP or HTTP, by the game's
//! master kind; with none given, every master of the game's catalogue), the lists filtered,
//! capped, merged and de-duplicated, with a report per master and, per server, the masters
//! that listed it.

use std::collections::BTreeMap;
use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use fragstat_core::model::MasterEntry;
use fragstat_core::registry::{CatalogueMaster, GameRef, HttpList, MasterOptions, MasterQuery};
use futures_core::Stream;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::client::{Client, Target};
use crate::error::Error;
use crate::filter::FilterReason;

mod catalogue;
mod dedupe;
pub use catalogue::catalogue_at;
mod http_list;
mod json;
mod merge;
mod tcp;
use http_list::spawn_http;
use merge::Merge;

/// One server of a merged list, and which masters listed it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Listed {
    /// The server (with what the master says of it, for lists that carry info).
    pub entry: MasterEntry,
    /// The masters that listed it: indexes into [`MasterList::reports`], first lister first.
    pub masters: Vec<usize>,
}

/// What one master answered.
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct MasterReport {
    /// The master as given (`HOST[:PORT]`, or a URL).
    pub master: String,
    /// The address asked (UDP masters).
    pub addr: Option<SocketAddr>,
    /// The URL fetched (HTTP masters).
    pub url: Option<String>,
    /// `online`, `timeout`, `error`, or `skipped` (a catalogue entry of another transport than
    /// the game's master query: a TCP entry in a caller's catalogue for a UDP game).
    pub status: &'static str,
    /// Why it gave no list.
    #[serde(serialize_with = "error_text")]
    pub error: Option<Error>,
    /// Round-trip time of its list (the first datagram for UDP; the whole body for HTTP).
    #[serde(rename = "rtt_ms", serialize_with = "millis")]
    pub rtt: Option<Duration>,
    /// Entries it listed.
    pub listed: usize,
    /// Of those, servers it added to the merged list.
    pub kept: usize,
    /// Of those, servers already in the list (from it or an earlier master).
    pub duplicates: usize,
    /// Of those, addresses left out by the [`crate::ListFilter`], per reason.
    #[serde(serialize_with = "reasons")]
    pub filtered: BTreeMap<FilterReason, usize>,
    /// Of those, ports over [`crate::ListLimits::max_ports_per_ip`] for their address (an
    /// IPv4 address, or an IPv6 /64: one host's network).
    pub over_ip_cap: usize,
    /// Entries past [`crate::ListLimits::max_entries_per_master`].
    pub over_entry_cap: usize,
    /// Servers left out because the merged list already held
    /// [`crate::ListLimits::max_servers_total`] (from every master of the poll).
    pub over_total_cap: usize,
    /// What the list's parser skipped (HTTP lists), each saying why.
    pub warnings: Vec<String>,
    /// The catalogue entry it was asked as (no master given): its form, protocols, end of
    /// list, source and the date that was checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalogue: Option<CatalogueMaster>,
}

fn error_text<S: serde::Serializer>(e: &Option<Error>, s: S) -> Result<S::Ok, S::Error> {
    match e {
        Some(e) => s.serialize_str(&e.to_string()),
        None => s.serialize_none(),
    }
}

fn millis<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e3),
        None => s.serialize_none(),
    }
}

fn reasons<S: serde::Serializer>(
    m: &BTreeMap<FilterReason, usize>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(m.len()))?;
    for (k, v) in m {
        map.serialize_entry(k.as_str(), v)?;
    }
    map.end()
}

impl MasterReport {
    fn new(master: String) -> Self {
        MasterReport {
            master,
            addr: None,
            url: None,
            status: "error",
            error: None,
            rtt: None,
            listed: 0,
            kept: 0,
            duplicates: 0,
            filtered: BTreeMap::new(),
            over_ip_cap: 0,
            over_entry_cap: 0,
            over_total_cap: 0,
            warnings: Vec::new(),
            catalogue: None,
        }
    }

    /// Entries left out for any reason (filtered, over a cap).
    pub fn dropped(&self) -> usize {
        self.filtered.values().sum::<usize>()
            + self.over_ip_cap
            + self.over_entry_cap
            + self.over_total_cap
    }

    /// It gave a list.
    pub fn is_online(&self) -> bool {
        self.error.is_none()
    }
}

/// The merged list of every master asked, and what each answered.
#[derive(Debug, Default)]
pub struct MasterList {
    entries: Vec<Listed>,
    reports: Vec<MasterReport>,
}

impl MasterList {
    /// Every server, each once, in the order listed (masters in the order given).
    pub fn servers(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.entries.iter().map(|l| l.entry.addr)
    }

    /// Every server with what its master says of it and which masters listed it.
    pub fn entries(&self) -> &[Listed] {
        &self.entries
    }

    /// The entries, moved out.
    pub fn into_entries(self) -> Vec<Listed> {
        self.entries
    }

    /// One report per master, in the order given.
    pub fn reports(&self) -> &[MasterReport] {
        &self.reports
    }

    /// The reports, given away (their errors owned, for keeping them typed).
    pub fn into_reports(self) -> Vec<MasterReport> {
        self.reports
    }

    /// Servers listed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No server listed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// At least one master gave a list (possibly empty).
    pub fn any_online(&self) -> bool {
        self.reports.iter().any(MasterReport::is_online)
    }
}

/// What a master list in progress reports ([`MasterListRequest::stream`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum MasterUpdate {
    /// A master's list arrived: the servers it added to the merged list.
    Listed {
        /// The master (index into the reports).
        master: usize,
        /// New servers, in its list's order.
        servers: Vec<SocketAddr>,
    },
    /// Every master has answered or failed.
    Done(MasterList),
}

/// A request for masters' lists, from [`Client::master_list`]: await it, or read it as a
/// [`MasterListRequest::stream`] to start on the first list while others still arrive.
#[derive(Debug)]
#[must_use = "a master list request does nothing until awaited"]
pub struct MasterListRequest {
    client: Client,
    game: GameRef,
    masters: Vec<Target>,
    options: MasterOptions,
    /// The catalogue asked when no master is given, instead of the game's.
    catalogue: Option<Vec<CatalogueMaster>>,
}

impl Client {
    /// Asks every master in `masters` for `game`'s servers: UDP masters (`HOST[:PORT]`, the
    /// game's master port by default) or HTTP lists (DDNet, ETQW: a URL, or `HOST[:PORT]` for
    /// the game's standard path), by the game's master kind. One master's failure is
    /// reported in its [`MasterReport`]; the others' lists are kept.
    ///
    /// With no master given, every master of the game's catalogue
    /// ([`Game::catalogue`](fragstat_core::registry::Game::catalogue), docs/catalogue.md)
    /// is asked, each with its own request form and protocols
    /// ([`MasterListRequest::catalogue`] substitutes another), and [`Listed::masters`] says
    /// which listed each server.
    pub fn master_list<T: Into<Target>>(
        &self,
        game: &GameRef,
        masters: impl IntoIterator<Item = T>,
    ) -> MasterListRequest {
        MasterListRequest {
            client: self.clone(),
            game: game.clone(),
            masters: masters.into_iter().map(Into::into).collect(),
            options: MasterOptions::default(),
            catalogue: None,
        }
    }
}

impl Client {
    /// Every master of `game`'s catalogue ([`Client::master_list`] with no master given,
    /// without naming the empty list's type).
    pub fn master_list_catalogue(&self, game: &GameRef) -> MasterListRequest {
        self.master_list(game, Vec::<Target>::new())
    }
}

impl MasterListRequest {
    /// The extended request where the game has one (Quake III `getserversExt`: IPv6
    /// servers too).
    pub fn ext(mut self, ext: bool) -> Self {
        self.options = self.options.with_ext(ext);
        self
    }

    /// The game name the master knows the game by.
    pub fn gamename(mut self, gamename: Option<String>) -> Self {
        self.options = self.options.with_gamename(gamename);
        self
    }

    /// The protocol number to ask the master for, overriding the game's own (Warsow 0.3's
    /// `getservers Warsow 9`); families whose request names none ignore it.
    pub fn protocol(mut self, protocol: Option<i32>) -> Self {
        self.options = self.options.with_protocol(protocol);
        self
    }

    /// Every master option at once.
    pub fn options(mut self, options: MasterOptions) -> Self {
        self.options = options;
        self
    }

    /// The catalogue to ask when no master is given, instead of the game's: a site's own
    /// mirrors, or in tests the game's entries pointed at emulated masters on loopback
    /// ([`CatalogueMaster::pointed_at`]), so that no test asks (or resolves) a real host.
    ///
    /// ```
    /// # fn f(client: fragstat::Client) {
    /// let rtcw = fragstat::game("rtcw").expect("a known game");
    /// let local: Vec<_> = rtcw
    ///     .catalogue()
    ///     .iter()
    ///     .map(|m| m.clone().pointed_at("127.0.0.1:27950".parse().unwrap()))
    ///     .collect();
    /// let request = client.master_list(&rtcw, Vec::<String>::new()).catalogue(local);
    /// # drop(request); }
    /// ```
    pub fn catalogue(mut self, masters: impl IntoIterator<Item = CatalogueMaster>) -> Self {
        self.catalogue = Some(masters.into_iter().collect());
        self
    }

    /// Updates as each master answers, then the merged list. The request is checked first
    /// (hence the `Result`); `MasterUpdate` may gain variants (hence the `_` arm).
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), fragstat::Error> {
    /// use futures_util::StreamExt;
    /// use fragstat::{Client, MasterUpdate};
    ///
    /// let client = Client::new();
    /// let q3 = fragstat::game("q3").expect("a known game");
    /// let mut updates = client.master_list(&q3, ["master.example.org"]).stream()?;
    /// let masters = updates.masters().to_vec();
    /// while let Some(update) = updates.next().await {
    ///     match update {
    ///         MasterUpdate::Listed { master, servers } => {
    ///             println!("{}: {} new servers", masters[master], servers.len());
    ///         }
    ///         MasterUpdate::Done(list) => println!("{} servers in all", list.len()),
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As for awaiting the request, before anything is sent.
    pub fn stream(self) -> Result<MasterStream, Error> {
        let plan = self.plan()?;
        let masters = plan.masters.iter().map(Target::text).collect();
        let (tx, rx) = mpsc::channel(16);
        let client = self.client.clone();
        let reader = tx.clone();
        tokio::spawn(async move {
            // A stream dropped before the end stops its masters' queries.
            tokio::select! {
                () = reader.closed() => {}
                _ = run(client, plan, Some(tx)) => {}
            }
        });
        Ok(MasterStream { rx, masters })
    }

    /// Checks the request: the game's master kind and the options.
    fn plan(&self) -> Result<Plan, Error> {
        let (masters, specs) = if self.masters.is_empty() {
            catalogue::masters(&self.game, self.catalogue.as_deref())?
        } else {
            (self.masters.clone(), vec![None; self.masters.len()])
        };
        let kind = self.game.master_query(&self.options).map_err(Error::from)?;
        let mut tcp = None;
        let http = match kind {
            MasterQuery::Udp(_) => None,
            MasterQuery::Http { default_url, parse } => Some((default_url, parse)),
            MasterQuery::Tcp { request, parse } => {
                tcp = Some((request, parse));
                None
            }
            _ => {
                return Err(Error::InvalidInput(format!(
                    "{}: unknown kind of master",
                    self.game.id()
                )))
            }
        };
        if http.is_none() && tcp.is_none() && self.game.master_port().is_none() {
            return Err(Error::InvalidInput(format!(
                "{} has no UDP master port",
                self.game.id()
            )));
        }
        Ok(Plan {
            game: self.game.clone(),
            masters,
            specs,
            options: self.options.clone(),
            http,
            tcp,
        })
    }
}

impl IntoFuture for MasterListRequest {
    type Output = Result<MasterList, Error>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<MasterList, Error>> + Send>>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let plan = self.plan()?;
            Ok(run(self.client, plan, None).await)
        })
    }
}

/// Updates of a master list in progress.
#[derive(Debug)]
pub struct MasterStream {
    rx: mpsc::Receiver<MasterUpdate>,
    masters: Vec<String>,
}

impl MasterStream {
    /// The masters as given, in order: `MasterUpdate::Listed { master, .. }` indexes this
    /// (and the reports of the final list).
    pub fn masters(&self) -> &[String] {
        &self.masters
    }
}

impl Stream for MasterStream {
    type Item = MasterUpdate;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<MasterUpdate>> {
        self.rx.poll_recv(cx)
    }
}

type HttpParse = fn(&[u8]) -> Result<HttpList, fragstat_core::DecodeError>;

/// A checked request.
struct Plan {
    game: GameRef,
    masters: Vec<Target>,
    /// The catalogue entry of each master (`None`: given by the caller).
    specs: Vec<Option<CatalogueMaster>>,
    options: MasterOptions,
    /// The HTTP list's standard URL and parser, for games with an HTTP master.
    http: Option<(Option<&'static str>, HttpParse)>,
    /// The request and the stream's parser, for games with a TCP master (CoD4X).
    tcp: Option<(Vec<u8>, HttpParse)>,
}

/// One master's outcome before merging.
struct Answer {
    index: usize,
    /// Which of the master's requests (one per catalogue protocol) it answers.
    round: usize,
    addr: Option<SocketAddr>,
    url: Option<String>,
    rtt: Option<Duration>,
    result: Result<Vec<MasterEntry>, Error>,
    warnings: Vec<String>,
    /// Not asked (a catalogue master of a transport this build cannot use).
    skipped: bool,
}

/// Asks every master and merges: answers in the order given for the final list; with
/// `updates`, each master's new servers are sent as it answers (merged in the order they
/// answer, so the stream and the final list agree).
async fn run(
    client: Client,
    plan: Plan,
    updates: Option<mpsc::Sender<MasterUpdate>>,
) -> MasterList {
    let (tx, mut rx) = mpsc::unbounded_channel::<Answer>();
    let n = plan.masters.len();
    match (plan.http, &plan.tcp) {
        (Some((default_url, parse)), _) => spawn_http(&client, &plan, default_url, parse, &tx),
        (None, Some((request, parse))) => {
            tcp::spawn_tcp(&client, &plan, request.clone(), *parse, &tx).await;
        }
        (None, None) => spawn_udp(&client, &plan, &tx).await,
    }
    drop(tx);
    let mut merge = Merge::new(&client, n, &plan.masters, &plan.specs);
    if let Some(updates) = updates {
        while let Some(a) = rx.recv().await {
            let index = a.index;
            let servers = merge.add(a);
            if !servers.is_empty() {
                let _ = updates
                    .send(MasterUpdate::Listed {
                        master: index,
                        servers,
                    })
                    .await;
            }
        }
        let _ = updates.send(MasterUpdate::Done(merge.finish())).await;
        MasterList::default()
    } else {
        let mut answers: Vec<Answer> = Vec::with_capacity(n);
        while let Some(a) = rx.recv().await {
            answers.push(a);
        }
        answers.sort_by_key(|a| (a.index, a.round));
        for a in answers {
            merge.add(a);
        }
        merge.finish()
    }
}

async fn spawn_udp(client: &Client, plan: &Plan, tx: &mpsc::UnboundedSender<Answer>) {
    let port = plan.game.master_port().unwrap_or(0);
    let texts: Vec<String> = plan.masters.iter().map(Target::text).collect();
    // Every name at once (addresses need no lookup).
    let resolved = client.resolve(&texts, port).await;
    let quiet = client.config().master_quiet;
    // Each master's requests: one, or one per catalogue protocol.
    let mut requests = Vec::new();
    for (i, (t, (_, r))) in plan.masters.iter().zip(resolved).enumerate() {
        let spec = plan.specs.get(i).and_then(Option::as_ref);
        if let Some(e) = catalogue::not_asked(spec) {
            let _ = tx.send(Answer::failed(i, None, None, e).skipped());
            continue;
        }
        let resolved = match t {
            Target::Addr(a) => crate::error::queryable(&a.to_string(), *a),
            Target::Text(_) => r,
        };
        match resolved {
            Ok(addr) => {
                for options in catalogue::requests(&plan.options, spec, quiet) {
                    requests.push((i, addr, options));
                }
            }
            Err(e) => send(tx, i, None, None, Err(e)),
        }
    }
    if requests.is_empty() {
        return;
    }
    let engine = match client.engine_for_scan() {
        Ok(e) => e,
        Err(e) => {
            for (i, _, _) in requests {
                send(
                    tx,
                    i,
                    None,
                    None,
                    Err(Error::Io(std::io::Error::other(e.to_string()))),
                );
            }
            return;
        }
    };
    // A list's bytes are bounded by its entry cap (an IPv6 entry is 19 bytes, a datagram's
    // header and marker a few dozen): a master that sends more ends its query, so a hostile
    // one cannot make the client hold megabytes it will not use.
    let max_entries = client.config().limits.max_entries_per_master;
    let options = client
        .options()
        .with_timeout(client.config().master_timeout)
        .with_max_bytes(max_entries.saturating_mul(24).saturating_add(1 << 16));
    let rounds = catalogue::rounds(requests);
    let work = ask_rounds(engine, plan.game.clone(), rounds, options, tx.clone());
    tokio::spawn(while_wanted(tx.clone(), work));
}

/// Runs a master's `work` until it ends or nobody waits for its answers any more (the
/// request was dropped: a cancelled call, an aborted signal in the Node.js binding), so its
/// queries (later rounds, other protocols) stop with the request.
async fn while_wanted(tx: mpsc::UnboundedSender<Answer>, work: impl Future<Output = ()>) {
    tokio::select! {
        () = tx.closed() => {}
        () = work => {}
    }
}

/// Asks the masters round by round ([`catalogue::rounds`]: no address twice at once) and
/// sends each answer as it comes.
async fn ask_rounds(
    engine: fragstat_core::Engine,
    game: GameRef,
    rounds: Vec<Vec<(usize, SocketAddr, MasterOptions)>>,
    options: fragstat_core::Options,
    tx: mpsc::UnboundedSender<Answer>,
) {
    for (round, requests) in rounds.into_iter().enumerate() {
        let mut jobs = Vec::with_capacity(requests.len());
        let mut job_index = Vec::with_capacity(requests.len());
        for (i, addr, o) in requests {
            match game.master_query(&o) {
                Ok(MasterQuery::Udp(ex)) => {
                    jobs.push((addr, ex));
                    job_index.push(i);
                }
                Ok(_) => send(
                    &tx,
                    i,
                    Some(addr),
                    None,
                    Err(Error::InvalidInput("not a UDP master".into())),
                ),
                Err(e) => send(&tx, i, Some(addr), None, Err(Error::from(e))),
            }
        }
        let mut batch = engine.run(jobs, options.clone());
        while let Some(o) = batch.next().await {
            let index = job_index.get(o.index).copied().unwrap_or(o.index);
            let _ = tx.send(Answer {
                index,
                round,
                addr: Some(o.addr),
                url: None,
                rtt: o.rtt,
                result: o.result.map_err(Error::from),
                warnings: Vec::new(),
                skipped: false,
            });
        }
    }
}

fn send(
    tx: &mpsc::UnboundedSender<Answer>,
    index: usize,
    addr: Option<SocketAddr>,
    url: Option<String>,
    result: Result<Vec<MasterEntry>, Error>,
) {
    let _ = tx.send(Answer {
        index,
        round: 0,
        addr,
        url,
        rtt: None,
        result,
        warnings: Vec::new(),
        skipped: false,
    });
}

impl Answer {
    /// A master that gave no list, for `error`.
    fn failed(index: usize, addr: Option<SocketAddr>, url: Option<String>, error: Error) -> Self {
        Answer {
            index,
            round: 0,
            addr,
            url,
            rtt: None,
            result: Err(error),
            warnings: Vec::new(),
            skipped: false,
        }
    }

    /// Marks it not asked at all ([`MasterReport::status`] `skipped`).
    fn skipped(mut self) -> Self {
        self.skipped = true;
        self
    }
}
