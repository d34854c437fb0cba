// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Test support: a simple device memory, a kernel runner with typed arguments.
#![allow(dead_code)]

use std::sync::{
    Mutex, RwLock,
    atomic::{AtomicU8, AtomicU64, Ordering},
};

use vcuda_ptx::*;

/// Device memory made of separately allocated host buffers at addresses from 0x7f00_0000_0000,
/// with unmapped gaps between them.
/// (device base, length, backing words).
type Alloc = (u64, u64, Box<[AtomicU64]>);

pub struct Mem {
    allocs: RwLock<Vec<Alloc>>,
    next: Mutex<u64>,
    /// Texture and surface objects by handle.
    textures: RwLock<Vec<(u64, TexObject)>>,
}

impl Default for Mem {
    fn default() -> Self {
        Mem {
            allocs: RwLock::new(Vec::new()),
            next: Mutex::new(0x7f00_0000_0000),
            textures: RwLock::new(Vec::new()),
        }
    }
}

impl Mem {
    /// Registers a texture or surface object; returns its handle (as CUDA, never 0).
    pub fn add_texture(&self, t: TexObject) -> u64 {
        let mut v = self.textures.write().unwrap();
        let handle = 0x100 + v.len() as u64 * 0x10;
        v.push((handle, t));
        handle
    }

    /// Registers a texture or surface object under a chosen handle.
    pub fn set_texture(&self, handle: u64, t: TexObject) {
        self.textures.write().unwrap().insert(0, (handle, t));
    }

    pub fn alloc(&self, len: u64) -> u64 {
        let mut next = self.next.lock().unwrap();
        let base = *next;
        *next = (base + len.max(1) + 4096 + 255) & !255;
        let words = len.div_ceil(8).max(1) as usize;
        let buf: Box<[AtomicU64]> = (0..words).map(|_| AtomicU64::new(0)).collect();
        self.allocs.write().unwrap().push((base, len, buf));
        base
    }

    fn byte(&self, addr: u64, f: impl FnOnce(&AtomicU8)) {
        let allocs = self.allocs.read().unwrap();
        let (base, _, buf) = allocs
            .iter()
            .find(|(b, l, _)| addr >= *b && addr < b + l)
            .expect("host access to unmapped device memory");
        let p = buf.as_ptr() as *mut u8;
        // SAFETY: the offset is inside the allocation; byte atomics need no alignment.
        f(unsafe { AtomicU8::from_ptr(p.add((addr - base) as usize)) });
    }

    pub fn write(&self, addr: u64, data: &[u8]) {
        for (i, b) in data.iter().enumerate() {
            self.byte(addr + i as u64, |a| a.store(*b, Ordering::Relaxed));
        }
    }

    pub fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        for (i, b) in v.iter_mut().enumerate() {
            self.byte(addr + i as u64, |a| *b = a.load(Ordering::Relaxed));
        }
        v
    }

    /// Every allocation's bytes.
    pub fn snapshot(&self) -> Vec<Vec<u8>> {
        let spans: Vec<(u64, u64)> = self
            .allocs
            .read()
            .unwrap()
            .iter()
            .map(|(b, l, _)| (*b, *l))
            .collect();
        spans
            .into_iter()
            .map(|(b, l)| self.read(b, l as usize))
            .collect()
    }

    pub fn restore(&self, snap: &[Vec<u8>]) {
        let spans: Vec<u64> = self.allocs.read().unwrap().iter().map(|a| a.0).collect();
        for (b, bytes) in spans.into_iter().zip(snap) {
            self.write(b, bytes);
        }
    }

    pub fn upload(&self, data: &[u8]) -> u64 {
        let a = self.alloc(data.len() as u64);
        self.write(a, data);
        a
    }
}

// SAFETY: every region is a live boxed allocation that is never freed or moved while `Mem`
// exists, and all accesses to it (here and in the interpreter) are atomic.
unsafe impl DeviceMemory for Mem {
    fn region(&self, addr: u64) -> Option<Region> {
        let allocs = self.allocs.read().ok()?;
        allocs
            .iter()
            .find(|(b, l, _)| addr >= *b && addr < b + l)
            .map(|(b, l, buf)| Region {
                base: *b,
                len: *l,
                host: buf.as_ptr() as *mut u8,
            })
    }

    fn texture(&self, handle: u64) -> Option<TexObject> {
        let v = self.textures.read().ok()?;
        v.iter().find(|(h, _)| *h == handle).map(|(_, t)| *t)
    }
}

pub trait Pod: Copy {
    fn to_bytes(v: &[Self]) -> Vec<u8>;
    fn from_bytes(b: &[u8]) -> Vec<Self>;
}

macro_rules! pod {
    ($($t:ty),*) => {$(
        impl Pod for $t {
            fn to_bytes(v: &[Self]) -> Vec<u8> {
                v.iter().flat_map(|x| x.to_le_bytes()).collect()
            }
            fn from_bytes(b: &[u8]) -> Vec<Self> {
                b.chunks_exact(std::mem::size_of::<$t>())
                    .map(|c| <$t>::from_le_bytes(c.try_into().unwrap()))
                    .collect()
            }
        }
    )*};
}
pod!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

/// A kernel argument.
#[derive(Clone, Debug)]
pub enum Arg {
    I32(i32),
    U32(u32),
    I64(i64),
    F32(f32),
    F64(f64),
    Ptr(u64),
    Bytes(Vec<u8>),
}

impl Arg {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Arg::I32(v) => v.to_le_bytes().to_vec(),
            Arg::U32(v) => v.to_le_bytes().to_vec(),
            Arg::I64(v) => v.to_le_bytes().to_vec(),
            Arg::F32(v) => v.to_le_bytes().to_vec(),
            Arg::F64(v) => v.to_le_bytes().to_vec(),
            Arg::Ptr(v) => v.to_le_bytes().to_vec(),
            Arg::Bytes(b) => b.clone(),
        }
    }
}

/// A loaded module with its globals placed in device memory.
pub struct Gpu {
    pub module: Module,
    pub mem: Mem,
    pub globals: Vec<u64>,
    pub out: Mutex<Vec<u8>>,
    pub opts: LaunchOptions,
    /// With `opts.jit`, run every launch interpreted first and check that the compiled run
    /// gives the same result, memory and output (off for kernels whose result depends on
    /// the order threads run in).
    pub differential: bool,
    /// Launches that ran compiled.
    pub compiled: std::sync::atomic::AtomicU32,
    /// Set to make launches cooperative, with this grid workspace.
    pub grid_workspace: std::sync::atomic::AtomicU64,
    /// Set to launch with this cluster shape.
    pub cluster: Mutex<[u32; 3]>,
}

impl Gpu {
    pub fn new(ptx: &str) -> Gpu {
        Gpu::from_module(Module::parse(ptx).unwrap_or_else(|e| panic!("{e}")))
    }

    pub fn from_module(module: Module) -> Gpu {
        let mem = Mem::default();
        let globals: Vec<u64> = module
            .globals()
            .iter()
            .map(|g| mem.alloc(g.size.max(1)))
            .collect();
        for (g, a) in module.globals().iter().zip(&globals) {
            let bytes = g.initial_bytes(&|id| globals[id.0 as usize]);
            mem.write(*a, &bytes);
        }
        Gpu {
            module,
            mem,
            globals,
            out: Mutex::new(Vec::new()),
            opts: LaunchOptions::default(),
            differential: true,
            compiled: Default::default(),
            grid_workspace: Default::default(),
            cluster: Mutex::new([0; 3]),
        }
    }

    pub fn buf<T: Pod>(&self, v: &[T]) -> u64 {
        self.mem.upload(&T::to_bytes(v))
    }

    pub fn zeros(&self, bytes: usize) -> u64 {
        self.mem.alloc(bytes as u64)
    }

    pub fn get<T: Pod>(&self, addr: u64, n: usize) -> Vec<T> {
        T::from_bytes(&self.mem.read(addr, n * std::mem::size_of::<T>()))
    }

    pub fn global(&self, name: &str) -> u64 {
        self.globals[self.module.global(name).expect("global").0 as usize]
    }

    pub fn params(&self, kernel: &str, args: &[Arg]) -> Vec<u8> {
        let k = &self.module.kernels()[self.module.kernel(kernel).expect("kernel").0 as usize];
        assert_eq!(k.params.len(), args.len(), "argument count of {kernel}");
        let mut buf = vec![0u8; k.param_size as usize];
        for (p, a) in k.params.iter().zip(args) {
            let b = a.bytes();
            assert_eq!(b.len(), p.size as usize, "size of an argument of {kernel}");
            buf[p.offset as usize..][..b.len()].copy_from_slice(&b);
        }
        buf
    }

    pub fn try_launch(
        &self,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        dyn_shared: u32,
        args: &[Arg],
    ) -> Result<LaunchStats, KernelError> {
        let id = self.module.kernel(kernel).expect("kernel");
        let params = self.params(kernel, args);
        let cfg = LaunchConfig {
            grid,
            block,
            dynamic_shared: dyn_shared,
            grid_workspace: self
                .grid_workspace
                .load(std::sync::atomic::Ordering::Relaxed),
            cluster: *self.cluster.lock().unwrap(),
        };
        let go = |opts: &LaunchOptions| {
            launch(
                &self.module,
                id,
                &cfg,
                &params,
                &|g| self.globals[g.0 as usize],
                &self.mem,
                &self.out,
                opts,
            )
        };
        if !(self.opts.jit && self.differential) {
            let r = go(&self.opts);
            if r.as_ref().is_ok_and(|s| s.compiled) {
                self.compiled.fetch_add(1, Ordering::Relaxed);
            }
            return r;
        }
        // Differential run: interpreted, then compiled from the same memory.
        let before = self.mem.snapshot();
        let printed = std::mem::take(&mut *self.out.lock().unwrap());
        let interp = LaunchOptions {
            jit: false,
            ..self.opts.clone()
        };
        let want = go(&interp);
        let want_mem = self.mem.snapshot();
        let want_out = std::mem::replace(&mut *self.out.lock().unwrap(), printed.clone());
        self.mem.restore(&before);
        let got = go(&self.opts);
        let compiled = got.as_ref().is_ok_and(|s| s.compiled);
        if compiled {
            self.compiled.fetch_add(1, Ordering::Relaxed);
        }
        let got_out = self.out.lock().unwrap()[printed.len()..].to_vec();
        assert_eq!(
            got.as_ref().map(|_| ()).map_err(|e| e.to_string()),
            want.as_ref().map(|_| ()).map_err(|e| e.to_string()),
            "{kernel}: compiled and interpreted results differ"
        );
        if got.is_ok() {
            let got_mem = self.mem.snapshot();
            for (k, (g, w)) in got_mem.iter().zip(&want_mem).enumerate() {
                if let Some(i) = (0..g.len()).find(|&i| g[i] != w[i]) {
                    panic!(
                        "{kernel}: compiled and interpreted memory differ in allocation {k} at byte {i}: {} vs {}",
                        g[i], w[i]
                    );
                }
            }
            // Blocks run in parallel: compare the printed lines as sets.
            let lines = |b: &[u8]| {
                let mut v: Vec<String> = String::from_utf8_lossy(b)
                    .lines()
                    .map(String::from)
                    .collect();
                v.sort();
                v
            };
            assert!(
                lines(&got_out) == lines(&want_out),
                "{kernel}: printf output differs"
            );
        }
        got
    }

    /// How many launches ran compiled.
    pub fn compiled_launches(&self) -> u32 {
        self.compiled.load(Ordering::Relaxed)
    }

    pub fn run(&self, kernel: &str, grid: u32, block: u32, args: &[Arg]) -> LaunchStats {
        self.try_launch(kernel, [grid, 1, 1], [block, 1, 1], 0, args)
            .unwrap_or_else(|e| panic!("{kernel}: {e}"))
    }

    pub fn printed(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.out.lock().unwrap())).unwrap()
    }
}

pub fn fixture(name: &str) -> String {
    let p = format!("{}/tests/fixtures/{name}.ptx", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

impl Gpu {
    pub fn run_err(&self, kernel: &str, grid: u32, block: u32, args: &[Arg]) -> KernelError {
        match self.try_launch(kernel, [grid, 1, 1], [block, 1, 1], 0, args) {
            Ok(_) => panic!("{kernel} succeeded"),
            Err(e) => e,
        }
    }
}
