//! Laya: predictive typing from a small local language model.
//!
//! The crate follows a keystroke's path: `rpc` (Neovim's msgpack-RPC, knows
//! nothing of tensors) → `engine` (tokens, state cache, candidates, ranking;
//! knows nothing of Neovim) → `model` (weights and backends). Below both:
//! `text` (tokenizer, vocabulary) and `math` (small numeric helpers).

pub mod cli;
pub mod engine;
pub mod learn;
pub mod lsp;
#[cfg(test)]
mod lua_lists;
pub mod math;
pub mod model;
pub mod rpc;
pub mod text;
