// SPDX-License-Identifier: GPL-2.0
//! Thin wrappers over the kernel interfaces that `kernel::` does not abstract: the C glue
//! (`vcuda_glue.c`, for macros and static inlines), an IRQ-safe spinlock backend, a wait queue
//! with a killable wait, and page helpers.

use core::marker::PhantomPinned;

use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_ulong, c_void},
    prelude::*,
    sync::{
        lock::{Backend, Lock},
        LockClassKey,
    },
    types::Opaque,
};

// The C glue (vcuda_glue.c). The bindgen-generated structs match the C headers, but some
// contain zero-sized markers the improper_ctypes lint flags (the `bindings` crate allows it
// too); only pointers to them cross the boundary. Pages travel as `*mut c_void`.
#[allow(improper_ctypes)]
extern "C" {
    pub(crate) fn vcuda_glue_register(ctx: *mut c_void) -> c_int;
    pub(crate) fn vcuda_glue_unregister();
    pub(crate) fn vcuda_glue_own_fops(misc: *mut bindings::miscdevice);
    pub(crate) fn vcuda_glue_find_vqs(
        vdev: *mut bindings::virtio_device,
        n: c_uint,
        vqs: *mut *mut bindings::virtqueue,
    ) -> c_int;
    pub(crate) fn vcuda_glue_device_ready(vdev: *mut bindings::virtio_device);
    pub(crate) fn vcuda_glue_del_vqs(vdev: *mut bindings::virtio_device);
    pub(crate) fn vcuda_glue_set_priv(vdev: *mut bindings::virtio_device, p: *mut c_void);
    pub(crate) fn vcuda_glue_cread32(vdev: *mut bindings::virtio_device, offset: c_uint) -> u32;
    pub(crate) fn vcuda_glue_cread64(vdev: *mut bindings::virtio_device, offset: c_uint) -> u64;
    pub(crate) fn vcuda_glue_has_feature(vdev: *mut bindings::virtio_device, fbit: c_uint) -> bool;
    fn vcuda_glue_spin_lock_irqsave(lock: *mut bindings::spinlock_t) -> c_ulong;
    fn vcuda_glue_spin_unlock_irqrestore(lock: *mut bindings::spinlock_t, flags: c_ulong);
    fn vcuda_glue_spin_trylock_irqsave(
        lock: *mut bindings::spinlock_t,
        flags: *mut c_ulong,
    ) -> bool;
    fn vcuda_glue_fatal_signal_pending() -> bool;
    fn vcuda_glue_page_to_phys(page: *mut c_void) -> u64;
    fn vcuda_glue_kaddr_to_page(addr: *const c_void) -> *mut c_void;
    pub(crate) fn vcuda_glue_sg_set_page(
        sg: *mut bindings::scatterlist,
        page: *mut c_void,
        len: c_uint,
        offset: c_uint,
    );
    pub(crate) fn vcuda_glue_alloc_wq() -> *mut bindings::workqueue_struct;
    fn vcuda_glue_alloc_chunk(order: c_uint) -> *mut c_void;
    fn vcuda_glue_charge_pinned(npages: c_ulong, err: *mut c_int) -> *mut c_void;
    fn vcuda_glue_uncharge_pinned(mm: *mut c_void, npages: c_ulong);
    fn vcuda_glue_page_address(page: *mut c_void) -> *mut u8;
}

/// Backend of a spinlock taken with `spin_lock_irqsave`: the virtqueue callbacks run in hard
/// interrupt context and take the same locks as the submitting threads.
pub(crate) struct IrqSpinLockBackend;

/// A spinlock that disables local interrupts while held.
pub(crate) type IrqSpinLock<T> = Lock<T, IrqSpinLockBackend>;

// SAFETY: `spin_lock_irqsave` gives exclusive ownership until `spin_unlock_irqrestore`, and
// `relock` (the trait's default) calls `lock` again, the same method.
unsafe impl Backend for IrqSpinLockBackend {
    type State = bindings::spinlock_t;
    type GuardState = c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: The caller guarantees `ptr` is valid for writes and `name`/`key` live forever.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The caller guarantees the lock was initialised by `init`.
        unsafe { vcuda_glue_spin_lock_irqsave(ptr) }
    }

    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        let mut flags = 0;
        // SAFETY: The caller guarantees the lock was initialised; `flags` is a valid out pointer.
        unsafe { vcuda_glue_spin_trylock_irqsave(ptr, &mut flags) }.then_some(flags)
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: The caller owns the lock; `flags` came from the matching `lock`.
        unsafe { vcuda_glue_spin_unlock_irqrestore(ptr, *flags) }
    }

    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The caller guarantees the lock was initialised.
        unsafe { bindings::spin_assert_is_held(ptr) }
    }
}

/// A `wait_queue_head`: threads sleep on it, interrupt handlers wake them.
#[pin_data]
pub(crate) struct WaitQueue {
    #[pin]
    head: Opaque<bindings::wait_queue_head>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: A wait queue head is designed for use from any thread and interrupt context.
unsafe impl Send for WaitQueue {}
// SAFETY: A wait queue head may be shared between threads and interrupt context: every
// operation on it takes the wait queue's own lock.
unsafe impl Sync for WaitQueue {}

impl WaitQueue {
    /// A new, empty wait queue.
    pub(crate) fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `slot` is valid for writes during the call; `name` and `key` are static.
            head <- Opaque::ffi_init(|slot| unsafe {
                bindings::__init_waitqueue_head(slot, name.as_char_ptr(), key.as_ptr())
            }),
            _pin: PhantomPinned,
        })
    }

    /// Wakes every sleeper. Callable from any context, interrupts included.
    pub(crate) fn wake_all(&self) {
        // SAFETY: `head` was initialised by `new` and is pinned.
        unsafe {
            bindings::__wake_up(
                self.head.get(),
                bindings::TASK_NORMAL,
                0,
                core::ptr::null_mut(),
            )
        };
    }

    /// Sleeps until `cond()` holds (returns `true`) or a fatal signal is pending (returns
    /// `false`). Other signals do not interrupt the sleep: a call the device has accepted
    /// cannot be cancelled, so only a dying process gives up waiting.
    ///
    /// `cond` is evaluated after the task is queued and marked sleeping, so a wake-up between
    /// the check and `schedule()` is not lost; the waker must make `cond` true before
    /// [`WaitQueue::wake_all`].
    pub(crate) fn wait_killable(&self, mut cond: impl FnMut() -> bool) -> bool {
        loop {
            let wait = Opaque::<bindings::wait_queue_entry>::uninit();
            // SAFETY: `wait` is valid stack memory that stays in place until `finish_wait`.
            unsafe { bindings::init_wait(wait.get()) };
            // SAFETY: `head` is initialised and pinned; `wait` is initialised.
            unsafe {
                bindings::prepare_to_wait(
                    self.head.get(),
                    wait.get(),
                    bindings::TASK_KILLABLE as c_int,
                )
            };
            let done = cond();
            // SAFETY: No preconditions.
            let killed = !done && unsafe { vcuda_glue_fatal_signal_pending() };
            if !done && !killed {
                // SAFETY: The task is queued on `head`; a wake-up or a fatal signal resumes it.
                unsafe { bindings::schedule() };
            }
            // SAFETY: `wait` was added to `head` by `prepare_to_wait` above.
            unsafe { bindings::finish_wait(self.head.get(), wait.get()) };
            if done {
                return true;
            }
            if killed {
                return false;
            }
        }
    }
}

/// The guest-physical address of a page.
///
/// # Safety
///
/// `page` must point to a valid `struct page`.
pub(crate) unsafe fn page_to_phys(page: *mut c_void) -> u64 {
    // SAFETY: Guaranteed by the caller.
    unsafe { vcuda_glue_page_to_phys(page) }
}

/// The page behind a kernel virtual address from kmalloc or vmalloc.
///
/// # Safety
///
/// `addr` must lie in a live kmalloc or vmalloc allocation.
pub(crate) unsafe fn kaddr_to_page(addr: *const u8) -> *mut c_void {
    // SAFETY: Guaranteed by the caller.
    unsafe { vcuda_glue_kaddr_to_page(addr.cast()) }
}

/// Sleeps for about `ms` milliseconds (device removal only; never on the data path).
pub(crate) fn msleep(ms: u32) {
    // SAFETY: Process context (callers: probe/remove paths).
    unsafe { bindings::msleep(ms) };
}

/// `2^order` physically contiguous pages, freed on drop.
pub(crate) struct Chunk {
    page: *mut c_void,
    order: u32,
}

// SAFETY: The pages belong to this value alone; they may be used and freed from any thread.
unsafe impl Send for Chunk {}
// SAFETY: `&Chunk` gives no access to the contents (see `as_ptr`).
unsafe impl Sync for Chunk {}

impl Chunk {
    /// Tries to allocate `2^order` pages (no retries, no warning on failure).
    pub(crate) fn alloc(order: u32) -> Option<Self> {
        // SAFETY: No preconditions.
        let page = unsafe { vcuda_glue_alloc_chunk(order) };
        (!page.is_null()).then_some(Self { page, order })
    }

    /// Bytes.
    pub(crate) fn len(&self) -> usize {
        kernel::page::PAGE_SIZE << self.order
    }

    /// The first page.
    pub(crate) fn page(&self) -> *mut c_void {
        self.page
    }

    /// The kernel address of the contents (`len()` bytes; the guest kernel has no highmem).
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        // SAFETY: `page` is a live allocation of ours.
        unsafe { vcuda_glue_page_address(self.page) }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: Allocated by `alloc` with this order; nothing uses it any more.
        unsafe { bindings::__free_pages(self.page.cast(), self.order) };
    }
}

/// Pages charged to a process's locked-memory limit (`RLIMIT_MEMLOCK`) while they are
/// pinned; uncharged on drop, even from another process's context.
pub(crate) struct PinCharge {
    mm: *mut c_void,
    pages: usize,
}

// SAFETY: `mm` is a referenced `mm_struct` (mmgrab), usable from any thread; the charge is
// given back once, on drop.
unsafe impl Send for PinCharge {}
// SAFETY: `&PinCharge` gives no access to the mm.
unsafe impl Sync for PinCharge {}

impl PinCharge {
    /// Charges `pages` to the current process. `Ok(None)`: over its limit (without
    /// `CAP_IPC_LOCK`), so the caller must not pin them.
    pub(crate) fn new(pages: usize) -> Result<Option<Self>> {
        let mut err: c_int = 0;
        // SAFETY: Process context (a file operation of the calling process); `err` is a
        // valid out pointer.
        let mm = unsafe { vcuda_glue_charge_pinned(pages as c_ulong, &mut err) };
        if !mm.is_null() {
            return Ok(Some(Self { mm, pages }));
        }
        match Error::from_errno(err) {
            e if e == ENOMEM => Ok(None),
            e => Err(e),
        }
    }
}

impl Drop for PinCharge {
    fn drop(&mut self) {
        // SAFETY: `mm` came from `vcuda_glue_charge_pinned` with these pages charged, and is
        // uncharged and released once, here. Requests are dropped in process context.
        unsafe { vcuda_glue_uncharge_pinned(self.mm, self.pages as c_ulong) };
    }
}
