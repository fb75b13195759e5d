//! `laya`: the host binary.
//!
//! `laya serve` is the msgpack-RPC host Neovim starts (src/rpc); every other
//! subcommand (predict, protocol, eval, bench) is the engine's CLI (src/cli.rs).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("serve") => laya::rpc::serve(&args[1..]),
        _ => laya::cli::run(&args),
    };
    std::process::exit(code);
}
