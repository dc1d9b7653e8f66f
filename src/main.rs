//! The `distlock-sim` command line: all of it lives in the library (`distlock_sim::cli`), so
//! that tests see the exact text and a user crate can run the same CLI.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    distlock_sim::cli::main()
}
