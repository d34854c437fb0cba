// SPDX-License-Identifier: GPL-2.0
//! vcuda: the guest side of the vcuda virtio device (virtio ID 57).
//!
//! The module binds the device, and gives user space `/dev/vcuda`, a misc device whose ioctls
//! carry CUDA calls (the `libvcuda.so` wire format) to the host. Each open file is a device
//! session. `VCUDA_IOC_SUBMIT` copies a message in, pins the caller's data segments, sends one
//! descriptor chain `[ChainHeader + message][out pages] / [reply area][in pages]` (guest-physical
//! addresses; the host reads and writes the pages in place), sleeps until the device returns
//! it, unpins, and copies the reply out. `VCUDA_IOC_SHARE` pins page-locked memory for as long
//! as the program keeps it and tells the device its pages (`VCUDA_IOC_UNSHARE` ends that).
//!
//! See `README.md` in this directory for the design (memory ownership, concurrency, signals),
//! and `device.rs` (with its `device_*.rs` submodules) for the data path.

use core::mem::size_of;

use kernel::{
    bindings,
    ffi::{c_int, c_void},
    fs::File,
    ioctl::{_IOR, _IOW, _IOWR},
    miscdevice::{MiscDevice, MiscDeviceOptions, MiscDeviceRegistration},
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    transmute::{AsBytes, FromBytes},
    uaccess::{UserPtr, UserSlice},
};

mod abi;
mod device;
mod sys;

use abi::{
    VcudaInfo, VcudaSeg, VcudaShare, VcudaSubmit, VirtioCudaConfig, CONFIG_F_DETACHED_SUBMIT,
    VCUDA_ABI_VERSION, VCUDA_IOC_INFO, VCUDA_IOC_SHARE, VCUDA_IOC_SUBMIT, VCUDA_IOC_TYPE,
    VCUDA_IOC_UNSHARE, VCUDA_MAX_SEGS, VCUDA_SUBMIT_DETACHED,
};
use device::{eopnotsupp, Request, Session, VDev};

module! {
    type: VcudaModule,
    name: "vcuda",
    authors: ["The vcuda authors"],
    description: "vcuda: CUDA calls to the host over a virtio device",
    license: "GPL",
}

// The ioctl numbers, as the kernel's own macros compute them, match the ABI file (which the
// protocol crate's tests check against user space's definitions).
const _: () = assert!(VCUDA_IOC_SUBMIT == _IOWR::<VcudaSubmit>(VCUDA_IOC_TYPE, 1));
const _: () = assert!(VCUDA_IOC_INFO == _IOR::<VcudaInfo>(VCUDA_IOC_TYPE, 2));
const _: () = assert!(VCUDA_IOC_SHARE == _IOWR::<VcudaShare>(VCUDA_IOC_TYPE, 3));
const _: () = assert!(VCUDA_IOC_UNSHARE == _IOW::<u64>(VCUDA_IOC_TYPE, 4));

// SAFETY: `VcudaSubmit` is a `#[repr(C)]` struct of integers without padding (size
// asserted in abi.rs): every bit pattern is valid.
unsafe impl FromBytes for VcudaSubmit {}
// SAFETY: `VcudaSeg` is a `#[repr(C)]` struct of integers without padding (size asserted
// in abi.rs): every bit pattern is valid.
unsafe impl FromBytes for VcudaSeg {}
// SAFETY: `VcudaShare` is a `#[repr(C)]` struct of integers without padding (size asserted
// in abi.rs): every bit pattern is valid.
unsafe impl FromBytes for VcudaShare {}
// SAFETY: `VcudaShare` is a `#[repr(C)]` struct of integers without padding (size asserted
// in abi.rs): every byte is initialised.
unsafe impl AsBytes for VcudaShare {}
// SAFETY: `VcudaInfo` is a `#[repr(C)]` struct of integers without padding (size asserted
// in abi.rs): every byte is initialised.
unsafe impl AsBytes for VcudaInfo {}
// SAFETY: `VirtioCudaConfig` is a `#[repr(C)]` struct of integers without padding (size
// asserted in abi.rs): every byte is initialised.
unsafe impl AsBytes for VirtioCudaConfig {}

/// The module: the virtio driver, `/dev/vcuda`, and the bound device.
#[pin_data]
struct VcudaModule {
    /// Declared first so that it is dropped first: unregistering the driver removes the device
    /// before `/dev/vcuda` goes away.
    _driver: DriverRegistration,
    #[pin]
    misc: MiscDeviceRegistration<Session>,
    /// The bound device (one at most).
    #[pin]
    dev: Mutex<Option<Arc<VDev>>>,
}

impl kernel::InPlaceModule for VcudaModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(&this in Self {
            dev <- new_mutex!(None),
            misc <- MiscDeviceRegistration::register(MiscDeviceOptions { name: c"vcuda" }),
            _: {
                // SAFETY: `misc` is registered (initialised above); its file operations are
                // replaced before the module is live, see vcuda_glue.c.
                unsafe { sys::vcuda_glue_own_fops((*this.as_ptr()).misc.as_raw()) };
            },
            // Last: probe may run at once, and uses `dev`.
            _driver: DriverRegistration::register(this.as_ptr().cast())?,
        })
    }
}

/// The virtio driver registration (held in the C glue); unregistered on drop.
struct DriverRegistration;

impl DriverRegistration {
    fn register(ctx: *mut c_void) -> Result<Self> {
        // SAFETY: `ctx` points to the module being initialised, whose `dev` field is
        // initialised; the registration is undone (`Drop`) before the module is freed.
        kernel::error::to_result(unsafe { sys::vcuda_glue_register(ctx) })?;
        Ok(Self)
    }
}

impl Drop for DriverRegistration {
    fn drop(&mut self) {
        // SAFETY: Registered in `register`. This removes (detaches from) the device.
        unsafe { sys::vcuda_glue_unregister() };
    }
}

/// The module's device slot, from the context the C glue passes back.
///
/// # Safety
///
/// `ctx` must be the pointer given to `vcuda_glue_register`, while registered.
unsafe fn dev_slot<'a>(ctx: *mut c_void) -> &'a Mutex<Option<Arc<VDev>>> {
    let m = ctx.cast::<VcudaModule>();
    // SAFETY: `dev` is initialised before the driver is registered and lives until after it
    // is unregistered. Only the field is referenced, not the (maybe partly built) module.
    unsafe { &(*m).dev }
}

/// Virtio `probe`, called by the C glue.
///
/// # Safety
///
/// `ctx` as for [`dev_slot`]; `vdev` is the device being probed.
#[no_mangle]
unsafe extern "C" fn vcuda_rs_probe(ctx: *mut c_void, vdev: *mut bindings::virtio_device) -> c_int {
    // SAFETY: Guaranteed by the caller.
    let slot = unsafe { dev_slot(ctx) };
    let mut guard = slot.lock();
    if guard.is_some() {
        pr_warn!("only one vcuda device is supported; ignoring another\n");
        return EBUSY.to_errno();
    }
    match VDev::probe(vdev) {
        Ok(d) => {
            *guard = Some(d);
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// Virtio `remove`, called by the C glue.
///
/// # Safety
///
/// `ctx` as for [`dev_slot`]; `vdev` is a device this driver probed.
#[no_mangle]
unsafe extern "C" fn vcuda_rs_remove(ctx: *mut c_void, vdev: *mut bindings::virtio_device) {
    // SAFETY: Guaranteed by the caller.
    let slot = unsafe { dev_slot(ctx) };
    let dev = {
        let mut guard = slot.lock();
        match guard.take() {
            Some(d) if d.is(vdev) => d,
            other => {
                *guard = other;
                return;
            }
        }
    };
    // New opens now fail with ENODEV; open files keep their (dead) device until closed.
    dev.remove();
}

/// Virtqueue interrupt, called by the C glue's virtqueue callback (hard interrupt context).
///
/// # Safety
///
/// `dev` must be the device's `priv` pointer: an `Arc<VDev>` the driver holds until `remove`
/// has reset the device.
#[no_mangle]
unsafe extern "C" fn vcuda_rs_vq_done(dev: *mut c_void, index: u32) {
    // SAFETY: Guaranteed by the caller.
    let dev = unsafe { &*dev.cast::<VDev>().cast_const() };
    dev.complete(index);
}

#[vtable]
impl MiscDevice for Session {
    type Ptr = Arc<Session>;

    /// Opens a device session (queues `OpenSession`; the first call waits for it).
    ///
    /// # Errors
    ///
    /// `ENODEV` (no device bound), `EINTR` (fatal signal), `ENOMEM`.
    fn open(_file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<Arc<Session>> {
        // SAFETY: This module registers exactly one misc device, the `misc` field of the
        // (pinned, live) `VcudaModule`.
        let module =
            unsafe { &*kernel::container_of!(core::ptr::from_ref(misc), VcudaModule, misc) };
        let dev = module.dev.lock().clone().ok_or(ENODEV)?;
        Session::open(dev)
    }

    /// `VCUDA_IOC_SUBMIT`, `VCUDA_IOC_INFO`, `VCUDA_IOC_SHARE` and `VCUDA_IOC_UNSHARE`.
    ///
    /// # Errors
    ///
    /// `ENOTTY` (unknown command), and those of [`submit`], [`info`], [`share`] and
    /// [`unshare`].
    fn ioctl(me: ArcBorrow<'_, Session>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            VCUDA_IOC_SUBMIT => submit(me.into(), arg),
            VCUDA_IOC_INFO => info(&me, arg),
            VCUDA_IOC_SHARE => share(me.into(), arg),
            VCUDA_IOC_UNSHARE => unshare(me.into(), arg),
            _ => Err(ENOTTY),
        }
    }
}

/// `VCUDA_IOC_SUBMIT`: one call. With `VCUDA_SUBMIT_DETACHED` (and room for one more of
/// the file's detached chains), it returns once the chain is queued, with `reply_len` 0.
///
/// # Errors
///
/// `EOPNOTSUPP` (`VCUDA_SUBMIT_DETACHED` to a device that does not offer it),
/// `EMFILE`/`EIO` (the device refused the session: see [`Session::ready`]), `EFAULT` (the
/// argument, message, segment table or reply buffer is not accessible; for the
/// reply buffer, and for in segments of a call that went through bounce buffers, the call has
/// then already run), `ENODEV` (the device is gone), `EINTR` (the
/// process is being killed), and the validation errors of [`Request::for_submit`] (`EINVAL`,
/// `E2BIG`, `ENOMEM`).
fn submit(session: Arc<Session>, arg: usize) -> Result<isize> {
    let sub: VcudaSubmit = UserSlice::new(UserPtr::from_addr(arg), size_of::<VcudaSubmit>())
        .reader()
        .read()?;
    let detached = sub.flags & VCUDA_SUBMIT_DETACHED != 0;
    if detached && session.dev.config.features & CONFIG_F_DETACHED_SUBMIT == 0 {
        return Err(eopnotsupp());
    }
    session.ready()?;
    let slot = if detached {
        session.detached_slot()
    } else {
        None
    };
    let req = Request::for_submit(&session, &sub, slot)?;
    if req.is_detached() {
        session.dev.post(&session, &req)?;
        return write_reply_len(arg, 0);
    }
    session.dev.call(&session, &req)?;
    req.copy_back()?;
    let reply = req.reply();
    let len = reply.len().min(sub.reply_cap as usize);
    UserSlice::new(UserPtr::from_addr(sub.reply_addr as usize), len)
        .writer()
        .write_slice(&reply[..len])?;
    write_reply_len(arg, len as u32)
}

/// Writes `VcudaSubmit::reply_len` of the submit argument at `arg`.
fn write_reply_len(arg: usize, reply_len: u32) -> Result<isize> {
    UserSlice::new(
        UserPtr::from_addr(arg + core::mem::offset_of!(VcudaSubmit, reply_len)),
        size_of::<u32>(),
    )
    .writer()
    .write(&reply_len)?;
    Ok(0)
}

/// `VCUDA_IOC_INFO`: the limits in force and the session id.
///
/// # Errors
///
/// `EFAULT` (the argument is not writable).
fn info(session: &Session, arg: usize) -> Result<isize> {
    let dev = &session.dev;
    let mut config = dev.config;
    // Report the limits this module enforces (the device's, capped).
    config.max_chain_descriptors = dev.limits.max_desc;
    config.max_ctrl_len = dev.limits.max_ctrl;
    config.max_data_len = dev.limits.max_data;
    let info = VcudaInfo {
        config,
        session: session.id,
        max_segs: VCUDA_MAX_SEGS,
        abi_version: VCUDA_ABI_VERSION,
    };
    UserSlice::new(UserPtr::from_addr(arg), size_of::<VcudaInfo>())
        .writer()
        .write(&info)?;
    Ok(0)
}

/// `VCUDA_IOC_SHARE`: shares page-locked memory with the device; writes the region's handle
/// back into the argument.
///
/// # Errors
///
/// `EFAULT` (the argument is not readable, or not writable when the handle is written back:
/// the region then stays shared until the file is closed), and those of [`Session::share`].
fn share(session: Arc<Session>, arg: usize) -> Result<isize> {
    let user = UserSlice::new(UserPtr::from_addr(arg), size_of::<VcudaShare>());
    let (mut reader, mut writer) = user.reader_writer();
    let mut sh: VcudaShare = reader.read()?;
    sh.handle = session.share(sh.addr, sh.len)?;
    writer.write(&sh)?;
    Ok(0)
}

/// `VCUDA_IOC_UNSHARE`: ends a shared region (the argument points to its `u64` handle).
///
/// # Errors
///
/// `EFAULT` (the argument is not readable), and those of [`Session::unshare`].
fn unshare(session: Arc<Session>, arg: usize) -> Result<isize> {
    let handle: u64 = UserSlice::new(UserPtr::from_addr(arg), size_of::<u64>())
        .reader()
        .read()?;
    session.unshare(handle)?;
    Ok(0)
}
