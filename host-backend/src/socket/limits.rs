// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Connection bounds of the socket transport: sessions in all, per peer (uid or address),
//! and connections that have not completed their `Hello` yet (refusals are logged through
//! [`crate::log_limit`], so a flood of connections cannot flood the log either).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Who is at the other end of a connection, for per-peer bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerKey {
    /// A Unix peer's uid.
    Uid(u32),
    /// A TCP peer's address.
    Ip(IpAddr),
}

impl std::fmt::Display for PeerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerKey::Uid(u) => write!(f, "uid {u}"),
            PeerKey::Ip(a) => write!(f, "{a}"),
        }
    }
}

/// The bounds.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Sessions (connections past their `Hello`) in all.
    pub max_sessions: usize,
    /// Connections (sessions and pending) per peer.
    pub max_per_peer: usize,
    /// Connections that have not completed their `Hello`. When full, the oldest one is
    /// closed to make room, so idle connections cannot lock real clients out.
    pub max_pending: usize,
}

/// Closes a connection from another thread (its session thread then sees end of file).
pub type Closer = Box<dyn Fn() + Send>;

/// Why a connection was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The peer has `max_per_peer` connections already.
    PerPeer(PeerKey, usize),
    /// `max_sessions` sessions are live.
    Sessions(usize),
    /// The pending connection was closed to make room for newer ones.
    Evicted,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::PerPeer(p, n) => write!(f, "{p} has {n} connections already"),
            Refusal::Sessions(n) => write!(f, "session limit {n} reached"),
            Refusal::Evicted => write!(f, "closed to make room for newer connections"),
        }
    }
}

#[derive(Default)]
struct State {
    next_id: u64,
    per_peer: HashMap<PeerKey, usize>,
    /// Pending connections, oldest first.
    pending: VecDeque<(u64, PeerKey, Closer)>,
    sessions: usize,
}

impl State {
    /// One connection of `peer` fewer.
    fn release(&mut self, peer: PeerKey) {
        if let Some(n) = self.per_peer.get_mut(&peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&peer);
            }
        }
    }
}

/// Tracks the connections of one server.
pub struct Tracker {
    bounds: Bounds,
    state: Mutex<State>,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("bounds", &self.bounds)
            .finish()
    }
}

impl Tracker {
    /// A tracker enforcing `bounds`.
    pub fn new(bounds: Bounds) -> Arc<Self> {
        Arc::new(Self {
            bounds,
            state: Mutex::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits a new connection from `peer` as pending; `close` closes it should it have to
    /// make room later. When the pending connections are at their bound, the oldest one is
    /// closed (and its peer logged by the caller's session thread).
    pub fn admit(self: &Arc<Self>, peer: PeerKey, close: Closer) -> Result<Ticket, Refusal> {
        let mut st = self.lock();
        let n = st.per_peer.get(&peer).copied().unwrap_or(0);
        if n >= self.bounds.max_per_peer {
            return Err(Refusal::PerPeer(peer, n));
        }
        while st.pending.len() >= self.bounds.max_pending.max(1) {
            if let Some((_, evicted, evict)) = st.pending.pop_front() {
                // The connection is closed now: it no longer counts against its peer,
                // even before its thread notices.
                st.release(evicted);
                evict();
            }
        }
        *st.per_peer.entry(peer).or_default() += 1;
        st.next_id += 1;
        let id = st.next_id;
        st.pending.push_back((id, peer, close));
        Ok(Ticket {
            tracker: self.clone(),
            id,
            peer,
            promoted: false,
        })
    }

    /// Connections that have not completed their `Hello`.
    pub fn pending(&self) -> usize {
        self.lock().pending.len()
    }

    /// Live sessions.
    pub fn sessions(&self) -> usize {
        self.lock().sessions
    }
}

/// One admitted connection; releases its place when dropped.
pub struct Ticket {
    tracker: Arc<Tracker>,
    id: u64,
    peer: PeerKey,
    promoted: bool,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("id", &self.id)
            .field("peer", &self.peer)
            .field("promoted", &self.promoted)
            .finish()
    }
}

impl Ticket {
    /// Live sessions of its tracker (this one included once promoted).
    pub fn sessions(&self) -> usize {
        self.tracker.sessions()
    }

    /// The peer.
    pub fn peer(&self) -> PeerKey {
        self.peer
    }

    /// The connection completed its `Hello`: it becomes a session, unless it was evicted
    /// meanwhile or the sessions are at their bound.
    pub fn promote(&mut self) -> Result<(), Refusal> {
        if self.promoted {
            return Ok(());
        }
        let t = self.tracker.clone();
        let mut st = t.lock();
        let Some(i) = st.pending.iter().position(|(id, _, _)| *id == self.id) else {
            return Err(Refusal::Evicted);
        };
        if st.sessions >= t.bounds.max_sessions {
            return Err(Refusal::Sessions(t.bounds.max_sessions));
        }
        st.pending.remove(i);
        st.sessions += 1;
        self.promoted = true;
        Ok(())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut st = self.tracker.lock();
        let counted = if self.promoted {
            st.sessions -= 1;
            true
        } else if let Some(i) = st.pending.iter().position(|(id, _, _)| *id == self.id) {
            st.pending.remove(i);
            true
        } else {
            // Evicted: its peer's count was released then.
            false
        };
        if counted {
            st.release(self.peer);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn counter() -> (Arc<AtomicUsize>, impl Fn() -> Closer) {
        let c = Arc::new(AtomicUsize::new(0));
        let c2 = c.clone();
        (c, move || {
            let c = c2.clone();
            Box::new(move || {
                c.fetch_add(1, Ordering::SeqCst);
            })
        })
    }

    #[test]
    fn pending_full_evicts_the_oldest() {
        let t = Tracker::new(Bounds {
            max_sessions: 10,
            max_per_peer: 100,
            max_pending: 3,
        });
        let (closed, closer) = counter();
        let idle: Vec<_> = (0..3)
            .map(|_| t.admit(PeerKey::Uid(1), closer()).unwrap())
            .collect();
        assert_eq!(t.pending(), 3);
        // A fourth connection gets in; the oldest idle one is closed.
        let mut real = t.admit(PeerKey::Uid(2), closer()).unwrap();
        assert_eq!(closed.load(Ordering::SeqCst), 1);
        assert_eq!(t.pending(), 3);
        real.promote().unwrap();
        assert_eq!((t.pending(), t.sessions()), (2, 1));
        let mut idle = idle.into_iter();
        let mut evicted = idle.next().unwrap();
        assert_eq!(evicted.promote(), Err(Refusal::Evicted));
        drop(evicted);
        drop(real);
        assert_eq!((t.pending(), t.sessions()), (2, 0));
        drop(idle);
        assert_eq!((t.pending(), t.sessions()), (0, 0));
    }

    #[test]
    fn per_peer_and_session_bounds() {
        let t = Tracker::new(Bounds {
            max_sessions: 2,
            max_per_peer: 2,
            max_pending: 10,
        });
        let (_, closer) = counter();
        let mut a = t.admit(PeerKey::Uid(1), closer()).unwrap();
        let mut b = t.admit(PeerKey::Uid(1), closer()).unwrap();
        assert_eq!(
            t.admit(PeerKey::Uid(1), closer()).unwrap_err(),
            Refusal::PerPeer(PeerKey::Uid(1), 2)
        );
        let mut c = t.admit(PeerKey::Uid(2), closer()).unwrap();
        a.promote().unwrap();
        b.promote().unwrap();
        assert_eq!(c.promote(), Err(Refusal::Sessions(2)));
        drop(a);
        c.promote().unwrap();
        drop((b, c));
        assert_eq!((t.pending(), t.sessions()), (0, 0));
        // The peer's count is released too.
        let _d = t.admit(PeerKey::Uid(1), closer()).unwrap();
        let _e = t.admit(PeerKey::Uid(1), closer()).unwrap();
    }

    /// A flood of connections that are evicted while their threads are still busy does
    /// not use up the peer's bound: an evicted connection stops counting at once.
    #[test]
    fn evicted_connections_stop_counting_at_once() {
        let t = Tracker::new(Bounds {
            max_sessions: 8,
            max_per_peer: 4,
            max_pending: 2,
        });
        let (closed, closer) = counter();
        let peer = PeerKey::Uid(1000);
        // Tickets kept alive: their threads have not noticed the eviction yet.
        let held: Vec<Ticket> = (0..10).map(|_| t.admit(peer, closer()).unwrap()).collect();
        assert_eq!(closed.load(Ordering::SeqCst), 8);
        assert_eq!(t.pending(), 2);
        let mut last = t.admit(peer, closer()).unwrap();
        last.promote().unwrap();
        assert_eq!(t.sessions(), 1);
        drop(held);
        assert_eq!(t.pending(), 0);
        drop(last);
        assert_eq!(t.sessions(), 0);
        // Every count came back exactly: the peer has its whole bound again.
        let again: Vec<Ticket> = (0..2).map(|_| t.admit(peer, closer()).unwrap()).collect();
        assert_eq!(again.len(), 2);
    }
}
