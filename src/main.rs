//! `laya`: the host binary. `laya serve` is the msgpack-RPC host Neovim
//! starts (src/rpc), `laya lsp` the Language Server (src/lsp); the other
//! subcommands run the engine directly (src/cli).

fn main() {
    std::process::exit(laya::cli::run());
}
