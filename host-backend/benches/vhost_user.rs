// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Benchmark of the vhost-user transport, in process (no QEMU, no guest kernel): the real
//! backend on a Unix socket, a userspace virtio driver (tests/testutils) playing QEMU and the
//! guest, the CPU executor behind it. Measured in the same run, for comparison:
//!
//! - a plain `memcpy` (copy_from_slice) of the same sizes: the floor for one copy;
//! - a plain Unix-socket ping-pong of 64 bytes between two threads: the floor for a round trip
//!   through the kernel with a thread wake-up on each side;
//! - the socket transport (`socket::serve_connection`) on a Unix socket pair.
//!
//! The vhost-user round trip (a `Nop`, and a 4 KiB copy each way) is measured for each
//! transport setting: every call on the session's worker (`--queue-thread-calls none`),
//! short calls on the queue thread (`short`, the default), the queue thread polling its ring
//! (`--poll-us`), and a driver that polls the used ring instead of sleeping on the call
//! eventfd (as a polling guest driver would), each on a fresh backend.
//!
//!   cargo bench -p vcuda-backend --bench vhost_user [-- --quick]
//!
//! Prints a table; BENCHMARKS.md has the figures and the machine. Not a test: nothing is
//! asserted beyond the replies' statuses.

#[path = "../tests/testutils/mod.rs"]
mod testutils;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use testutils::*;
use vcuda_backend::Backend;
use vcuda_backend::socket::serve_connection;
use vcuda_backend::vhost_user::{QueueThreadCalls, Server, VhostUserConfig};
use vcuda_protocol::decode::decode_reply_header;
use vcuda_protocol::*;

const SIZES: &[usize] = &[
    4 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
    64 << 20,
];

/// Runs `f` until `budget` is spent (at least `min` times): seconds per run.
fn time(min: usize, budget: Duration, mut f: impl FnMut()) -> f64 {
    f();
    let t0 = Instant::now();
    let mut n = 0;
    while n < min || t0.elapsed() < budget {
        f();
        n += 1;
    }
    t0.elapsed().as_secs_f64() / n as f64
}

fn gbps(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / 1e9
}

fn memcpy(size: usize, budget: Duration) -> f64 {
    let src = vec![7u8; size];
    let mut dst = vec![0u8; size];
    time(5, budget, || {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
    })
}

fn unix_ping_pong(budget: Duration) -> f64 {
    let (mut a, mut b) = UnixStream::pair().unwrap();
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        while b.read_exact(&mut buf).is_ok() {
            if b.write_all(&buf).is_err() {
                break;
            }
        }
    });
    let mut buf = [1u8; 64];
    let t = time(1000, budget, || {
        a.write_all(&buf).unwrap();
        a.read_exact(&mut buf).unwrap();
    });
    drop(a);
    echo.join().unwrap();
    t
}

/// A socket-transport client on a socket pair.
struct SocketClient {
    s: UnixStream,
    reply: Vec<u8>,
    inp: Vec<u8>,
}

impl SocketClient {
    fn new(backend: Arc<Backend>) -> Self {
        let (a, b) = UnixStream::pair().unwrap();
        std::thread::spawn(move || serve_connection(b, &backend));
        let mut c = Self {
            s: a,
            reply: Vec::new(),
            inp: Vec::new(),
        };
        let (ctrl, _) = Msg::new().hello().finish(0);
        c.call(&ctrl, &[]);
        c
    }

    /// Sends a message and reads the reply and its in data; the first record's status.
    fn call(&mut self, ctrl: &[u8], out: &[u8]) -> u32 {
        self.s.write_all(ctrl).unwrap();
        self.s.write_all(out).unwrap();
        let mut h = [0u8; 32];
        self.s.read_exact(&mut h).unwrap();
        let rh = decode_reply_header(&h).unwrap();
        self.reply.resize(rh.ctrl_len as usize, 0);
        self.s.read_exact(&mut self.reply).unwrap();
        self.inp.resize(rh.in_len as usize, 0);
        self.s.read_exact(&mut self.inp).unwrap();
        u32::from_le_bytes(self.reply[8..12].try_into().unwrap())
    }
}

/// The poll time of the polling rows.
const POLL: Duration = Duration::from_micros(100);

/// A transport setting to measure.
struct Setting {
    name: &'static str,
    calls: QueueThreadCalls,
    poll: Duration,
    driver_polls: bool,
}

const SETTINGS: &[Setting] = &[
    Setting {
        name: "calls none",
        calls: QueueThreadCalls::None,
        poll: Duration::ZERO,
        driver_polls: false,
    },
    Setting {
        name: "calls short (default)",
        calls: QueueThreadCalls::Short,
        poll: Duration::ZERO,
        driver_polls: false,
    },
    Setting {
        name: "none + poll 100us",
        calls: QueueThreadCalls::None,
        poll: POLL,
        driver_polls: false,
    },
    Setting {
        name: "short + poll 100us",
        calls: QueueThreadCalls::Short,
        poll: POLL,
        driver_polls: false,
    },
    Setting {
        name: "none + poll, drv polls",
        calls: QueueThreadCalls::None,
        poll: POLL,
        driver_polls: true,
    },
    Setting {
        name: "short + poll, drv polls",
        calls: QueueThreadCalls::Short,
        poll: POLL,
        driver_polls: true,
    },
];

/// A server for one connection with `setting`, on a socket in `dir`.
fn server(
    dir: &std::path::Path,
    tag: &str,
    calls: QueueThreadCalls,
    poll: Duration,
    factory: Arc<dyn vcuda_backend::executor::ExecutorFactory>,
) -> (std::path::PathBuf, std::thread::JoinHandle<()>) {
    let path = dir.join(format!("{tag}.sock"));
    let mut server = Server::new(
        VhostUserConfig {
            max_sessions: 4,
            queue_thread_calls: calls,
            poll,
            ..VhostUserConfig::new(path.clone(), 1)
        },
        Backend::new(factory),
    )
    .unwrap();
    let join = std::thread::spawn(move || {
        server.serve_one().unwrap();
    });
    (path, join)
}

/// Round trips of a `Nop`, a 4 KiB host-to-device and a 4 KiB device-to-host copy with
/// `setting`: seconds each.
fn round_trips(
    dir: &std::path::Path,
    i: usize,
    setting: &Setting,
    budget: Duration,
) -> (f64, f64, f64) {
    let (path, join) = server(
        dir,
        &format!("rt{i}"),
        setting.calls,
        setting.poll,
        cpu_factory(),
    );
    let mut c = vhost_client(&path);
    let ptr = c
        .send(0, 1, Msg::new().malloc(4096))
        .ok()
        .get::<PtrResp>()
        .ptr;
    c.queues[0].poll = setting.driver_polls;
    let nop = laid(&mut c, Msg::new().nop(), 4096);
    let t_nop = vhost_run(&mut c, &nop, budget, 1000);
    let h2d = laid(&mut c, Msg::new().htod(ptr, &[0x5a; 4096]), 4096);
    let t_h2d = vhost_run(&mut c, &h2d, budget, 1000);
    let d2h = laid(&mut c, Msg::new().dtoh(ptr, 4096), 4096);
    let t_d2h = vhost_run(&mut c, &d2h, budget, 1000);
    drop(c);
    join.join().unwrap();
    (t_nop, t_h2d, t_d2h)
}

/// A vhost-user client with one open session past Hello.
fn vhost_client(path: &std::path::Path) -> VhostClient {
    let mut c = VhostClient::connect(path, 1, 160 << 20);
    assert_eq!(c.open(0, 1), 0);
    c.send(0, 1, Msg::new().hello()).ok();
    c
}

/// Lays out a call once (its buffers are reused by every run).
fn laid(c: &mut VhostClient, msg: &mut Msg, seg: usize) -> (Laid, Option<u64>) {
    let in_len = msg.in_len();
    let (ctrl, out) = msg.finish(0);
    c.spec.seg = seg;
    let l = lay_out(
        &c.ram.mem,
        &mut c.bump,
        &Call::submit(1, &ctrl, &out, in_len),
        &c.spec,
    );
    let ind = (l.bufs.len() > c.spec.indirect_over).then(|| c.bump.alloc(16 * l.bufs.len() as u64));
    (l, ind)
}

fn vhost_run(c: &mut VhostClient, l: &(Laid, Option<u64>), budget: Duration, min: usize) -> f64 {
    time(min, budget, || {
        let head = c.post(0, &l.0, l.1);
        c.wait_used(0, head);
        assert_eq!(c.first_status(&l.0), 0);
    })
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = Duration::from_millis(if quick { 200 } else { 1000 });
    let factory = cpu_factory();
    let backend = Backend::new(factory.clone());
    let factory: Arc<dyn vcuda_backend::executor::ExecutorFactory> = factory;

    let dir = tempfile::tempdir().unwrap();
    let mut sc = SocketClient::new(backend);

    // Round trips.
    let ping = unix_ping_pong(budget);
    let (nop_ctrl, _) = Msg::new().nop().finish(0);
    let sock_nop = time(1000, budget, || {
        assert_eq!(sc.call(&nop_ctrl, &[]), 0);
    });
    // Each setting with a ping-pong measured right before it, its ratios' base: the load of
    // a shared machine drifts during a run.
    let rts: Vec<(f64, (f64, f64, f64))> = SETTINGS
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                unix_ping_pong(budget),
                round_trips(dir.path(), i, s, budget),
            )
        })
        .collect();
    println!(
        "# round trip, us (x the ping-pong before it)  ping-pong | Nop | H2D 4 KiB | D2H 4 KiB"
    );
    println!("unix ping-pong (64 B)          {:7.2}", ping * 1e6);
    println!(
        "socket transport               {:7.2} | {:7.2} ({:5.2})",
        ping * 1e6,
        sock_nop * 1e6,
        sock_nop / ping
    );
    for (s, &(p, t)) in SETTINGS.iter().zip(&rts) {
        println!(
            "vhost {:<24} {:7.2} | {:7.2} ({:5.2}) | {:7.2} ({:5.2}) | {:7.2} ({:5.2})",
            s.name,
            p * 1e6,
            t.0 * 1e6,
            t.0 / p,
            t.1 * 1e6,
            t.1 / p,
            t.2 * 1e6,
            t.2 / p
        );
    }

    // Bulk copies, with the default setting.
    let (path, server) = server(
        dir.path(),
        "bulk",
        QueueThreadCalls::default(),
        Duration::ZERO,
        factory,
    );
    let mut vc = vhost_client(&path);

    // Bulk copies.
    let max = *SIZES.last().unwrap();
    let dptr = vc
        .send(0, 1, Msg::new().malloc(max as u64))
        .ok()
        .get::<PtrResp>()
        .ptr;
    let sptr = {
        let (ctrl, _) = Msg::new().malloc(max as u64).finish(0);
        assert_eq!(sc.call(&ctrl, &[]), 0);
        // The record header (32 bytes), then the PtrResp.
        u64::from_le_bytes(sc.reply[32..40].try_into().unwrap())
    };
    println!();
    println!(
        "# bulk copy      memcpy GB/s | H2D vhost GB/s (x memcpy) socket GB/s (x) | D2H vhost GB/s (x memcpy) socket GB/s (x) | descriptor"
    );
    for &size in SIZES {
        let mc = memcpy(size, budget);
        let data = vec![0x5au8; size];
        // Guest pages are 4 KiB; a driver merges contiguous ones, and a chain holds at most
        // 1024 descriptors, so big copies use bigger pieces.
        let seg = (size / 512).max(4096);
        let min = if quick { 3 } else { 10 };
        let h2d = laid(&mut vc, Msg::new().htod(dptr, &data), seg);
        let v_h2d = vhost_run(&mut vc, &h2d, budget, min);
        vc.bump.reset();
        let d2h = laid(&mut vc, Msg::new().dtoh(dptr, size as u64), seg);
        let v_d2h = vhost_run(&mut vc, &d2h, budget, min);
        vc.bump.reset();
        let (h_ctrl, h_out) = Msg::new().htod(sptr, &data).finish(0);
        let s_h2d = time(min, budget, || assert_eq!(sc.call(&h_ctrl, &h_out), 0));
        let (d_ctrl, _) = Msg::new().dtoh(sptr, size as u64).finish(0);
        let s_d2h = time(min, budget, || assert_eq!(sc.call(&d_ctrl, &[]), 0));
        let m = gbps(size, mc);
        println!(
            "{:>8} KiB  {:8.2} | {:8.2} ({:4.2}) {:8.2} ({:4.2}) | {:8.2} ({:4.2}) {:8.2} ({:4.2}) | {} x {} KiB",
            size >> 10,
            m,
            gbps(size, v_h2d),
            gbps(size, v_h2d) / m,
            gbps(size, s_h2d),
            gbps(size, s_h2d) / m,
            gbps(size, v_d2h),
            gbps(size, v_d2h) / m,
            gbps(size, s_d2h),
            gbps(size, s_d2h) / m,
            size.div_ceil(seg),
            seg >> 10,
        );
    }
    drop(vc);
    drop(sc);
    server.join().unwrap();
}
