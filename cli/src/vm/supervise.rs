// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda vm run` itself: has the initrd prepared (`guest`), starts the backend and QEMU, watches them
//! until the program ends, times out or a signal asks to stop, and reports the outcome.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::console::{Console, spawn_console_reader, spawn_copy};
use super::guest::prepare;
use super::kvm::kvm_usable;
use super::migrate::{Qmp, migrate};
use super::options::VmOptions;
use super::process::{
    Guard, STOP_SIGNAL, backend_exe, die_with_parent, install_signal_handlers, pipe, unix_listening,
};

/// Exit code when the guest never reported the program's status (boot failure, crash).
const EXIT_VM_FAILED: u8 = 125;

/// Exit code on timeout (like timeout(1)).
const EXIT_TIMEOUT: u8 = 124;

/// How long the backend may take to listen.
const BACKEND_START_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs the program in a VM; returns its exit code.
pub fn run(opts: &VmOptions) -> io::Result<u8> {
    install_signal_handlers();
    let tmp = tempfile::Builder::new().prefix("vcuda-vm-").tempdir()?;
    let initrd = tmp.path().join("initrd");
    let image = prepare(opts, &initrd)?;

    // The backend.
    let queues = opts.queues.unwrap_or(opts.smp.clamp(1, 16));
    let socket = backend_socket(tmp.path(), 0);
    let Some(mut backend) = start_backend(opts, tmp.path(), 0, queues)? else {
        return Ok(130);
    };

    // QEMU: stdout, stderr and console pipes become its fds 3, 4 and 5.
    let accel = match opts.accel.as_str() {
        "auto" if kvm_usable() => "kvm",
        "auto" => "tcg",
        a => a,
    };
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let (con_r, con_w) = pipe()?;
    let mut append = String::from("console=ttyS0 panic=-1 loglevel=5");
    if opts.check_unload {
        append += " vcuda.check_unload=1";
    }
    let machine = Machine {
        opts,
        image: &image,
        accel,
        queues,
        initrd: &initrd,
        append: &append,
        fds: [out_w.as_raw_fd(), err_w.as_raw_fd(), con_w.as_raw_fd()],
    };
    let migrates = opts.migrate_after.is_some() || opts.migrate_on.is_some();
    let mut qmp = migrates.then(|| tmp.path().join("qmp-0.sock"));
    let started = Instant::now();
    let mut qemu = machine.start_qemu(&socket, qmp.as_deref(), false)?;
    // Another QEMU writes to the same pipes; without one, only the first holds them.
    let mut writers = Some((out_w, err_w, con_w));
    if !migrates {
        writers = None;
    }

    let console = Arc::new(Mutex::new(Console::default()));
    let log = match &opts.console_log {
        Some(p) => Some(File::create(p)?),
        None => None,
    };
    let con_thread = spawn_console_reader(con_r, console.clone(), log, opts.verbose);
    // Lines of the program's output that ask for a migration (`--migrate-on`).
    let asked = Arc::new(AtomicUsize::new(0));
    let watch = opts.migrate_on.clone().map(|text| (text, asked.clone()));
    let out_thread = spawn_copy(out_r, io::stdout(), watch);
    let err_thread = spawn_copy(err_r, io::stderr(), None);

    enum Stop {
        Exited(std::process::ExitStatus),
        Timeout,
        Signal(i32),
    }
    let mut migrate_at = opts.migrate_after;
    let mut moves = 0usize;
    let mut answered = 0usize;
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
        let due = migrate_at.is_some_and(|at| started.elapsed() >= at);
        let on_line = asked.load(Ordering::SeqCst) > answered;
        if let Some(from) = qmp.clone()
            && (due || on_line)
        {
            if due {
                migrate_at = None;
            } else {
                answered += 1;
            }
            moves += 1;
            match machine.migrate(tmp.path(), &from, moves, started, opts.timeout) {
                Ok((q, b, to)) => {
                    // The source QEMU quit; stop it and its backend for good.
                    qemu.stop();
                    backend.stop();
                    (qemu, backend, qmp) = (q, b, Some(to));
                }
                Err(e) => match qemu.child().try_wait() {
                    Ok(Some(_)) => {
                        eprintln!("vcuda vm: the guest ended before its migration did ({e})")
                    }
                    _ => eprintln!("vcuda vm: {e}; the guest runs on where it was"),
                },
            }
            if migrate_at.is_none() && opts.migrate_on.is_none() {
                writers = None;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(writers);
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

/// How long a migration's destination has at least to run the guest once the source is
/// done (it loads the devices' state then; the rest of `--timeout` if that is longer).
const DEST_START_TIMEOUT: Duration = Duration::from_secs(30);

/// The vhost-user socket of the `n`th backend (0: the first; a migration's `n`th move
/// starts the next) in `dir`.
fn backend_socket(dir: &Path, n: usize) -> PathBuf {
    if n == 0 {
        dir.join("vhost-user.sock")
    } else {
        dir.join(format!("vhost-user-{n}.sock"))
    }
}

/// Starts the `n`th private backend, listening on [`backend_socket`] in `dir`; `None` if
/// a signal asked us to stop meanwhile. When the guest is to migrate on the CPU executor,
/// each backend serves its device memory ahead of a migration and each destination copies
/// it from the one before (the pre-copy; the CUDA executor takes none). On the CUDA
/// executor its sessions are made migratable (`--cuda-migratable`: device memory at
/// addresses a destination can have again).
fn start_backend(opts: &VmOptions, dir: &Path, n: usize, queues: u32) -> io::Result<Option<Guard>> {
    let socket = &backend_socket(dir, n);
    let mut backend_cmd = Command::new(backend_exe()?);
    let migrating = opts.migrate_after.is_some() || opts.migrate_on.is_some();
    let mut precopy: Vec<std::ffi::OsString> = Vec::new();
    if migrating && opts.precopy && opts.executor == "cpu" {
        precopy.push("--precopy-listen".into());
        precopy.push(dir.join(format!("precopy-{n}.sock")).into());
        if n > 0 {
            precopy.push("--precopy-from".into());
            precopy.push(dir.join(format!("precopy-{}.sock", n - 1)).into());
        }
    }
    // SAFETY: Between fork and exec the closure only calls prctl (async-signal-safe).
    unsafe {
        backend_cmd.pre_exec(die_with_parent);
    }
    // A migration's backends report the device state they move.
    let log = if migrating {
        "warn,vcuda_backend::vhost_user::migrate=info,vcuda_backend::vhost_user::precopy=info"
    } else {
        "warn"
    };
    let mut backend = Guard::new(
        backend_cmd
            .arg("vhost-user")
            .arg("--socket")
            .arg(socket)
            .args([
                "--executor",
                &opts.executor,
                "--queues",
                &queues.to_string(),
                "--poll-us",
                &opts.poll_us.to_string(),
                // A private backend for one VM: its programs may use all the memory.
                "--session-mem-limit",
                "100%",
            ])
            .args(precopy)
            .args(if migrating && opts.executor != "cpu" {
                &["--cuda-migratable"][..]
            } else {
                &[]
            })
            .env(
                "RUST_LOG",
                std::env::var("VCUDA_BACKEND_LOG").unwrap_or_else(|_| log.into()),
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
    while !unix_listening(socket) {
        if let Some(st) = backend.child().try_wait()? {
            return Err(io::Error::other(format!("vcuda-backend exited ({st})")));
        }
        if t.elapsed() > BACKEND_START_TIMEOUT {
            return Err(io::Error::other("vcuda-backend did not start listening"));
        }
        if STOP_SIGNAL.load(Ordering::SeqCst) != 0 {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(Some(backend))
}

/// How QEMU runs the guest (the same for a migration's second QEMU).
struct Machine<'a> {
    opts: &'a VmOptions,
    image: &'a super::image::Image,
    accel: &'a str,
    queues: u32,
    initrd: &'a Path,
    append: &'a str,
    /// The write ends of the stdout, stderr and console pipes, for QEMU's fds 3, 4 and 5.
    fds: [RawFd; 3],
}

impl Machine<'_> {
    /// Starts QEMU with the device on the backend at `socket`, QMP at `qmp` if given, and,
    /// if `incoming`, waiting for a migration (`-incoming defer`).
    fn start_qemu(&self, socket: &Path, qmp: Option<&Path>, incoming: bool) -> io::Result<Guard> {
        let (opts, image, queues) = (self.opts, self.image, self.queues);
        let mem = format!("{}M", opts.memory_mib);
        let mut qemu_cmd = Command::new(&image.qemu);
        qemu_cmd
            .args(["-machine", "q35,memory-backend=mem", "-accel", self.accel])
            .args(["-cpu", if self.accel == "kvm" { "host" } else { "max" }])
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
        if let Some(q) = qmp {
            qemu_cmd
                .arg("-qmp")
                .arg(format!("unix:{},server=on,wait=off", q.display()));
        }
        if incoming {
            qemu_cmd.args(["-incoming", "defer"]);
        }
        for d in &image.firmware {
            qemu_cmd.arg("-L").arg(d);
        }
        qemu_cmd
            .arg("-kernel")
            .arg(&image.bzimage)
            .arg("-initrd")
            .arg(self.initrd)
            .arg("-append")
            .arg(self.append)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0);
        let fds = self.fds;
        // SAFETY: Between fork and exec the closure only calls prctl and dup2
        // (async-signal-safe); dup2 clears close-on-exec on the copies.
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
        Ok(Guard::new(
            qemu_cmd
                .spawn()
                .map_err(|e| io::Error::new(e.kind(), format!("cannot start QEMU: {e}")))?,
            "QEMU",
        ))
    }

    /// Moves the guest of the QEMU whose QMP socket is `qmp` to another QEMU with a backend
    /// of its own (the `n`th move; files in `dir`), and tells the source to quit: the new
    /// QEMU, its backend and its QMP socket.
    fn migrate(
        &self,
        dir: &Path,
        qmp: &Path,
        n: usize,
        started: Instant,
        timeout: Duration,
    ) -> io::Result<(Guard, Guard, PathBuf)> {
        let socket = backend_socket(dir, n);
        let backend = start_backend(self.opts, dir, n, self.queues)?
            .ok_or_else(|| io::Error::other("interrupted"))?;
        let to = dir.join(format!("qmp-{n}.sock"));
        let qemu = self.start_qemu(&socket, Some(&to), true)?;
        let mut source = Qmp::connect(qmp)?;
        let mut dest = Qmp::connect(&to)?;
        let at = started.elapsed().as_secs_f64();
        let left = timeout.saturating_sub(started.elapsed());
        let stream = dir.join(format!("migrate-{n}.sock"));
        let m = migrate(&mut source, &mut dest, &stream, left)?;
        // The source is done, but the destination loads the devices' state last: where that
        // fails (a backend that cannot load a session here), it exits, and the source,
        // paused but whole, takes the guest back.
        let mut qemu = qemu;
        let t = Instant::now();
        loop {
            let running = dest
                .execute("query-status", serde_json::json!({}))
                .ok()
                .is_some_and(|s| s.get("status").and_then(|v| v.as_str()) == Some("running"));
            if running {
                break;
            }
            let exited = qemu.child().try_wait()?.is_some();
            if exited
                || t.elapsed() > DEST_START_TIMEOUT.max(timeout.saturating_sub(started.elapsed()))
            {
                // The destination goes first: never two guests running.
                qemu.stop();
                let _ = source.execute("cont", serde_json::json!({}));
                return Err(io::Error::other(if exited {
                    "the destination could not load the guest (its backend's lines say why)"
                } else {
                    "the destination did not start the guest in time"
                }));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // One write: the backends log to the same stderr, and a line written in pieces
        // can be split by theirs.
        let line = format!(
            "vcuda vm: migrated at {at:.1} s (move {n}): downtime {} ms, total {} ms (setup {} \
             ms, {} rounds), {} bytes moved (the backends' lines give the device state's share)\n",
            m.downtime_ms, m.total_ms, m.setup_ms, m.rounds, m.bytes
        );
        let _ = io::Write::write_all(&mut io::stderr(), line.as_bytes());
        // The source is paused for good (`postmigrate`); it may close QMP before answering.
        let _ = source.execute("quit", serde_json::json!({}));
        Ok((qemu, backend, to))
    }
}
