//! `fragstat track`'s embeds and themes in headless Chromium: an emulated farm (a hostile
//! server name among it) polled by the binary; the widget, the server page with its banner
//! and snippets, and the browser page, each in the dark and the light theme
//! (`prefers-color-scheme` set by Blink's `preferredColorScheme`) at 1366×900 and 390×844
//! (the server page also whole, 2,400 px tall, its snippets being below the fold);
//! the banner's PNGs saved beside them; another site (another port) framing the widget and,
//! refused, the server page. Screenshots under `target/tracker-e2e/embeds/`.

use fragstat_testkit::browser::Chromium;
use fragstat_testkit::spawn_serve;

mod support;
use support::{artifacts, bin, http_get as get, HttpFile, Running};

const HOSTILE: &str = "^1<script>alert(1)</script>^3 Yellow^4Blue^7 & co";

/// Blink's `preferredColorScheme`: 0 dark, 1 light.
const DARK: &str = "--blink-settings=preferredColorScheme=0";
const LIGHT: &str = "--blink-settings=preferredColorScheme=1";

#[test]
fn track_embeds_and_themes_render_in_chromium() {
    let chromium = Chromium::find();
    let hostile = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--name",
            HOSTILE,
            "--players",
            "5",
        ],
    );
    let farm = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "2",
            "--players",
            "3",
        ],
    );
    let servers: Vec<_> = hostile.servers.iter().chain(&farm.servers).collect();
    let (mut tracker, url, _dir) = track(&servers);
    for _ in 0..2 {
        tracker.wait_line("a round", |l| l.starts_with("round "));
    }
    let seg = hostile.servers[0].to_string().replace(':', "%3A");
    let server = format!("{url}server/{seg}");
    let widget = format!("{server}/widget");

    // Over plain HTTP first: the snippets, the feed link, the banner escaped.
    let (status, page) = get(&server);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("id=\"embed\""), "{page}");
    assert!(page.contains("[/img][/url]"), "{page}");
    assert!(page.contains("application/atom+xml"), "{page}");
    let (_, svg) = get(&format!("{server}/banner.svg"));
    assert!(
        svg.contains("&lt;script&gt;") && !svg.contains("<script"),
        "{svg}"
    );

    let Some(chromium) = chromium else {
        return;
    };
    screenshots(&chromium, &url, &server, &widget);
}

/// GET `url`'s body as bytes.
fn bytes(url: &str) -> Vec<u8> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let r = reqwest::get(url).await.expect(url);
        assert_eq!(r.status(), 200, "{url}");
        r.bytes().await.expect("body").to_vec()
    })
}

/// The banners, the DOM checks and the screenshots, under `target/tracker-e2e/embeds/`.
fn screenshots(chromium: &Chromium, url: &str, server: &str, widget: &str) {
    let out = artifacts("tracker-e2e").join("embeds");
    std::fs::create_dir_all(&out).unwrap();
    // The banners as the site serves them.
    for size in ["468x60", "350x20", "728x90"] {
        let png = bytes(&format!("{server}/banner.png?size={size}"));
        assert_eq!(&png[1..4], b"PNG");
        std::fs::write(out.join(format!("banner-{size}.png")), &png).unwrap();
    }
    // The widget runs no script: its DOM is the server's HTML.
    let dom = chromium.dump_dom(widget, 1000);
    assert!(dom.contains("id=\"players\""), "{dom}");
    // The snippets are made whole by the page's script.
    let dom = chromium.dump_dom(server, 1000);
    assert!(dom.contains(&format!("[url={server}]")), "{dom}");
    for (name, page_url) in [("widget", widget), ("server", server), ("browser", url)] {
        for (theme, flag) in [("dark", DARK), ("light", LIGHT)] {
            for (w, h) in [(1366, 900), (390, 844)] {
                let file = out.join(format!("{name}-{theme}-{w}x{h}.png"));
                chromium.screenshot_with(page_url, &file, (w, h), 2000, &[flag]);
            }
        }
    }
    // Another site (another origin: another port) framing the widget, as the snippet says,
    // and the server page, which refuses to be framed.
    let other = HttpFile::serve(
        "/frame.html",
        "text/html; charset=utf-8",
        format!(
            "<!DOCTYPE html><html><body style=\"background:#ddd;font:14px sans-serif\">\
             <p>another site, framing the widget:</p>\
             <iframe src=\"{widget}\" width=\"300\" height=\"220\" style=\"border:0\"></iframe>\
             <p>and the server page (refused):</p>\
             <iframe src=\"{server}\" width=\"300\" height=\"120\"></iframe></body></html>"
        )
        .into_bytes(),
    );
    for (theme, flag) in [("dark", DARK), ("light", LIGHT)] {
        let file = out.join(format!("framed-{theme}.png"));
        chromium.screenshot_with(&other.url("/frame.html"), &file, (390, 844), 2000, &[flag]);
    }
    // The whole server page (its snippets are below the fold), 2,400 px tall.
    for (theme, flag) in [("dark", DARK), ("light", LIGHT)] {
        for w in [1366, 390] {
            let file = out.join(format!("server-whole-{theme}-{w}.png"));
            chromium.screenshot_with(server, &file, (w, 2400), 2000, &[flag]);
        }
    }
    eprintln!("screenshots in {}", out.display());
}

/// `fragstat track` polling `servers` every 2.5 s: the process, its URL, its directory.
fn track(servers: &[&std::net::SocketAddr]) -> (Running, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("track.db");
    let config = dir.path().join("track.toml");
    let servers: Vec<String> = servers.iter().map(|a| format!("\"{a}\"")).collect();
    std::fs::write(
        &config,
        format!(
            "database = {db:?}\nlisten = \"127.0.0.1:0\"\ninterval_secs = 2.5\ntimeout_ms = 300\nretries = 2\n\n\
             [[source]]\ngame = \"q3\"\nservers = [{}]\n",
            servers.join(", ")
        ),
    )
    .unwrap();
    let mut tracker = Running::start(&["track", "--config", config.to_str().unwrap()], &[]);
    let url = tracker.tracker_url();
    (tracker, url, dir)
}
