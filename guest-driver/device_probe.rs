// SPDX-License-Identifier: GPL-2.0
//! Binding and unbinding the device: [`VDev::probe`] reads the configuration, finds the
//! virtqueues and makes the device ready; [`VDev::remove`] takes it down again.
//!
//! Probe and remove are serialised by the driver core; they are the only users of the raw
//! `virtio_device`. Removal owns, from the reset on, every chain the device did not return:
//! it keeps them (and their memory) forever, see `finish` in `device_completion.rs`.

use core::ptr;

use kernel::{
    bindings,
    ffi::c_uint,
    prelude::*,
    sync::{
        atomic::{Atomic, Full, Relaxed},
        Arc,
    },
};

use super::{queue::Queue, Limits, VDev, DETACHED, DONE};
use crate::{
    abi::{VirtioCudaConfig, CONFIG_MAGIC, MAX_REQUEST_QUEUES, PROTOCOL_VERSION},
    sys,
};

/// Largest message the module accepts, whatever the device offers.
const MAX_CTRL_LEN_CAP: u32 = 16 << 20;
/// Largest out- or in-data area of one call, whatever the device offers.
const MAX_DATA_LEN_CAP: u64 = 1 << 30;
/// How long removal lets chains in flight finish before it resets the device.
const REMOVE_DRAIN_MS: u32 = 2000;

impl VDev {
    /// Reads the configuration, sets up the queues and makes the device ready.
    pub(crate) fn probe(vdev: *mut bindings::virtio_device) -> Result<Arc<VDev>> {
        let config = read_config(vdev);
        if config.magic != CONFIG_MAGIC || config.protocol_version != PROTOCOL_VERSION {
            pr_warn!(
                "unsupported device (magic {:#x}, protocol version {}; want {:#x}, {})\n",
                config.magic,
                config.protocol_version,
                CONFIG_MAGIC,
                PROTOCOL_VERSION
            );
            return Err(ENODEV);
        }
        let queues = config.num_request_queues;
        if queues == 0 || queues > MAX_REQUEST_QUEUES || config.max_chain_descriptors < 3 {
            pr_warn!(
                "bad device configuration ({} queues, {} descriptors)\n",
                queues,
                config.max_chain_descriptors
            );
            return Err(ENODEV);
        }
        let limits = Limits {
            queues,
            max_desc: config.max_chain_descriptors,
            max_ctrl: config.max_ctrl_len.min(MAX_CTRL_LEN_CAP),
            max_data: config.max_data_len.min(MAX_DATA_LEN_CAP),
        };
        // SAFETY: `vdev` is the device being probed.
        let indirect =
            unsafe { sys::vcuda_glue_has_feature(vdev, bindings::VIRTIO_RING_F_INDIRECT_DESC) };

        // SAFETY: No preconditions.
        let wq = unsafe { sys::vcuda_glue_alloc_wq() };
        if wq.is_null() {
            return Err(ENOMEM);
        }
        let mut vqs = [ptr::null_mut(); MAX_REQUEST_QUEUES as usize];
        // SAFETY: `vdev` is the device being probed; `vqs` has room for `queues` entries.
        let err = unsafe { sys::vcuda_glue_find_vqs(vdev, queues, vqs.as_mut_ptr()) };
        if err != 0 {
            // SAFETY: `wq` was allocated above and is unused.
            unsafe { bindings::destroy_workqueue(wq) };
            return Err(Error::from_errno(err));
        }
        let built = (|| -> Result<Arc<VDev>> {
            let mut qs = KVec::with_capacity(queues as usize, GFP_KERNEL)?;
            for vq in &vqs[..queues as usize] {
                qs.push(KBox::pin_init(Queue::new(*vq), GFP_KERNEL)?, GFP_KERNEL)?;
            }
            Ok(Arc::new(
                VDev {
                    vdev,
                    config,
                    limits,
                    indirect,
                    queues: qs,
                    next_session: Atomic::new(1),
                    wq: Atomic::new(wq),
                    kept: Atomic::new(0),
                },
                GFP_KERNEL,
            )?)
        })();
        let dev = match built {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: The virtqueues were found above and nothing uses them.
                unsafe { sys::vcuda_glue_del_vqs(vdev) };
                // SAFETY: `wq` was allocated above and is unused.
                unsafe { bindings::destroy_workqueue(wq) };
                return Err(e);
            }
        };
        // SAFETY: The driver keeps its `Arc` until `remove` has reset the device and cleared
        // `priv`, so the callback's pointer stays valid while callbacks can run.
        unsafe { sys::vcuda_glue_set_priv(vdev, Arc::as_ptr(&dev).cast_mut().cast()) };
        // SAFETY: The virtqueues are set up.
        unsafe { sys::vcuda_glue_device_ready(vdev) };
        pr_debug!(
            "{} queues, {} descriptors, ctrl {} bytes, data {} bytes, indirect {}\n",
            limits.queues,
            limits.max_desc,
            limits.max_ctrl,
            limits.max_data,
            indirect
        );
        Ok(dev)
    }

    /// Whether `vdev` is this device.
    pub(crate) fn is(&self, vdev: *mut bindings::virtio_device) -> bool {
        self.vdev == vdev
    }

    /// Detaches from the device (driver `remove`, including at module unload).
    pub(crate) fn remove(&self) {
        // Let the chains in flight (session closes above all) finish, for a while.
        let mut waited = 0;
        while waited < REMOVE_DRAIN_MS && self.queues.iter().any(|q| q.in_flight() > 0) {
            sys::msleep(10);
            waited += 10;
        }
        // From here on `submit` adds nothing, so every chain detached below was on the ring
        // before the reset (and is kept, see `finish`); callbacks still complete chains.
        for q in &self.queues {
            q.ring.lock().closed = true;
        }
        // SAFETY: `vdev` is bound to us. After the reset no virtqueue callback runs
        // (virtio-pci synchronises its interrupt vectors), the device takes no chain and puts
        // none in a used ring; a call it is still running may write that chain's writable
        // buffers when it returns (see `finish`).
        unsafe { bindings::virtio_reset_device(self.vdev) };
        for q in &self.queues {
            let mut n = 0;
            {
                let mut ring = q.ring.lock();
                let vq = ring.vq;
                if !vq.is_null() {
                    // What the device returned before the reset: complete chains, which it
                    // no longer touches. (With CONFIG_VIRTIO_HARDEN_NOTIFICATION the reset
                    // breaks the virtqueue and this returns nothing: they are detached below,
                    // and kept, like the rest.)
                    loop {
                        let mut len: c_uint = 0;
                        // SAFETY: `vq` is live; the lock is held.
                        let token = unsafe { bindings::virtqueue_get_buf(vq, &mut len) };
                        if token.is_null() {
                            break;
                        }
                        // SAFETY: Every token on our rings is a request reference (`submit`),
                        // and each comes off the ring once.
                        unsafe { self.finish(token, len, DONE) };
                        n += 1;
                    }
                    // The rest: the device may have taken them, and may still write them.
                    loop {
                        // SAFETY: `vq` is live, the device is reset; the lock is held.
                        let token = unsafe { bindings::virtqueue_detach_unused_buf(vq) };
                        if token.is_null() {
                            break;
                        }
                        // SAFETY: Every token on our rings is a request reference (`submit`),
                        // and each comes off the ring once.
                        unsafe { self.finish(token, 0, DETACHED) };
                        n += 1;
                    }
                    ring.vq = ptr::null_mut();
                    ring.in_flight = 0;
                }
            }
            q.completions.fetch_add(n + 1, Full);
            q.wait.wake_all();
        }
        // SAFETY: The device is reset; nothing references the virtqueues any more.
        unsafe {
            sys::vcuda_glue_set_priv(self.vdev, ptr::null_mut());
            sys::vcuda_glue_del_vqs(self.vdev);
        }
        let kept = self.kept.load(Relaxed);
        if kept > 0 {
            pr_warn!(
                "{} chains were not returned by the device before its reset; their buffers stay allocated\n",
                kept
            );
        }
        let wq = self.wq.xchg(ptr::null_mut(), Full);
        if !wq.is_null() {
            // SAFETY: `wq` came from `vcuda_glue_alloc_wq`; no callback can queue work any
            // more. Destroying it runs (drops) every abandoned request still queued.
            unsafe { bindings::destroy_workqueue(wq) };
        }
    }
}

fn read_config(vdev: *mut bindings::virtio_device) -> VirtioCudaConfig {
    use core::mem::offset_of;
    let r32 = |off: usize| {
        // SAFETY: `vdev` is the device being probed; the offset lies in its config space.
        unsafe { sys::vcuda_glue_cread32(vdev, off as c_uint) }
    };
    VirtioCudaConfig {
        magic: r32(offset_of!(VirtioCudaConfig, magic)),
        protocol_version: r32(offset_of!(VirtioCudaConfig, protocol_version)),
        num_request_queues: r32(offset_of!(VirtioCudaConfig, num_request_queues)),
        max_chain_descriptors: r32(offset_of!(VirtioCudaConfig, max_chain_descriptors)),
        max_ctrl_len: r32(offset_of!(VirtioCudaConfig, max_ctrl_len)),
        features: r32(offset_of!(VirtioCudaConfig, features)),
        // SAFETY: `vdev` is the device being probed; the offset lies in its config space.
        max_data_len: unsafe {
            sys::vcuda_glue_cread64(vdev, offset_of!(VirtioCudaConfig, max_data_len) as c_uint)
        },
    }
}
