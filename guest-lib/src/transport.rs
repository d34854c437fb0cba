// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Transports: how messages reach the backend.
//!
//! A [`Transport`] carries one message and its data segments and returns the reply's
//! records. [`SocketTransport`] writes everything inline on a Unix or TCP stream; the virtio
//! transport hands the same message and the program's own buffers to `/dev/vcuda`, which
//! pins the pages and passes them to the host as scatter-gather lists. Both carry the same
//! wire format.

use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Mutex;

use vcuda_protocol::decode::{decode_reply_header, split_records};
use vcuda_protocol::{RecordKind, ReplyHeader};

/// One record of a reply, owned.
#[derive(Debug, Clone)]
pub struct Record {
    /// What it is.
    pub kind: RecordKind,
    /// The request it answers.
    pub seq: u64,
    /// Its status.
    pub status: u32,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// Carries messages to the backend.
pub trait Transport: Send + Sync {
    /// Sends `msg` (a complete control area, header included) with the bytes of its out
    /// segments, in order, and waits for the reply to request `seq`. The reply's in data
    /// lands in `inp` (the message's in segments, in order). Returns every record received
    /// meanwhile, including asynchronous errors and device output.
    fn call(
        &self,
        msg: &[u8],
        out: &[&[u8]],
        inp: &mut [&mut [u8]],
        seq: u64,
    ) -> io::Result<Vec<Record>>;

    /// Sends a message whose requests are all reply-on-error, without waiting. Out data is
    /// consumed (copied or sent) before this returns.
    fn post(&self, msg: &[u8], out: &[&[u8]]) -> io::Result<Vec<Record>>;

    /// A short description for logs.
    fn describe(&self) -> String;

    /// Most data bytes one request should carry. Larger copies are split into several
    /// requests; the virtio transport keeps each within one descriptor chain so the
    /// program's pages are used in place.
    fn max_request_data(&self) -> u64 {
        vcuda_protocol::MAX_SEGMENT_LEN
    }
}

/// Where the socket transport connects.
#[derive(Debug, Clone)]
pub enum Address {
    /// A Unix socket.
    Unix(PathBuf),
    /// `host:port`.
    Tcp(String),
}

impl Address {
    /// `VCUDA_SOCKET`, else `$XDG_RUNTIME_DIR/vcuda.sock`, else `/tmp/vcuda-$UID.sock`
    /// (the backend's default too).
    pub fn from_env() -> Self {
        match std::env::var("VCUDA_SOCKET") {
            Ok(s) if !s.is_empty() => match s.strip_prefix("tcp:") {
                Some(a) => Address::Tcp(a.to_owned()),
                None => Address::Unix(PathBuf::from(s)),
            },
            _ => Address::Unix(match std::env::var_os("XDG_RUNTIME_DIR") {
                Some(d) if !d.is_empty() => PathBuf::from(d).join("vcuda.sock"),
                // SAFETY: getuid has no preconditions and cannot fail.
                _ => PathBuf::from(format!("/tmp/vcuda-{}.sock", unsafe { libc::getuid() })),
            }),
        }
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Unix(p) => write!(f, "{}", p.display()),
            Address::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// The socket transport. One connection per process; calls from many threads take turns
/// on it (the backend runs a session's calls in order anyway).
pub struct SocketTransport {
    addr: Address,
    stream: Mutex<Box<dyn Stream>>,
}

impl SocketTransport {
    /// Connects.
    pub fn connect(addr: Address) -> io::Result<Self> {
        let stream: Box<dyn Stream> = match &addr {
            Address::Unix(p) => Box::new(UnixStream::connect(p)?),
            Address::Tcp(a) => {
                let s = TcpStream::connect(a)?;
                s.set_nodelay(true)?;
                Box::new(s)
            }
        };
        Ok(Self {
            addr,
            stream: Mutex::new(stream),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Box<dyn Stream>> {
        self.stream.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn write_all_vectored(s: &mut dyn Stream, msg: &[u8], out: &[&[u8]]) -> io::Result<()> {
    let mut iov: Vec<IoSlice<'_>> = Vec::with_capacity(1 + out.len());
    iov.push(IoSlice::new(msg));
    iov.extend(
        out.iter()
            .filter(|b| !b.is_empty())
            .map(|b| IoSlice::new(b)),
    );
    let mut bufs = &mut iov[..];
    while !bufs.is_empty() {
        match s.write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    s.flush()
}

/// Reads one reply frame; in data of records for `seq` goes into `inp` in order, the rest
/// is discarded. Returns the records and whether one of them answered `seq`.
fn read_reply(
    s: &mut dyn Stream,
    seq: Option<u64>,
    inp: &mut [&mut [u8]],
    in_pos: &mut (usize, usize),
) -> io::Result<(Vec<Record>, bool)> {
    let bad =
        |e: vcuda_protocol::DecodeError| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    let mut hdr = [0u8; size_of::<ReplyHeader>()];
    s.read_exact(&mut hdr)?;
    let h = decode_reply_header(&hdr).map_err(bad)?;
    let mut ctrl = vec![0u8; h.ctrl_len as usize];
    s.read_exact(&mut ctrl)?;
    let raw = split_records(&h, &ctrl).map_err(bad)?;
    let mut recs = Vec::with_capacity(raw.len());
    let mut answered = false;
    for r in &raw {
        let kind = RecordKind::from_u16(r.header.kind).unwrap_or(RecordKind::Reply);
        let mine = kind == RecordKind::Reply && Some(r.header.seq) == seq;
        answered |= mine;
        let mut left = r.header.in_len as usize;
        while left > 0 {
            if mine && in_pos.0 < inp.len() {
                let buf = &mut inp[in_pos.0][in_pos.1..];
                let n = buf.len().min(left);
                s.read_exact(&mut buf[..n])?;
                left -= n;
                in_pos.1 += n;
                if in_pos.1 == inp[in_pos.0].len() {
                    *in_pos = (in_pos.0 + 1, 0);
                }
            } else {
                // Not ours, or more than we asked for: drain it.
                let mut sink = [0u8; 4096];
                let n = sink.len().min(left);
                s.read_exact(&mut sink[..n])?;
                left -= n;
            }
        }
        recs.push(Record {
            kind,
            seq: r.header.seq,
            status: r.header.status,
            payload: r.payload.to_vec(),
        });
    }
    Ok((recs, answered))
}

impl Transport for SocketTransport {
    fn call(
        &self,
        msg: &[u8],
        out: &[&[u8]],
        inp: &mut [&mut [u8]],
        seq: u64,
    ) -> io::Result<Vec<Record>> {
        let mut s = self.lock();
        write_all_vectored(&mut **s, msg, out)?;
        let mut all = Vec::new();
        let mut pos = (0, 0);
        loop {
            let (recs, answered) = read_reply(&mut **s, Some(seq), inp, &mut pos)?;
            all.extend(recs);
            if answered {
                return Ok(all);
            }
            if all.iter().any(|r| r.seq == u64::MAX) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the backend rejected a message",
                ));
            }
        }
    }

    fn post(&self, msg: &[u8], out: &[&[u8]]) -> io::Result<Vec<Record>> {
        let mut s = self.lock();
        write_all_vectored(&mut **s, msg, out)?;
        Ok(Vec::new())
    }

    fn describe(&self) -> String {
        format!("socket {}", self.addr)
    }
}
