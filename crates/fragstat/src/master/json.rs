//! A merged master list as JSON (docs/json.md, "`fragstat master --format json`"): what the
//! CLI prints and the Node.js binding returns.

use fragstat_core::registry::GameRef;
use serde_json::{json, Value};

use super::{MasterList, MasterReport};

impl MasterReport {
    /// The report as JSON writes it (docs/json.md): `address`, `status`, `error`, `servers`,
    /// `rtt_ms`, `kept`, `dropped`, and with `catalogue` the catalogue entry it was asked as.
    pub fn to_json(&self) -> Value {
        let online = self.is_online();
        let mut v = json!({
            "address": self.master,
            "status": self.status,
            "error": self.error.as_ref().map(ToString::to_string),
            "servers": online.then_some(self.listed),
            "rtt_ms": self.rtt.map(|d| (d.as_secs_f64() * 1e6).round() / 1e3),
            "kept": online.then_some(self.kept),
            "dropped": online.then_some(self.dropped()),
        });
        if let (Some(c), Some(obj)) = (&self.catalogue, v.as_object_mut()) {
            obj.insert(
                "catalogue".into(),
                serde_json::to_value(c).unwrap_or_default(),
            );
        }
        v
    }
}

impl MasterList {
    /// For each server of the merged list, the masters (as their reports name them) that
    /// listed it.
    pub fn listed_by(&self) -> Vec<Vec<String>> {
        self.entries
            .iter()
            .map(|l| {
                l.masters
                    .iter()
                    .filter_map(|i| self.reports.get(*i).map(|r| r.master.clone()))
                    .collect()
            })
            .collect()
    }

    /// Drops DDNet's "no finish time" scores from the servers' info (lists that carry it:
    /// DDNet's HTTP master), as [`crate::record`] does for a queried server.
    pub fn clear_no_time(&mut self, game: &GameRef) {
        if game.family() != "teeworlds" {
            return;
        }
        for info in self
            .entries
            .iter_mut()
            .filter_map(|l| l.entry.info.as_mut())
        {
            crate::record::no_time(info, false);
        }
    }

    /// The list as `fragstat master --format json` prints it: `{"masters": […], "servers":
    /// […]}`, each server with `listed_by`. Call [`MasterList::clear_no_time`] first for the
    /// CLI's scores.
    pub fn to_json(&self) -> Value {
        let by = self.listed_by();
        let servers: Vec<Value> = self
            .entries
            .iter()
            .zip(by)
            .map(|(l, by)| {
                let mut v = serde_json::to_value(&l.entry).unwrap_or(Value::Null);
                if let Some(obj) = v.as_object_mut() {
                    obj.insert("listed_by".into(), json!(by));
                }
                v
            })
            .collect();
        let masters: Vec<Value> = self.reports.iter().map(MasterReport::to_json).collect();
        json!({"masters": masters, "servers": servers})
    }
}
