// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The counters as Prometheus text (exposition format 0.0.4).

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use vcuda_protocol::Opcode;

use super::block::{self, Block, STATUSES};
use super::{BACKEND, Refusal, WorkerExit, process, workers};

/// What every scrape says about the backend itself.
#[derive(Debug, Clone)]
pub struct Identity {
    /// `cpu` or `cuda`.
    pub executor: &'static str,
    /// `thread` or `process`.
    pub isolation: &'static str,
    /// The executor's memory that all sessions share (the CPU executor's `--cpu-memory`
    /// with thread isolation), if one figure says it.
    pub memory_limit: Option<u64>,
}

/// Renders every figure of this process and its workers.
pub fn render(id: &Identity) -> String {
    let live = workers().live();
    let mut sources: Vec<(String, &Block)> = vec![(String::new(), process())];
    for (wid, m) in &live {
        sources.push((format!("w{wid}."), &**m));
    }
    let retired = workers().retired();
    let mut all: Vec<&Block> = sources.iter().map(|(_, b)| *b).collect();
    all.push(retired);
    let mut out = String::with_capacity(8192);
    let w = &mut out;
    let sum = Sum(all);

    head(
        w,
        "vcuda_info",
        "gauge",
        "The backend: its version, executor and isolation.",
    );
    let _ = writeln!(
        w,
        "vcuda_info{{version=\"{}\",executor=\"{}\",isolation=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        id.executor,
        id.isolation
    );

    let opened = sum.of(|b| b.sessions_opened.load(Relaxed));
    let closed = sum.of(|b| b.sessions_closed.load(Relaxed));
    head(
        w,
        "vcuda_sessions_open",
        "gauge",
        "Sessions (guest processes) being served.",
    );
    let _ = writeln!(
        w,
        "vcuda_sessions_open{{isolation=\"{}\"}} {}",
        id.isolation,
        opened.saturating_sub(closed)
    );
    head(w, "vcuda_sessions_total", "counter", "Sessions started.");
    let _ = writeln!(
        w,
        "vcuda_sessions_total{{isolation=\"{}\"}} {opened}",
        id.isolation
    );
    head(
        w,
        "vcuda_call_ring_sessions_total",
        "counter",
        "Sessions whose calls went through a shared-memory call ring (Unix socket).",
    );
    let _ = writeln!(
        w,
        "vcuda_call_ring_sessions_total {}",
        sum.of(|b| b.call_rings.load(Relaxed))
    );
    head(
        w,
        "vcuda_sessions_refused_total",
        "counter",
        "Connections or sessions refused, by reason.",
    );
    for r in Refusal::ALL {
        let _ = writeln!(
            w,
            "vcuda_sessions_refused_total{{reason=\"{}\"}} {}",
            r.label(),
            BACKEND.refused[r as usize].load(Relaxed)
        );
    }
    let _ = writeln!(
        w,
        "vcuda_sessions_refused_total{{reason=\"vm_sessions\"}} {}",
        sum.of(|b| b.sessions_refused.load(Relaxed))
    );

    head(
        w,
        "vcuda_messages_total",
        "counter",
        "Messages received from guests.",
    );
    let _ = writeln!(
        w,
        "vcuda_messages_total {}",
        sum.of(|b| b.messages.load(Relaxed))
    );
    head(
        w,
        "vcuda_malformed_messages_total",
        "counter",
        "Messages that could not be decoded.",
    );
    let _ = writeln!(
        w,
        "vcuda_malformed_messages_total {}",
        sum.of(|b| b.malformed.load(Relaxed))
    );

    ops(w, &sum);

    head(
        w,
        "vcuda_errors_total",
        "counter",
        "Failed requests, by CUDA status code.",
    );
    for i in 1..STATUSES {
        let n = sum.of(|b| b.statuses[i].load(Relaxed));
        if n != 0 {
            let code = if i == STATUSES - 1 {
                "other".to_string()
            } else {
                i.to_string()
            };
            let _ = writeln!(w, "vcuda_errors_total{{status=\"{code}\"}} {n}");
        }
    }

    memory(w, id, &sources, &sum);

    head(
        w,
        "vcuda_workers_started_total",
        "counter",
        "Worker processes started.",
    );
    let _ = writeln!(
        w,
        "vcuda_workers_started_total {}",
        BACKEND.workers_started.load(Relaxed)
    );
    head(
        w,
        "vcuda_worker_exits_total",
        "counter",
        "Worker processes ended, by how.",
    );
    for (how, name) in [
        (WorkerExit::Clean, "clean"),
        (WorkerExit::Failed, "failed"),
        (WorkerExit::Killed, "killed"),
    ] {
        let _ = writeln!(
            w,
            "vcuda_worker_exits_total{{how=\"{name}\"}} {}",
            BACKEND.worker_exits[how as usize].load(Relaxed)
        );
    }
    out
}

/// Blocks whose figures add up.
struct Sum<'a>(Vec<&'a Block>);

impl Sum<'_> {
    /// The sum of `f` over the blocks (wrapping: a worker's block may hold anything).
    fn of(&self, f: impl Fn(&Block) -> u64) -> u64 {
        self.0.iter().map(|b| f(b)).fold(0, u64::wrapping_add)
    }
}

fn head(w: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(w, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Per-operation figures, for the operations that were called.
fn ops(w: &mut String, sum: &Sum<'_>) {
    let rows: Vec<(usize, &'static str, u64)> = (0..block::OPS)
        .map(|i| {
            let name = block::op_of_index(i).map_or("unknown", Opcode::name);
            (i, name, sum.of(|b| b.ops[i].calls.load(Relaxed)))
        })
        .filter(|&(_, _, calls)| calls != 0)
        .collect();
    head(w, "vcuda_calls_total", "counter", "Requests, by operation.");
    for &(_, name, calls) in &rows {
        let _ = writeln!(w, "vcuda_calls_total{{op=\"{name}\"}} {calls}");
    }
    head(
        w,
        "vcuda_call_errors_total",
        "counter",
        "Failed requests, by operation.",
    );
    for &(i, name, _) in &rows {
        let n = sum.of(|b| b.ops[i].errors.load(Relaxed));
        let _ = writeln!(w, "vcuda_call_errors_total{{op=\"{name}\"}} {n}");
    }
    head(
        w,
        "vcuda_call_seconds_total",
        "counter",
        "Time the backend spent serving requests (decoding, checks, the executor), by operation.",
    );
    for &(i, name, _) in &rows {
        let n = sum.of(|b| b.ops[i].nanos.load(Relaxed));
        let _ = writeln!(
            w,
            "vcuda_call_seconds_total{{op=\"{name}\"}} {:.9}",
            n as f64 / 1e9
        );
    }
    head(
        w,
        "vcuda_data_bytes_total",
        "counter",
        "Bytes successful requests carried, by operation and direction.",
    );
    for &(i, name, _) in &rows {
        for (dir, n) in [
            ("to_device", sum.of(|b| b.ops[i].bytes_out.load(Relaxed))),
            ("to_host", sum.of(|b| b.ops[i].bytes_in.load(Relaxed))),
        ] {
            if n != 0 {
                let _ = writeln!(
                    w,
                    "vcuda_data_bytes_total{{op=\"{name}\",direction=\"{dir}\"}} {n}"
                );
            }
        }
    }
    head(
        w,
        "vcuda_kernel_launches_total",
        "counter",
        "Kernel and graph launches the executor accepted.",
    );
    for (op, kind) in [
        (Opcode::Launch, "kernel"),
        (Opcode::LaunchCooperative, "cooperative"),
        (Opcode::LaunchCluster, "cluster"),
        (Opcode::GraphLaunch, "graph"),
    ] {
        let i = block::op_index(Some(op));
        let n = sum.of(|b| {
            b.ops[i]
                .calls
                .load(Relaxed)
                .saturating_sub(b.ops[i].errors.load(Relaxed))
        });
        let _ = writeln!(w, "vcuda_kernel_launches_total{{kind=\"{kind}\"}} {n}");
    }
}

/// Memory charged, per live session and in total, and the limits.
fn memory(w: &mut String, id: &Identity, sources: &[(String, &Block)], sum: &Sum<'_>) {
    head(
        w,
        "vcuda_memory_charged_bytes",
        "gauge",
        "Device memory charged to live sessions.",
    );
    let _ = writeln!(
        w,
        "vcuda_memory_charged_bytes {}",
        sum.of(|b| b.memory_charged.load(Relaxed))
    );
    if let Some(l) = id.memory_limit {
        head(
            w,
            "vcuda_memory_limit_bytes",
            "gauge",
            "Device memory all sessions share.",
        );
        let _ = writeln!(w, "vcuda_memory_limit_bytes {l}");
    }
    let mut live = Vec::new();
    for (prefix, b) in sources {
        for s in &b.sessions {
            let sid = s.id.load(Relaxed);
            if sid != 0 {
                live.push((
                    format!("{prefix}{sid}"),
                    s.charged.load(Relaxed),
                    s.limit.load(Relaxed),
                ));
            }
        }
    }
    head(
        w,
        "vcuda_session_memory_bytes",
        "gauge",
        "Device memory charged to one live session.",
    );
    for (sid, charged, _) in &live {
        let _ = writeln!(
            w,
            "vcuda_session_memory_bytes{{session=\"{sid}\"}} {charged}"
        );
    }
    head(
        w,
        "vcuda_session_memory_limit_bytes",
        "gauge",
        "The most device memory one live session may be charged.",
    );
    for (sid, _, limit) in &live {
        let _ = writeln!(
            w,
            "vcuda_session_memory_limit_bytes{{session=\"{sid}\"}} {limit}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::SessionCounters;

    fn value(text: &str, series: &str) -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{series} missing in\n{text}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn a_session_shows_its_calls_and_memory_until_it_ends() {
        let id = Identity {
            executor: "cpu",
            isolation: "thread",
            memory_limit: Some(1 << 30),
        };
        let before = render(&id);
        let mut s = SessionCounters::open(1 << 20);
        s.request(Some(Opcode::Malloc), 0, 1000, 0, 0);
        s.request(Some(Opcode::MemcpyHtoD), 0, 1000, 4096, 0);
        s.request(Some(Opcode::Launch), 0, 1000, 0, 0);
        s.request(Some(Opcode::Launch), 98, 1000, 0, 0);
        s.request(None, 1, 10, 0, 0);
        s.message(true);
        s.charged(512);
        let during = render(&id);
        let grew = |series: &str, by: u64| {
            let b = before
                .lines()
                .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
                .map_or(0, |v| v.parse::<u64>().unwrap());
            assert!(value(&during, series) >= b + by, "{series} in\n{during}");
        };
        grew("vcuda_calls_total{op=\"Launch\"}", 2);
        grew("vcuda_call_errors_total{op=\"Launch\"}", 1);
        grew("vcuda_calls_total{op=\"unknown\"}", 1);
        grew(
            "vcuda_data_bytes_total{op=\"MemcpyHtoD\",direction=\"to_device\"}",
            4096,
        );
        grew("vcuda_kernel_launches_total{kind=\"kernel\"}", 1);
        grew("vcuda_errors_total{status=\"98\"}", 1);
        grew("vcuda_malformed_messages_total", 1);
        grew("vcuda_sessions_total{isolation=\"thread\"}", 1);
        assert!(during.contains("vcuda_memory_limit_bytes 1073741824"));
        let mine = during
            .lines()
            .any(|l| l.starts_with("vcuda_session_memory_bytes{session=") && l.ends_with(" 512"));
        assert!(mine, "{during}");
        drop(s);
        let after = render(&id);
        let mine = after
            .lines()
            .any(|l| l.starts_with("vcuda_session_memory_bytes{session=") && l.ends_with(" 512"));
        assert!(!mine || after.matches(" 512").count() < during.matches(" 512").count());
        // Every line is a comment or `name{labels} value`.
        for l in after.lines().filter(|l| !l.starts_with('#')) {
            let (series, v) = l.rsplit_once(' ').unwrap();
            assert!(series.starts_with("vcuda_"), "{l}");
            assert!(v.parse::<f64>().is_ok(), "{l}");
        }
    }
}
