//! The DDNet registry's budgets: servers and bytes of info per address prefix and in all,
//! and the size of `servers.json` (security review H3: a flat 64 MiB and 20,000 servers in all
//! were filled by 34 hosts, and every later server was refused).

use fragstat_core::fair::Caps;

/// Most servers (secrets) registered from one host (IPv4 address, IPv6 /64).
pub const SERVERS_PER_HOST: u64 = 64;
/// Most servers from one network (IPv4 /24, IPv6 /48).
pub const SERVERS_PER_NET: u64 = 256;
/// Most servers registered in all.
pub const MAX_SERVERS: u64 = 20_000;
/// Most bytes of info from one host (IPv4 address, IPv6 /64).
pub const INFO_PER_HOST: u64 = 1 << 20;
/// Most bytes of info from one network (IPv4 /24, IPv6 /48).
pub const INFO_PER_NET: u64 = 4 << 20;
/// Most bytes of info stored in all.
pub const MAX_INFO_BYTES: u64 = 64 << 20;
/// Largest `servers.json`: about 7,000 servers of 2.3 KB (the size of a typical DDNet info),
/// three to four times what DDNet's own masters list.
pub const MAX_LIST_BYTES: u64 = 16 << 20;

/// What the registry holds at most, per prefix and in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DdnetLimits {
    /// Servers (secrets) per prefix: a server registered from several hosts (IPv4 and IPv6)
    /// counts once on each.
    pub servers: Caps,
    /// Servers in all (one per host a server registers from).
    pub max_servers: u64,
    /// Bytes of info per prefix, charged to the address that sent the info.
    pub info: Caps,
    /// Bytes of info in all.
    pub max_info_bytes: u64,
    /// Largest `servers.json`; past it, the servers of the networks listing the most bytes
    /// are left out (see [`super::DdnetMaster::servers_json`]).
    pub max_list_bytes: u64,
}

impl Default for DdnetLimits {
    fn default() -> Self {
        DdnetLimits::from_shares(
            [SERVERS_PER_HOST, SERVERS_PER_NET, MAX_SERVERS],
            [INFO_PER_HOST, INFO_PER_NET, MAX_INFO_BYTES],
            MAX_LIST_BYTES,
        )
    }
}

/// Caps at every level from a host's, a network's (IPv4 /24, IPv6 /48) and the total: an
/// IPv6 /56 gets twice a host's (at most a network's), an IPv4 /16 and an IPv6 /32 four times
/// a network's (at most the total).
fn caps(host: u64, net: u64, total: u64) -> Caps {
    let net = net.max(host);
    let wide = net.saturating_mul(4).min(total).max(net);
    Caps {
        v4: [host, net, wide],
        v6: [host, host.saturating_mul(2).min(net), net, wide],
    }
}

impl DdnetLimits {
    /// Limits from `[per host, per network, in all]` for servers and for info bytes, and the
    /// largest `servers.json`.
    pub fn from_shares(servers: [u64; 3], info: [u64; 3], max_list_bytes: u64) -> Self {
        let [sh, sn, st] = servers;
        let [ih, inet, it] = info;
        DdnetLimits {
            servers: caps(sh, sn, st),
            max_servers: st,
            info: caps(ih, inet, it),
            max_info_bytes: it,
            max_list_bytes,
        }
    }

    /// Checks the values: every cap at least 1, none wider than the one above it, and the
    /// list large enough for one server of the largest info.
    pub fn check(&self) -> Result<(), String> {
        self.servers.check("DDNet servers")?;
        self.info.check("DDNet info bytes")?;
        if self.max_servers == 0 || self.max_info_bytes == 0 {
            return Err("the DDNet totals must be at least 1".into());
        }
        if self.servers.v4[0] > self.max_servers || self.info.v4[0] > self.max_info_bytes {
            return Err("a DDNet host's share cannot be larger than the total".into());
        }
        if self.max_list_bytes < super::MAX_INFO as u64 * 2 {
            return Err(format!(
                "servers.json must be allowed at least {} KiB (two of the largest infos)",
                super::MAX_INFO * 2 / 1024
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_caps_are_consistent() {
        let l = DdnetLimits::default();
        assert_eq!(l.check(), Ok(()));
        assert_eq!(l.servers.v4, [64, 256, 1024]);
        assert_eq!(l.servers.v6, [64, 128, 256, 1024]);
        assert_eq!(l.info.v4, [1 << 20, 4 << 20, 16 << 20]);
        assert_eq!(l.info.v6, [1 << 20, 2 << 20, 4 << 20, 16 << 20]);
        let tiny = DdnetLimits::from_shares([4, 2, 100], [10, 10, 10], 1);
        assert!(tiny.check().is_err());
    }
}
