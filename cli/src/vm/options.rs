// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The options of `vcuda vm run` and the parsing of its memory size.

use std::path::PathBuf;
use std::time::Duration;

/// Options of `vcuda vm run`.
#[derive(Debug, Clone)]
pub struct VmOptions {
    /// `cpu`, `cuda` or `auto`.
    pub executor: String,
    /// Guest RAM in MiB.
    pub memory_mib: u64,
    /// Guest CPUs.
    pub smp: u32,
    /// Request queues (default: one per guest CPU, at most 16).
    pub queues: Option<u32>,
    /// The backend's `--poll-us` (0: it never polls).
    pub poll_us: u32,
    /// Wall-clock limit for the whole run.
    pub timeout: Duration,
    /// `auto`, `kvm` or `tcg`.
    pub accel: String,
    /// Extra environment for the program (`KEY=VALUE`).
    pub env: Vec<String>,
    /// A prebuilt image directory (with `image.env`).
    pub image_dir: Option<PathBuf>,
    /// Copy the guest console here.
    pub console_log: Option<PathBuf>,
    /// Echo the guest console to stderr.
    pub verbose: bool,
    /// After the program, unload the module in the guest; fail if that does not work.
    pub check_unload: bool,
    /// Files to copy into the guest: `SRC` or `SRC:DEST`.
    pub add: Vec<String>,
    /// Migrate the guest once, this long after QEMU starts, to a second QEMU and backend.
    pub migrate_after: Option<Duration>,
    /// Migrate the guest each time a line of the program's stdout contains this text.
    pub migrate_on: Option<String>,
    /// When migrating on the CPU executor, have the destination's backend copy device
    /// memory ahead of the stop (`--precopy-listen`, `--precopy-from`).
    pub precopy: bool,
    /// The program and its arguments.
    pub program: Vec<String>,
}

impl Default for VmOptions {
    /// The defaults of `vcuda vm run`'s command line.
    fn default() -> Self {
        Self {
            executor: "auto".into(),
            memory_mib: 2048,
            smp: 2,
            queues: None,
            poll_us: 0,
            timeout: Duration::from_secs(600),
            accel: "auto".into(),
            env: Vec::new(),
            image_dir: None,
            console_log: None,
            verbose: false,
            check_unload: false,
            add: Vec::new(),
            migrate_after: None,
            migrate_on: None,
            precopy: true,
            program: Vec::new(),
        }
    }
}

/// Parses a memory size: `512`, `512M`, `2G` (MiB by default).
pub fn parse_memory(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mul) = match s.char_indices().last() {
        Some((i, 'G' | 'g')) => (&s[..i], 1024),
        Some((i, 'M' | 'm')) => (&s[..i], 1),
        _ => (s, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("bad memory size {s:?} (use e.g. 1024, 512M or 2G)"))?;
    let mib = n.checked_mul(mul).ok_or("memory size too large")?;
    if !(128..=1 << 20).contains(&mib) {
        return Err(format!("memory size {mib} MiB outside 128 MiB..1 TiB"));
    }
    Ok(mib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory("512").unwrap(), 512);
        assert_eq!(parse_memory("512M").unwrap(), 512);
        assert_eq!(parse_memory("2G").unwrap(), 2048);
        assert!(parse_memory("12").is_err());
        assert!(parse_memory("x").is_err());
    }
}
