//! The OpenAPI document against REAL answers: a tracker polls an emulated farm (two Quake III
//! servers and a master listing them, on loopback) for three rounds in which a map changes,
//! players join and a server goes silent; then every path of `/api/openapi.json` (as served)
//! is asked with sample values for its path parameters (the table [`sample`]: a path whose
//! parameter has no sample fails, saying so), once plainly, once per query parameter with a
//! value from its schema, once with an unknown parameter (400), once with a missing entity
//! (404 where it has a path parameter), over a tiny rate (429) and with an unknown key (401).
//! Every answer's status, content type and body must be documented for that path, and every
//! JSON body valid against its schema (Draft 2020-12, `$ref`s into `components`, objects
//! held to the properties they list: an undocumented key fails). The SSE frames' data are
//! validated against the stream's `x-data-schema`. Every `/api/` route of the router (read
//! from `src/web/*.rs`) must be in the document, and every path of the document must answer.

mod support;

use std::collections::BTreeSet;

use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::Tracker;
use serde_json::{json, Value};
use support::switch::{emulated, master, Server};

/// Sample values for path parameters, by name: extend it when a path takes a new one.
fn sample(name: &str, known: &Known) -> Option<String> {
    Some(match name {
        "addr" => known.addr.clone(),
        "id" | "player_id" => known.player_id.to_string(),
        "game" => "q3".into(),
        "map" => "q3dm7".into(),
        "name" | "player" => known.player_name.clone(),
        "kind" => "map_changed".into(),
        _ => return None,
    })
}

/// Values for path parameters that name nothing (a 404 expected where documented).
fn missing(name: &str) -> Option<&'static str> {
    match name {
        "addr" => Some("192.0.2.1:1"),
        "id" | "player_id" => Some("999999999"),
        _ => None,
    }
}

/// Values for query parameters without a default, an example or an enum in their schema.
fn query_sample(name: &str, known: &Known) -> Option<String> {
    Some(match name {
        "q" | "player" => known.player_name.clone(),
        "game" => "q3".into(),
        "map" => "q3dm".into(),
        "since" => "0".into(),
        "hours" => "1".into(),
        "server" => known.addr.clone(),
        _ => return None,
    })
}

/// What the test knows of the farm once the rounds are written.
struct Known {
    addr: String,
    player_id: i64,
    player_name: String,
}

/// Every object schema with `properties` and no `additionalProperties` gets
/// `additionalProperties: false`: a key the document does not list fails.
fn strict(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.contains_key("properties") && !m.contains_key("additionalProperties") {
                m.insert("additionalProperties".into(), Value::Bool(false));
            }
            m.values_mut().for_each(strict);
        }
        Value::Array(a) => a.iter_mut().for_each(strict),
        _ => {}
    }
}

/// The document, and helpers over it.
struct Doc(Value);

impl Doc {
    fn resolve<'a>(&'a self, v: &'a Value) -> &'a Value {
        match v.get("$ref").and_then(Value::as_str) {
            Some(r) => self
                .0
                .pointer(r.strip_prefix('#').unwrap())
                .unwrap_or_else(|| panic!("dangling $ref {r}")),
            None => v,
        }
    }

    fn op(&self, path: &str) -> &Value {
        &self.0["paths"][path]["get"]
    }

    /// The path's parameters, `$ref`s resolved: (name, in, schema).
    fn params(&self, path: &str) -> Vec<(String, String, Value)> {
        let item = &self.0["paths"][path];
        [item.get("parameters"), item["get"].get("parameters")]
            .into_iter()
            .flatten()
            .flat_map(|l| l.as_array().unwrap().iter())
            .map(|p| {
                let p = self.resolve(p);
                (
                    p["name"].as_str().unwrap().to_string(),
                    p["in"].as_str().unwrap().to_string(),
                    p.get("schema").cloned().unwrap_or(Value::Null),
                )
            })
            .collect()
    }

    /// `schema` compiled with the document's components beside it (strict).
    fn validator(&self, schema: &Value) -> jsonschema::Validator {
        let mut root = schema.clone();
        if !root.is_object() {
            root = json!({ "allOf": [root] });
        }
        let mut components = self.0["components"].clone();
        strict(&mut components);
        strict(&mut root);
        root["components"] = components;
        jsonschema::draft202012::new(&root).unwrap_or_else(|e| panic!("{schema}: {e}"))
    }

    /// Checks one answer of `GET path` against the document.
    fn check(&self, path: &str, a: &Answer) -> Result<(), String> {
        let responses = &self.op(path)["responses"];
        let code = a.status.to_string();
        let r = responses
            .get(&code)
            .or_else(|| responses.get("default"))
            .ok_or_else(|| format!("status {code} not documented"))?;
        let r = self.resolve(r);
        let Some(content) = r.get("content").and_then(Value::as_object) else {
            return match a.body.is_empty() {
                true => Ok(()),
                false => Err(format!("a body, but no content documented for {code}")),
            };
        };
        let ct = a.content_type.split(';').next().unwrap_or("").trim();
        let media = content
            .get(ct)
            .ok_or_else(|| format!("content type {ct:?} not documented for {code}"))?;
        if let Some(h) = r.get("headers").and_then(Value::as_object) {
            for name in h.keys() {
                if name == "Retry-After" && !a.retry_after {
                    return Err(format!("{code} without its documented {name}"));
                }
            }
        }
        if let (Some(schema), true) = (media.get("schema"), ct == "application/json") {
            let v: Value = serde_json::from_slice(&a.body).map_err(|e| format!("not JSON: {e}"))?;
            let errors: Vec<String> = self
                .validator(schema)
                .iter_errors(&v)
                .map(|e| format!("{}: {e}", e.instance_path()))
                .collect();
            if !errors.is_empty() {
                return Err(format!(
                    "{code} body against its schema:\n{}",
                    errors.join("\n")
                ));
            }
        }
        Ok(())
    }
}

/// One answer.
struct Answer {
    status: u16,
    content_type: String,
    retry_after: bool,
    body: Vec<u8>,
}

async fn get(client: &reqwest::Client, url: &str, headers: &[(&str, &str)]) -> Answer {
    let mut req = client.get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
    let content_type = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let retry_after = r.headers().contains_key("retry-after");
    let status = r.status().as_u16();
    // A stream is not read to its end (it has none).
    let body = match content_type.starts_with("text/event-stream") {
        true => Vec::new(),
        false => r.bytes().await.unwrap().to_vec(),
    };
    Answer {
        status,
        content_type,
        retry_after,
        body,
    }
}

/// Checks an answer: its status `ok`, then against the document; failures collected.
fn expect(doc: &Doc, path: &str, what: String, a: &Answer, ok: bool, failures: &mut Vec<String>) {
    if !ok {
        failures.push(format!(
            "{what}: status {}: {}",
            a.status,
            String::from_utf8_lossy(&a.body)
        ));
    } else if let Err(e) = doc.check(path, a) {
        failures.push(format!("{what}: {e}"));
    }
}

/// The `/api/` routes the router registers: every `"{b}/api/…"` in `src/web/*.rs`.
fn routed() -> BTreeSet<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/web");
    let mut out = BTreeSet::new();
    for f in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap_or_default();
        for part in text.split("\"{b}/api/").skip(1) {
            let end = part.find('"').unwrap();
            out.insert(
                format!("/api/{}", &part[..end])
                    .replace("{{", "{")
                    .replace("}}", "}"),
            );
        }
    }
    out
}

/// `path` with its path parameters filled by `fill` (`None`: no value for one).
fn url_of(
    path: &str,
    params: &[(String, String, Value)],
    fill: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let mut url = path.to_string();
    for (name, place, _) in params {
        if place == "path" {
            let v = fill(name)?;
            url = url.replace(&format!("{{{name}}}"), &v.replace(':', "%3A"));
        }
    }
    Some(url)
}

fn config(db: &std::path::Path, master: std::net::SocketAddr, api: &str) -> Config {
    let mut c = Config::parse(&format!(
        "database = {db:?}\ninterval_secs = 10\ntimeout_ms = 200\nretries = 1\n[web.api]\n{api}"
    ))
    .unwrap();
    c.sources.push(Source {
        game: "q3".into(),
        masters: vec![master.to_string()],
        servers: Vec::new(),
        ext: false,
    });
    c
}

/// Every path of `doc` asked on `base` (see the module documentation); failures collected.
async fn ask_every_path(doc: &Doc, base: &str, known: &Known, failures: &mut Vec<String>) {
    let client = reqwest::Client::new();
    let paths: Vec<String> = doc.0["paths"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    for path in &paths {
        let params = doc.params(path);
        let Some(url) = url_of(path, &params, |n| sample(n, known)) else {
            failures.push(format!(
                "{path}: a path parameter without a sample (add it to `sample`)"
            ));
            continue;
        };
        if path == "/api/events" {
            continue; // a stream: see `the_stream`
        }
        let full = format!("{base}{url}");
        let r = get(&client, &full, &[]).await;
        let ok = r.status == 200 || (r.status == 503 && path == "/healthz");
        expect(doc, path, path.clone(), &r, ok, failures);
        for (name, place, schema) in &params {
            if place != "query" {
                continue;
            }
            let v = schema
                .get("default")
                .or_else(|| schema.get("example"))
                .or_else(|| schema.pointer("/enum/0"))
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                .or_else(|| query_sample(name, known));
            let Some(v) = v else { continue };
            let u = format!("{full}?{name}={}", v.replace(':', "%3A"));
            let r = get(&client, &u, &[]).await;
            expect(
                doc,
                path,
                format!("{path}?{name}={v}"),
                &r,
                r.status == 200,
                failures,
            );
        }
        let r = get(&client, &format!("{full}?no_such_parameter=1"), &[]).await;
        if !String::from_utf8_lossy(&r.body).contains("no_such_parameter") {
            failures.push(format!("{path}: the 400 does not name the parameter"));
        }
        expect(
            doc,
            path,
            format!("{path}?no_such_parameter=1"),
            &r,
            r.status == 400,
            failures,
        );
        if let Some(u) = url_of(path, &params, |n| missing(n).map(str::to_string)) {
            if u != *path {
                let r = get(&client, &format!("{base}{u}"), &[]).await;
                expect(
                    doc,
                    path,
                    format!("{u} (missing)"),
                    &r,
                    r.status == 404,
                    failures,
                );
            }
        }
    }
}

/// The stream's frames up to a `server_down`, each one's data valid; its 400s documented.
async fn the_stream(doc: &Doc, base: &str, sse: &mut support::Sse, failures: &mut Vec<String>) {
    let media = &doc.op("/api/events")["responses"]["200"]["content"]["text/event-stream"];
    let Some(schema) = media.get("x-data-schema") else {
        failures.push("/api/events: no x-data-schema for the frames' data".into());
        return;
    };
    let events = doc.validator(schema);
    let mut seen = Vec::new();
    while !seen.contains(&"server_down".to_string()) {
        let (id, kind, data) = sse.next_frame().await;
        let v: Value = serde_json::from_str(&data).unwrap();
        if let Err(e) = events.validate(&v) {
            failures.push(format!("event {kind} {data}: {e}"));
        }
        assert!(id.is_some() || kind == "lagged", "{kind} without an id");
        seen.push(kind);
    }
    assert!(seen.contains(&"map_changed".to_string()), "{seen:?}");
    let client = reqwest::Client::new();
    for q in ["kind=nope", "no_such_parameter=1"] {
        let r = get(&client, &format!("{base}/api/events?{q}"), &[]).await;
        expect(
            doc,
            "/api/events",
            format!("/api/events?{q}"),
            &r,
            r.status == 400,
            failures,
        );
    }
}

/// Every `/api/` path over a rate of 1 (its 429) and with an unknown key (its 401), on a
/// tracker of `t`'s.
async fn rates_and_keys(doc: &Doc, base: &str, known: &Known, failures: &mut Vec<String>) {
    let client = reqwest::Client::new();
    let paths = doc.0["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|p| p.starts_with("/api/"));
    for path in paths {
        let url = url_of(path, &doc.params(path), |n| sample(n, known)).unwrap();
        let full = format!("{base}{url}");
        let mut limited = None;
        for _ in 0..50 {
            let r = get(&client, &full, &[]).await;
            if r.status == 429 {
                limited = Some(r);
                break;
            }
        }
        match limited {
            Some(r) => expect(doc, path, format!("{path} (429)"), &r, true, failures),
            None => failures.push(format!("{path}: never 429 over a rate of 1")),
        }
        let r = get(&client, &full, &[("x-api-key", "not-a-key-0123456789")]).await;
        expect(
            doc,
            path,
            format!("{path} (unknown key)"),
            &r,
            r.status == 401,
            failures,
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_documented_path_answers_as_documented() {
    let a = Server::start("^1Alpha", "q3dm6", 2);
    let b = Server::start("Bravo", "q3dm17", 1);
    let (m, _m) = master(vec![a.addr, b.addr]);
    let dir = tempfile::tempdir().unwrap();
    let unlimited = "rate = 0\nsite_rate = 0\nnet_rate = 0\n";
    let tracker = Tracker::open(config(&dir.path().join("t.db"), m, unlimited))
        .await
        .unwrap();
    tracker.round().await.unwrap(); // the baseline
    let web = support::serve(tracker.state()).await;
    let base = web.base.clone();
    let client = reqwest::Client::new();
    let mut sse = support::Sse::open(&format!("{base}/api/events")).await;
    a.set(Some(emulated("^1Alpha", "q3dm7", 3)));
    tracker.round().await.unwrap();
    b.set(None);
    tracker.round().await.unwrap();

    // The document as served; its /api/ paths are the router's.
    let served = get(&client, &format!("{base}/api/openapi.json"), &[]).await;
    assert_eq!(served.status, 200);
    let doc = Doc(serde_json::from_slice(&served.body).unwrap());
    let api_paths: BTreeSet<String> = doc.0["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|p| p.starts_with("/api/"))
        .cloned()
        .collect();
    assert_eq!(
        routed(),
        api_paths,
        "the router's /api/ routes (left) and the document's /api/ paths (right) differ"
    );

    let server: Value = serde_json::from_slice(
        &get(&client, &format!("{base}/api/servers/{}", a.addr), &[])
            .await
            .body,
    )
    .unwrap();
    let p = &server["players"][0];
    let known = Known {
        addr: a.addr.to_string(),
        player_id: p["player_id"].as_i64().expect("a player on Alpha"),
        player_name: p["name"].as_str().unwrap().to_string(),
    };
    let mut failures = Vec::new();
    ask_every_path(&doc, &base, &known, &mut failures).await;
    the_stream(&doc, &base, &mut sse, &mut failures).await;

    // A tracker of its own, over a tiny rate and with a key.
    let dir2 = tempfile::tempdir().unwrap();
    let tiny = "rate = 1\nburst = 1\nsite_rate = 0\nnet_rate = 0\n[[web.api.keys]]\nname = \"k\"\nkey = \"0123456789abcdef0123\"\n";
    let t2 = Tracker::open(config(&dir2.path().join("t.db"), m, tiny))
        .await
        .unwrap();
    t2.round().await.unwrap();
    let web2 = support::serve(t2.state()).await;
    rates_and_keys(&doc, &web2.base, &known, &mut failures).await;
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let _ = web.stop.send(true);
    let _ = web2.stop.send(true);
}
