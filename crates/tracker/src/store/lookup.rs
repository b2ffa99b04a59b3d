//! Several servers at once, by address: what a page that lists players on many servers (the
//! player search, a player's sessions) reads in one query instead of one per server.

use std::collections::HashMap;

use sqlx::Row;

use super::read::{server_row, SERVERS_NOW, SERVER_COLUMNS};
use super::{ServerRow, Store, StoreError};

/// Addresses one statement asks for at most (each is a bound value: well under SQLite's and
/// PostgreSQL's limits); a longer list is asked in several.
const ADDRS_PER_QUERY: usize = 500;

/// `$first, …`: `n` placeholders numbered from `first`.
fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `addrs` without repeats, in their first order.
fn distinct<'a>(addrs: &[&'a str]) -> Vec<&'a str> {
    let mut seen = std::collections::HashSet::new();
    addrs.iter().copied().filter(|a| seen.insert(*a)).collect()
}

impl Store {
    /// The latest state of each server at `addrs` that is known (as [`Store::server`] reads
    /// one), by address; addresses not known are left out, repeats asked once. One query
    /// for up to 500 addresses.
    pub async fn servers_at(
        &self,
        addrs: &[&str],
    ) -> Result<HashMap<String, ServerRow>, StoreError> {
        let mut out = HashMap::new();
        for chunk in distinct(addrs).chunks(ADDRS_PER_QUERY) {
            let sql = format!(
                "SELECT {SERVER_COLUMNS} FROM {SERVERS_NOW} WHERE addr IN ({})",
                placeholders(1, chunk.len())
            );
            let mut q = sqlx::query(&sql);
            for a in chunk {
                q = q.bind(*a);
            }
            let rows = self.fetch_all(q).await?;
            for r in &rows {
                let s = server_row(r)?;
                out.insert(s.addr.clone(), s);
            }
        }
        Ok(out)
    }

    /// The stored JSON records ([`Store::server_record`]) of the servers at `addrs` whose
    /// game is one of `games`, by address: one query for up to 500 addresses.
    pub async fn records_at(
        &self,
        addrs: &[&str],
        games: &[&str],
    ) -> Result<HashMap<String, String>, StoreError> {
        let mut out = HashMap::new();
        if games.is_empty() {
            return Ok(out);
        }
        for chunk in distinct(addrs).chunks(ADDRS_PER_QUERY) {
            let sql = format!(
                "SELECT addr, record FROM servers WHERE addr IN ({}) AND game IN ({})",
                placeholders(1, chunk.len()),
                placeholders(chunk.len() + 1, games.len())
            );
            let mut q = sqlx::query(&sql);
            for a in chunk.iter().chain(games) {
                q = q.bind(*a);
            }
            let rows = self.fetch_all(q).await?;
            for r in &rows {
                out.insert(r.try_get("addr")?, r.try_get("record")?);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_repeats() {
        assert_eq!(placeholders(1, 3), "$1, $2, $3");
        assert_eq!(placeholders(4, 2), "$4, $5");
        assert_eq!(placeholders(1, 0), "");
        assert_eq!(distinct(&["a", "b", "a", "c", "b"]), ["a", "b", "c"]);
    }

    #[tokio::test]
    async fn several_servers_in_one_query() {
        use fragstat::core::model::ServerInfo;
        use fragstat::core::record::Record;
        let store = Store::open("sqlite::memory:").await.unwrap();
        let rec = |addr: &str, game: &str| {
            Record::online(Some(addr.into()), game, ServerInfo::default(), None)
        };
        store
            .write_round(&super::super::RoundData {
                at: 1_000,
                finished: 1_005,
                records: vec![
                    rec("192.0.2.1:27960", "q3"),
                    rec("192.0.2.2:8303", "ddnet"),
                    rec("192.0.2.3:27960", "openarena"),
                ],
                ..Default::default()
            })
            .await
            .unwrap();
        let addrs = [
            "192.0.2.2:8303",
            "192.0.2.9:1",
            "192.0.2.1:27960",
            "192.0.2.2:8303",
        ];
        let found = store.servers_at(&addrs).await.unwrap();
        let mut keys: Vec<&str> = found.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["192.0.2.1:27960", "192.0.2.2:8303"]);
        // What `Store::server` reads, row for row.
        for (addr, row) in &found {
            assert_eq!(Some(row), store.server(addr).await.unwrap().as_ref());
        }
        assert!(store.servers_at(&[]).await.unwrap().is_empty());
        // More addresses than one statement takes: asked in several, all found.
        let many: Vec<String> = (0..1200).map(|i| format!("198.51.100.1:{i}")).collect();
        let mut many: Vec<&str> = many.iter().map(String::as_str).collect();
        many.push("192.0.2.3:27960");
        assert_eq!(store.servers_at(&many).await.unwrap().len(), 1);
        // Records, of the games asked for only.
        let records = store
            .records_at(&addrs, &["ddnet", "teeworlds"])
            .await
            .unwrap();
        assert_eq!(records.keys().collect::<Vec<_>>(), ["192.0.2.2:8303"]);
        assert_eq!(
            records.get("192.0.2.2:8303"),
            store
                .server_record("192.0.2.2:8303")
                .await
                .unwrap()
                .as_ref()
        );
        assert!(store.records_at(&addrs, &[]).await.unwrap().is_empty());
    }
}
