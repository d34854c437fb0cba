// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The library's logger: silent unless `VCUDA_LOG` names a level (`error`, `warn`, `info`,
//! `debug`, `trace`). Lines go to stderr, prefixed `vcuda:`; never to stdout.

use std::io::Write;
use std::sync::Once;

use log::{LevelFilter, Log, Metadata, Record};

struct Logger;

impl Log for Logger {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }

    fn log(&self, r: &Record<'_>) {
        if self.enabled(r.metadata()) {
            let _ = writeln!(
                std::io::stderr().lock(),
                "vcuda: {}: {}",
                r.level(),
                r.args()
            );
        }
    }

    fn flush(&self) {}
}

static LOGGER: Logger = Logger;
static INIT: Once = Once::new();

/// Installs the logger once, at the level `VCUDA_LOG` asks for.
pub fn init() {
    INIT.call_once(|| {
        let level = match std::env::var("VCUDA_LOG")
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Ok("error") => LevelFilter::Error,
            Ok("warn") | Ok("1") => LevelFilter::Warn,
            Ok("info") => LevelFilter::Info,
            Ok("debug") => LevelFilter::Debug,
            Ok("trace") => LevelFilter::Trace,
            _ => LevelFilter::Off,
        };
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(level);
        }
    });
}

/// Prints a line on stderr even when logging is off: for failures a user must see, such as
/// an unreachable backend. Printed once per process per `key`.
pub fn alert(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "vcuda: {msg}");
}
