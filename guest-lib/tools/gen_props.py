#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Generates src/props_gen.rs: cudaDeviceProp for CUDA 13 and 12, built from DeviceInfo.

Usage: gen_props.py CUDA13/driver_types.h CUDA12/driver_types.h > src/props_gen.rs
(CUDA 12.4 headers: pip download nvidia-cuda-runtime-cu12==12.4.127.)
"""
import re, sys

def fields(path):
    text = open(path).read()
    body = re.search(r'struct __device_builtin__ cudaDeviceProp\n\{(.*?)\n\};', text, re.S).group(1)
    body = re.sub(r'/\*.*?\*/', '', body, flags=re.S)
    out = []
    for m in re.finditer(r'(unsigned int|char|int|size_t|cudaUUID_t)\s+(\w+)(?:\[(\d+)\])?\s*;', body):
        out.append((m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None))
    return out

ATTRS = {}
for line in open(sys.argv[3] if len(sys.argv) > 3 else '/dev/null') if False else []:
    pass

OVERRIDE = {
    'sharedMemPerBlock': 'MAX_SHARED_MEMORY_PER_BLOCK', 'regsPerBlock': 'MAX_REGISTERS_PER_BLOCK',
    'memPitch': 'MAX_PITCH', 'maxThreadsDim': ['MAX_BLOCK_DIM_X', 'MAX_BLOCK_DIM_Y', 'MAX_BLOCK_DIM_Z'],
    'maxGridSize': ['MAX_GRID_DIM_X', 'MAX_GRID_DIM_Y', 'MAX_GRID_DIM_Z'], 'totalConstMem': 'TOTAL_CONSTANT_MEMORY',
    'major': 'COMPUTE_CAPABILITY_MAJOR', 'minor': 'COMPUTE_CAPABILITY_MINOR', 'deviceOverlap': 'GPU_OVERLAP',
    'multiProcessorCount': 'MULTI_PROCESSOR_COUNT', 'kernelExecTimeoutEnabled': 'KERNEL_EXEC_TIMEOUT',
    'maxTexture1D': 'MAX_TEXTURE1_DWIDTH', 'maxTexture1DMipmap': 'MAX_TEXTURE1_DMIPMAPPED_WIDTH',
    'maxTexture1DLinear': 'MAX_TEXTURE1_DLINEAR_WIDTH',
    'maxTexture2D': ['MAX_TEXTURE2_DWIDTH', 'MAX_TEXTURE2_DHEIGHT'],
    'maxTexture2DMipmap': ['MAX_TEXTURE2_DMIPMAPPED_WIDTH', 'MAX_TEXTURE2_DMIPMAPPED_HEIGHT'],
    'maxTexture2DLinear': ['MAX_TEXTURE2_DLINEAR_WIDTH', 'MAX_TEXTURE2_DLINEAR_HEIGHT', 'MAX_TEXTURE2_DLINEAR_PITCH'],
    'maxTexture2DGather': ['MAX_TEXTURE2_DGATHER_WIDTH', 'MAX_TEXTURE2_DGATHER_HEIGHT'],
    'maxTexture3D': ['MAX_TEXTURE3_DWIDTH', 'MAX_TEXTURE3_DHEIGHT', 'MAX_TEXTURE3_DDEPTH'],
    'maxTexture3DAlt': ['MAX_TEXTURE3_DWIDTH_ALT', 'MAX_TEXTURE3_DHEIGHT_ALT', 'MAX_TEXTURE3_DDEPTH_ALT'],
    'maxTextureCubemap': 'MAX_TEXTURE_CUBEMAP_WIDTH',
    'maxTexture1DLayered': ['MAX_TEXTURE1_DLAYERED_WIDTH', 'MAX_TEXTURE1_DLAYERED_LAYERS'],
    'maxTexture2DLayered': ['MAX_TEXTURE2_DLAYERED_WIDTH', 'MAX_TEXTURE2_DLAYERED_HEIGHT', 'MAX_TEXTURE2_DLAYERED_LAYERS'],
    'maxTextureCubemapLayered': ['MAX_TEXTURE_CUBEMAP_LAYERED_WIDTH', 'MAX_TEXTURE_CUBEMAP_LAYERED_LAYERS'],
    'maxSurface1D': 'MAX_SURFACE1_DWIDTH', 'maxSurface2D': ['MAX_SURFACE2_DWIDTH', 'MAX_SURFACE2_DHEIGHT'],
    'maxSurface3D': ['MAX_SURFACE3_DWIDTH', 'MAX_SURFACE3_DHEIGHT', 'MAX_SURFACE3_DDEPTH'],
    'maxSurface1DLayered': ['MAX_SURFACE1_DLAYERED_WIDTH', 'MAX_SURFACE1_DLAYERED_LAYERS'],
    'maxSurface2DLayered': ['MAX_SURFACE2_DLAYERED_WIDTH', 'MAX_SURFACE2_DLAYERED_HEIGHT', 'MAX_SURFACE2_DLAYERED_LAYERS'],
    'maxSurfaceCubemap': 'MAX_SURFACE_CUBEMAP_WIDTH',
    'maxSurfaceCubemapLayered': ['MAX_SURFACE_CUBEMAP_LAYERED_WIDTH', 'MAX_SURFACE_CUBEMAP_LAYERED_LAYERS'],
    'ECCEnabled': 'ECC_ENABLED', 'pciBusID': 'PCI_BUS_ID', 'pciDeviceID': 'PCI_DEVICE_ID', 'pciDomainID': 'PCI_DOMAIN_ID',
    'memoryBusWidth': 'GLOBAL_MEMORY_BUS_WIDTH', 'persistingL2CacheMaxSize': 'MAX_PERSISTING_L2_CACHE_SIZE',
    'sharedMemPerMultiprocessor': 'MAX_SHARED_MEMORY_PER_MULTIPROCESSOR',
    'regsPerMultiprocessor': 'MAX_REGISTERS_PER_MULTIPROCESSOR', 'multiGpuBoardGroupID': 'MULTI_GPU_BOARD_GROUP_ID',
    'sharedMemPerBlockOptin': 'MAX_SHARED_MEMORY_PER_BLOCK_OPTIN',
    'maxBlocksPerMultiProcessor': 'MAX_BLOCKS_PER_MULTIPROCESSOR',
    'accessPolicyMaxWindowSize': 'MAX_ACCESS_POLICY_WINDOW_SIZE',
    'gpuDirectRDMASupported': 'GPUDIRECT_RDMASUPPORTED',
    'gpuDirectRDMAFlushWritesOptions': 'GPUDIRECT_RDMAFLUSH_WRITES_OPTIONS',
    'gpuDirectRDMAWritesOrdering': 'GPUDIRECT_RDMAWRITES_ORDERING', 'ipcEventSupported': 'IPC_EVENT_SUPPORT',
    'deviceNumaConfig': 'NUMA_CONFIG', 'deviceNumaId': 'NUMA_ID', 'gpuPciDeviceID': 'GPU_PCI_DEVICE_ID',
    'gpuPciSubsystemID': 'GPU_PCI_SUBSYSTEM_ID',
}
SPECIAL = {'name', 'uuid', 'luid', 'luidDeviceNodeMask', 'totalGlobalMem'}

attr_names = set(re.findall(r'pub const (\w+): u32', open(sys.argv[3]).read()))

def snake(n):
    return re.sub(r'(?<=[a-z0-9])(?=[A-Z])', '_', n).upper()

RT = {'char': 'u8', 'int': 'i32', 'unsigned int': 'u32', 'size_t': 'usize'}

def gen(tag, flds):
    s = [f'/// `struct cudaDeviceProp` of CUDA {tag}.', '#[repr(C)]', '#[derive(Clone, Copy)]',
         f'pub struct cudaDeviceProp{tag} {{']
    fill = [f'/// Builds the CUDA {tag} `cudaDeviceProp` from a device description.',
            f'pub fn props{tag}(i: &DeviceInfo) -> cudaDeviceProp{tag} {{',
            '    let a = |n: u32| i.attr(n).unwrap_or(0);',
            f'    cudaDeviceProp{tag} {{']
    for ty, name, n in flds:
        if ty == 'cudaUUID_t':
            rty = '[u8; 16]'
        else:
            rty = RT[ty] if n is None else f'[{RT[ty]}; {n}]'
        s.append(f'    pub {name}: {rty},')
        if name == 'name': v = 'i.name'
        elif name == 'uuid': v = 'i.uuid'
        elif name == 'luid': v = 'i.luid'
        elif name == 'luidDeviceNodeMask': v = '0'
        elif name == 'totalGlobalMem': v = 'i.total_global_mem as usize'
        elif name.startswith('reserved'): v = f'[0; {n}]' if n else '0'
        else:
            o = OVERRIDE.get(name, snake(name))
            cast = {'i32': '', 'u32': ' as u32', 'usize': ' as u32 as usize', 'u8': ' as u8'}[RT[ty]]
            if isinstance(o, list):
                for x in o: assert x in attr_names, (name, x)
                v = '[' + ', '.join(f'a(attr::{x}){cast}' for x in o) + ']'
            else:
                if o not in attr_names:
                    sys.stderr.write(f'no attribute for {name} ({o}); 0\n')
                    v = '0'
                else:
                    v = f'a(attr::{o}){cast}'
        fill.append(f'        {name}: {v},')
    s.append('}')
    fill += ['    }', '}']
    return '\n'.join(s + [''] + fill)

f13 = fields(sys.argv[1]); f12 = fields(sys.argv[2])
print('// SPDX-License-Identifier: Apache-2.0 OR MIT')
print('// Generated by tools/gen_props.py from the CUDA 13.0 and 12.4 driver_types.h. Do not edit.')
print('use vcuda_protocol::{DeviceInfo, attr};\n')
print(gen('13', f13)); print()
print(gen('12', f12)); print()
print('const _: () = assert!(size_of::<cudaDeviceProp13>() == 1008);')
print('const _: () = assert!(size_of::<cudaDeviceProp12>() == 1032);')
