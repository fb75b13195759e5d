"""The shipped default model (models/) passes the loader's checks in both
variants, its int8 and bf16 files agree on the ranking, it predicts the held-out
text far better than chance, and the held-out samples are well formed."""

import glob
import os
import tempfile
import unittest

import mlx.core as mx
import numpy as np

from training import shards
from training.export import load
from training.vocab import Vocab

mx.set_default_device(mx.cpu)
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODELS = os.path.join(ROOT, "models")
DATA = os.path.join(ROOT, "tests", "data")


class ShippedModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.int8, cls.meta = load(os.path.join(MODELS, "laya-default.safetensors"))
        cls.vocab = Vocab(os.path.join(MODELS, "laya-default.vocab.txt"))
        text = open(os.path.join(DATA, "heldout-code.txt"), encoding="utf-8").read().split("\f\n")[0]
        cls.ids = cls.vocab.encode(text)[:400]

    def test_metadata(self):
        self.assertEqual(self.meta["dtype"], "int8")
        self.assertEqual(self.meta["vocab_sha256"], self.vocab.sha256)
        self.assertEqual(int(self.meta["vocab_size"]), len(self.vocab))
        self.assertLessEqual(os.path.getsize(os.path.join(MODELS, "laya-default.safetensors")), 16_000_000)

    def test_bf16_ranks_like_int8(self):
        path = os.path.join(MODELS, "laya-default-bf16.safetensors")
        if not os.path.exists(path):
            self.skipTest("no bf16 variant shipped")
        bf16, meta = load(path)
        self.assertEqual(meta["dtype"], "bf16")
        x = mx.array([self.ids[:-1]])
        a, _ = self.int8(x)
        b, _ = bf16(x)
        self.assertGreater(float(mx.mean(mx.argmax(a, -1) == mx.argmax(b, -1))), 0.9)

    def test_q4_ranks_like_bf16_and_is_read_through_its_quantization(self):
        """The 4-bit variant (training/qat.py): its metadata names the
        quantization, the loader applies it (the dequantized matrices differ
        from the stored numbers and sit on MLX's grid), and it ranks like
        the model it was trained from."""
        path = os.path.join(MODELS, "laya-default-q4.safetensors")
        if not os.path.exists(path):
            self.skipTest("no q4 variant shipped")
        q4, meta = load(path)
        self.assertEqual((meta["dtype"], meta["quant_bits"], meta["quant_group"]), ("bf16", "4", "32"))
        stored = mx.load(path)["gru.wh"].astype(mx.float32)
        self.assertGreater(float(mx.max(mx.abs(q4.gru.Wh - stored))), 1e-4)
        again = mx.dequantize(*mx.quantize(stored, 32, 4), 32, 4)
        self.assertTrue(bool(mx.array_equal(q4.gru.Wh, again)))
        bf16, _ = load(os.path.join(MODELS, "laya-default-bf16.safetensors"))
        x = mx.array([self.ids[:-1]])
        a, _ = bf16(x)
        b, _ = q4(x)
        self.assertGreater(float(mx.mean(mx.argmax(a, -1) == mx.argmax(b, -1))), 0.85)

    def test_predicts_held_out_text(self):
        x, y = mx.array([self.ids[:-1]]), mx.array([self.ids[1:]])
        logits, _ = self.int8(x)
        nll = float(mx.mean(mx.logsumexp(logits, -1) - mx.take_along_axis(logits, y[..., None], -1)[..., 0]))
        self.assertLess(np.exp(nll), 100)  # chance is 16384

    def test_held_out_samples(self):
        names = sorted(glob.glob(os.path.join(DATA, "heldout-*.txt")))
        self.assertGreater(len(names), 10)  # prose, code and one per language
        for path in names:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            docs = text.split("\f\n")
            self.assertGreater(len(docs), 5 if path.endswith(("-prose.txt", "-code.txt")) else 2)
            self.assertLessEqual(len(text), 160_000)
            for d in docs:
                self.assertTrue(d.endswith("\n"))
                self.assertNotIn("\f", d)


class Shards(unittest.TestCase):
    def test_round_trip_under_the_size_limit(self):
        arrays = {"embed": np.random.rand(3000, 64).astype(np.float32), "b": np.arange(5, dtype=np.float32)}
        with tempfile.TemporaryDirectory() as d:
            paths = shards.save(arrays, os.path.join(d, "w"), limit=200_000)
            self.assertGreater(len(paths), 1)
            self.assertTrue(all(os.path.getsize(p) <= 200_000 for p in paths))
            back = shards.load(os.path.join(d, "w"))
        for k in arrays:
            np.testing.assert_array_equal(back[k], arrays[k])


if __name__ == "__main__":
    unittest.main()
