// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The run archive: a newc cpio writer, the guest's `/vcuda/run` script, and the initrd
//! (the base image followed by an archive of the program, its libraries, the added files and
//! the script).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::added::Added;
use super::image::Image;

/// Where the program lives in the guest.
pub(super) const GUEST_BIN_DIR: &str = "/vcuda/bin";

/// The soname-link directory of libvcuda in the guest (images/build-guest.sh).
pub(super) const GUEST_LIB_DIR: &str = "/usr/lib/vcuda";

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
pub(super) fn run_script(
    program: &str,
    args: &[String],
    env: &[(String, String)],
    lib_path: &str,
) -> String {
    let mut s = String::from("#!/bin/sh\n# Written by `vcuda vm run`.\n");
    s += &format!("export LD_LIBRARY_PATH={}\n", sh_quote(lib_path));
    s += &format!(
        "export LD_PRELOAD={}\n",
        sh_quote(&format!(
            "{GUEST_LIB_DIR}/libvcuda.so:{GUEST_LIB_DIR}/libnvJitLink.so.13"
        ))
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

/// Builds the initrd: the base image, padded to 4 bytes, then the run archive.
pub(super) fn build_initrd(
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

#[cfg(test)]
mod tests {
    use super::*;

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
