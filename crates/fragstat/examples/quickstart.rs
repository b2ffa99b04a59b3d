//! The library in one page: one server with its players, a master's list, a scan of every
//! listed server, and DDNet's HTTP master list.
//!
//! ```sh
//! cargo run -p fragstat --example quickstart -- SERVER MASTER DDNET_SERVERS_JSON_URL
//! ```
//!
//! `fragstat serve q3 --master` starts servers and a master to point it at; the test
//! `crates/fragstat/tests/quickstart.rs` runs it against emulated servers, an emulated
//! master and a local `servers.json`.

use futures_util::StreamExt;
use std::net::SocketAddr;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (server, master, ddnet_url) = (&args[1], &args[2], &args[3]);
    let client = fragstat::Client::builder().build()?;

    let q3 = fragstat::game("q3").ok_or("no q3")?;
    let r = client.query(&q3, server.as_str()).players().await?;
    let players = r.info.players.as_ref().map_or(0, |p| p.len());
    println!("server {} players {players} rtt {:?}", r.info.name, r.rtt);

    let list = client.master_list(&q3, [master.as_str()]).await?;
    let addrs: Vec<SocketAddr> = list.servers().collect();
    println!("listed {}", addrs.len());

    let mut scan = client.scan(&q3, addrs).players();
    let (mut ok, mut timeouts) = (0, 0);
    while let Some((_addr, res)) = scan.next().await {
        match res {
            Ok(_) => ok += 1,
            Err(fragstat::Error::Timeout { .. }) => timeouts += 1,
            Err(e) => return Err(e.into()),
        }
    }
    println!("answered {ok} timeouts {timeouts}");

    let ddnet = fragstat::game("ddnet").ok_or("no ddnet")?;
    let http = client.master_list(&ddnet, [ddnet_url.as_str()]).await?;
    println!("ddnet listed {}", http.servers().count());
    Ok(())
}
