// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The device state transfer of a migrating VM (`SET_DEVICE_STATE_FD`,
//! `CHECK_DEVICE_STATE`): every session's state, in the container of
//! [`crate::migrate::format`], through the pipe QEMU hands over.
//!
//! QEMU reads (or writes) the pipe only after `SET_DEVICE_STATE_FD` is answered, so the
//! bytes move on a thread of their own; `CHECK_DEVICE_STATE` waits for it. On the source the
//! sessions are saved before the answer (the VM and its rings are stopped, and a session
//! that cannot move fails the migration right there, the VM running on here); the thread
//! encodes the state into the pipe as QEMU reads it and closes the pipe, which ends the
//! state. On the destination the thread reads the pipe to its end and decodes it, and the
//! sessions are loaded at `CHECK_DEVICE_STATE`, before QEMU maps the guest's memory and
//! starts the rings.

use std::fs::File;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use log::{info, warn};
use nix::fcntl::{FcntlArg, fcntl};
use vhost::vhost_user::message::{VhostTransferStateDirection, VhostTransferStatePhase};

use super::device::Device;
use super::precopy::Precopy;
use crate::migrate::state::DeviceState;
use crate::migrate::{format, precopy};

/// The pipe buffer asked for: QEMU moves what the pipe holds at each wake-up, and with the
/// default 64 KiB the state of 256 MiB of device memory took 1.2 s to cross.
const PIPE_BYTES: i32 = 1 << 20;

/// Widens the state's pipe (both ends share its buffer). A failure (not a pipe, or over
/// `/proc/sys/fs/pipe-max-size`) leaves it as it was: the transfer only gets slower.
fn widen(file: &File) {
    if let Err(e) = fcntl(file, FcntlArg::F_SETPIPE_SZ(PIPE_BYTES)) {
        info!("device state pipe left at its size ({e})");
    }
}

/// A transfer under way: its thread, which yields the loaded state on the destination.
pub struct Transfer(JoinHandle<io::Result<Option<DeviceState>>>);

/// Starts a transfer in `direction` through `file`.
pub fn start(
    device: &Device,
    precopy: Option<Arc<Precopy>>,
    direction: VhostTransferStateDirection,
    phase: VhostTransferStatePhase,
    file: File,
) -> io::Result<Transfer> {
    if phase != VhostTransferStatePhase::STOPPED {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "device state transfer only of a stopped device",
        ));
    }
    widen(&file);
    let spawn = |f: Box<dyn FnOnce() -> io::Result<Option<DeviceState>> + Send>| {
        std::thread::Builder::new()
            .name("vcuda-migrate".into())
            .spawn(f)
            .map(Transfer)
    };
    match direction {
        VhostTransferStateDirection::SAVE => {
            // Saved (and its size known, which runs the encoder) before the answer, so that a
            // session that cannot move fails the migration here; encoded into the pipe as
            // QEMU reads it.
            let t = Instant::now();
            // What the destination holds from the pre-copy is saved as references to it.
            let sent = precopy.as_ref().and_then(|p| p.finish());
            let saved = device.save_state(sent.as_ref()).and_then(|state| {
                if sent.is_some() {
                    info!(
                        "pre-copy: {} bytes of device memory held by the destination",
                        precopy::referenced_bytes(&state)
                    );
                }
                let len = format::body_len(&state)?;
                Ok((state, len))
            });
            let (state, len) = saved.map_err(|e| {
                warn!("the VM cannot migrate: {e}");
                io::Error::other(e.to_string())
            })?;
            info!(
                "device state saved: {} bytes in {:.1} ms",
                len + (format::HEADER_LEN + format::TRAILER_LEN) as u64,
                t.elapsed().as_secs_f64() * 1e3
            );
            spawn(Box::new(move || {
                let t = Instant::now();
                let n =
                    format::encode_to(&state, file).map_err(|e| io::Error::other(e.to_string()))?;
                info!(
                    "device state sent: {n} bytes in {:.1} ms",
                    t.elapsed().as_secs_f64() * 1e3
                );
                Ok(None)
            }))
        }
        VhostTransferStateDirection::LOAD => spawn(Box::new(move || {
            let t = Instant::now();
            let state = format::decode_from(file).map_err(|e| io::Error::other(e.to_string()))?;
            info!(
                "device state received: {} sessions in {:.1} ms",
                state.sessions.len(),
                t.elapsed().as_secs_f64() * 1e3
            );
            Ok(Some(state))
        })),
    }
}

/// Ends transfer `t`: waits for its thread and, on the destination, loads the sessions.
pub fn finish(device: &Device, precopy: Option<&Precopy>, t: Transfer) -> io::Result<()> {
    let r = match t.0.join() {
        Ok(r) => r,
        Err(_) => Err(io::Error::other("the device state transfer failed")),
    };
    let r = r.and_then(|state| match state {
        Some(mut state) => {
            let t = Instant::now();
            if let Some(p) = precopy {
                p.resolve(&mut state)
                    .map_err(|e| io::Error::other(e.to_string()))?;
            }
            let n = device
                .load_state(state)
                .map_err(|e| io::Error::other(e.to_string()))?;
            info!(
                "device state loaded: {n} sessions in {:.1} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
            Ok(())
        }
        None => Ok(()),
    });
    if let Err(e) = &r {
        warn!("device state transfer failed: {e}");
    }
    r
}
