// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Sealed memory files: what the library shares with a backend on the same host (page-locked
//! host memory, `crate::shared`; managed memory's device-side copy, `crate::coherent`).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A memfd of `size` bytes, sealed at that size (named `name` in `/proc/PID/maps`). It is
/// left open to further seals: a backend that maps it seals it against writes, after which
/// only mappings made before stay writable (so map it before sharing it).
pub(crate) fn sealed_memfd(name: &std::ffi::CStr, size: usize) -> std::io::Result<OwnedFd> {
    let err = std::io::Error::last_os_error;
    let len = libc::off_t::try_from(size).map_err(|_| std::io::Error::other("too large"))?;
    // SAFETY: a name with its NUL and valid flags; the result is checked.
    let raw =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if raw < 0 {
        return Err(err());
    }
    // SAFETY: memfd_create just returned this descriptor; nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: plain calls on our own descriptor.
    unsafe {
        if libc::ftruncate(fd.as_raw_fd(), len) != 0 {
            return Err(err());
        }
        let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
        if libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) != 0 {
            return Err(err());
        }
    }
    Ok(fd)
}
