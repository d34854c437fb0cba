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

/// A new unsealed memory file (named `name`) holding `data`, as a descriptor the caller owns
/// from then on (another process may import it).
pub(crate) fn file_with(name: &std::ffi::CStr, data: &[u8]) -> std::io::Result<std::os::fd::RawFd> {
    use std::io::Write;
    use std::os::fd::IntoRawFd;
    // SAFETY: a name with its NUL and valid flags; the result is checked.
    let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: memfd_create just returned this descriptor; nothing else owns it.
    let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(raw) });
    f.write_all(data)?;
    Ok(f.into_raw_fd())
}

/// The first `N` bytes of the file behind descriptor `fd`, which stays the caller's (and
/// open); `None` if it is not an open file or is shorter.
pub(crate) fn read_head<const N: usize>(fd: std::os::fd::RawFd) -> Option<[u8; N]> {
    use std::os::unix::fs::FileExt;
    if fd < 0 {
        return None;
    }
    // SAFETY: the file only borrows the caller's descriptor: ManuallyDrop never closes it.
    let f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let mut head = [0u8; N];
    f.read_exact_at(&mut head, 0).ok().map(|()| head)
}
