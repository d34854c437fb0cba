// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Memory sizes from the command line, and the host's memory.
//!
//! `--cpu-memory` and `--session-mem-limit` take a size: a number of bytes with an optional
//! binary suffix (`K`, `M`, `G`, `T`, optionally followed by `i`/`iB`/`B`), or a percentage
//! (`50%`) of what the limit is taken from (the host's memory for the CPU executor's total,
//! the executor's total for a session).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// A size as given: bytes, or a share of some total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemSize {
    /// This many bytes.
    Bytes(u64),
    /// This percentage (1 to 100) of the total it applies to.
    Percent(u8),
}

impl MemSize {
    /// The size in bytes, where a percentage applies to `total`.
    pub fn of(self, total: u64) -> u64 {
        match self {
            MemSize::Bytes(b) => b,
            MemSize::Percent(p) => (u128::from(total) * u128::from(p) / 100) as u64,
        }
    }
}

/// Why a size did not parse.
#[derive(Debug, Error, PartialEq, Eq)]
#[error(
    "{0:?} is not a size: give bytes with an optional K/M/G/T suffix (e.g. 512M, 4G) or a percentage from 1% to 100%"
)]
pub struct BadSize(String);

impl FromStr for MemSize {
    type Err = BadSize;

    fn from_str(s: &str) -> Result<Self, BadSize> {
        let bad = || BadSize(s.to_owned());
        let t = s.trim();
        if let Some(p) = t.strip_suffix('%') {
            let p: u8 = p.trim().parse().map_err(|_| bad())?;
            return if (1..=100).contains(&p) {
                Ok(MemSize::Percent(p))
            } else {
                Err(bad())
            };
        }
        let t = t
            .strip_suffix("iB")
            .or_else(|| t.strip_suffix('B'))
            .or_else(|| t.strip_suffix('i'))
            .unwrap_or(t);
        let (num, shift) = match t.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => {
                let shift = match c.to_ascii_uppercase() {
                    'K' => 10,
                    'M' => 20,
                    'G' => 30,
                    'T' => 40,
                    _ => return Err(bad()),
                };
                (&t[..i], shift)
            }
            _ => (t, 0),
        };
        let n: u64 = num.trim().parse().map_err(|_| bad())?;
        n.checked_mul(1 << shift)
            .filter(|&b| b > 0)
            .map(MemSize::Bytes)
            .ok_or_else(bad)
    }
}

impl fmt::Display for MemSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemSize::Bytes(b) if b % (1 << 30) == 0 => write!(f, "{}G", b >> 30),
            MemSize::Bytes(b) if b % (1 << 20) == 0 => write!(f, "{}M", b >> 20),
            MemSize::Bytes(b) => write!(f, "{b}"),
            MemSize::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// The memory this process may use: the host's RAM (`MemTotal`), or its cgroup's
/// `memory.max` if lower (cgroup v2). `None` if `/proc/meminfo` cannot be read.
pub fn host_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let total = meminfo_total(&meminfo)?;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    // "max" (no limit) does not parse: the host's memory then.
    let cgroup = cgroup_v2_path(&cgroups)
        .and_then(|p| std::fs::read_to_string(format!("/sys/fs/cgroup{p}/memory.max")).ok())
        .and_then(|m| m.trim().parse::<u64>().ok());
    Some(cgroup.map_or(total, |c| c.min(total)))
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The cgroup v2 path (`0::/path`) of `/proc/self/cgroup`.
fn cgroup_v2_path(cgroup: &str) -> Option<&str> {
    cgroup.lines().find_map(|l| l.strip_prefix("0::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        let b = |s: &str| s.parse::<MemSize>();
        assert_eq!(b("512M"), Ok(MemSize::Bytes(512 << 20)));
        assert_eq!(b("4G"), Ok(MemSize::Bytes(4 << 30)));
        assert_eq!(b("4GiB"), Ok(MemSize::Bytes(4 << 30)));
        assert_eq!(b("2Gi"), Ok(MemSize::Bytes(2 << 30)));
        assert_eq!(b("64k"), Ok(MemSize::Bytes(64 << 10)));
        assert_eq!(b("1T"), Ok(MemSize::Bytes(1 << 40)));
        assert_eq!(b("12345"), Ok(MemSize::Bytes(12345)));
        assert_eq!(b("50%"), Ok(MemSize::Percent(50)));
        assert_eq!(b("100%"), Ok(MemSize::Percent(100)));
        for bad in [
            "",
            "0",
            "0%",
            "101%",
            "-1G",
            "12X",
            "G",
            "99999999999T",
            "1.5G",
        ] {
            assert!(b(bad).is_err(), "{bad}");
        }
        assert_eq!(MemSize::Percent(25).of(1000), 250);
        assert_eq!(MemSize::Bytes(7).of(1000), 7);
        assert_eq!(MemSize::Percent(100).of(u64::MAX), u64::MAX);
        assert_eq!(MemSize::Bytes(4 << 30).to_string(), "4G");
    }

    #[test]
    fn host_memory_is_read() {
        assert_eq!(
            meminfo_total("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            Some(24_576_000 * 1024)
        );
        assert_eq!(cgroup_v2_path("0::/user.slice/x\n"), Some("/user.slice/x"));
        assert_eq!(cgroup_v2_path("1:cpu:/a\n"), None);
        let m = host_memory().expect("/proc/meminfo");
        assert!(m >= 64 << 20, "{m}");
    }
}
