//! The report: Markdown tables of what each master did.

use super::http::HttpResult;
use super::udp::Tally;
use super::Report;

pub(super) fn print_http(h: &HttpResult) {
    let secs = |v: &Option<f64>| v.map_or("not within 60 s".to_string(), |s| format!("{s:.2} s"));
    println!();
    println!("## HTTP floods against --ddnet-listen (HTTPS) and --metrics while a real DDNet server registers\n");
    println!("300 idle connections from 30 hosts and 60 TLS connections with register bodies that stop short from 10 hosts against the DDNet master, 50 idle ones from 5 hosts against the metrics; each reopened as soon as the master closes it.\n");
    println!("| measure | value |");
    println!("| --- | --- |");
    println!(
        "| DDNet 0.6 + 0.7 listed, no flood | {} |",
        secs(&h.baseline)
    );
    println!(
        "| DDNet 0.6 + 0.7 listed, under the floods | {} |",
        secs(&h.under_flood)
    );
    println!(
        "| idle connections opened / closed by the master | {} / {} |",
        h.idle.0, h.idle.1
    );
    println!(
        "| slow-body connections opened / closed by the master | {} / {} |",
        h.slow.0, h.slow.1
    );
    for (k, v) in &h.counters {
        println!("| `{k}` | {v} |");
    }
}

fn kb(b: u64) -> String {
    format!("{:.1} KB", b as f64 / 1e3)
}

pub(super) fn print_reports(reports: &[Report]) {
    println!("## Reflection: 1,200 servers listed; one list request from each of 10,240 victims in 10 s\n");
    for r in reports {
        println!(
            "### {} (1,200 servers registered in {:.1} s)\n",
            r.name, r.registered_in
        );
        println!("| victim network | victims | requests | bytes in (payload / wire) | datagrams out | bytes out (payload / wire) | amplification (payload / wire) |");
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        let mut all = Tally::default();
        let mut v4 = Tally::default();
        let mut v6_other = Tally::default();
        for (net, t) in &r.reflection {
            all.add(t);
            if net.starts_with("127.") {
                v4.add(t);
            } else if net.starts_with("2001:db8:2:") {
                v6_other.add(t);
            }
        }
        let row = |name: &str, t: &Tally| {
            println!(
                "| {name} | {} | {} | {} / {} | {} | {} / {} | × {:.1} / × {:.1} |",
                t.victims,
                t.requests,
                kb(t.bytes_in),
                kb(t.wire_in),
                t.datagrams_out,
                kb(t.bytes_out),
                kb(t.wire_out),
                t.bytes_out as f64 / t.bytes_in.max(1) as f64,
                t.wire_out as f64 / t.wire_in.max(1) as f64
            );
        };
        let max_v4 = r
            .reflection
            .iter()
            .filter(|(n, _)| n.starts_with("127."))
            .max_by_key(|(_, t)| t.bytes_out);
        if let Some((n, t)) = max_v4 {
            row(&format!("the IPv4 /24 that got most ({n})"), t);
        }
        row("all 20 IPv4 /24s", &v4);
        if let Some(t) = r.reflection.get("2001:db8:1::/64") {
            row("one IPv6 /64 (2,560 victims)", t);
        }
        row("ten IPv6 /64s (256 victims each)", &v6_other);
        row("**in all**", &all);
        println!();
    }
    println!("## Heartbeat flood: 2,500 spoofed heartbeats/s from 8,192 addresses; a real server (`fragstat serve q3`) starts during it\n");
    println!(
        "| master | heartbeats sent | registered without a flood | under the flood (5 servers) |"
    );
    println!("| --- | --- | --- | --- |");
    let secs = |v: &Option<f64>| v.map_or("not within 30 s".to_string(), |s| format!("{s:.2} s"));
    for r in reports {
        let f = &r.flood;
        let under: Vec<String> = f.under_flood.iter().map(secs).collect();
        println!(
            "| {} | {} | {} | {} |",
            r.name,
            f.sent,
            secs(&f.baseline),
            under.join(", ")
        );
    }
    println!();
    println!("## Spoofed delisting: heartbeats twice a second from another port of a listed server's host, its host's list budget spent, 60 s (fragstat: expiry 20 s; the server heartbeats every 10 s)\n");
    println!("| master | still listed after 60 s | seconds missing from the list |");
    println!("| --- | --- | --- |");
    for r in reports {
        println!(
            "| {} | {} | {} |",
            r.name,
            if r.delisted.0 { "yes" } else { "**no**" },
            r.delisted.1
        );
    }
}
