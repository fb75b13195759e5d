"""A file's matrices with bits of their own (`quant_bits.<matrix>`,
models/FORMAT.md): `qat install --embed-bits 8` writes the key, the loader
dequantizes each matrix with its bits, and a bad key is refused by name."""

import contextlib
import io
import os
import shutil
import tempfile
import unittest

import mlx.core as mx
import numpy as np

from training.export import FormatError, MATRICES, export, export_quantized, from_tensors, load, shapes
from training.qat import install
from training.vocab import write

mx.set_default_device(mx.cpu)

V, E, H = 20, 32, 64  # sizes that are multiples of the group


def deq(w, bits, group=32):
    return mx.dequantize(*mx.quantize(w, group, bits), group, bits)


class AffineBits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="laya-affine-bits-")
        cls.vocab = os.path.join(cls.dir, "m.vocab.txt")
        write(["<unk>", "<s>", "<nl>"] + [f"w{i}" for i in range(3, V)], cls.vocab)
        rng = np.random.default_rng(5)
        t = {n: (rng.standard_normal(s) * 0.2).astype(np.float32) for n, s in shapes(V, E, H).items()}
        cls.like = export(from_tensors(t), cls.vocab, os.path.join(cls.dir, "m-bf16.safetensors"), "bf16")
        cls.student = os.path.join(cls.dir, "student.safetensors")
        mx.save_safetensors(cls.student, {n: mx.array(x) for n, x in t.items()})
        # What a file holds: the student's numbers in bf16, as f32.
        cls.stored = {n: mx.array(x).astype(mx.bfloat16).astype(mx.float32) for n, x in t.items()}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def matrices(self, model):
        return dict(zip(MATRICES, (model.embed.weight, model.gru.Wx, model.gru.Wh, model.proj.weight)))

    def test_an_8_bit_embedding_loads_dequantized_with_its_own_bits(self):
        out = os.path.join(self.dir, "m-q4.safetensors")
        with contextlib.redirect_stdout(io.StringIO()):
            install([self.student, "--like", self.like, "--group", "32", "--embed-bits", "8", "--out", out])
        model, meta = load(out, self.vocab)
        self.assertEqual((meta["quant_bits"], meta["quant_group"], meta["quant_bits.embed"]), ("4", "32", "8"))
        self.assertEqual(sorted(k for k in meta if k.startswith("quant_bits.")), ["quant_bits.embed"])
        got = self.matrices(model)
        for name in MATRICES:
            bits = 8 if name == "embed" else 4
            self.assertTrue(bool(mx.array_equal(got[name], deq(self.stored[name], bits))), name)
        # The 8 bits matter: a 4-bit embedding is another model.
        self.assertGreater(float(mx.max(mx.abs(got["embed"] - deq(self.stored["embed"], 4)))), 1e-4)

    def test_install_takes_the_bits_the_run_trained_with(self):
        """A student's OUT.json says how it was trained: install follows it,
        and an option that contradicts it is refused."""
        import json

        student = os.path.join(self.dir, "e8.safetensors")
        shutil.copy(self.student, student)
        with open(os.path.join(self.dir, "e8.json"), "w") as f:
            json.dump({"bits": 4, "group": 32, "embed_bits": 8}, f)
        out = os.path.join(self.dir, "m-q4.safetensors")  # -q4 reads m.vocab.txt
        with contextlib.redirect_stdout(io.StringIO()):
            install([student, "--like", self.like, "--out", out])
        _, meta = load(out, self.vocab)
        self.assertEqual((meta["quant_bits"], meta["quant_group"], meta.get("quant_bits.embed")), ("4", "32", "8"))
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
            install([student, "--like", self.like, "--embed-bits", "4", "--out", out])
        self.assertIn("trained with 8", err.getvalue())

    def test_a_key_is_written_only_where_it_differs(self):
        out = export_quantized(self.student, self.like, os.path.join(self.dir, "same-q4.safetensors"), 4, 32,
                               {"embed": 4})
        model, meta = load(out, self.vocab)
        self.assertFalse([k for k in meta if k.startswith("quant_bits.")])
        got = self.matrices(model)
        for name in MATRICES:
            self.assertTrue(bool(mx.array_equal(got[name], deq(self.stored[name], 4))), name)

    def test_bad_keys_are_refused_by_name(self):
        arrays, meta = mx.load(self.like, return_metadata=True)
        q4 = {"quant_bits": "4", "quant_group": "32"}
        for tag, extra, words in [
            ("name", {**q4, "quant_bits.foo": "8"}, ["quant_bits.foo", "quant_bits.embed", "quant_bits.proj.w"]),
            ("value", {**q4, "quant_bits.embed": "5"}, ["quant_bits.embed", "4 or 8"]),
            ("alone", {"quant_bits.gru.wh": "8"}, ["quant_bits.gru.wh", "quant_bits and quant_group"]),
            # what the Rust loader refuses, the Python one too
            ("spaced", {"quant_bits": " 4", "quant_group": "32"}, ["quant_bits", "not allowed"]),
            ("half", {"quant_bits": "4"}, ["quant_bits and quant_group go together"]),
        ]:
            path = os.path.join(self.dir, f"bad-{tag}.safetensors")
            mx.save_safetensors(path, arrays, metadata={**meta, **extra})
            with self.assertRaises(FormatError, msg=tag) as caught:
                load(path, self.vocab)
            for w in words:
                self.assertIn(w, str(caught.exception), tag)


if __name__ == "__main__":
    unittest.main()
