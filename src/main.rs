//! The `nightshift` command: wires the core to a terminal.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
