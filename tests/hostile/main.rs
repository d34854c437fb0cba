// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Hostile and broken clients against a real `vcuda-backend serve` (see README.md here):
//! resource bounds, timeouts, access control, and a program whose backend dies mid-copy.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vcuda_protocol::decode::{decode_reply_header, split_records};
use vcuda_protocol::{
    DeviceReq, HelloReq, IpcOpenReq, MESSAGE_MAGIC, MallocReq, MemGetInfoResp, MessageBuilder,
    MessageHeader, PROTOCOL_VERSION, PtrReq, PtrResp, ReplyHeader, ops, status,
};
use vcuda_tests::{Cuda, bin, bin_dir, build_source, repo_root};
use zerocopy::{FromBytes, IntoBytes};

const MIB: u64 = 1 << 20;

/// A `vcuda-backend serve` on the CPU executor, killed when dropped.
struct Backend {
    child: Child,
    _dir: tempfile::TempDir,
    socket: PathBuf,
    log: PathBuf,
}

impl Backend {
    /// Starts one on a socket in a fresh directory, with `args` after the defaults (1 s
    /// handshake and message timeouts).
    fn start(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("backend.sock");
        let b = Self::spawn(dir, socket, args, true);
        wait_for_socket(&b);
        b
    }

    fn spawn(dir: tempfile::TempDir, socket: PathBuf, args: &[&str], explicit: bool) -> Self {
        let log = dir.path().join("backend.log");
        let mut cmd = Command::new(bin("vcuda-backend"));
        cmd.args(["serve", "--executor", "cpu", "--cpu-memory-mib", "1024"]);
        if explicit {
            cmd.arg("--socket").arg(&socket);
        }
        for flag in ["--handshake-timeout-ms", "--message-timeout-ms"] {
            if !args.contains(&flag) {
                cmd.args([flag, "1000"]);
            }
        }
        let child = cmd
            .args(args)
            .env_remove("VCUDA_SOCKET")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Self {
            child,
            _dir: dir,
            socket,
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Resident memory of the backend, in bytes.
    fn rss(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = s
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kib * 1024
    }

    fn connect(&self) -> UnixStream {
        let s = UnixStream::connect(&self.socket).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for_socket(b: &Backend) {
    let start = Instant::now();
    while UnixStream::connect(&b.socket).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the backend did not start:\n{}",
            b.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

mod compile;
mod isolation;
mod ring;
mod shared;
mod signals;
mod tls;

/// Sends a `Hello` and returns its status, or the I/O error that ended the exchange.
fn hello(s: &mut (impl Read + Write)) -> std::io::Result<u32> {
    hello_rw(s)
}

/// A `Hello` message with `flags` (`HELLO_FLAG_*`).
fn hello_message(flags: u32) -> Vec<u8> {
    let mut b = MessageBuilder::new();
    let req = HelloReq {
        runtime_version: 13000,
        pid: std::process::id(),
        va_base: 0,
        va_len: 0,
        flags,
        reserved: 0,
    };
    b.push_op::<ops::Hello>(0, 1, &[], &req, b"hostile");
    b.finish(0).to_vec()
}

/// [`hello`] on any stream.
fn hello_rw(s: &mut (impl Read + Write)) -> std::io::Result<u32> {
    s.write_all(&hello_message(0))?;
    let mut hdr = [0u8; size_of::<ReplyHeader>()];
    s.read_exact(&mut hdr)?;
    let h = decode_reply_header(&hdr).map_err(std::io::Error::other)?;
    let mut ctrl = vec![0u8; h.ctrl_len as usize];
    s.read_exact(&mut ctrl)?;
    let recs = split_records(&h, &ctrl).map_err(std::io::Error::other)?;
    let mut rest = vec![0u8; h.in_len as usize];
    s.read_exact(&mut rest)?;
    Ok(recs.first().map_or(u32::MAX, |r| r.header.status))
}

/// Reads one reply: the status and payload of each record.
fn read_reply(s: &mut UnixStream) -> std::io::Result<Vec<(u32, Vec<u8>)>> {
    let mut hdr = [0u8; size_of::<ReplyHeader>()];
    s.read_exact(&mut hdr)?;
    let h = decode_reply_header(&hdr).map_err(std::io::Error::other)?;
    let mut ctrl = vec![0u8; h.ctrl_len as usize];
    s.read_exact(&mut ctrl)?;
    let recs = split_records(&h, &ctrl).map_err(std::io::Error::other)?;
    let mut rest = vec![0u8; h.in_len as usize];
    s.read_exact(&mut rest)?;
    Ok(recs
        .iter()
        .map(|r| (r.header.status, r.payload.to_vec()))
        .collect())
}

/// `n` `Malloc`s of `size` bytes in one message: how many succeeded before the first
/// failure, and its status (0 if none failed).
fn mallocs(s: &mut UnixStream, n: usize, size: u64) -> (usize, u32) {
    let mut b = MessageBuilder::new();
    let req = MallocReq {
        device: 0,
        flags: 0,
        size,
    };
    for i in 0..n {
        b.push_op::<ops::Malloc>(0, 100 + i as u64, &[], &req, &[]);
    }
    s.write_all(b.finish(0)).unwrap();
    let recs = read_reply(s).unwrap();
    let ok = recs
        .iter()
        .take_while(|(st, p)| {
            *st == 0 && p.len() >= 8 && PtrResp::read_from_prefix(p).is_ok_and(|(r, _)| r.ptr != 0)
        })
        .count();
    (ok, recs.get(ok).map_or(0, |r| r.0))
}

/// `cudaMemGetInfo` as the session sees it: `(free, total)`.
fn mem_info(s: &mut UnixStream) -> (u64, u64) {
    let mut b = MessageBuilder::new();
    b.push_op::<ops::MemGetInfo>(0, 99, &[], &DeviceReq::default(), &[]);
    s.write_all(b.finish(0)).unwrap();
    let recs = read_reply(s).unwrap();
    let (r, _) = MemGetInfoResp::read_from_prefix(&recs[0].1).unwrap();
    (r.free, r.total)
}

/// A message header announcing `out_len` bytes of out data (and a small control area).
fn claim(out_len: u64) -> MessageHeader {
    MessageHeader {
        magic: MESSAGE_MAGIC,
        version: PROTOCOL_VERSION,
        flags: 0,
        n_requests: 1,
        ctrl_len: 64,
        out_len,
        in_len: 0,
    }
}

/// Waits until the backend closes `s` (end of file or reset); returns when, or panics
/// after `limit`.
fn wait_closed(s: &mut UnixStream, limit: Duration) -> Instant {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Instant::now(),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Instant::now(),
            Err(e) => panic!("still open after {limit:?}: {e}"),
        }
    }
}

#[test]
fn huge_claims_then_silence() {
    let b = Backend::start(&[
        "--handshake-timeout-ms",
        "1500",
        "--message-timeout-ms",
        "1500",
    ]);
    std::thread::sleep(Duration::from_millis(200));
    let before = b.rss();
    let sent = Instant::now();
    let mut conns: Vec<UnixStream> = (0..12)
        .map(|_| {
            let mut s = b.connect();
            s.write_all(claim(256 * MIB).as_bytes()).unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let during = b.rss();
    eprintln!(
        "12 connections announcing 256 MiB each: backend RSS {:.1} MiB before, {:.1} MiB \
         while they wait (+{:.1} MiB)",
        before as f64 / MIB as f64,
        during as f64 / MIB as f64,
        (during as f64 - before as f64) / MIB as f64
    );
    assert!(
        during < before + 16 * MIB,
        "RSS grew from {before} to {during}"
    );
    for s in &mut conns {
        let t = wait_closed(s, Duration::from_secs(6)) - sent;
        assert!(t >= Duration::from_millis(1400), "closed after {t:?}");
    }
    let t = sent.elapsed();
    eprintln!("all 12 closed {t:?} after the headers (handshake timeout 1.5 s)");
    assert!(t < Duration::from_secs(5));
    assert!(b.log().contains("timed out"), "{}", b.log());
}

#[test]
fn stalled_message_after_hello() {
    let b = Backend::start(&["--message-timeout-ms", "800"]);
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS);
    // An idle session may stay idle past both timeouts.
    std::thread::sleep(Duration::from_millis(2000));
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS);
    // A message that starts and stalls is cut off.
    let before = b.rss();
    s.write_all(claim(256 * MIB).as_bytes()).unwrap();
    s.write_all(&[0u8; 64]).unwrap();
    s.write_all(&vec![0u8; MIB as usize]).unwrap();
    let sent = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let during = b.rss();
    let t = wait_closed(&mut s, Duration::from_secs(5)) - sent;
    eprintln!(
        "a session announcing 256 MiB, sending 1 MiB, then stalling: RSS +{:.1} MiB, \
         closed after {t:?} (message timeout 0.8 s)",
        (during as f64 - before as f64) / MIB as f64
    );
    assert!(during < before + 16 * MIB);
    assert!(
        t >= Duration::from_millis(700) && t < Duration::from_secs(3),
        "{t:?}"
    );
}

#[test]
fn idle_connections_do_not_lock_out() {
    let b = Backend::start(&[
        "--handshake-timeout-ms",
        "60000",
        "--max-pending",
        "16",
        "--max-sessions",
        "8",
    ]);
    let mut idle: Vec<UnixStream> = (0..300).map(|_| b.connect()).collect();
    let start = Instant::now();
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS, "{}", b.log());
    let t = start.elapsed();
    // Most idle connections were closed to make room.
    let mut closed = 0;
    for c in &mut idle {
        c.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 1];
        match c.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            _ => closed += 1,
        }
    }
    eprintln!(
        "300 idle connections: a real client's Hello succeeded after {t:?}; {closed} idle \
         ones were closed"
    );
    assert!(t < Duration::from_secs(5));
    assert!(closed >= 300 - 16, "{closed}");
}

#[test]
fn per_peer_bound() {
    let b = Backend::start(&["--max-sessions-per-peer", "3"]);
    // The first may find the start-up probe's connection (`wait_for_socket`) not yet seen
    // closed, and be refused as a fourth; it is served once the backend has seen that.
    let start = Instant::now();
    let mut live: Vec<UnixStream> = (0..3)
        .map(|_| {
            loop {
                let mut s = b.connect();
                match hello(&mut s) {
                    Ok(status::SUCCESS) => break s,
                    r => {
                        assert!(
                            start.elapsed() < Duration::from_secs(10),
                            "{r:?}\n{}",
                            b.log()
                        );
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        })
        .collect();
    let mut extra = b.connect();
    assert!(hello(&mut extra).is_err());
    live.pop();
    // Served again once the backend has seen that session end (at once, unless this
    // machine is loaded).
    served_again(&b);
    assert!(b.log().contains("connections already"), "{}", b.log());
}

/// Waits (at most 10 s) until a new connection completes its `Hello` again.
fn served_again(b: &Backend) {
    let start = Instant::now();
    loop {
        let mut again = b.connect();
        if hello(&mut again).is_ok_and(|s| s == status::SUCCESS) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{}", b.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn disallowed_uid_is_refused() {
    // The list replaces the default (this uid and root), so this test's uid is not in it.
    let b = Backend::start(&["--allow-uid", "4242"]);
    let mut s = b.connect();
    assert!(hello(&mut s).is_err());
    std::thread::sleep(Duration::from_millis(100));
    let log = b.log();
    assert!(log.contains("not an allowed uid"), "{log}");
}

#[test]
fn default_socket_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().to_path_buf();
    let socket = xdg.join("vcuda/vcuda.sock");
    let log = xdg.join("backend.log");
    let child = Command::new(bin("vcuda-backend"))
        .args(["serve", "--executor", "cpu"])
        .env_remove("VCUDA_SOCKET")
        .env("XDG_RUNTIME_DIR", &xdg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let b = Backend {
        child,
        _dir: dir,
        socket: socket.clone(),
        log,
    };
    wait_for_socket(&b);
    let d = std::fs::symlink_metadata(xdg.join("vcuda")).unwrap();
    let f = std::fs::symlink_metadata(&socket).unwrap();
    eprintln!(
        "{}: dir {:o}, socket {:o}",
        socket.display(),
        d.mode() & 0o7777,
        f.mode() & 0o7777
    );
    assert!(d.is_dir());
    assert_eq!(d.mode() & 0o7777, 0o700);
    assert!(f.file_type().is_socket());
    assert_eq!(f.mode() & 0o7777, 0o600);
}

#[test]
fn no_default_socket_without_xdg_runtime_dir_for_users() {
    if std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    {
        eprintln!("skipping: running as root, whose default is /run/vcuda/vcuda.sock");
        return;
    }
    let o = Command::new(bin("vcuda-backend"))
        .args(["serve", "--executor", "cpu"])
        .env_remove("VCUDA_SOCKET")
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("XDG_RUNTIME_DIR"));
}

#[test]
fn malformed_frames_are_logged_once_per_connection() {
    let b = Backend::start(&[]);
    for _ in 0..60 {
        let mut s = b.connect();
        s.write_all(&[0xAB; 32]).unwrap();
        // Answered once (a malformed record), then closed.
        wait_closed(&mut s, Duration::from_secs(5));
    }
    std::thread::sleep(Duration::from_millis(100));
    let log = b.log();
    let lines = log
        .lines()
        .filter(|l| l.contains("bad message header"))
        .count();
    eprintln!("60 connections sending garbage: {lines} log lines");
    assert!((1..=20).contains(&lines), "{log}");
}

#[test]
fn backend_killed_mid_copy() {
    let src = repo_root().join("tests/hostile/killed_mid_copy.cu");
    let Some(exe) = build_source(&src, Cuda::V13) else {
        return;
    };
    let mut b = Backend::start(&[]);
    let mut prog = Command::new(bin("vcuda"))
        .args(["run", "--"])
        .arg(&exe)
        .env("VCUDA_SOCKET", &b.socket)
        .env("VCUDA_LIB_DIR", bin_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(prog.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "READY", "{}", b.log());
    std::thread::sleep(Duration::from_millis(300));
    b.child.kill().unwrap();
    let _ = b.child.wait();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let st = prog.wait().unwrap();
    let mut err = String::new();
    prog.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    eprintln!("program after the backend was killed: {st}\n{rest}{err}");
    assert_eq!(st.code(), Some(2), "{rest}{err}");
    assert!(rest.contains("ERROR cudaErrorDevicesUnavailable"), "{rest}");
    assert!(rest.contains("AGAIN cudaErrorDevicesUnavailable"), "{rest}");
}

/// The backend's CPU time (user + system) so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / hz)
}

/// Starts `endless_kernel` against `b` (with vcuda's libraries first on its library path)
/// and waits for its READY line.
fn start_endless(b: &Backend) -> Option<(Child, BufReader<std::process::ChildStdout>)> {
    let src = repo_root().join("tests/hostile/endless_kernel.cu");
    let exe = build_source(&src, Cuda::V13)?;
    // The program itself, not `vcuda run` (killing that would leave the program running).
    let lib_dir = Command::new(bin("vcuda"))
        .arg("lib-dir")
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .unwrap();
    assert!(lib_dir.status.success());
    let lib_dir = String::from_utf8(lib_dir.stdout).unwrap();
    let mut prog = Command::new(&exe)
        .env("VCUDA_SOCKET", &b.socket)
        .env("LD_LIBRARY_PATH", lib_dir.trim())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(prog.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "READY", "{}", b.log());
    Some((prog, out))
}

#[test]
fn endless_kernel_times_out() {
    let b = Backend::start(&["--kernel-timeout", "1"]);
    let t = Instant::now();
    let Some((mut prog, mut out)) = start_endless(&b) else {
        return;
    };
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let st = prog.wait().unwrap();
    eprintln!(
        "endless kernel with --kernel-timeout 1: {st} after {:?}",
        t.elapsed()
    );
    assert!(
        rest.contains("SYNC cudaErrorLaunchTimeout"),
        "{rest}\n{}",
        b.log()
    );
    assert_eq!(st.code(), Some(2));
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
}

#[test]
fn a_killed_programs_kernel_stops() {
    let b = Backend::start(&[]);
    let Some((mut prog, _out)) = start_endless(&b) else {
        return;
    };
    std::thread::sleep(Duration::from_millis(300));
    // The kernel keeps the backend busy while the program lives...
    let busy0 = cpu_time(b.child.id());
    std::thread::sleep(Duration::from_millis(500));
    let busy = cpu_time(b.child.id()) - busy0;
    prog.kill().unwrap();
    let _ = prog.wait();
    let killed = Instant::now();
    // ... and stops soon after it dies.
    std::thread::sleep(Duration::from_millis(500));
    let idle0 = cpu_time(b.child.id());
    std::thread::sleep(Duration::from_millis(1000));
    let idle = cpu_time(b.child.id()) - idle0;
    eprintln!(
        "backend CPU time: {busy:?} in 0.5 s with the kernel running, {idle:?} in 1 s from \
         {:?} after the kill",
        Duration::from_millis(500)
    );
    assert!(
        busy >= Duration::from_millis(200),
        "the kernel did not run: {busy:?}"
    );
    assert!(
        idle <= Duration::from_millis(100),
        "still busy after the kill: {idle:?}"
    );
    assert!(killed.elapsed() < Duration::from_secs(10));
}

#[test]
fn ready_is_said_once_the_socket_accepts() {
    // What `vcuda run` waits for instead of polling the socket.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("ready.sock");
    let mut child = Command::new(bin("vcuda-backend"))
        .args(["serve", "--executor", "cpu", "--notify-ready", "--socket"])
        .arg(&socket)
        .env_remove("VCUDA_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let connected = UnixStream::connect(&socket);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(line, "ready\n");
    assert!(connected.is_ok(), "{connected:?}");
}

#[test]
fn a_session_is_held_to_its_memory_limit() {
    let b = Backend::start(&["--cpu-memory", "256M", "--session-mem-limit", "64M"]);
    let (mut a, mut other) = (b.connect(), b.connect());
    assert_eq!(hello(&mut a).unwrap(), 0);
    assert_eq!(hello(&mut other).unwrap(), 0);
    assert_eq!(mem_info(&mut a), (64 * MIB, 64 * MIB));
    // 16 MiB at a time: three fit in 64 MiB with their bookkeeping, the fourth does not.
    let (ok, st) = mallocs(&mut a, 8, 16 * MIB);
    eprintln!("16 MiB allocations granted under a 64 MiB limit: {ok}, then status {st}");
    assert_eq!((ok, st), (3, status::MEMORY_ALLOCATION));
    let (free, total) = mem_info(&mut a);
    assert_eq!(total, 64 * MIB);
    assert!(free < 16 * MIB, "{free}");
    // Another session still gets its own share.
    assert_eq!(mallocs(&mut other, 3, 16 * MIB), (3, 0));
}

#[test]
fn a_million_tiny_allocations_are_charged_what_they_cost() {
    let b = Backend::start(&["--cpu-memory", "512M", "--session-mem-limit", "64M"]);
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), 0);
    let before = b.rss();
    let start = Instant::now();
    let (mut granted, mut tried) = (0, 0);
    while tried < 1_000_000 {
        let (ok, st) = mallocs(&mut s, 4000, 1);
        granted += ok;
        tried += 4000;
        if st != 0 {
            assert_eq!(st, status::MEMORY_ALLOCATION);
            break;
        }
    }
    let grown = b.rss().saturating_sub(before);
    eprintln!(
        "1-byte allocations: {granted} granted of {tried} tried in {:?} under a 64 MiB limit; \
         backend RSS grew {} MiB",
        start.elapsed(),
        grown / MIB
    );
    assert!(granted < 100_000, "{granted}");
    // The limit plus the transport's message buffers and some slack.
    assert!(grown < 64 * MIB + 48 * MIB, "RSS grew {} MiB", grown / MIB);
}

/// One request on `s` and its reply record: status and payload.
fn call_one<O: vcuda_protocol::Op>(s: &mut UnixStream, req: &O::Req) -> (u32, Vec<u8>) {
    let mut b = MessageBuilder::new();
    b.push_op::<O>(0, 7, &[], req, &[]);
    s.write_all(b.finish(0)).unwrap();
    read_reply(s).unwrap().remove(0)
}

#[test]
fn ipc_handles_are_capabilities_and_imports_are_charged() {
    let b = Backend::start(&["--cpu-memory", "256M", "--session-mem-limit", "64M"]);
    let (mut a, mut other) = (b.connect(), b.connect());
    assert_eq!(hello(&mut a).unwrap(), 0);
    assert_eq!(hello(&mut other).unwrap(), 0);
    let (st, p) = call_one::<ops::Malloc>(
        &mut a,
        &MallocReq {
            device: 0,
            flags: 0,
            size: 40 * MIB,
        },
    );
    assert_eq!(st, 0);
    let big = PtrResp::read_from_prefix(&p).unwrap().0.ptr;
    let (st, h) = call_one::<ops::IpcGetMemHandle>(&mut a, &PtrReq { ptr: big + 100 });
    assert_eq!(st, 0);
    let handle: [u8; 64] = h[..64].try_into().unwrap();
    let open = |s: &mut UnixStream, handle: [u8; 64]| {
        let (st, p) = call_one::<ops::IpcOpenMemHandle>(
            s,
            &IpcOpenReq {
                handle,
                flags: 1,
                reserved: 0,
            },
        );
        (st, PtrResp::read_from_prefix(&p).map_or(0, |r| r.0.ptr))
    };
    // A forged token, a bad magic, garbage: refused with an error reply.
    for k in [8usize, 23, 0] {
        let mut bad = handle;
        bad[k] ^= 0x80;
        assert_eq!(
            open(&mut other, bad).0,
            status::INVALID_VALUE,
            "byte {k} flipped"
        );
    }
    // The real handle opens in another session, charged there; over its limit it does not.
    let (ok, _) = mallocs(&mut other, 1, 30 * MIB);
    assert_eq!(ok, 1);
    let (st, _) = open(&mut other, handle);
    assert_eq!(st, status::MEMORY_ALLOCATION);
    let mut other2 = b.connect();
    assert_eq!(hello(&mut other2).unwrap(), 0);
    let (st, q) = open(&mut other2, handle);
    assert_eq!(st, 0);
    assert_eq!(
        open(&mut other2, handle),
        (0, q),
        "opened again: the same address"
    );
    // cudaFree does not free an import; two closes do, a third is an error.
    assert_eq!(
        call_one::<ops::Free>(&mut other2, &PtrReq { ptr: q }).0,
        status::INVALID_VALUE
    );
    for want in [0, 0, status::INVALID_VALUE] {
        assert_eq!(
            call_one::<ops::IpcCloseMemHandle>(&mut other2, &PtrReq { ptr: q }).0,
            want
        );
    }
    // The exporter frees it: the handle no longer opens.
    assert_eq!(call_one::<ops::Free>(&mut a, &PtrReq { ptr: big }).0, 0);
    assert_eq!(open(&mut other2, handle).0, status::INVALID_VALUE);
}
