//! The drover binary: parse the command line, run the command, exit with its code.

use clap::Parser;

fn main() {
    let cli = drover::cli::Cli::parse();
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
    let code = runtime.block_on(drover::commands::dispatch(cli));
    std::process::exit(code);
}
