//! An engine on a model file with a tuning spec ("key=value,..."), for the
//! engine tests. Included with
//! `#[path = "support/default_engine.rs"] mod default_engine;`.

#![allow(dead_code)] // each test file uses part of it

use laya::engine::{Engine, EngineOptions, Request, Tuning};
use std::path::{Path, PathBuf};

/// The repository's `models/` folder.
pub fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
}

/// An engine on the cpu backend with `model` (whatever it loads: errors are
/// the caller's to check).
pub fn engine_at(model: PathBuf, tune: &str) -> Engine {
    let mut tuning = Tuning::default();
    tuning.set(tune).unwrap();
    Engine::new(EngineOptions {
        model_path: Some(model),
        backend: laya::model::BackendChoice::Cpu,
        tuning,
        ..EngineOptions::default()
    })
}

/// An engine on the default model, which must load.
pub fn engine(tune: &str) -> Engine {
    let e = engine_at(models().join("laya-default.safetensors"), tune);
    assert_eq!(e.info().model_error, None);
    e
}

/// An engine on the neovim model (the default until 2026-12-06), which must
/// load: for the tests that name words of its vocabulary and lists.
pub fn neovim(tune: &str) -> Engine {
    let e = engine_at(models().join("laya-neovim.safetensors"), tune);
    assert_eq!(e.info().model_error, None);
    e
}

/// A request for 3 candidates with `before` the cursor in `buffer`;
/// `seen_last`: the previous answer was read (see `Request::seen_last`).
pub fn request(buffer: u64, before: &str, seen_last: bool) -> Request<'_> {
    Request {
        buffer,
        before,
        filetype: "",
        kind: Default::default(),
        k: 3,
        seen_last,
        learn: false,
    }
}
