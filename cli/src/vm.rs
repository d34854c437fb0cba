// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda vm run`: runs a CUDA program inside a QEMU guest whose `/dev/vcuda` (the vcuda
//! kernel module) reaches a private `vcuda-backend vhost-user` on this machine.
//!
//! 1. The guest image (kernel, base initramfs with libvcuda.so and vcuda.ko, patched QEMU)
//!    comes from `images/build-guest.sh` (built or reused from its cache), or from
//!    `VCUDA_IMAGE_DIR` / `--image-dir` (a directory with `image.env`, as
//!    `build-guest.sh --out DIR` writes it).
//! 2. PROGRAM and the libraries it loads that the base image lacks (as `ldd` resolves them
//!    here; the CUDA runtime is libvcuda's job) go into a second cpio archive, with
//!    `/vcuda/run`, a script that sets the environment and runs PROGRAM with its arguments. The
//!    kernel unpacks the two archives concatenated.
//! 3. The backend listens on a socket in a private temporary directory; QEMU (KVM when it
//!    works, else TCG) boots with its RAM in a shared memfd and the `vhost-user-cuda-pci`
//!    device on that socket. The program's stdout and stderr come back on two virtio-serial
//!    ports, streamed to ours as they arrive; the serial console carries the kernel log and
//!    the guest init's status lines (`VCUDA-GUEST: ...`, see `images/guest/init`).
//! 4. On exit, timeout, Ctrl-C or SIGTERM, QEMU and the backend are stopped and the temporary
//!    directory (socket included) is removed. The exit code is the program's.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::libdir;

/// Exit code when the guest never reported the program's status (boot failure, crash).
const EXIT_VM_FAILED: u8 = 125;
/// Exit code on timeout (like timeout(1)).
const EXIT_TIMEOUT: u8 = 124;
/// How long the backend may take to listen.
const BACKEND_START_TIMEOUT: Duration = Duration::from_secs(20);
/// Console lines kept for error reports.
const CONSOLE_TAIL: usize = 60;
/// Where the program lives in the guest.
const GUEST_BIN_DIR: &str = "/vcuda/bin";
/// The soname-link directory of libvcuda in the guest (images/build-guest.sh).
const GUEST_LIB_DIR: &str = "/usr/lib/vcuda";
/// Prefix of the guest init's status lines.
const STATUS_PREFIX: &str = "VCUDA-GUEST: ";

/// Options of `vcuda vm run`.
#[derive(Debug, Clone)]
pub struct VmOptions {
    /// `cpu`, `cuda` or `auto`.
    pub executor: String,
    /// Guest RAM in MiB.
    pub memory_mib: u64,
    /// Guest CPUs.
    pub smp: u32,
    /// Request queues (default: one per guest CPU, at most 16).
    pub queues: Option<u32>,
    /// Wall-clock limit for the whole run.
    pub timeout: Duration,
    /// `auto`, `kvm` or `tcg`.
    pub accel: String,
    /// Extra environment for the program (`KEY=VALUE`).
    pub env: Vec<String>,
    /// A prebuilt image directory (with `image.env`).
    pub image_dir: Option<PathBuf>,
    /// Copy the guest console here.
    pub console_log: Option<PathBuf>,
    /// Echo the guest console to stderr.
    pub verbose: bool,
    /// After the program, unload the module in the guest; fail if that does not work.
    pub check_unload: bool,
    /// Files to copy into the guest: `SRC` or `SRC:DEST`.
    pub add: Vec<String>,
    /// The program and its arguments.
    pub program: Vec<String>,
}

/// Parses a memory size: `512`, `512M`, `2G` (MiB by default).
pub fn parse_memory(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mul) = match s.char_indices().last() {
        Some((i, 'G' | 'g')) => (&s[..i], 1024),
        Some((i, 'M' | 'm')) => (&s[..i], 1),
        _ => (s, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("bad memory size {s:?} (use e.g. 1024, 512M or 2G)"))?;
    let mib = n.checked_mul(mul).ok_or("memory size too large")?;
    if !(128..=1 << 20).contains(&mib) {
        return Err(format!("memory size {mib} MiB outside 128 MiB..1 TiB"));
    }
    Ok(mib)
}

/// The guest image: what `images/build-guest.sh` prints (or `image.env` holds).
#[derive(Debug, Default)]
struct Image {
    bzimage: PathBuf,
    initramfs: PathBuf,
    manifest: PathBuf,
    qemu: PathBuf,
    firmware: Vec<PathBuf>,
}

/// Reads `VAR=value` lines as lib.sh's `emit_var` writes them (values maybe single-quoted).
fn parse_env_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            let v = match v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
                Some(inner) => inner.replace("'\\''", "'"),
                None => v.to_owned(),
            };
            Some((k.to_owned(), v))
        })
        .collect()
}

impl Image {
    fn from_vars(vars: &[(String, String)], base: &Path) -> io::Result<Self> {
        let get = |k: &str| {
            vars.iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| io::Error::other(format!("the image description lacks {k}")))
        };
        let path = |k: &str| -> io::Result<PathBuf> {
            let p = PathBuf::from(get(k)?);
            Ok(if p.is_absolute() { p } else { base.join(p) })
        };
        let img = Image {
            bzimage: path("BZIMAGE")?,
            initramfs: path("INITRAMFS")?,
            manifest: path("MANIFEST")?,
            qemu: path("QEMU")?,
            firmware: get("QEMU_FIRMWARE")?
                .split(':')
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
                .collect(),
        };
        for p in [&img.bzimage, &img.initramfs, &img.manifest, &img.qemu] {
            if !p.exists() {
                return Err(io::Error::other(format!("{} does not exist", p.display())));
            }
        }
        Ok(img)
    }
}

/// The `images/` directory: `$VCUDA_IMAGES`, else the one of the source tree this was built
/// from.
fn images_dir() -> PathBuf {
    match std::env::var_os("VCUDA_IMAGES") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../images"),
    }
}

/// Finds or builds the guest image.
fn guest_image(opts: &VmOptions, lib_dir: &Path) -> io::Result<Image> {
    let dir = opts.image_dir.clone().or_else(|| {
        std::env::var_os("VCUDA_IMAGE_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    });
    if let Some(dir) = dir {
        let env = fs::read_to_string(dir.join("image.env"))
            .map_err(|e| io::Error::new(e.kind(), format!("{}/image.env: {e}", dir.display())))?;
        return Image::from_vars(&parse_env_lines(&env), &dir);
    }
    let script = images_dir().join("build-guest.sh");
    if !script.exists() {
        return Err(io::Error::other(format!(
            "{} not found: set VCUDA_IMAGES to the images/ directory of a vcuda checkout, or \
             VCUDA_IMAGE_DIR to a prebuilt image",
            script.display()
        )));
    }
    let out = Command::new("bash")
        .arg(&script)
        .arg("--lib-dir")
        .arg(lib_dir)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run {}: {e}", script.display())))?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{} failed ({})",
            script.display(),
            out.status
        )));
    }
    Image::from_vars(
        &parse_env_lines(&String::from_utf8_lossy(&out.stdout)),
        Path::new("/"),
    )
}

/// Resolves PROGRAM like a shell: a path if it has a slash, else a `PATH` lookup.
fn resolve_program(name: &str) -> io::Result<PathBuf> {
    let found = if name.contains('/') {
        Some(PathBuf::from(name))
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
    };
    let p = found.ok_or_else(|| io::Error::other(format!("{name}: command not found")))?;
    let meta = fs::metadata(&p).map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(io::Error::other(format!(
            "{}: not an executable file",
            p.display()
        )));
    }
    Ok(p)
}

/// The libraries `program` needs that the guest does not have: (host path) list.
///
/// Libraries libvcuda provides (`provided`: the names in its lib dir, e.g. libcudart.so.13)
/// are skipped whether ldd finds them here or not; so are those already in the base image.
fn extra_libraries(
    program: &Path,
    provided: &HashSet<String>,
    base: &HashSet<String>,
) -> io::Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(program)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run ldd: {e}")))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if text.contains("not a dynamic executable") || text.contains("statically linked") {
            return Ok(Vec::new());
        }
        return Err(io::Error::other(format!(
            "ldd {} failed: {}",
            program.display(),
            text.trim()
        )));
    }
    let mut libs = Vec::new();
    let mut missing = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        // "name => /path (0x...)", "name => not found", "/lib64/ld-linux... (0x...)",
        // "linux-vdso.so.1 (0x...)".
        let (name, path) = match line.split_once(" => ") {
            Some((n, rest)) => (n.trim(), rest.split(" (").next().unwrap_or("").trim()),
            None => {
                let p = line.split(" (").next().unwrap_or("").trim();
                (p.rsplit('/').next().unwrap_or(p), p)
            }
        };
        if name.is_empty() || provided.contains(name) || name.starts_with("linux-vdso") {
            continue;
        }
        if path == "not found" {
            missing.push(name.to_owned());
            continue;
        }
        if !path.starts_with('/') || base.contains(path) {
            continue;
        }
        libs.push(PathBuf::from(path));
    }
    if !missing.is_empty() {
        return Err(io::Error::other(format!(
            "{} needs libraries that are not on this machine: {} (set LD_LIBRARY_PATH so that \
             ldd finds them)",
            program.display(),
            missing.join(", ")
        )));
    }
    Ok(libs)
}

/// Writes a newc cpio archive (what the kernel's initramfs unpacker reads).
struct Cpio<W: Write> {
    out: W,
    ino: u32,
    dirs: BTreeSet<String>,
}

impl<W: Write> Cpio<W> {
    fn new(out: W) -> Self {
        Self {
            out,
            ino: 0x7000_0000,
            dirs: BTreeSet::new(),
        }
    }

    fn header(&mut self, name: &str, mode: u32, size: u64) -> io::Result<()> {
        let size = u32::try_from(size)
            .map_err(|_| io::Error::other(format!("{name}: too large for the guest image")))?;
        self.ino += 1;
        let namesize = name.len() + 1;
        let nlink = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
        write!(
            self.out,
            "070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}",
            self.ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, namesize, 0
        )?;
        self.out.write_all(name.as_bytes())?;
        self.out.write_all(&[0])?;
        self.pad(110 + namesize)
    }

    fn pad(&mut self, n: usize) -> io::Result<()> {
        let p = (4 - n % 4) % 4;
        self.out.write_all(&[0u8; 3][..p])
    }

    /// Adds the parents of `path` (absolute) not added yet.
    fn parents(&mut self, path: &str) -> io::Result<()> {
        let mut at = String::new();
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        for c in &comps[..comps.len().saturating_sub(1)] {
            at.push('/');
            at.push_str(c);
            if self.dirs.insert(at.clone()) {
                let name = at.trim_start_matches('/').to_owned();
                self.header(&name, 0o040755, 0)?;
            }
        }
        Ok(())
    }

    fn dir(&mut self, path: &str) -> io::Result<()> {
        self.parents(&format!("{}/x", path.trim_end_matches('/')))
    }

    fn file(&mut self, path: &str, mode: u32, data: &mut dyn Read, size: u64) -> io::Result<()> {
        self.parents(path)?;
        self.header(path.trim_start_matches('/'), 0o100000 | mode, size)?;
        let n = io::copy(&mut data.take(size), &mut self.out)?;
        if n != size {
            return Err(io::Error::other(format!(
                "{path}: changed while being read"
            )));
        }
        self.pad(size as usize)
    }

    fn symlink(&mut self, path: &str, target: &Path) -> io::Result<()> {
        use std::os::unix::ffi::OsStrExt;

        self.parents(path)?;
        let t = target.as_os_str().as_bytes();
        self.header(path.trim_start_matches('/'), 0o120777, t.len() as u64)?;
        self.out.write_all(t)?;
        self.pad(t.len())
    }

    fn finish(mut self) -> io::Result<W> {
        self.header("TRAILER!!!", 0, 0)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Single-quotes `s` for /bin/sh.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The guest's `/vcuda/run`.
fn run_script(program: &str, args: &[String], env: &[(String, String)], lib_path: &str) -> String {
    let mut s = String::from("#!/bin/sh\n# Written by `vcuda vm run`.\n");
    s += &format!("export LD_LIBRARY_PATH={}\n", sh_quote(lib_path));
    s += &format!(
        "export LD_PRELOAD={}\n",
        sh_quote(&format!("{GUEST_LIB_DIR}/libvcuda.so"))
    );
    s += "export VCUDA_TRANSPORT=virtio\n";
    for (k, v) in env {
        s += &format!("export {k}={}\n", sh_quote(v));
    }
    s += "exec";
    for a in std::iter::once(program).chain(args.iter().map(String::as_str)) {
        s.push(' ');
        s += &sh_quote(a);
    }
    s.push('\n');
    s
}

/// Something `--add` copies into the guest.
#[derive(Debug)]
enum Added {
    /// A regular file: its host path and its guest path.
    File(PathBuf, String),
    /// A symbolic link (inside an added directory): its guest path and its target, as is.
    Link(String, PathBuf),
    /// A directory (inside an added directory, or added itself): its guest path.
    Dir(String),
}

/// Most files one `--add` of a directory may bring.
const MAX_ADDED_FILES: usize = 200_000;

/// A `--add SRC[:DEST]`: the file, or the directory tree (regular files, directories and
/// symbolic links; anything else is skipped), at DEST in the guest (SRC's absolute path when
/// DEST is not given).
fn added(arg: &str) -> io::Result<Vec<Added>> {
    let (src, dest) = match arg.split_once(':') {
        Some((s, d)) => (PathBuf::from(s), Some(d.to_owned())),
        None => (PathBuf::from(arg), None),
    };
    let abs = fs::canonicalize(&src)
        .map_err(|e| io::Error::new(e.kind(), format!("--add {}: {e}", src.display())))?;
    let dest = dest.unwrap_or_else(|| abs.to_string_lossy().into_owned());
    if !dest.starts_with('/') || dest.split('/').any(|c| c == "..") {
        return Err(io::Error::other(format!(
            "--add {arg}: the guest path must be absolute, without '..'"
        )));
    }
    if abs.is_file() {
        return Ok(vec![Added::File(abs, dest)]);
    }
    if !abs.is_dir() {
        return Err(io::Error::other(format!(
            "--add {}: neither a regular file nor a directory",
            src.display()
        )));
    }
    let mut out = vec![Added::Dir(dest.clone())];
    let (root, dest_root) = (abs.clone(), PathBuf::from(&dest));
    let mut todo = vec![(abs, dest)];
    while let Some((dir, at)) = todo.pop() {
        let mut entries: Vec<_> = fs::read_dir(&dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let guest = format!("{}/{name}", at.trim_end_matches('/'));
            let t = e.file_type()?;
            if t.is_symlink() {
                // An absolute target inside the tree moves with it.
                let target = fs::read_link(e.path())?;
                let target = match target.strip_prefix(&root) {
                    Ok(rest) if target.is_absolute() => dest_root.join(rest),
                    _ => target,
                };
                out.push(Added::Link(guest, target));
            } else if t.is_dir() {
                out.push(Added::Dir(guest.clone()));
                todo.push((e.path(), guest));
            } else if t.is_file() {
                out.push(Added::File(e.path(), guest));
            }
            if out.len() > MAX_ADDED_FILES {
                return Err(io::Error::other(format!(
                    "--add {}: more than {MAX_ADDED_FILES} files",
                    src.display()
                )));
            }
        }
    }
    Ok(out)
}

/// Whether `path` is named like a shared library (`NAME.so`, or `NAME.so.` and a version of
/// digits and dots), whose own libraries the guest needs too.
fn is_shared_library(path: &Path) -> bool {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return false;
    };
    match name.rfind(".so") {
        Some(i) => {
            let rest = &name[i + 3..];
            i > 0
                && (rest.is_empty()
                    || rest.strip_prefix('.').is_some_and(|v| {
                        !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')
                    }))
        }
        None => false,
    }
}

/// Whether the file at `path` starts like an ELF object.
fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"\x7fELF")
}

/// Builds the initrd: the base image, padded to 4 bytes, then the run archive.
fn build_initrd(
    out: &Path,
    image: &Image,
    program: &Path,
    guest_program: &str,
    script: &str,
    libs: &[PathBuf],
    extra: &[Added],
) -> io::Result<()> {
    let mut f = BufWriter::new(File::create(out)?);
    let base_len = io::copy(&mut File::open(&image.initramfs)?, &mut f)?;
    // The kernel looks for an uncompressed archive at 4-byte offsets and skips zeros.
    f.write_all(&[0u8; 3][..((4 - base_len % 4) % 4) as usize])?;
    let mut cpio = Cpio::new(f);
    cpio.dir("/vcuda/work")?;
    let add = |cpio: &mut Cpio<_>, src: &Path, dest: &str| -> io::Result<()> {
        let mut file = File::open(src)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", src.display())))?;
        let size = file.metadata()?.len();
        cpio.file(dest, 0o755, &mut file, size)
    };
    add(&mut cpio, program, guest_program)?;
    for l in libs {
        let dest = l.to_string_lossy().into_owned();
        add(&mut cpio, l, &dest)?;
    }
    for a in extra {
        match a {
            Added::File(src, dest) => add(&mut cpio, src, dest)?,
            Added::Link(dest, target) => cpio.symlink(dest, target)?,
            Added::Dir(dest) => cpio.dir(dest)?,
        }
    }
    cpio.file(
        "/vcuda/run",
        0o755,
        &mut script.as_bytes(),
        script.len() as u64,
    )?;
    cpio.finish()?
        .into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()
}

/// Whether KVM can run a guest here: the CPU reports hardware virtualisation (vmx/svm; a
/// nested guest without it can have a /dev/kvm that creates VMs but does not boot them: seen
/// here, see shared/facts/qemu.md) and /dev/kvm creates a VM with a vCPU.
fn kvm_usable() -> bool {
    let hw = fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
        c.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"))
    });
    if !hw {
        return false;
    }
    const KVM_GET_API_VERSION: libc::c_ulong = 0xAE00;
    const KVM_CREATE_VM: libc::c_ulong = 0xAE01;
    const KVM_CREATE_VCPU: libc::c_ulong = 0xAE41;
    let Ok(kvm) = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    else {
        return false;
    };
    // SAFETY: KVM ioctls on a descriptor we own; none of them takes a pointer.
    unsafe {
        if libc::ioctl(kvm.as_raw_fd(), KVM_GET_API_VERSION as _, 0) != 12 {
            return false;
        }
        let vm = libc::ioctl(kvm.as_raw_fd(), KVM_CREATE_VM as _, 0);
        if vm < 0 {
            return false;
        }
        let vcpu = libc::ioctl(vm, KVM_CREATE_VCPU as _, 0);
        if vcpu >= 0 {
            libc::close(vcpu);
        }
        libc::close(vm);
        vcpu >= 0
    }
}

/// The signal that asked us to stop (0: none).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: The handler only stores to an atomic (async-signal-safe).
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// A child process stopped (TERM, then KILL) when dropped.
struct Guard {
    child: Option<Child>,
    name: &'static str,
}

impl Guard {
    fn new(child: Child, name: &'static str) -> Self {
        Self {
            child: Some(child),
            name,
        }
    }

    fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("child present until dropped")
    }

    fn stop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("vcuda vm: {} did not stop; killing it", self.name);
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// In a child between fork and exec: be killed if this process dies (even by SIGKILL), so that
/// no QEMU or backend outlives `vcuda vm run`.
fn die_with_parent() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes no pointers; async-signal-safe.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether some process listens on the Unix socket `path` (from /proc/net/unix), so that a
/// connection succeeds without us connecting (a vhost-user backend serves one connection).
fn unix_listening(path: &Path) -> bool {
    let Ok(table) = fs::read_to_string("/proc/net/unix") else {
        return path.exists();
    };
    let want = path.as_os_str().as_bytes();
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 = listening.
        f.len() >= 8 && f[3] == "00010000" && f[7].as_bytes() == want
    })
}

fn backend_exe() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os("VCUDA_BACKEND") {
        return Ok(PathBuf::from(p));
    }
    let p = std::env::current_exe()?.with_file_name("vcuda-backend");
    if p.exists() {
        Ok(p)
    } else {
        Err(io::Error::other(format!(
            "{} not found (build the workspace, or set VCUDA_BACKEND)",
            p.display()
        )))
    }
}

/// What the console reader saw.
#[derive(Default)]
struct Console {
    tail: VecDeque<String>,
    ready: bool,
    exit_status: Option<i32>,
    rmmod_ok: Option<bool>,
    error: Option<String>,
}

fn spawn_console_reader(
    pipe: OwnedFd,
    state: Arc<Mutex<Console>>,
    mut log: Option<File>,
    verbose: bool,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(File::from(pipe));
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Some(f) = log.as_mut() {
                let _ = f.write_all(&buf);
            }
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if verbose {
                eprintln!("[guest] {line}");
            }
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = line.find(STATUS_PREFIX) {
                let msg = &line[i + STATUS_PREFIX.len()..];
                if msg == "ready" {
                    st.ready = true;
                } else if let Some(v) = msg.strip_prefix("exit-status=") {
                    st.exit_status = v.trim().parse().ok();
                } else if let Some(v) = msg.strip_prefix("rmmod=") {
                    st.rmmod_ok = Some(v.trim() == "ok");
                } else if let Some(v) = msg.strip_prefix("error=") {
                    st.error = Some(v.to_owned());
                }
            }
            if st.tail.len() == CONSOLE_TAIL {
                st.tail.pop_front();
            }
            st.tail.push_back(line.to_owned());
        }
    })
}

fn spawn_copy(pipe: OwnedFd, mut to: impl Write + Send + 'static) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut from = File::from(pipe);
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    let _ = to.flush();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)
}

/// Runs the program in a VM; returns its exit code.
pub fn run(opts: &VmOptions) -> io::Result<u8> {
    install_signal_handlers();
    let lib_dir = libdir::lib_dir()?;
    let provided: HashSet<String> = fs::read_dir(&lib_dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .chain(libdir::SONAMES.iter().map(|s| (*s).to_owned()))
        .collect();

    let program = resolve_program(&opts.program[0])?;
    let mut env = Vec::new();
    for kv in &opts.env {
        let (k, v) = kv
            .split_once('=')
            .filter(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .ok_or_else(|| io::Error::other(format!("--env wants KEY=VALUE, got {kv:?}")))?;
        env.push((k.to_owned(), v.to_owned()));
    }
    for k in ["VCUDA_LOG"] {
        if let Ok(v) = std::env::var(k)
            && !env.iter().any(|(n, _)| n == k)
        {
            env.push((k.to_owned(), v));
        }
    }

    let image = guest_image(opts, &lib_dir)?;
    let base: HashSet<String> = fs::read_to_string(&image.manifest)?
        .lines()
        .map(str::to_owned)
        .collect();
    let extra = opts
        .add
        .iter()
        .map(String::as_str)
        .map(added)
        .collect::<io::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    let mut libs = extra_libraries(&program, &provided, &base)?;
    // Shared libraries among the added files (a Python package's extension modules) need
    // theirs too; those the added files provide themselves are found by their rpath.
    for a in &extra {
        if let Added::File(src, _) = a
            && is_shared_library(src)
            && is_elf(src)
        {
            let found = extra_libraries(src, &provided, &base).unwrap_or_else(|e| {
                eprintln!("vcuda vm run: warning: {e}");
                Vec::new()
            });
            for l in found {
                // Compared by where they really are (ldd may name a shipped file through
                // `..`), kept under the name ldd found (the soname).
                let real = fs::canonicalize(&l).unwrap_or_else(|_| l.clone());
                let shipped = extra
                    .iter()
                    .any(|e| matches!(e, Added::File(s, _) if *s == real));
                if !shipped && !libs.contains(&l) {
                    libs.push(l);
                }
            }
        }
    }
    let mut lib_path = vec![GUEST_LIB_DIR.to_owned()];
    for l in &libs {
        let d = l
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !lib_path.contains(&d) {
            lib_path.push(d);
        }
    }
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    let guest_program = format!("{GUEST_BIN_DIR}/{name}");
    let script = run_script(
        &guest_program,
        &opts.program[1..],
        &env,
        &lib_path.join(":"),
    );

    let tmp = tempfile::Builder::new().prefix("vcuda-vm-").tempdir()?;
    let initrd = tmp.path().join("initrd");
    build_initrd(
        &initrd,
        &image,
        &program,
        &guest_program,
        &script,
        &libs,
        &extra,
    )?;

    // The backend.
    let queues = opts.queues.unwrap_or(opts.smp.clamp(1, 16));
    let socket = tmp.path().join("vhost-user.sock");
    let mut backend_cmd = Command::new(backend_exe()?);
    // SAFETY: Between fork and exec the closure only calls prctl (async-signal-safe).
    unsafe {
        backend_cmd.pre_exec(die_with_parent);
    }
    let mut backend = Guard::new(
        backend_cmd
            .arg("vhost-user")
            .arg("--socket")
            .arg(&socket)
            .args([
                "--executor",
                &opts.executor,
                "--queues",
                &queues.to_string(),
                // A private backend for one VM: its programs may use all the memory.
                "--session-mem-limit",
                "100%",
            ])
            .env(
                "RUST_LOG",
                std::env::var("VCUDA_BACKEND_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start vcuda-backend: {e}")))?,
        "vcuda-backend",
    );
    let t = Instant::now();
    while !unix_listening(&socket) {
        if let Some(st) = backend.child().try_wait()? {
            return Err(io::Error::other(format!("vcuda-backend exited ({st})")));
        }
        if t.elapsed() > BACKEND_START_TIMEOUT {
            return Err(io::Error::other("vcuda-backend did not start listening"));
        }
        if STOP_SIGNAL.load(Ordering::SeqCst) != 0 {
            return Ok(130);
        }
        std::thread::sleep(Duration::from_millis(10));
    }

    // QEMU: stdout, stderr and console pipes become its fds 3, 4 and 5.
    let accel = match opts.accel.as_str() {
        "auto" if kvm_usable() => "kvm",
        "auto" => "tcg",
        a => a,
    };
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let (con_r, con_w) = pipe()?;
    let mem = format!("{}M", opts.memory_mib);
    let mut append = String::from("console=ttyS0 panic=-1 loglevel=5");
    if opts.check_unload {
        append += " vcuda.check_unload=1";
    }
    let mut qemu_cmd = Command::new(&image.qemu);
    qemu_cmd
        .args(["-machine", "q35,memory-backend=mem", "-accel", accel])
        .args(["-cpu", if accel == "kvm" { "host" } else { "max" }])
        .args(["-smp", &opts.smp.to_string(), "-m", &mem])
        .arg("-object")
        .arg(format!("memory-backend-memfd,id=mem,size={mem},share=on"))
        .arg("-chardev")
        .arg(format!("socket,id=vcuda,path={}", socket.display()))
        .arg("-device")
        .arg(format!(
            "vhost-user-cuda-pci,chardev=vcuda,num-request-queues={queues}"
        ))
        .args(["-device", "virtio-serial-pci,id=vser"])
        .args(["-chardev", "file,id=vout,path=/proc/self/fd/3,append=on"])
        .args([
            "-device",
            "virtserialport,bus=vser.0,chardev=vout,name=vcuda.stdout",
        ])
        .args(["-chardev", "file,id=verr,path=/proc/self/fd/4,append=on"])
        .args([
            "-device",
            "virtserialport,bus=vser.0,chardev=verr,name=vcuda.stderr",
        ])
        .args(["-chardev", "file,id=con,path=/proc/self/fd/5,append=on"])
        .args(["-serial", "chardev:con"])
        .args([
            "-display",
            "none",
            "-monitor",
            "none",
            "-nodefaults",
            "-no-reboot",
        ]);
    for d in &image.firmware {
        qemu_cmd.arg("-L").arg(d);
    }
    qemu_cmd
        .arg("-kernel")
        .arg(&image.bzimage)
        .arg("-initrd")
        .arg(&initrd)
        .arg("-append")
        .arg(&append)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0);
    let fds = [out_w.as_raw_fd(), err_w.as_raw_fd(), con_w.as_raw_fd()];
    // SAFETY: Between fork and exec the closure only calls prctl and dup2 (async-signal-safe);
    // dup2 clears close-on-exec on the copies.
    unsafe {
        qemu_cmd.pre_exec(move || {
            die_with_parent()?;
            for (i, fd) in fds.iter().enumerate() {
                if libc::dup2(*fd, 3 + i as libc::c_int) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut qemu = Guard::new(
        qemu_cmd
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start QEMU: {e}")))?,
        "QEMU",
    );
    drop((out_w, err_w, con_w));

    let console = Arc::new(Mutex::new(Console::default()));
    let log = match &opts.console_log {
        Some(p) => Some(File::create(p)?),
        None => None,
    };
    let con_thread = spawn_console_reader(con_r, console.clone(), log, opts.verbose);
    let out_thread = spawn_copy(out_r, io::stdout());
    let err_thread = spawn_copy(err_r, io::stderr());

    enum Stop {
        Exited(std::process::ExitStatus),
        Timeout,
        Signal(i32),
    }
    let stop = loop {
        if let Some(st) = qemu.child().try_wait()? {
            break Stop::Exited(st);
        }
        let sig = STOP_SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            break Stop::Signal(sig);
        }
        if started.elapsed() > opts.timeout {
            break Stop::Timeout;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    qemu.stop();
    backend.stop();
    let _ = out_thread.join();
    let _ = err_thread.join();
    let _ = con_thread.join();
    let st = console.lock().unwrap_or_else(|e| e.into_inner());
    let elapsed = started.elapsed().as_secs_f64();
    let report_tail = |why: &str| {
        eprintln!("vcuda vm: {why}; last guest console lines:");
        for l in &st.tail {
            eprintln!("  | {l}");
        }
    };
    let qemu_status = match stop {
        Stop::Timeout => {
            report_tail(&format!(
                "timed out after {} s (--timeout)",
                opts.timeout.as_secs()
            ));
            return Ok(EXIT_TIMEOUT);
        }
        Stop::Signal(sig) => {
            eprintln!("vcuda vm: interrupted; the VM was stopped");
            return Ok(128u8.wrapping_add(sig as u8));
        }
        Stop::Exited(st) => st,
    };
    if let Some(e) = &st.error {
        report_tail(&format!("the guest could not run the program: {e}"));
        return Ok(EXIT_VM_FAILED);
    }
    let Some(code) = st.exit_status else {
        report_tail(&format!(
            "the guest stopped without reporting the program's exit status (QEMU: {}, {:.1} s)",
            qemu_status, elapsed
        ));
        return Ok(EXIT_VM_FAILED);
    };
    if opts.check_unload && st.rmmod_ok != Some(true) {
        report_tail("unloading the vcuda module in the guest failed");
        return Ok(EXIT_VM_FAILED);
    }
    if std::env::var_os("VCUDA_VM_TIMING").is_some() {
        eprintln!("vcuda vm: VM ran {elapsed:.1} s ({accel})");
    }
    Ok(u8::try_from(code).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory("512").unwrap(), 512);
        assert_eq!(parse_memory("512M").unwrap(), 512);
        assert_eq!(parse_memory("2G").unwrap(), 2048);
        assert!(parse_memory("12").is_err());
        assert!(parse_memory("x").is_err());
    }

    #[test]
    fn env_lines() {
        let v = parse_env_lines("A=1\nKMAKE='LLVM=1 X=2'\nQ='it'\\''s'\nnoise\n");
        assert_eq!(
            v,
            vec![
                ("A".into(), "1".into()),
                ("KMAKE".into(), "LLVM=1 X=2".into()),
                ("Q".into(), "it's".into()),
            ]
        );
    }

    #[test]
    fn an_added_directory_keeps_its_tree_and_links() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("a/b")).unwrap();
        fs::write(d.path().join("a/b/f.so.1"), b"x").unwrap();
        std::os::unix::fs::symlink("b/f.so.1", d.path().join("a/l")).unwrap();
        let src = fs::canonicalize(d.path().join("a")).unwrap();
        std::os::unix::fs::symlink(src.join("b/f.so.1"), src.join("abs")).unwrap();
        let got = added(&format!("{}:/g", src.display())).unwrap();
        let names: Vec<String> = got
            .iter()
            .map(|a| match a {
                Added::File(_, g) => format!("F {g}"),
                Added::Link(g, t) => format!("L {g} -> {}", t.display()),
                Added::Dir(g) => format!("D {g}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                "D /g",
                "L /g/abs -> /g/b/f.so.1",
                "D /g/b",
                "L /g/l -> b/f.so.1",
                "F /g/b/f.so.1"
            ]
        );
        assert!(is_shared_library(Path::new("/x/f.so.1")));
        assert!(is_shared_library(Path::new(
            "/x/_ctypes.cpython-311-x86_64-linux-gnu.so"
        )));
        assert!(is_shared_library(Path::new("/x/libnvvm.so.4.0")));
        assert!(!is_shared_library(Path::new("/x/f.py")));
        assert!(!is_shared_library(Path::new("/x/x.sort.py")));
        assert!(!is_shared_library(Path::new("/x/data.source")));
        assert!(!is_shared_library(Path::new("/x/.so")));
        assert!(added("/nonexistent-vcuda-path").is_err());
        assert!(added(&format!("{}:relative", src.display())).is_err());
    }

    #[test]
    fn quoting() {
        let s = run_script("/vcuda/bin/p", &["a b".into(), "it's".into()], &[], "/x");
        assert!(s.ends_with("exec '/vcuda/bin/p' 'a b' 'it'\\''s'\n"), "{s}");
    }

    #[test]
    fn cpio_layout() {
        let mut c = Cpio::new(Vec::new());
        c.file("/a/b", 0o644, &mut &b"hello"[..], 5).unwrap();
        let v = c.finish().unwrap();
        assert_eq!(v.len() % 4, 0);
        let s = String::from_utf8_lossy(&v);
        // Directory "a" first, then "a/b", then the trailer.
        let a = s.find("a\0").unwrap();
        let b = s.find("a/b\0").unwrap();
        let t = s.find("TRAILER!!!\0").unwrap();
        assert!(a < b && b < t);
        assert!(s.contains("hello"));
    }
}
