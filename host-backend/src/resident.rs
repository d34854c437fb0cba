// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Whether memory a client shares is populated: the backend must never make the kernel
//! allocate (and charge to the backend) pages a client named but never touched, whether by
//! copying through them ([`crate::shared`]) or by pinning them for the GPU (the CUDA
//! executor's `pin_host`).

/// Pages one `mincore` call asks about (its vector: 64 KiB, for 256 MiB of 4 KiB pages).
const MINCORE_PAGES: usize = 1 << 16;

/// The page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    }
}

/// Whether every page of `[addr, addr + len)` is resident. The range is asked about a piece
/// at a time and the answer comes at the first page that is not, so the work and memory
/// this takes are bounded by what is populated, not by what the range names.
///
/// # Safety
///
/// `[addr, addr + len)` lies within one mapping of this process.
pub unsafe fn all_resident(addr: *const u8, len: usize) -> bool {
    let page = page_size();
    let start = addr as usize / page * page;
    let Some(end) = (addr as usize).checked_add(len) else {
        return false;
    };
    let mut vec = vec![0u8; (end - start).div_ceil(page).min(MINCORE_PAGES)];
    let mut at = start;
    while at < end {
        let n = (end - at).min(MINCORE_PAGES * page);
        let pages = n.div_ceil(page);
        // SAFETY: `at` is page-aligned and `[at, at + n)` lies within the caller's mapping;
        // `vec` has at least one byte per page of it, as mincore writes.
        let r = unsafe { libc::mincore(at as *mut libc::c_void, n, vec.as_mut_ptr()) };
        if r != 0 || vec[..pages].iter().any(|b| b & 1 == 0) {
            return false;
        }
        at += n;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_touched_pages_are_resident() {
        let page = page_size();
        let len = 4 * page;
        // SAFETY: a fresh private anonymous mapping, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let p = p.cast::<u8>();
        // SAFETY: inside the mapping.
        unsafe {
            p.write(1);
            p.add(page).write(1);
            assert!(all_resident(p, 2 * page));
            assert!(all_resident(p.add(10), page));
            assert!(
                !all_resident(p, 3 * page),
                "the third page was never touched"
            );
            assert!(!all_resident(p.add(2 * page), 1));
            libc::munmap(p.cast(), len);
        }
    }
}
