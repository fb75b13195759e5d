//! `laya`: the host binary. Subcommands: serve | predict | protocol | eval | bench.

fn main() {
    eprintln!("laya: not built yet");
    std::process::exit(2);
}
