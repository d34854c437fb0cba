// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda`: run unmodified CUDA programs through vcuda.
//!
//! - `vcuda run [--executor cpu|cuda|auto] -- PROGRAM [ARGS]`: runs PROGRAM with
//!   `libvcuda.so` in place of libcudart. Unless `VCUDA_SOCKET` names a running backend, a
//!   private `vcuda-backend` is started on a temporary socket for the program's lifetime.
//! - `vcuda lib-dir`: prints the directory holding `libvcuda.so` and its soname links
//!   (`libcudart.so.13`, `libcudart.so.12`), for `LD_LIBRARY_PATH`.
//! - `vcuda vm run [--executor ...] [--memory M] [--smp N] [--timeout S] -- PROGRAM [ARGS]`:
//!   runs PROGRAM inside a QEMU guest, through the vcuda kernel module and a private
//!   `vcuda-backend vhost-user` (see guest-driver/README.md and images/README.md).
//! - `vcuda vm image --out DIR -- PROGRAM [ARGS]`: writes that guest (kernel, initrd) for a
//!   QEMU or libvirt domain of one's own (deploy/README.md).

mod libdir;
mod run;
mod vm;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "vcuda",
    version,
    about = "Run unmodified CUDA programs through vcuda"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Executor {
    /// The real GPU if one is usable, else the CPU executor.
    Auto,
    /// The CPU reference executor (PTX interpreter): no GPU needed.
    Cpu,
    /// The host's GPU through the CUDA driver.
    Cuda,
}

impl Executor {
    fn as_str(self) -> &'static str {
        match self {
            Executor::Auto => "auto",
            Executor::Cpu => "cpu",
            Executor::Cuda => "cuda",
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a CUDA program through vcuda.
    Run {
        /// Executor for the private backend (ignored when VCUDA_SOCKET names a running one).
        #[arg(long, value_enum, default_value_t = Executor::Auto)]
        executor: Executor,
        /// CPU executor: the memory checker (the backend's --memcheck): kernel accesses
        /// outside an allocation fail, even a few bytes past its end where a GPU would let
        /// them read padding, and each fault is reported with the nearest allocation.
        #[arg(long)]
        memcheck: bool,
        /// The program and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        program: Vec<String>,
    },
    /// Print the directory holding libvcuda.so and its soname links.
    LibDir,
    /// Run CUDA programs inside a virtual machine (QEMU + the vcuda kernel module).
    Vm {
        #[command(subcommand)]
        command: VmCommand,
    },
}

#[derive(Subcommand, Debug)]
enum VmCommand {
    /// Boot a guest, run PROGRAM in it through /dev/vcuda, print its output, return its status.
    ///
    /// The guest image is built (or reused from ~/.cache/vcuda) with images/build-guest.sh,
    /// or taken from VCUDA_IMAGE_DIR. Exit status: the program's; 124 on timeout; 125 if the
    /// VM failed to run it.
    Run {
        /// Executor for the backend.
        #[arg(long, value_enum, default_value_t = Executor::Auto)]
        executor: Executor,
        /// Guest RAM (MiB, or with an M/G suffix).
        #[arg(long, default_value = "2G", value_parser = vm::parse_memory)]
        memory: u64,
        /// Guest CPUs.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
        smp: u32,
        /// Request queues of the device (default: one per guest CPU, at most 16).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=16))]
        queues: Option<u32>,
        /// The backend polls each queue this many microseconds after its last chain, with
        /// the guest's kicks suppressed (EVENT_IDX), before it sleeps again: the backend's
        /// `--poll-us`. Costs up to a host core per busy queue; 0 (the default) never polls.
        #[arg(long, default_value_t = 0,
              value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
        poll_us: u32,
        /// Stop the VM after this many seconds (boot included).
        #[arg(long, default_value_t = 600)]
        timeout: u64,
        /// Accelerator: kvm if /dev/kvm works (auto), or force kvm or tcg.
        #[arg(long, env = "VCUDA_VM_ACCEL", default_value = "auto",
              value_parser = ["auto", "kvm", "tcg"])]
        accel: String,
        /// Set an environment variable for the program (repeatable). VCUDA_LOG is passed on.
        #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// Use the prebuilt image in DIR (images/build-guest.sh --out DIR).
        #[arg(long, env = "VCUDA_IMAGE_DIR", value_name = "DIR")]
        image_dir: Option<std::path::PathBuf>,
        /// Write the guest's serial console (kernel log, init status) to FILE.
        #[arg(long, value_name = "FILE")]
        console_log: Option<std::path::PathBuf>,
        /// Show the guest's serial console on stderr.
        #[arg(short, long)]
        verbose: bool,
        /// After the program, unload the vcuda module in the guest; fail (125) if that fails.
        #[arg(long)]
        check_unload: bool,
        /// Copy the file or directory tree SRC into the guest at DEST (default: the same
        /// absolute path), for the data files a program reads or an interpreter's packages
        /// (repeatable). Shared libraries among them bring their own libraries along.
        #[arg(long = "add", value_name = "SRC[:DEST]")]
        add: Vec<String>,
        /// Live-migrate the running guest once, SECONDS after QEMU starts, to a second QEMU
        /// with a backend of its own on this machine; the program finishes there. Prints the
        /// downtime and the bytes moved (MIGRATION.md).
        #[arg(long, value_name = "SECONDS")]
        migrate_after: Option<f64>,
        /// Live-migrate the running guest each time a line the program prints (stdout)
        /// contains TEXT, to a new QEMU and backend each time (as --migrate-after does).
        #[arg(long, value_name = "TEXT")]
        migrate_on: Option<String>,
        /// With --migrate-after or --migrate-on: move device memory only inside the
        /// downtime, with no copy ahead of it (the backends' pre-copy, MIGRATION.md; on the
        /// CPU executor it is on by default).
        #[arg(long)]
        no_precopy: bool,
        /// The program and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        program: Vec<String>,
    },
    /// Write the guest `vm run` would boot into DIR (bzImage, initrd), for your own QEMU or
    /// libvirt domain (deploy/libvirt/vcuda-domain-direct.xml).
    ///
    /// The initrd's init runs PROGRAM with ARGS, prints `VCUDA-GUEST: exit-status=N` on the
    /// serial console (and the program's output there, lacking vcuda's virtio-serial ports)
    /// and powers the guest off. Prints the files and the QEMU (with its firmware) to boot.
    Image {
        /// The directory to write bzImage and initrd into (created if need be).
        #[arg(long, value_name = "DIR")]
        out: std::path::PathBuf,
        /// Set an environment variable for the program (repeatable).
        #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// Use the prebuilt image in DIR (images/build-guest.sh --out DIR).
        #[arg(long, env = "VCUDA_IMAGE_DIR", value_name = "DIR")]
        image_dir: Option<std::path::PathBuf>,
        /// Copy the file or directory tree SRC into the guest at DEST (repeatable).
        #[arg(long = "add", value_name = "SRC[:DEST]")]
        add: Vec<String>,
        /// The program and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        program: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Run {
            executor,
            memcheck,
            program,
        } => run::run(executor.as_str(), memcheck, &program),
        Command::LibDir => libdir::lib_dir().map(|d| {
            println!("{}", d.display());
            0
        }),
        Command::Vm {
            command:
                VmCommand::Run {
                    executor,
                    memory,
                    smp,
                    queues,
                    poll_us,
                    timeout,
                    accel,
                    env,
                    image_dir,
                    console_log,
                    verbose,
                    check_unload,
                    add,
                    migrate_after,
                    migrate_on,
                    no_precopy,
                    program,
                },
        } => match migrate_after.map(std::time::Duration::try_from_secs_f64) {
            Some(Err(_)) => Err(std::io::Error::other(
                "--migrate-after wants a number of seconds",
            )),
            after => vm::run(&vm::VmOptions {
                executor: executor.as_str().to_owned(),
                memory_mib: memory,
                smp,
                queues,
                poll_us,
                timeout: std::time::Duration::from_secs(timeout),
                accel,
                env,
                image_dir,
                console_log,
                verbose,
                check_unload,
                add,
                migrate_after: after.and_then(Result::ok),
                migrate_on,
                precopy: !no_precopy,
                program,
            }),
        },
        Command::Vm {
            command:
                VmCommand::Image {
                    out,
                    env,
                    image_dir,
                    add,
                    program,
                },
        } => vm::image(
            &vm::VmOptions {
                env,
                image_dir,
                add,
                program,
                ..vm::VmOptions::default()
            },
            &out,
        ),
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("vcuda: {e}");
            ExitCode::from(125)
        }
    }
}
