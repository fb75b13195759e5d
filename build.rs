//! Build script: with the `mlx` feature, compiles our C++ bridge
//! (src/model/mlx/bridge.cpp) against the prebuilt MLX library and links
//! libmlx dynamically with an rpath. Without the feature it does nothing.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_MLX").is_none() {
        return;
    }
    for var in ["MLX_DIR", "MLX_PYTHON", "PYTHON"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=src/model/mlx/bridge.cpp");
    println!("cargo:rerun-if-changed=src/model/mlx/bridge.h");

    let prefix = find_mlx().unwrap_or_else(|tried| {
        panic!(
            "\n\nThe `mlx` feature needs the MLX library (headers and libmlx), \
             and none was found.\nLooked in: {}\n\nInstall it with one of:\n  \
             pip install mlx            (macOS, Apple silicon)\n  \
             pip install 'mlx[cpu]'     (Linux, CPU)\n  \
             pip install mlx-cuda-13    (Linux, NVIDIA GPU)\n  \
             brew install mlx           (macOS, Homebrew)\n\
             then build again (the Python package is found through `python3`, \
             or the interpreter named by MLX_PYTHON / PYTHON), or point MLX_DIR \
             at a prefix holding include/mlx/mlx.h and lib/libmlx.*\n\n",
            tried.join("; ")
        )
    });
    let include = prefix.join("include");
    let lib = prefix.join("lib");
    println!("cargo:rustc-env=LAYA_MLX_PREFIX={}", prefix.display());

    cc::Build::new()
        .cpp(true)
        .std("c++20")
        .file("src/model/mlx/bridge.cpp")
        .include(&include)
        .opt_level(2)
        .flag_if_supported("-Wno-unused-parameter")
        .compile("laya_mlx_bridge");

    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=mlx");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        // dlopen of libcuda for the bridge's CUDA copy (in libc on new glibc).
        println!("cargo:rustc-link-lib=dylib=dl");
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
}

/// An MLX prefix: MLX_DIR, else the Python package, else Homebrew's.
/// On failure, the places looked at, for the error message.
fn find_mlx() -> Result<PathBuf, Vec<String>> {
    let mut tried = Vec::new();
    if let Some(dir) = env::var_os("MLX_DIR") {
        let dir = PathBuf::from(dir);
        if is_mlx_prefix(&dir) {
            return Ok(dir);
        }
        tried.push(format!(
            "MLX_DIR={} (no include/mlx/mlx.h + lib/libmlx)",
            dir.display()
        ));
    }
    let python = env::var("MLX_PYTHON")
        .or_else(|_| env::var("PYTHON"))
        .unwrap_or_else(|_| "python3".to_string());
    let script = "import mlx.core, os; print(os.path.dirname(mlx.core.__file__))";
    match Command::new(&python).args(["-c", script]).output() {
        Ok(out) if out.status.success() => {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if is_mlx_prefix(&dir) {
                return Ok(dir);
            }
            tried.push(format!(
                "{python}: mlx at {} lacks include/ or lib/",
                dir.display()
            ));
        }
        _ => tried.push(format!("{python} -c 'import mlx.core' (not importable)")),
    }
    let mut brew = Vec::new();
    if let Ok(out) = Command::new("brew").args(["--prefix", "mlx"]).output() {
        if out.status.success() {
            brew.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        }
    }
    for p in [
        "/opt/homebrew/opt/mlx",
        "/usr/local/opt/mlx",
        "/home/linuxbrew/.linuxbrew/opt/mlx",
    ] {
        brew.push(PathBuf::from(p));
    }
    for dir in brew {
        if is_mlx_prefix(&dir) {
            return Ok(dir);
        }
    }
    tried.push("Homebrew (brew --prefix mlx, /opt/homebrew/opt/mlx, /usr/local/opt/mlx)".into());
    Err(tried)
}

fn is_mlx_prefix(dir: &Path) -> bool {
    let lib = dir.join("lib");
    dir.join("include/mlx/mlx.h").is_file()
        && (lib.join("libmlx.so").is_file() || lib.join("libmlx.dylib").is_file())
}
