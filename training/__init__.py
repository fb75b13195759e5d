"""Laya training pipeline: corpus -> vocabulary -> MLX training -> safetensors export -> evaluation."""
