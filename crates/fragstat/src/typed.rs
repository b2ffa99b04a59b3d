//! A family's own typed replies through the one [`Client`]: [`Client::exchange`] runs any
//! family exchange on the client's sockets and settings, [`Client::quake3`] has the Quake III
//! calls (`getinfo`, `getstatus`, a master's list) that `fragstat_quake3_oob::client::Client`
//! had before issue 32.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use fragstat_core::{Batch, Exchange, Options};

use crate::client::Client;
use crate::error::Error;

/// A family's typed reply with its timing ([`Client::exchange`], [`Client::quake3`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Timed<T> {
    /// The reply.
    pub reply: T,
    /// Round-trip time of the attempt answered (`None` when the reply cannot be tied to
    /// one attempt).
    pub rtt: Option<Duration>,
    /// Attempts sent (1 when the first was answered).
    pub attempts: u32,
}

impl Client {
    /// Runs one exchange of a family crate (its own request and reply types, e.g.
    /// `fragstat::quake3::ServerExchange`) on this client's sockets, with its timeout and
    /// retries.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use fragstat::teeworlds::exchange::{Mode, Query6};
    /// let client = fragstat::Client::new();
    /// let t = client.exchange("127.0.0.1:8303".parse()?, Query6::new(Mode::Extended)).await?;
    /// println!("{} in {:?}", t.reply.name, t.rtt);
    /// # Ok(()) }
    /// ```
    pub fn exchange<E: Exchange>(
        &self,
        addr: SocketAddr,
        exchange: E,
    ) -> impl Future<Output = Result<Timed<E::Output>, Error>> + Send + 'static {
        self.exchange_with(addr, exchange, self.options())
    }

    /// [`Client::exchange`] with these engine options (a master list's longer timeout).
    fn exchange_with<E: Exchange>(
        &self,
        addr: SocketAddr,
        exchange: E,
        options: Options,
    ) -> impl Future<Output = Result<Timed<E::Output>, Error>> + Send + 'static {
        let engine = self.engine_for_scan();
        async move {
            let o = engine?.query(addr, exchange, options).await;
            Ok(Timed {
                reply: o.result?,
                rtt: o.rtt,
                attempts: o.attempts,
            })
        }
    }

    /// Runs many exchanges of a family crate at once, with this client's settings; outcomes
    /// come out as each finishes (read them with `Batch::next` or `Batch::collect_sorted`).
    pub fn exchanges<E, I>(&self, jobs: I) -> Result<Batch<E::Output>, Error>
    where
        E: Exchange,
        I: IntoIterator<Item = (SocketAddr, E)>,
        I::IntoIter: Send + 'static,
    {
        Ok(self.engine_for_scan()?.run_iter(jobs, self.options()))
    }

    /// The Quake III calls with their typed replies (`infoResponse`, `statusResponse`, a
    /// master's list), on this client's sockets and settings.
    #[cfg(feature = "quake3")]
    pub fn quake3(&self) -> Quake3 {
        Quake3 {
            client: self.clone(),
        }
    }
}

/// The Quake III out-of-band calls with their typed replies, from [`Client::quake3`].
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use fragstat::quake3::{text, Quake3Game};
/// let client = fragstat::Client::new();
/// let status = client.quake3().status("127.0.0.1:27960".parse()?).await?;
/// println!("{} players on {}", status.reply.players.len(),
///     text::display(status.reply.info.get("mapname").unwrap_or_default()));
///
/// // A master's list, then every server on it, as each answers.
/// let list = client.quake3().master("127.0.0.1:27950".parse()?, &Quake3Game::Quake3.getservers()).await?;
/// let mut batch = client.quake3().scan(list.reply, true)?;
/// while let Some(o) = batch.next().await {
///     if let Ok(reply) = o.result {
///         println!("{} {}", o.addr, reply.server_info(Quake3Game::Quake3).name);
///     }
/// }
/// # Ok(()) }
/// ```
#[cfg(feature = "quake3")]
#[derive(Debug, Clone)]
pub struct Quake3 {
    client: Client,
}

#[cfg(feature = "quake3")]
mod quake3 {
    use std::net::SocketAddr;

    use fragstat_core::{Batch, DecodeError};
    use fragstat_quake3_oob::packet::{InfoResponse, StatusResponse};
    use fragstat_quake3_oob::{GetServers, MasterExchange, Request, ServerExchange, ServerReply};

    use super::{Quake3, Timed};
    use crate::error::Error;

    impl Quake3 {
        /// `getinfo`.
        pub async fn info(&self, addr: SocketAddr) -> Result<Timed<InfoResponse>, Error> {
            let t = self.server_ask(addr, Request::Info).await?;
            keep(t, |r| r.info, "infoResponse")
        }

        /// `getstatus`.
        pub async fn status(&self, addr: SocketAddr) -> Result<Timed<StatusResponse>, Error> {
            let t = self.server_ask(addr, Request::Status).await?;
            keep(t, |r| r.status, "statusResponse")
        }

        /// `getinfo` and `getstatus` together (the status may be missing: a server that
        /// answers `getinfo` only).
        pub async fn server(&self, addr: SocketAddr) -> Result<Timed<ServerReply>, Error> {
            self.server_ask(addr, Request::Both).await
        }

        async fn server_ask(
            &self,
            addr: SocketAddr,
            ask: Request,
        ) -> Result<Timed<ServerReply>, Error> {
            self.client.exchange(addr, ServerExchange::new(ask)).await
        }

        /// Many servers; outcomes come out as each finishes. `players` asks for the player
        /// list too ([`Request::Both`]), otherwise only `getinfo` is sent.
        pub fn scan(
            &self,
            addrs: impl IntoIterator<Item = SocketAddr>,
            players: bool,
        ) -> Result<Batch<ServerReply>, Error> {
            let ask = if players {
                Request::Both
            } else {
                Request::Info
            };
            let jobs: Vec<_> = addrs
                .into_iter()
                .map(|a| (a, ServerExchange::new(ask)))
                .collect();
            self.client.exchanges(jobs)
        }

        /// A master's server list, with the client's master timeout.
        pub async fn master(
            &self,
            master: SocketAddr,
            request: &GetServers,
        ) -> Result<Timed<Vec<SocketAddr>>, Error> {
            let ex = MasterExchange::new(request).map_err(Error::Encode)?;
            let options = self
                .client
                .options()
                .with_timeout(self.client.config().master_timeout);
            self.client.exchange_with(master, ex, options).await
        }
    }

    /// Keeps one of the replies, with the same timing.
    fn keep<U>(
        t: Timed<ServerReply>,
        pick: impl FnOnce(ServerReply) -> Option<U>,
        what: &'static str,
    ) -> Result<Timed<U>, Error> {
        let reply = pick(t.reply).ok_or(Error::Decode(DecodeError::Missing {
            field: what,
            offset: 0,
        }))?;
        Ok(Timed {
            reply,
            rtt: t.rtt,
            attempts: t.attempts,
        })
    }
}
