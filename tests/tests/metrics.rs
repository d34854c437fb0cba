// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda-backend --metrics`: a scrape while an nvcc-built program runs shows its session,
//! its calls, bytes, launches and charged memory, and a refusal; after it ends the session
//! is gone and its totals stay. With the sessions on the backend's threads and in worker
//! processes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use vcuda_tests::{Cuda, Kill, bin, bin_dir, build, build_source, repo_root};

/// One scrape of `http://127.0.0.1:port/metrics`.
fn scrape(port: u16) -> String {
    let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect to /metrics");
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut s = String::new();
    c.read_to_string(&mut s).unwrap();
    let (head, body) = s.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.to_owned()
}

/// The value of `series` (name and labels, exactly), if present.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().expect("a number"))
}

fn must(text: &str, series: &str) -> f64 {
    value(text, series).unwrap_or_else(|| panic!("{series} missing in\n{text}"))
}

/// The sum of every series of metric `name` whose labels contain `label`.
fn sum(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

fn check(isolation: &str) {
    let Some(held) = build_source(&repo_root().join("tests/metrics/held.cu"), Cuda::V13) else {
        return;
    };
    let Some(other) = build("vectorAdd", Cuda::V13) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("vcuda.sock");
    let mut backend = Command::new(bin("vcuda-backend"))
        .args(["serve", "--executor", "cpu", "--isolation", isolation])
        .args(["--cpu-memory", "256M", "--max-sessions", "1"])
        .args(["--metrics", "127.0.0.1:0", "--socket"])
        .arg(&socket)
        .env_remove("VCUDA_SOCKET")
        .env_remove("VCUDA_METRICS")
        .env("VCUDA_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vcuda-backend");
    let stderr = backend.stderr.take().unwrap();
    let _backend = Kill(backend);
    let mut lines = BufReader::new(stderr).lines();
    let mut port = None;
    for line in lines.by_ref() {
        let line = line.expect("backend log");
        if let Some(rest) = line.split("metrics on http://127.0.0.1:").nth(1) {
            port = rest.split('/').next().and_then(|p| p.parse::<u16>().ok());
            break;
        }
    }
    let port = port.expect("the metrics port in the backend's log");
    std::thread::spawn(move || lines.for_each(drop));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "the backend's socket never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let before = scrape(port);
    assert_eq!(
        must(
            &before,
            &format!("vcuda_sessions_open{{isolation=\"{isolation}\"}}")
        ),
        0.0
    );
    let run = |exe: &Path, stdin: Stdio| {
        Command::new(bin("vcuda"))
            .args(["run", "--"])
            .arg(exe)
            .env("VCUDA_SOCKET", &socket)
            .env("VCUDA_LIB_DIR", bin_dir())
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run vcuda")
    };
    let mut prog = Kill(run(&held, Stdio::piped()));
    let mut out = BufReader::new(prog.0.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        "held 4194304 bytes",
        "the program did not start"
    );

    // While it holds its memory.
    let during = scrape(port);
    let open = format!("vcuda_sessions_open{{isolation=\"{isolation}\"}}");
    assert_eq!(must(&during, &open), 1.0, "{during}");
    assert!(must(&during, "vcuda_calls_total{op=\"Malloc\"}") >= 1.0);
    assert!(must(&during, "vcuda_kernel_launches_total{kind=\"kernel\"}") >= 1.0);
    assert!(
        sum(&during, "vcuda_data_bytes_total", "direction=\"to_host\"") >= 4194304.0,
        "{during}"
    );
    assert!(sum(&during, "vcuda_session_memory_bytes", "session=") >= 4194304.0);
    assert!(must(&during, "vcuda_memory_charged_bytes") >= 4194304.0);
    assert!(sum(&during, "vcuda_session_memory_limit_bytes", "session=") > 0.0);
    assert!(must(&during, "vcuda_call_seconds_total{op=\"Launch\"}") > 0.0);
    // The program's calls go through the call ring (the library's default on a Unix socket).
    assert!(
        must(&during, "vcuda_call_ring_sessions_total") >= 1.0,
        "{during}"
    );
    if isolation == "process" {
        assert!(must(&during, "vcuda_workers_started_total") >= 1.0);
    } else {
        assert_eq!(must(&during, "vcuda_memory_limit_bytes"), 268435456.0);
    }

    // A second program while the one session allowed is taken: refused.
    let refused = run(&other, Stdio::null()).wait_with_output().unwrap();
    assert!(!refused.status.success(), "a second session was served");
    let after_refusal = scrape(port);
    assert!(
        must(
            &after_refusal,
            "vcuda_sessions_refused_total{reason=\"bounds\"}"
        ) >= 1.0,
        "{after_refusal}"
    );

    // The program ends: its session goes, its totals stay.
    prog.0.stdin.take().unwrap().write_all(b"\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "freed");
    assert!(prog.0.wait().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(15);
    let after = loop {
        let s = scrape(port);
        let gone = value(&s, &open) == Some(0.0)
            && (isolation != "process"
                || must(&s, "vcuda_worker_exits_total{how=\"clean\"}") >= 1.0);
        if gone || Instant::now() > deadline {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(must(&after, &open), 0.0, "{after}");
    assert_eq!(must(&after, "vcuda_memory_charged_bytes"), 0.0, "{after}");
    assert_eq!(sum(&after, "vcuda_session_memory_bytes", "session="), 0.0);
    assert!(
        must(&after, "vcuda_calls_total{op=\"Free\"}") >= 1.0,
        "{after}"
    );
    assert!(
        must(&after, "vcuda_calls_total{op=\"Malloc\"}")
            >= must(&during, "vcuda_calls_total{op=\"Malloc\"}")
    );
    if isolation == "process" {
        assert!(
            must(&after, "vcuda_worker_exits_total{how=\"clean\"}") >= 1.0,
            "{after}"
        );
    }
}

#[test]
fn metrics_follow_a_program_on_threads() {
    check("thread");
}

#[test]
fn metrics_follow_a_program_in_a_worker_process() {
    check("process");
}
