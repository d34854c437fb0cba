// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `--isolation process`: each session in a sandboxed worker process of its own, reaped
//! when it ends and killed when it wedges (host-backend/src/worker.rs).

use super::*;

/// The live processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": the command may hold spaces, so from its last ')'.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let mut f = rest.split_whitespace();
        let (state, ppid) = (f.next(), f.next().and_then(|p| p.parse::<u32>().ok()));
        if ppid == Some(pid) && state != Some("Z") {
            v.push(child);
        }
    }
    v
}

/// Waits until `pid` has `n` children (at most `limit`); returns them.
fn wait_children(b: &Backend, n: usize, limit: Duration) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let c = children(b.child.id());
        if c.len() == n {
            return c;
        }
        assert!(
            start.elapsed() < limit,
            "{} workers, {n} expected\n{}",
            c.len(),
            b.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the worker of the connection that saw the socket up (started a little after
/// it) to be gone.
fn settled(b: &Backend) {
    let start = Instant::now();
    while children(b.child.id()).is_empty() && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    wait_children(b, 0, Duration::from_secs(5));
}

fn status_field(pid: u32, field: &str) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
}

#[test]
fn each_session_runs_in_its_own_sandboxed_worker() {
    // (No worker started ahead of connections: this counts the sessions' own.)
    let b = Backend::start(&["--isolation", "process", "--warm-context", "off"]);
    settled(&b);
    let mut sessions: Vec<UnixStream> = (0..2)
        .map(|_| {
            let mut s = b.connect();
            assert_eq!(hello(&mut s).unwrap(), status::SUCCESS, "{}", b.log());
            assert_eq!(mallocs(&mut s, 4, MIB), (4, 0));
            s
        })
        .collect();
    let workers = wait_children(&b, 2, Duration::from_secs(5));
    for w in &workers {
        let cmdline = std::fs::read(format!("/proc/{w}/cmdline")).unwrap();
        let args: Vec<&[u8]> = cmdline.split(|&c| c == 0).collect();
        assert_eq!(args.get(1).copied(), Some(&b"worker"[..]), "{args:?}");
        // The seccomp filters (mode 2): the deny list, clone3, x32 numbers and, for the CPU
        // executor by default, the allow list; and no new privileges.
        assert_eq!(status_field(*w, "Seccomp:"), "2", "worker {w}");
        let filters = status_field(*w, "Seccomp_filters:");
        assert!(
            filters.is_empty() || filters == "4",
            "worker {w}: {filters} filters"
        );
        assert_eq!(status_field(*w, "NoNewPrivs:"), "1", "worker {w}");
        // No capabilities, even where the backend has them (root).
        assert_eq!(
            status_field(*w, "CapEff:"),
            "0000000000000000",
            "worker {w}"
        );
        assert_eq!(
            status_field(*w, "CapBnd:"),
            "0000000000000000",
            "worker {w}"
        );
        eprintln!("worker {w}: seccomp filters, no new privileges, no capabilities");
    }
    // Each session's memory lives in its own worker, not in the backend.
    let in_backend = b.rss();
    eprintln!("backend resident: {} MiB", in_backend / MIB);
    // A session's end ends its worker, and only its.
    drop(sessions.pop());
    let left = wait_children(&b, 1, Duration::from_secs(5));
    assert!(workers.contains(&left[0]));
    assert_eq!(mallocs(&mut sessions[0], 1, MIB), (1, 0));
    drop(sessions.pop());
    wait_children(&b, 0, Duration::from_secs(5));
}

#[test]
fn workers_run_the_filter_asked_for() {
    for (policy, filters) in [("deny-list", "3"), ("allow-list", "4")] {
        let b = Backend::start(&[
            "--isolation",
            "process",
            "--warm-context",
            "off",
            "--worker-seccomp",
            policy,
        ]);
        settled(&b);
        let mut s = b.connect();
        assert_eq!(hello(&mut s).unwrap(), status::SUCCESS, "{}", b.log());
        assert_eq!(mallocs(&mut s, 2, MIB), (2, 0), "{}", b.log());
        let w = wait_children(&b, 1, Duration::from_secs(5))[0];
        // (Seccomp_filters: Linux 5.9+.)
        let n = status_field(w, "Seccomp_filters:");
        assert!(n.is_empty() || n == filters, "{policy}: {n} filters");
        eprintln!("{policy}: worker {w} runs {n} filters and serves");
    }
}

#[test]
fn a_worker_that_does_not_exit_is_killed() {
    let b = Backend::start(&["--isolation", "process", "--warm-context", "off"]);
    settled(&b);
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS, "{}", b.log());
    let w = wait_children(&b, 1, Duration::from_secs(5))[0];
    // A worker that cannot finish (as one stuck in the driver): stopped.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w as i32),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
    let start = Instant::now();
    drop(s);
    wait_children(&b, 0, Duration::from_secs(15));
    let took = start.elapsed();
    eprintln!(
        "the stopped worker was killed {:.1} s after its client left",
        took.as_secs_f32()
    );
    assert!(took >= Duration::from_secs(4), "{took:?}");
    // Reaped (not left a zombie).
    while std::path::Path::new(&format!("/proc/{w}")).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "worker {w} not reaped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(b.log().contains("killing it"), "{}", b.log());
}

#[test]
fn connection_bounds_hold_for_workers() {
    // The session bound: the worker asks the backend, which says no.
    let b = Backend::start(&["--isolation", "process", "--max-sessions", "2"]);
    let mut live: Vec<UnixStream> = (0..2)
        .map(|_| {
            let mut s = b.connect();
            assert_eq!(hello(&mut s).unwrap(), status::SUCCESS, "{}", b.log());
            s
        })
        .collect();
    let mut third = b.connect();
    assert!(hello(&mut third).is_err());
    live.pop();
    served_again(&b);
    assert!(b.log().contains("session limit 2 reached"), "{}", b.log());

    // The per-peer bound: refused before any worker starts (the connection that saw the
    // socket up may still hold one of the three places while its worker exits).
    let b = Backend::start(&["--isolation", "process", "--max-sessions-per-peer", "3"]);
    let conns: Vec<UnixStream> = (0..4).map(|_| b.connect()).collect();
    let start = Instant::now();
    while !b.log().contains("connections already") {
        assert!(start.elapsed() < Duration::from_secs(10), "{}", b.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(conns);
}

/// The one worker waiting for a connection, once nothing else runs.
fn the_warm_worker(b: &Backend) -> u32 {
    let start = Instant::now();
    loop {
        let c = wait_children(b, 1, Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(300));
        if children(b.child.id()) == c {
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", c[0])).unwrap();
            assert!(
                cmdline.split(|&b| b == 0).any(|a| a == b"--warm"),
                "{}",
                String::from_utf8_lossy(&cmdline)
            );
            return c[0];
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{}", b.log());
    }
}

/// `--warm-context always` (the default): a worker is started ahead of each connection,
/// sandboxed before any client exists, and serves the next connection; another is started
/// behind it.
#[test]
fn a_worker_is_started_ahead_of_each_connection() {
    let b = Backend::start(&["--isolation", "process"]);
    let warm = the_warm_worker(&b);
    assert_eq!(status_field(warm, "Seccomp:"), "2", "worker {warm}");
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS, "{}", b.log());
    assert_eq!(mallocs(&mut s, 4, MIB), (4, 0));
    // The session runs in the worker that waited; the next one waits beside it.
    let both = wait_children(&b, 2, Duration::from_secs(5));
    assert!(both.contains(&warm), "{both:?} {warm}");
    drop(s);
    let next = the_warm_worker(&b);
    assert_ne!(next, warm);
    // A second session gets that one.
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS, "{}", b.log());
    assert!(wait_children(&b, 2, Duration::from_secs(5)).contains(&next));
}
