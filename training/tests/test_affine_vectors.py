"""tests/data/affine_vectors.json holds matrices and what MLX's affine
quantize then dequantize makes of them; the Rust loader's port
(`affine_dequantized`, src/model/quant.rs) is checked against the file. This
test checks the file against the MLX installed now, so that a change in
MLX's rounding shows up here rather than as a silent difference between
the backends. `python -m training.tests.test_affine_vectors` rewrites it."""

import json
import os
import unittest

import numpy as np

PATH = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "affine_vectors.json")
SETTINGS = ((4, 32), (4, 64), (8, 64))


def matrices():
    """Trained-weight-like rows (bf16 values) plus corner cases: a group of
    zeros, a constant group, a negative edge, a lone outlier."""
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((6, 128)) * 0.08).astype(np.float32)
    w[1, :64] = 0.0
    w[2, 64:] = 0.25
    w[3, :32] -= 0.4
    w[4, 5] = 3.0
    w[5] *= 40
    bf16 = (w.view(np.uint32) + 0x8000) & 0xFFFF0000  # round to bf16 (no ties in these values)
    return bf16.view(np.float32)


def vectors():
    import mlx.core as mx

    w = matrices()
    out = []
    for bits, group in SETTINGS:
        q = mx.quantize(mx.array(w), group, bits)
        d = np.array(mx.dequantize(*q, group, bits))
        out.append({"bits": bits, "group": group, "dequantized": d.tolist()})
    return {"rows": w.shape[0], "cols": w.shape[1], "weights": w.tolist(), "cases": out, "mlx": mx.__version__}


class AffineVectors(unittest.TestCase):
    def test_file_is_what_mlx_computes(self):
        try:
            import mlx.core  # noqa: F401
        except ImportError:
            self.skipTest("no MLX")
        with open(PATH) as f:
            stored = json.load(f)
        now = vectors()
        self.assertEqual(stored["weights"], now["weights"])
        for a, b in zip(stored["cases"], now["cases"]):
            self.assertEqual((a["bits"], a["group"]), (b["bits"], b["group"]))
            np.testing.assert_array_equal(np.float32(a["dequantized"]), np.float32(b["dequantized"]))

    def test_cases_differ_from_the_weights(self):
        """The vectors can catch a loader that skips quantization."""
        with open(PATH) as f:
            stored = json.load(f)
        w = np.float32(stored["weights"])
        for c in stored["cases"]:
            self.assertGreater(np.abs(np.float32(c["dequantized"]) - w).max(), 1e-4)


if __name__ == "__main__":
    with open(PATH, "w") as f:
        json.dump(vectors(), f)
        f.write("\n")
    print(f"wrote {PATH}")
