// SPDX-License-Identifier: Apache-2.0 OR MIT
// PTX text shared by the programs that load code at run time (driver_api.cu, library.cu):
// two kernels and a variable: scale_add (p[i] = p[i] * a + 1 for i < n) and bump (adds one
// to `launches` per block).
#pragma once

static const char *PTX = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .global .align 4 .u32 launches;
.visible .entry scale_add(.param .u64 p, .param .f32 a, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [p];
    ld.param.f32 %f1, [a];
    ld.param.u32 %r2, [n];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra DONE;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f2, [%rd3];
    fma.rn.f32 %f3, %f2, %f1, 0f3F800000;
    st.global.f32 [%rd3], %f3;
DONE:
    ret;
}
.visible .entry bump()
{
    .reg .b32 %r<2>;
    atom.global.add.u32 %r1, [launches], 1;
    ret;
}
)";
