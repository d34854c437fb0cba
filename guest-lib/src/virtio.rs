// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The virtio transport: `/dev/vcuda`, the vcuda kernel module's device.
//!
//! Each call is one `VCUDA_IOC_SUBMIT` ioctl. The module copies the message in, pins the
//! pages of every data segment (the program's own buffers: no copies), sends them to the
//! host as guest-physical scatter-gather lists, sleeps until the reply, and copies the
//! reply's records out. In data is already in the program's buffers when it returns.
//!
//! Posted calls (a batch, see [`crate::batch`]) go detached where the module and device
//! can (`VCUDA_SUBMIT_DETACHED`, ioctl ABI 3): the module copies the message and its out
//! data, queues the chain behind the session's earlier ones and returns at once; the host
//! hands asynchronous errors and device output to the next call's reply, as the socket
//! transport's unsolicited replies do. So a stream of launches never waits for the host,
//! and a synchronize behind a batch waits for one round trip.

use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use vcuda_protocol::decode::{decode_reply_header, split_records};
use vcuda_protocol::ioctl::{
    VCUDA_IOC_INFO, VCUDA_IOC_SHARE, VCUDA_IOC_SUBMIT, VCUDA_IOC_UNSHARE, VCUDA_SUBMIT_DETACHED,
    VcudaInfo, VcudaSeg, VcudaShare, VcudaSubmit,
};
use vcuda_protocol::virtio::CONFIG_F_DETACHED_SUBMIT;
use vcuda_protocol::{RecordKind, SegmentDir};
use zerocopy::FromZeros;

use crate::transport::{Record, Sharing, Transport};

/// The device node.
pub const DEVICE_PATH: &str = "/dev/vcuda";

/// Bytes of the reply buffer offered with every call.
const REPLY_CAPACITY: usize = 64 << 10;

thread_local! {
    /// Each thread's reply buffer (see [`VirtioTransport::submit`]).
    static REPLY_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// The virtio transport.
pub struct VirtioTransport {
    file: File,
    info: VcudaInfo,
    /// The device went away (unplugged, unbound, or its virtqueue broke): every later call
    /// fails without trying.
    broken: AtomicBool,
    /// Posted messages go detached (`VCUDA_SUBMIT_DETACHED`): the module and the device
    /// both can, and `VCUDA_DETACHED` is not `0`.
    detached: bool,
}

/// Whether an ioctl error means the device is gone for good: `ENODEV` (removed or
/// unbound), `EIO` (broken virtqueue or refused session), `ESHUTDOWN`.
fn device_gone(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENODEV | libc::EIO | libc::ESHUTDOWN)
    )
}

impl VirtioTransport {
    /// Opens `/dev/vcuda` (one session per open file).
    pub fn open() -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(DEVICE_PATH)?;
        let mut info = VcudaInfo::new_zeroed();
        // SAFETY: VCUDA_IOC_INFO writes one VcudaInfo through the pointer, which is valid
        // and exclusively borrowed for the call.
        let r = unsafe {
            libc::ioctl(
                file.as_raw_fd(),
                VCUDA_IOC_INFO as _,
                &mut info as *mut VcudaInfo,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let detached = info.abi_version >= 3
            && info.config.features & CONFIG_F_DETACHED_SUBMIT != 0
            && std::env::var("VCUDA_DETACHED").map_or(true, |v| v != "0");
        Ok(Self {
            file,
            info,
            broken: AtomicBool::new(false),
            detached,
        })
    }

    /// Runs ioctl `nr` on the device file with `arg`; a vanished device breaks the
    /// transport.
    fn ioctl<T>(&self, nr: u32, arg: &mut T) -> io::Result<()> {
        if self.broken.load(Ordering::Relaxed) {
            return Err(io::ErrorKind::NotConnected.into());
        }
        // SAFETY: `nr` is one of the module's ioctls whose argument is a `T` (checked by
        // the callers), valid and exclusively borrowed for the call.
        let r = unsafe { libc::ioctl(self.file.as_raw_fd(), nr as _, arg as *mut T) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if device_gone(&e) {
                self.broken.store(true, Ordering::Relaxed);
            }
            return Err(e);
        }
        Ok(())
    }

    fn submit(
        &self,
        msg: &[u8],
        out: &[&[u8]],
        inp: &mut [&mut [u8]],
        seq: Option<u64>,
        flags: u64,
    ) -> io::Result<Vec<Record>> {
        if self.broken.load(Ordering::Relaxed) {
            return Err(io::ErrorKind::NotConnected.into());
        }
        let segs: Vec<VcudaSeg> = out
            .iter()
            .map(|b| VcudaSeg {
                addr: b.as_ptr() as u64,
                len: b.len() as u64,
                dir: SegmentDir::Out as u32,
                flags: 0,
            })
            .chain(inp.iter_mut().map(|b| VcudaSeg {
                addr: b.as_mut_ptr() as u64,
                len: b.len() as u64,
                dir: SegmentDir::In as u32,
                flags: 0,
            }))
            .collect();
        // The thread's reply buffer, reused: zeroing 64 KiB for every call cost more than
        // a small call's own work. Only the bytes the module reports are read; the buffer
        // goes back once the records are copied out.
        let mut reply = REPLY_BUF.try_with(Cell::take).unwrap_or_default();
        if reply.len() != REPLY_CAPACITY {
            reply = vec![0u8; REPLY_CAPACITY];
        }
        let r = self.submit_with(msg, &segs, &mut reply, seq, flags);
        let _ = REPLY_BUF.try_with(|b| b.set(reply));
        r
    }

    /// [`VirtioTransport::submit`] with the segment table made and a reply buffer.
    fn submit_with(
        &self,
        msg: &[u8],
        segs: &[VcudaSeg],
        reply: &mut [u8],
        seq: Option<u64>,
        flags: u64,
    ) -> io::Result<Vec<Record>> {
        let mut sub = VcudaSubmit {
            ctrl_addr: msg.as_ptr() as u64,
            ctrl_len: msg.len() as u32,
            reply_cap: reply.len() as u32,
            reply_addr: reply.as_mut_ptr() as u64,
            segs_addr: segs.as_ptr() as u64,
            n_segs: segs.len() as u32,
            reply_len: 0,
            flags,
        };
        // SAFETY: every address in `sub` points into a live buffer of the stated length
        // (`msg`, `reply`, `segs`, and the buffers `segs` names, which the caller of
        // `submit` lends for the whole call); the module reads out segments and writes in
        // segments and `reply` only until the ioctl returns.
        let r = unsafe {
            libc::ioctl(
                self.file.as_raw_fd(),
                VCUDA_IOC_SUBMIT as _,
                &mut sub as *mut VcudaSubmit,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if device_gone(&e) {
                self.broken.store(true, Ordering::Relaxed);
            }
            return Err(e);
        }
        let bad = |e: vcuda_protocol::DecodeError| {
            io::Error::new(io::ErrorKind::InvalidData, e.to_string())
        };
        let reply = &reply[..(sub.reply_len as usize).min(reply.len())];
        if reply.is_empty() && seq.is_none() {
            return Ok(Vec::new());
        }
        let h = decode_reply_header(reply).map_err(bad)?;
        let ctrl = reply
            .get(size_of::<vcuda_protocol::ReplyHeader>()..)
            .unwrap_or(&[]);
        let ctrl = ctrl
            .get(..h.ctrl_len as usize)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))?;
        let recs = split_records(&h, ctrl).map_err(bad)?;
        Ok(recs
            .iter()
            .map(|r| Record {
                kind: RecordKind::from_u16(r.header.kind).unwrap_or(RecordKind::Reply),
                seq: r.header.seq,
                status: r.header.status,
                payload: r.payload.to_vec(),
            })
            .collect())
    }
}

impl Transport for VirtioTransport {
    fn call(
        &self,
        msg: &[u8],
        out: &[&[u8]],
        inp: &mut [&mut [u8]],
        seq: u64,
    ) -> io::Result<Vec<Record>> {
        self.submit(msg, out, inp, Some(seq), 0)
    }

    /// Detached where possible: returns once the module queued the message (with no
    /// records, unless the module had to wait for it after all).
    fn post(&self, msg: &[u8], out: &[&[u8]]) -> io::Result<Vec<Record>> {
        let flags = if self.detached {
            VCUDA_SUBMIT_DETACHED
        } else {
            0
        };
        self.submit(msg, out, &mut [], None, flags)
    }

    fn max_request_data(&self) -> u64 {
        // A chain holds the header, the message and the reply area besides the data; a
        // buffer that starts mid-page spans one page more than its length.
        let descs = u64::from(self.info.config.max_chain_descriptors).clamp(8, 1 << 16);
        ((descs - 4) * 4096).min(vcuda_protocol::MAX_SEGMENT_LEN)
    }

    /// A module of ioctl ABI 2 or later shares pages; no descriptor passes here.
    fn sharing(&self) -> Sharing {
        if self.info.abi_version >= 2 {
            Sharing::Pages
        } else {
            Sharing::Nothing
        }
    }

    fn share_pages(&self, addr: u64, len: u64) -> io::Result<u64> {
        if self.sharing() != Sharing::Pages {
            return Err(io::ErrorKind::Unsupported.into());
        }
        let mut arg = VcudaShare {
            addr,
            len,
            handle: 0,
        };
        self.ioctl(VCUDA_IOC_SHARE, &mut arg)?;
        Ok(arg.handle)
    }

    fn unshare_pages(&self, handle: u64) -> io::Result<()> {
        let mut arg = handle;
        self.ioctl(VCUDA_IOC_UNSHARE, &mut arg)
    }

    /// With detached posts, the batch rides in front of the call that follows it: one chain,
    /// one round trip. The order lock is then held while the host runs the call, but the
    /// host runs a session's chains one at a time in order anyway (DEVICE.md), so another
    /// thread's call would wait as long behind it on the host. Without them (an older
    /// module or device) a posted message waits for the host too, and the batch goes on its
    /// own, as before.
    fn batch_rides_with_calls(&self) -> bool {
        self.detached
    }

    fn describe(&self) -> String {
        let posted = if self.detached {
            ", detached posts"
        } else {
            ""
        };
        format!("{DEVICE_PATH} (session {}{posted})", self.info.session)
    }

    fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_vanished_device_breaks_the_transport() {
        for errno in [libc::ENODEV, libc::EIO, libc::ESHUTDOWN] {
            assert!(device_gone(&io::Error::from_raw_os_error(errno)));
        }
        for errno in [
            libc::EINTR,
            libc::ENOMEM,
            libc::E2BIG,
            libc::EFAULT,
            libc::EINVAL,
        ] {
            assert!(!device_gone(&io::Error::from_raw_os_error(errno)));
        }
    }
}
