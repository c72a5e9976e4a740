//! The drover binary: parse the command line, run the command, exit with its code.

use clap::Parser;

// Its two messages are drover's own words and the system's reason, before drover's
// output helpers (crate-private to the library) are reachable.
#[allow(clippy::disallowed_macros)]
fn main() {
    let cli = drover::cli::Cli::parse();
    // The sandbox launcher must stay single-threaded (Landlock restricts one thread):
    // it runs before the async runtime exists.
    if let drover::cli::Command::SandboxExec(args) = &cli.command {
        let code = drover::sandbox_exec_main(&args.launch_request());
        std::process::exit(code);
    }
    // Before any thread exists: the agent's commands must not read drover's secrets from
    // /proc/<drover>/environ.
    // SAFETY: no other thread exists yet (the runtime is built below).
    if let Err(reason) = unsafe { drover::hide_own_environment() } {
        eprintln!(
            "drover: warning: drover's environment stays readable in /proc by the agent's commands: {reason}"
        );
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("drover: cannot start the async runtime: {error}");
            std::process::exit(drover::exit::RUNNER_ERROR);
        }
    };
    let code = runtime.block_on(drover::dispatch(cli));
    std::process::exit(code);
}
