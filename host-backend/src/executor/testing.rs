// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Helpers for the executors' tests (and the session's and shared memory's).

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::ModuleImage;

/// A fat binary holding `ptx` as one uncompressed PTX entry for sm_50, with the entry
/// header nvcc writes.
pub fn ptx_fatbin(ptx: &str) -> Arc<ModuleImage> {
    let bytes = vcuda_fatbin::ptx_fatbin(&[ptx.as_bytes()], 50);
    let hash = Sha256::digest(&bytes).into();
    Arc::new(ModuleImage { hash, bytes })
}

/// An address of this process where `len` bytes are free now (reserved, then given back).
pub fn free_address(len: usize) -> u64 {
    // SAFETY: a reservation at an address the kernel chooses, unmapped at once.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        libc::munmap(p, len);
        p as u64
    }
}

/// PTX of the kernels the executors' tests launch: `add1(float *p, int n)` adds 1 to `n`
/// floats, `crash` writes through a null pointer, `endless` never ends; and a `counter`
/// variable. The mock driver (`tests/gpu/mock/libcuda.c`) runs kernels of these names the
/// same way.
pub const PTX: &str = r#"
.version 7.0
.target sm_50
.address_size 64

.visible .global .align 4 .u32 counter;

.visible .entry add1(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;
    .reg .f32 %f<3>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r2, [n];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.s32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd4], %f2;
DONE:
    ret;
}

.visible .entry crash()
{
    .reg .b64 %rd<2>;
    mov.u64 %rd1, 0;
    st.global.u32 [%rd1], 1;
    ret;
}

.visible .entry endless()
{
LOOP:
    bra.uni LOOP;
}
"#;
