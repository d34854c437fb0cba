// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda`: run unmodified CUDA programs through vcuda.
//!
//! - `vcuda run [--executor cpu|cuda|auto] -- PROGRAM [ARGS]`: runs PROGRAM with
//!   `libvcuda.so` in place of libcudart. Unless `VCUDA_SOCKET` names a running backend, a
//!   private `vcuda-backend` is started on a temporary socket for the program's lifetime.
//! - `vcuda lib-dir`: prints the directory holding `libvcuda.so` and its soname links
//!   (`libcudart.so.13`, `libcudart.so.12`), for `LD_LIBRARY_PATH`.

mod libdir;
mod run;

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
        /// The program and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        program: Vec<String>,
    },
    /// Print the directory holding libvcuda.so and its soname links.
    LibDir,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Run { executor, program } => run::run(executor.as_str(), &program),
        Command::LibDir => libdir::lib_dir().map(|d| {
            println!("{}", d.display());
            0
        }),
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("vcuda: {e}");
            ExitCode::from(125)
        }
    }
}
