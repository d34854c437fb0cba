// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The guest's output: the serial console (kernel log and the guest init's `VCUDA-GUEST:`
//! status lines) read into a [`Console`], and the program's stdout and stderr copied to
//! ours.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Console lines kept for error reports.
const CONSOLE_TAIL: usize = 60;

/// Prefix of the guest init's status lines.
const STATUS_PREFIX: &str = "VCUDA-GUEST: ";

/// What the console reader saw.
#[derive(Default)]
pub(super) struct Console {
    pub(super) tail: VecDeque<String>,
    pub(super) ready: bool,
    pub(super) exit_status: Option<i32>,
    pub(super) rmmod_ok: Option<bool>,
    pub(super) error: Option<String>,
}

pub(super) fn spawn_console_reader(
    pipe: OwnedFd,
    state: Arc<Mutex<Console>>,
    mut log: Option<File>,
    verbose: bool,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(File::from(pipe));
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Some(f) = log.as_mut() {
                let _ = f.write_all(&buf);
            }
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if verbose {
                eprintln!("[guest] {line}");
            }
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = line.find(STATUS_PREFIX) {
                let msg = &line[i + STATUS_PREFIX.len()..];
                if msg == "ready" {
                    st.ready = true;
                } else if let Some(v) = msg.strip_prefix("exit-status=") {
                    st.exit_status = v.trim().parse().ok();
                } else if let Some(v) = msg.strip_prefix("rmmod=") {
                    st.rmmod_ok = Some(v.trim() == "ok");
                } else if let Some(v) = msg.strip_prefix("error=") {
                    st.error = Some(v.to_owned());
                }
            }
            if st.tail.len() == CONSOLE_TAIL {
                st.tail.pop_front();
            }
            st.tail.push_back(line.to_owned());
        }
    })
}

/// Copies a pipe to `to` as it fills. With `watch` `(text, count)`, counts the lines that
/// contain `text` (a program asking for a migration, `--migrate-on`).
pub(super) fn spawn_copy(
    pipe: OwnedFd,
    mut to: impl Write + Send + 'static,
    watch: Option<(String, Arc<AtomicUsize>)>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut from = File::from(pipe);
        let mut buf = vec![0u8; 64 << 10];
        // The line being read, for the watch (at most a line's worth is kept).
        let mut line: Vec<u8> = Vec::new();
        loop {
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    let _ = to.flush();
                    if let Some((text, count)) = &watch {
                        for &b in &buf[..n] {
                            if b == b'\n' {
                                if String::from_utf8_lossy(&line).contains(text.as_str()) {
                                    count.fetch_add(1, Ordering::SeqCst);
                                }
                                line.clear();
                            } else if line.len() < 4096 {
                                line.push(b);
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
}
