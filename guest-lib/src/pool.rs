// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Several backends to choose from: `VCUDA_SOCKET=tcp:a:7777,tcp:b:7777` (any mix of Unix
//! socket paths and `tcp:` addresses, separated by commas).
//!
//! The library starts a session on each backend in turn (a connection and a `Hello`, each
//! bounded by [`PROBE_TIMEOUT`]), keeps the one [`choose`] prefers and closes the others. A
//! backend that cannot be reached, refuses the session or does not answer in time is
//! skipped: the pool fails over at connect time. Once a program has its session it stays
//! on that backend; if the backend goes away later, calls fail as with a single backend.

use std::time::Duration;

use vcuda_protocol::HelloResp;

use crate::transport::Address;

/// How long a pool member has to accept the connection and to answer `Hello`.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The backends `spec` (`VCUDA_SOCKET`'s value) names, in order; `None` for one backend
/// (no comma), which keeps the single-backend path.
pub fn parse(spec: &str) -> Option<Vec<Address>> {
    if !spec.contains(',') {
        return None;
    }
    Some(
        spec.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(Address::parse)
            .collect(),
    )
}

/// Which of the backends that answered to keep (an index into `answers`): the one with the
/// most free device memory per session, `free_memory / sessions` (its `Hello` counts the new
/// session), so an idle backend with less memory can win over a busy one with more; ties go
/// to the backend named first. `None` if `answers` is empty.
pub fn choose(answers: &[HelloResp]) -> Option<usize> {
    let share = |h: &HelloResp| h.free_memory / u64::from(h.sessions.max(1));
    let mut best: Option<usize> = None;
    for (i, h) in answers.iter().enumerate() {
        if best.is_none_or(|b| share(h) > share(&answers[b])) {
            best = Some(i);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(free: u64, sessions: u32) -> HelloResp {
        HelloResp {
            free_memory: free,
            sessions,
            ..HelloResp::default()
        }
    }

    #[test]
    fn a_list_is_a_pool_and_one_address_is_not() {
        assert!(parse("/run/vcuda/vcuda.sock").is_none());
        assert!(parse("tcp:a:1").is_none());
        let p = parse("tcp:a:1, /s ,,tcp:b:2").unwrap();
        let names: Vec<String> = p.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["tcp:a:1", "/s", "tcp:b:2"]);
    }

    #[test]
    fn the_most_free_memory_per_session_wins_and_ties_go_first() {
        assert_eq!(choose(&[]), None);
        // 80 GiB shared by 4 sessions < 40 GiB for 1.
        assert_eq!(choose(&[hello(80 << 30, 4), hello(40 << 30, 1)]), Some(1));
        assert_eq!(choose(&[hello(80 << 30, 1), hello(40 << 30, 1)]), Some(0));
        assert_eq!(choose(&[hello(1 << 30, 1), hello(1 << 30, 1)]), Some(0));
        // A backend that reports no sessions counts as one.
        assert_eq!(choose(&[hello(1 << 30, 0), hello(2 << 30, 1)]), Some(1));
    }
}
