// SPDX-License-Identifier: Apache-2.0 OR MIT
//! One session on a connected stream: the message loop (header, control area, out data; the
//! reply and in data back), the `Hello` deadline, the buffers kept between messages, and
//! what admits a connection to a session ([`Admission`]).

use crate::executor::Tenant;
use std::io::{self, IoSlice, Write};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use vcuda_protocol::{MessageHeader, ReplyBuilder};

use super::config::Timeouts;
use super::conn::Conn;
use super::hangup::HangupWatch;
use super::inbound;
use super::limits::Ticket;
use super::ring::Wire;
use super::timed::{TimedReader, spin_until_readable};
use crate::data::DataSegs;
use crate::executor::Cancel;
use crate::session::{Backend, Outcome, Session, check_header};
use crate::worker::ParentLink;

/// What lets a connection's first message start a session: its place among the server's
/// bounds ([`Ticket`]), or, in a worker process, the backend's answer over the worker's
/// link.
#[derive(Debug)]
pub enum Admission {
    /// The connection's place in this process's [`Tracker`](super::Tracker).
    Ticket(Ticket),
    /// The backend that started this worker holds the bounds.
    Parent(ParentLink),
}

impl Admission {
    fn promote(&mut self) -> io::Result<()> {
        let refused = |why: String| io::Error::new(io::ErrorKind::PermissionDenied, why);
        match self {
            Admission::Ticket(t) => t.promote().map_err(|e| {
                crate::metrics::refused(crate::metrics::Refusal::Bounds);
                refused(e.to_string())
            }),
            Admission::Parent(link) => match link.admit()? {
                Some(n) => {
                    crate::metrics::set_backend_sessions(n);
                    Ok(())
                }
                None => Err(refused(
                    "the backend refused the session (its bounds)".into(),
                )),
            },
        }
    }
}

/// A session keeps its message buffers between messages (a stream of large copies reuses
/// them); buffers above this size go back to the allocator once the session has been idle
/// for [`IDLE_RELEASE`], so idle sessions hold little.
const KEEP_BUFFER: usize = 1 << 20;
/// How long a session with large buffers may idle before they are released.
const IDLE_RELEASE: Duration = Duration::from_secs(1);

/// The in-data area of a complete message: the first `len` bytes of `buf`, which grows
/// (fresh memory from the allocator: calloc's untouched zero pages) when it is too short.
/// Reused bytes are not cleared. A reply returns each request's in segments, which the
/// executor fills; where a request declares a longer segment than it writes (a copy's
/// segment longer than its width times height), the rest holds earlier in data of this
/// same connection (its own device data), never another session's: the buffer is the
/// connection's own.
fn in_area(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if len > buf.len() {
        if len <= buf.capacity() {
            buf.resize(len, 0);
        } else {
            *buf = vec![0u8; len];
        }
    }
    &mut buf[..len]
}

/// Runs one session on a connected stream until the peer closes it, with the default
/// [`Timeouts`] and no connection bounds. Everything the session owns is freed when this
/// returns.
pub fn serve_connection<S: Conn>(stream: S, backend: &Arc<Backend>) -> io::Result<()> {
    serve_connection_with(stream, backend, Tenant::unique(), Timeouts::default(), None)
}

/// Runs one session on a connected stream until the peer closes it, a timeout expires or
/// framing is lost. The first message must be a successful `Hello` and arrive within
/// `timeouts.handshake`; it promotes `admission` to a session. The session's executor is
/// created only then, for `tenant` (see [`Tenant`]).
pub fn serve_connection_with<S: Conn>(
    stream: S,
    backend: &Arc<Backend>,
    tenant: Tenant,
    timeouts: Timeouts,
    mut admission: Option<Admission>,
) -> io::Result<()> {
    let mut stream = Wire::new(stream);
    stream.set_write_timeout(Some(timeouts.message))?;
    let hello_deadline = Instant::now() + timeouts.handshake;
    let mut session: Option<Session> = None;
    let mut _hangup: Option<HangupWatch> = None;
    let mut hdr = [0u8; size_of::<MessageHeader>()];
    let (mut ctrl, mut out, mut inp) = (Vec::new(), Vec::new(), Vec::new());
    let mut reply = ReplyBuilder::new();
    // Header and control area usually come in one read (see `inbound`).
    let mut ahead = inbound::Inbound::new();
    let mut applied = None;
    loop {
        let greeted = session.as_ref().is_some_and(Session::has_hello);
        let deadline = (!greeted).then_some(hello_deadline);
        // Between messages a session may idle (then its large buffers go back after
        // IDLE_RELEASE); a message that has started must flow.
        let large = [&ctrl, &out, &inp]
            .iter()
            .any(|b| b.capacity() > KEEP_BUFFER);
        let mut release = large;
        // Between messages the socket keeps the message timeout (or the shorter idle
        // release), so that steady traffic costs no `setsockopt`; a greeted session that
        // times out here just waits again. Bytes of the next message may be buffered
        // already.
        while ahead.buffered() == 0 {
            let idle = if release {
                IDLE_RELEASE.min(timeouts.message)
            } else {
                timeouts.message
            };
            let mut first = TimedReader::new(
                &mut stream,
                &mut applied,
                Some(idle),
                deadline,
                "the first message (Hello)",
            );
            // Spin first (the program's next call usually comes right behind the reply),
            // reading straight into the buffer where the stream can; else peek, then wait.
            let polled = if greeted && !timeouts.spin.is_zero() {
                ahead.spin_fill(&mut first, timeouts.spin)
            } else {
                inbound::Spin::Nothing
            };
            let got = match polled {
                inbound::Spin::Read(r) => r,
                inbound::Spin::Nothing => ahead.fill(&mut first),
                inbound::Spin::Unsupported => {
                    spin_until_readable(first.stream.as_fd(), timeouts.spin);
                    ahead.fill(&mut first)
                }
            };
            match got {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::TimedOut && greeted => {
                    if release {
                        for b in [&mut ctrl, &mut out, &mut inp] {
                            *b = Vec::new();
                        }
                        release = false;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let mut r = TimedReader::new(
            &mut stream,
            &mut applied,
            Some(timeouts.message),
            deadline,
            if greeted {
                "the rest of a message"
            } else {
                "the rest of the first message (Hello)"
            },
        );
        let start = ahead.offset();
        ahead.read_exact(&mut r, &mut hdr)?;
        let header = match check_header(&hdr) {
            Ok(h) => h,
            Err(e) => {
                // Framing is lost: answer once and hang up.
                reply.clear();
                reply.push(
                    vcuda_protocol::RecordKind::Reply,
                    crate::session::SEQ_MALFORMED,
                    crate::session::malformed_status(),
                    &[],
                    0,
                );
                let _ = stream.write_all(reply.finish());
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad message header: {e}"),
                ));
            }
        };
        // Lengths are bounded by check_header (MAX_CTRL_LEN, MAX_DATA_LEN), and the buffers
        // grow only as the bytes arrive.
        ahead.read_vec(&mut r, &mut ctrl, header.ctrl_len as usize)?;
        ahead.read_vec(&mut r, &mut out, header.out_len as usize)?;
        let fds = ahead.claim(start, ahead.offset());
        if session.is_none() {
            // A complete first message: the connection takes a session slot now.
            if let Some(a) = &mut admission {
                a.promote()?;
            }
            let cancel = Cancel::default();
            let s = backend
                .new_session_with(cancel.clone(), tenant)
                .map_err(|s| io::Error::other(format!("cannot start a session: {s}")))?;
            session = Some(s);
            if stream.passes_fds()
                && let Some(s) = session.as_mut()
            {
                s.pass_fds();
            }
            _hangup = Some(HangupWatch::start(
                stream.as_fd().try_clone_to_owned()?,
                cancel,
            )?);
        }
        let Some(session) = session.as_mut() else {
            return Err(io::Error::other("no session"));
        };
        let outcome = {
            let out_segs = DataSegs::from_slice(&mut out);
            let in_segs = DataSegs::from_slice(in_area(&mut inp, header.in_len as usize));
            session.handle_with_fds(
                &header,
                &ctrl,
                &out_segs,
                &in_segs,
                &mut reply,
                usize::MAX,
                fds,
            )
        };
        if outcome != Outcome::Silent {
            let mut iov = vec![IoSlice::new(reply.finish())];
            for &(off, len) in session.in_ranges() {
                // Ranges come from split_requests and lie inside `inp` (in_len bytes).
                if let Some(s) = inp.get(off as usize..(off + len) as usize) {
                    iov.push(IoSlice::new(s));
                }
            }
            write_all_vectored(&mut stream, &mut iov)?;
        }
        if outcome == Outcome::Malformed {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "malformed message",
            ));
        }
        if !session.has_hello() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the first message was not a successful Hello",
            ));
        }
        if let Some(map) = session.take_call_ring() {
            // The guest sends nothing more on the socket until it has the Hello reply.
            if ahead.buffered() != 0 || stream.has_ring() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bytes on the socket after a Hello that offered a call ring",
                ));
            }
            stream.start_ring(map);
            stream.set_write_timeout(Some(timeouts.message))?;
            applied = None;
            crate::metrics::call_ring_started();
        }
    }
}

fn write_all_vectored<S: Write>(stream: &mut S, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !bufs.is_empty() {
        match stream.write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    stream.flush()
}
