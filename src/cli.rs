//! The engine's command line: predict | protocol | eval | bench | --version.

/// Runs a CLI subcommand; returns the process exit code.
pub fn run(args: &[String]) -> i32 {
    let _ = args;
    eprintln!("laya: usage: laya serve|predict|protocol|eval|bench");
    2
}
