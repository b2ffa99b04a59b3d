//! The webhook: one POST per round with events, from a bounded queue, by a task of its own
//! (see the parent module's documentation for the forms and the retries).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fragstat::events::{Event, EventKind};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;

use super::signature::{self, Deliveries};
use super::{Published, FIRST_BACKOFF, MAX_BACKOFF, MAX_RETRY_AFTER, WEBHOOK_MAX_EVENTS};
use crate::config::{Config, WebhookFormat};
use crate::metrics::Metrics;

/// What [`start`] gives: the queue rounds push to, and the sender task.
pub(super) type Started = (Option<Arc<Queue>>, Option<tokio::task::JoinHandle<()>>);

/// Bytes the webhook's queue holds at most (an event counted as twice its JSON: the JSON and
/// the event itself): past it, or past `webhook_queue` batches, the oldest batches go
/// (counted in `webhook_queue_dropped`).
pub const WEBHOOK_QUEUE_BYTES: usize = 16 << 20;

/// What an event queued for the webhook is counted as: its JSON, and the event itself
/// (about as big again: the same names and addresses).
fn event_bytes(p: &Published) -> usize {
    std::mem::size_of::<Published>() + 2 * p.json.len()
}

/// One round's events for the webhook: at most [`WEBHOOK_MAX_EVENTS`] (no more is ever
/// sent), the rest only counted.
#[derive(Debug)]
struct Batch {
    pub(super) at: i64,
    pub(super) events: Vec<Arc<Published>>,
    /// Events of the round not kept.
    pub(super) omitted: usize,
    /// The events' [`event_bytes`].
    bytes: usize,
}

impl Batch {
    /// A round's batch: its first [`WEBHOOK_MAX_EVENTS`] events, and of those no more than
    /// `max_bytes`; the others counted in `omitted`.
    pub(super) fn new(at: i64, mut events: Vec<Arc<Published>>, max_bytes: usize) -> Batch {
        let (mut keep, mut bytes) = (0, 0);
        for p in events.iter().take(WEBHOOK_MAX_EVENTS) {
            let b = event_bytes(p);
            if bytes + b > max_bytes {
                break;
            }
            (keep, bytes) = (keep + 1, bytes + b);
        }
        let omitted = events.len() - keep;
        events.truncate(keep);
        events.shrink_to_fit();
        Batch {
            at,
            events,
            omitted,
            bytes,
        }
    }

    /// Events of the round, kept or not.
    fn total(&self) -> usize {
        self.events.len() + self.omitted
    }
}

/// The webhook's bounded queue: the oldest batches go when it holds `cap` batches or
/// `max_bytes`.
#[derive(Debug)]
pub(super) struct Queue {
    items: Mutex<(VecDeque<Batch>, usize)>,
    cap: usize,
    max_bytes: usize,
    notify: Notify,
    dropped: Counter,
    bytes: Gauge,
}

impl Queue {
    fn new(cap: usize, max_bytes: usize) -> Queue {
        Queue {
            items: Mutex::new((VecDeque::new(), 0)),
            cap: cap.max(1),
            max_bytes,
            notify: Notify::new(),
            dropped: Counter::default(),
            bytes: Gauge::default(),
        }
    }

    /// Queues a round's events ([`Batch::new`]), dropping the oldest batches to make room.
    pub(super) fn push(&self, at: i64, events: Vec<Arc<Published>>) {
        let b = Batch::new(at, events, self.max_bytes);
        let mut q = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let (items, bytes) = &mut *q;
        while items.len() >= self.cap || (!items.is_empty() && *bytes + b.bytes > self.max_bytes) {
            if let Some(old) = items.pop_front() {
                *bytes -= old.bytes;
                self.dropped.inc();
            }
        }
        *bytes += b.bytes;
        items.push_back(b);
        self.bytes.set(i64::try_from(*bytes).unwrap_or(i64::MAX));
        drop(q);
        self.notify.notify_one();
    }

    fn try_pop(&self) -> Option<Batch> {
        let mut q = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let (items, bytes) = &mut *q;
        let b = items.pop_front()?;
        *bytes -= b.bytes;
        self.bytes.set(i64::try_from(*bytes).unwrap_or(i64::MAX));
        Some(b)
    }

    async fn pop(&self) -> Batch {
        loop {
            let notified = self.notify.notified();
            if let Some(b) = self.try_pop() {
                return b;
            }
            notified.await;
        }
    }
}

/// The webhook's counters.
#[derive(Debug, Clone, Default)]
struct WebhookMetrics {
    posts: Counter,
    failures: Counter,
    dropped: Counter,
}

/// The webhook's queue and its sender task when one is configured (must run in a tokio
/// runtime), its metrics registered in `metrics`.
pub(super) fn start(config: &Config, metrics: &Metrics) -> Result<Started, reqwest::Error> {
    Ok(match &config.webhook {
        None => (None, None),
        Some(url) => {
            let wm = WebhookMetrics::default();
            let queue = Arc::new(Queue::new(config.webhook_queue, WEBHOOK_QUEUE_BYTES));
            metrics.register(
                "webhook_posts",
                "Webhook batches delivered",
                wm.posts.clone(),
            );
            metrics.register(
                "webhook_failures",
                "Webhook attempts that failed (error, timeout, status)",
                wm.failures.clone(),
            );
            metrics.register(
                "webhook_dropped",
                "Webhook batches dropped after their last attempt",
                wm.dropped.clone(),
            );
            metrics.register(
                "webhook_queue_dropped",
                "Webhook batches dropped from a full queue (the oldest; full in batches or bytes)",
                queue.dropped.clone(),
            );
            metrics.register(
                "webhook_queue_bytes",
                "Bytes of events waiting in the webhook's queue",
                queue.bytes.clone(),
            );
            let client = reqwest::Client::builder()
                .timeout(Duration::from_millis(config.webhook_timeout_ms))
                .redirect(reqwest::redirect::Policy::none())
                .build()?;
            let target = Target {
                client,
                url: url.clone(),
                secret: config.webhook_secret.clone(),
                deliveries: Deliveries::new(),
            };
            let sender = tokio::spawn(send_loop(
                queue.clone(),
                target,
                config.webhook_format,
                config.webhook_tries.max(1),
                wm,
            ));
            (Some(queue), Some(sender))
        }
    })
}

/// Where and how the batches go: the client, the URL (never shown: it may hold a token),
/// the signing secret, the delivery ids.
struct Target {
    client: reqwest::Client,
    url: String,
    secret: Option<crate::config::Secret>,
    deliveries: Deliveries,
}

async fn send_loop(
    queue: Arc<Queue>,
    target: Target,
    format: WebhookFormat,
    tries: u32,
    m: WebhookMetrics,
) {
    loop {
        let batch = queue.pop().await;
        let body = match format {
            WebhookFormat::Json => json_body(&batch),
            WebhookFormat::Discord => discord_body(&batch),
        };
        deliver(&target, body, tries, &m).await;
    }
}

/// POSTs `body`, retrying as the module docs say (one delivery id for every attempt).
async fn deliver(target: &Target, body: String, tries: u32, m: &WebhookMetrics) {
    let delivery = target.deliveries.next();
    for attempt in 0..tries {
        let answer = post(target, &delivery, &body).await;
        if answer == Answer::Delivered {
            m.posts.inc();
            return;
        }
        m.failures.inc();
        match next_wait(attempt, tries, answer) {
            Some(wait) => tokio::time::sleep(wait).await,
            None => break,
        }
    }
    m.dropped.inc();
}

/// One POST of `body` (signed, with a secret, at the time it is sent), and what its answer
/// means.
async fn post(target: &Target, delivery: &str, body: &str) -> Answer {
    let mut req = target
        .client
        .post(&target.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::USER_AGENT, signature::USER_AGENT)
        .header(signature::DELIVERY, delivery);
    if let Some(secret) = &target.secret {
        let at = signature::now_secs();
        let sig = signature::sign(secret.expose().as_bytes(), at, body.as_bytes());
        req = req
            .header(signature::TIMESTAMP, at.to_string())
            .header(signature::SIGNATURE, sig);
    }
    let r = req.body(body.to_owned()).send().await;
    match r {
        Ok(resp) => {
            let s = resp.status();
            let a = answer(s, resp.headers().get(reqwest::header::RETRY_AFTER));
            if a != Answer::Delivered {
                tracing::warn!(status = %s, "webhook refused the batch");
            }
            a
        }
        Err(e) => {
            tracing::warn!("webhook: {}", e.without_url()); // never the URL: its token
            Answer::Failed { retry_after: None }
        }
    }
}

/// What one attempt's answer means for its batch.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
    /// A 2xx.
    Delivered,
    /// An error, a timeout, a 5xx, 408 or 429 (with its `Retry-After` in seconds, at most
    /// [`MAX_RETRY_AFTER`], where a 429 gave one): worth another attempt.
    Failed { retry_after: Option<Duration> },
    /// Any other 4xx: the receiver refuses this body, sending it again will not help.
    Refused,
}

/// The [`Answer`] a status (and its `Retry-After` header) gives.
fn answer(
    status: reqwest::StatusCode,
    retry_after: Option<&reqwest::header::HeaderValue>,
) -> Answer {
    use reqwest::StatusCode;
    if status.is_success() {
        Answer::Delivered
    } else if status == StatusCode::TOO_MANY_REQUESTS {
        let retry_after = retry_after
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|secs| Duration::from_secs_f64(secs.min(MAX_RETRY_AFTER.as_secs_f64())));
        Answer::Failed { retry_after }
    } else if status.is_client_error() && status != StatusCode::REQUEST_TIMEOUT {
        Answer::Refused
    } else {
        Answer::Failed { retry_after: None }
    }
}

/// The wait after failed attempt `attempt` (0 for the first) without a `Retry-After`:
/// [`FIRST_BACKOFF`], doubled for each further attempt, at most [`MAX_BACKOFF`].
fn backoff(attempt: u32) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(1 << attempt.min(16))
        .min(MAX_BACKOFF)
}

/// After attempt `attempt` (0 for the first) of `tries` answered `answer`: the wait before
/// the next attempt, or `None` when there is none (delivered, refused, or the last).
fn next_wait(attempt: u32, tries: u32, answer: Answer) -> Option<Duration> {
    match answer {
        Answer::Failed { retry_after } if attempt.saturating_add(1) < tries => {
            Some(retry_after.unwrap_or_else(|| backoff(attempt)))
        }
        _ => None,
    }
}

/// `{"at": …, "events": […], "omitted": n}`.
fn json_body(b: &Batch) -> String {
    let shown = b.events.len().min(WEBHOOK_MAX_EVENTS);
    let mut s = String::with_capacity(
        64 + b
            .events
            .iter()
            .take(shown)
            .map(|p| p.json.len() + 1)
            .sum::<usize>(),
    );
    s.push_str("{\"at\":");
    s.push_str(&b.at.to_string());
    s.push_str(",\"events\":[");
    for (i, p) in b.events.iter().take(shown).enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&p.json);
    }
    s.push_str("],\"omitted\":");
    s.push_str(&(b.total() - shown).to_string());
    s.push('}');
    s
}

/// Discord's limits: message content, embeds per message, an embed's title and description,
/// and every embed's text together.
const DISCORD_CONTENT: usize = 2000;
const DISCORD_EMBEDS: usize = 10;
const DISCORD_TITLE: usize = 256;
const DISCORD_DESCRIPTION: usize = 4096;
const DISCORD_EMBEDS_TOTAL: usize = 6000;

/// Markdown characters escaped, so a player's name cannot format (or hide) the message.
fn discord_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '*' | '_' | '~' | '`' | '|' | '>' | '#' | '[' | ']' | '@' | '<'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// At most `n` characters of `s`.
fn chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => s.get(..i).unwrap_or(s),
        None => s,
    }
}

/// `{"content": …, "embeds": […], "allowed_mentions": {"parse": []}}`: an embed per server
/// (its events a line each), within Discord's limits; what does not fit is counted in the
/// content (`… and N more events`).
fn discord_body(b: &Batch) -> String {
    // Servers in first-event order; the first DISCORD_EMBEDS with their lines (the others
    // only counted: a batch can hold every server of a master coming back).
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut servers: Vec<(&Event, Vec<String>)> = Vec::new();
    for p in &b.events {
        let next = index.len();
        let i = *index.entry(p.event.server.as_str()).or_insert(next);
        if i == next && i < DISCORD_EMBEDS {
            servers.push((&p.event, Vec::new()));
        }
        if let Some((_, lines)) = servers.get_mut(i) {
            lines.push(discord_escape(&p.event.describe()));
        }
    }
    let server_count = index.len();
    let mut embeds = Vec::new();
    let mut total = 0usize;
    let mut shown = 0usize;
    for (first, lines) in servers.iter().take(DISCORD_EMBEDS) {
        let name = b
            .events
            .iter()
            .find_map(|p| match &p.event.kind {
                EventKind::ServerUp { name, .. } if p.event.server == first.server => {
                    Some(name.display())
                }
                _ => None,
            })
            .map(|n| format!("{} ({})", n, first.server))
            .unwrap_or_else(|| first.server.clone());
        let title = chars(&format!("{} · {}", name, first.game), DISCORD_TITLE).to_string();
        let room = DISCORD_EMBEDS_TOTAL.saturating_sub(total + title.chars().count());
        let mut desc = String::new();
        let mut desc_chars = 0usize;
        let budget = room.min(DISCORD_DESCRIPTION);
        for l in lines {
            let n = l.chars().count() + 1;
            if desc_chars + n > budget {
                break;
            }
            desc.push_str(l);
            desc.push('\n');
            desc_chars += n;
            shown += 1;
        }
        if desc.is_empty() {
            break;
        }
        total += title.chars().count() + desc_chars;
        embeds.push(serde_json::json!({
            "title": title,
            "description": desc.trim_end(),
            "timestamp": crate::web::time_text(b.at),
        }));
    }
    let more = b.total() - shown;
    // Servers of the events kept: more when some were not kept.
    let plus = if b.omitted > 0 { "+" } else { "" };
    let mut content = format!(
        "{} event{} from {server_count}{plus} server{}",
        b.total(),
        if b.total() == 1 { "" } else { "s" },
        if server_count == 1 && plus.is_empty() {
            ""
        } else {
            "s"
        }
    );
    if more > 0 {
        content.push_str(&format!(" (… and {more} more events not shown)"));
    }
    let content = chars(&content, DISCORD_CONTENT).to_string();
    serde_json::json!({
        "content": content,
        "embeds": embeds,
        "allowed_mentions": {"parse": []},
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstat::core::model::{Dialect, Text};
    use fragstat::events::Differ;

    fn batch(servers: usize, per_server: usize, name: &str) -> Batch {
        Batch::new(5, published(servers, per_server, name), WEBHOOK_QUEUE_BYTES)
    }

    /// A round's events: every server up, every player joined.
    fn published(servers: usize, per_server: usize, name: &str) -> Vec<Arc<Published>> {
        let mut events = Vec::new();
        let mut d = Differ::new().initial(true);
        let records: Vec<fragstat::Record> = (0..servers)
            .map(|s| {
                let mut info = fragstat::ServerInfo::default();
                info.name = Text::new(format!("srv{s}"), Dialect::Quake);
                info.players = Some(
                    (0..per_server)
                        .map(|i| {
                            fragstat::Player::new(Text::new(format!("{name}{i}"), Dialect::Quake))
                        })
                        .collect(),
                );
                fragstat::Record::online(Some(format!("127.0.0.1:{}", 1000 + s)), "q3", info, None)
            })
            .collect();
        for event in d.update(5, &records) {
            let json = serde_json::to_string(&event).unwrap();
            events.push(Arc::new(Published { id: 0, event, json }));
        }
        events
    }

    /// A slow receiver and churning rounds: each round 5,000 events with long names, and the
    /// sender takes none. The queue keeps each batch to WEBHOOK_MAX_EVENTS (the rest counted),
    /// holds no more than its bytes, drops the oldest (counted), and keeps the newest round;
    /// a small round after the flood is queued and sent whole.
    #[test]
    fn the_queue_is_bounded_in_bytes_and_drops_the_oldest() {
        let max_bytes = 4 << 20;
        let q = Queue::new(64, max_bytes);
        let long = "n".repeat(200);
        let churn = published(5, 999, &long);
        for round in 0..50 {
            q.push(round, churn.clone());
        }
        let held = |q: &Queue| {
            let g = q.items.lock().unwrap();
            let sum: usize = g.0.iter().map(|b| b.bytes).sum();
            assert_eq!(sum, g.1, "the count is the batches' bytes");
            (
                g.0.len(),
                g.1,
                g.0.back().map(|b| (b.at, b.events.len(), b.omitted)),
            )
        };
        let (batches, bytes, newest) = held(&q);
        assert!(bytes <= max_bytes, "{bytes}");
        assert!(batches < 50 && batches > 0, "{batches}");
        assert_eq!(
            newest,
            Some((49, WEBHOOK_MAX_EVENTS, 5000 - WEBHOOK_MAX_EVENTS))
        );
        assert_eq!(q.dropped.get() as usize, 50 - batches);
        assert_eq!(q.bytes.get() as usize, bytes);
        // A legitimate small round is queued after the flood, whole.
        q.push(50, published(1, 2, "p"));
        let (_, bytes, newest) = held(&q);
        assert!(bytes <= max_bytes);
        assert_eq!(newest, Some((50, 3, 0)));
        let mut sent = None;
        while let Some(b) = q.try_pop() {
            sent = Some(b);
        }
        let v: serde_json::Value = serde_json::from_str(&json_body(&sent.unwrap())).unwrap();
        assert_eq!(
            (v["events"].as_array().unwrap().len(), v["omitted"].as_u64()),
            (3, Some(0))
        );
        assert_eq!(q.bytes.get(), 0);
        // One batch bigger than the queue: cut to fit, the rest counted.
        let b = Batch::new(1, churn, 100_000);
        assert!(b.bytes <= 100_000 && !b.events.is_empty());
        assert_eq!(b.total(), 5000);
    }

    /// Pushed events are held for the next round's batch, ahead of the round's own (one
    /// POST a round, not one a datagram); past WEBHOOK_MAX_EVENTS they are counted, not held.
    #[test]
    fn pushed_events_go_with_the_next_rounds_batch() {
        let q = Arc::new(Queue::new(64, WEBHOOK_QUEUE_BYTES));
        let (tx, _) = tokio::sync::broadcast::channel(16);
        let p = super::super::Publisher {
            tx,
            replay: Arc::default(),
            events: Default::default(),
            queue: Some(q.clone()),
            held: Arc::default(),
            unposted: Counter::default(),
        };
        let events = |n: usize, name: &str, pushed: bool| -> Vec<fragstat::events::Event> {
            published(1, n, name)
                .into_iter()
                .map(|e| match pushed {
                    true => e.event.clone().as_pushed(),
                    false => e.event.clone(),
                })
                .collect()
        };
        p.pushed(events(2, "pushed", true));
        assert!(q.try_pop().is_none(), "no POST of its own");
        p.round(7, events(1, "round", false));
        let b = q.try_pop().unwrap();
        let pushed: Vec<bool> = b.events.iter().map(|e| e.event.pushed).collect();
        assert_eq!((b.at, pushed), (7, vec![true, true, true, false, false]));
        assert!(q.try_pop().is_none());
        // An empty round still posts what was pushed; too many pushes are counted.
        p.pushed(events(WEBHOOK_MAX_EVENTS + 9, "many", true));
        p.round(8, Vec::new());
        let b = q.try_pop().unwrap();
        assert_eq!(b.events.len(), WEBHOOK_MAX_EVENTS);
        assert_eq!(p.unposted.get(), 10);
    }

    #[test]
    fn discord_body_keeps_within_limits_and_says_how_many_more() {
        for (servers, per, name) in [
            (1, 2, "p"),
            (30, 50, "a_very_long_player_name_with_*markdown*_"),
        ] {
            let b = batch(servers, per, name);
            let v: serde_json::Value = serde_json::from_str(&discord_body(&b)).unwrap();
            let content = v["content"].as_str().unwrap();
            assert!(content.chars().count() <= DISCORD_CONTENT);
            let embeds = v["embeds"].as_array().unwrap();
            assert!(embeds.len() <= DISCORD_EMBEDS);
            let mut total = 0;
            let mut lines = 0;
            for e in embeds {
                let t = e["title"].as_str().unwrap().chars().count();
                let d = e["description"].as_str().unwrap();
                assert!(t <= DISCORD_TITLE && d.chars().count() <= DISCORD_DESCRIPTION);
                total += t + d.chars().count();
                lines += d.lines().count();
            }
            assert!(total <= DISCORD_EMBEDS_TOTAL, "{total}");
            let more = b.total() - lines;
            if more > 0 {
                assert!(content.contains(&format!("and {more} more")), "{content}");
            } else {
                assert!(!content.contains("more"), "{content}");
            }
            assert_eq!(v["allowed_mentions"]["parse"], serde_json::json!([]));
        }
        let v: serde_json::Value =
            serde_json::from_str(&discord_body(&batch(1, 1, "@everyone_*x*"))).unwrap();
        let d = v["embeds"][0]["description"].as_str().unwrap();
        assert!(d.contains("\\@everyone\\_\\*x\\*"), "{d}");
    }

    /// The waits between attempts: 1 s doubled each time up to the cap, then the cap; none
    /// after the last attempt.
    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        let failed = Answer::Failed { retry_after: None };
        let waits: Vec<Option<f64>> = (0..10).map(|a| secs(next_wait(a, 10, failed))).collect();
        assert_eq!(
            waits,
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]
                .map(Some)
                .into_iter()
                .chain([None])
                .collect::<Vec<_>>()
        );
        assert_eq!(MAX_BACKOFF, Duration::from_secs(60));
        for attempt in [6, 16, 17, 1000, u32::MAX - 2] {
            assert_eq!(next_wait(attempt, u32::MAX, failed), Some(MAX_BACKOFF));
        }
        assert_eq!(next_wait(u32::MAX - 1, u32::MAX, failed), None, "the last");
        assert_eq!(next_wait(u32::MAX, u32::MAX, failed), None);
        assert_eq!(next_wait(0, 1, failed), None, "one try: no retry");
        // A 429's Retry-After instead of the backoff, even past the cap's step.
        let after = Answer::Failed {
            retry_after: Some(Duration::from_millis(2500)),
        };
        assert_eq!(next_wait(7, 10, after), Some(Duration::from_millis(2500)));
        assert_eq!(next_wait(9, 10, after), None);
        assert_eq!(next_wait(0, 10, Answer::Refused), None);
        assert_eq!(next_wait(0, 10, Answer::Delivered), None);
    }

    #[test]
    fn answers_retried_or_not() {
        use reqwest::header::HeaderValue;
        let code = |c: u16| reqwest::StatusCode::from_u16(c).unwrap();
        let failed = Answer::Failed { retry_after: None };
        for c in [200, 201, 204] {
            assert_eq!(answer(code(c), None), Answer::Delivered, "{c}");
        }
        for c in [500, 502, 503, 504, 408, 429, 301, 302] {
            assert_eq!(answer(code(c), None), failed, "{c}");
        }
        for c in [400, 401, 403, 404, 405, 410, 413, 422] {
            assert_eq!(answer(code(c), None), Answer::Refused, "{c}");
        }
        let with =
            |c: u16, v: &'static [u8]| answer(code(c), Some(&HeaderValue::from_bytes(v).unwrap()));
        let after = |ms: u64| Answer::Failed {
            retry_after: Some(Duration::from_millis(ms)),
        };
        assert_eq!(with(429, b"7"), after(7000));
        assert_eq!(with(429, b" 2.5 "), after(2500));
        assert_eq!(with(429, b"0"), after(0));
        assert_eq!(with(429, b"100000"), after(60_000), "at most a minute");
        for v in [
            &b"-1"[..],
            b"NaN",
            b"inf",
            b"1e400",
            b"",
            b"Wed, 21 Oct 2015 07:28:00 GMT",
            b"\xff",
        ] {
            assert_eq!(with(429, v), failed, "{v:?}");
        }
        // Only a 429's Retry-After counts.
        assert_eq!(with(503, b"7"), failed);
        assert_eq!(with(400, b"7"), Answer::Refused);
    }

    #[test]
    fn json_body_caps_the_events() {
        let b = batch(3, 600, "p");
        assert_eq!(b.events.len(), WEBHOOK_MAX_EVENTS, "truncated when queued");
        let v: serde_json::Value = serde_json::from_str(&json_body(&b)).unwrap();
        assert_eq!(v["events"].as_array().unwrap().len(), WEBHOOK_MAX_EVENTS);
        assert_eq!(v["omitted"], 3 * 601 - WEBHOOK_MAX_EVENTS);
        assert_eq!(v["at"], 5);
        assert_eq!(v["events"][0]["event"], "server_up");
    }
}
