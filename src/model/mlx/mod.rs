//! The MLX backend: our C++ bridge (bridge.{h,cpp}) to the MLX library.
