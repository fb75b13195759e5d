"""Calibrated int8 rounding (export.quantize_calibrated) on a tiny random
model: never worse than round-to-nearest on the calibration inputs, integers
within int8's symmetric range, and the exported file in the same format
(names, dtypes, shapes) that the loader checks."""

import os
import shutil
import tempfile
import unittest

import mlx.core as mx
import numpy as np

from training.export import (export, hessians, load, quantize_calibrated, quantize_embed, quantize_rows, row_errors,
                             shapes, tensors)
from training.model import LayaLM

mx.set_default_device(mx.cpu)


class CalibratedInt8(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mx.random.seed(3)
        cls.v, cls.e, cls.h = 50, 16, 24
        cls.model = LayaLM(cls.v, cls.e, cls.h)
        rng = np.random.default_rng(0)
        cls.streams = [rng.integers(0, cls.v, 900).astype(np.int32), rng.integers(0, cls.v, 700).astype(np.int32)]
        cls.hess = hessians(cls.model, cls.streams, rows=4, chunk=32)

    def matrices(self):
        return [(k, h) for k, h in self.hess.items() if k != "embed.count"]

    def test_hessians_cover_the_matrices(self):
        w = tensors(self.model)
        self.assertEqual(set(self.hess), {"embed", "embed.count", "gru.wx", "gru.wh", "proj.w"})
        self.assertEqual(self.hess["embed.count"].shape, (self.v,))
        self.assertEqual(self.hess["embed.count"].sum(), sum(len(s) // 4 * 4 for s in self.streams))
        for name, hs in self.matrices():
            cols = w[name].shape[1]
            self.assertEqual(hs.shape, (cols, cols))
            np.testing.assert_allclose(hs, hs.T, rtol=1e-12, atol=1e-9)

    def test_hessians_follow_the_models_equations(self):
        # hessians() steps the GRU in numpy (faster on the CPU than MLX): its
        # sums must be those of the states model.py's GRU gives.
        ids = self.streams[0][: 4 * 40].reshape(4, 40)
        x = self.model.embed(mx.array(ids))
        h = self.model.gru(x)
        after = np.array(h).reshape(-1, self.h)
        before = np.array(mx.concatenate([mx.zeros((4, 1, self.h)), h[:, :-1]], axis=1)).reshape(-1, self.h)
        mine = hessians(self.model, [ids.ravel()], rows=4, chunk=16)
        for name, a in [("gru.wh", before), ("proj.w", after)]:
            np.testing.assert_allclose(mine[name], a.T.astype(np.float64) @ a, rtol=1e-4, atol=1e-4, err_msg=name)

    def test_calibrated_error_not_above_round_to_nearest(self):
        w = tensors(self.model)
        for name, hs in self.matrices():
            wf = np.array(w[name], np.float32)
            q, s = quantize_calibrated(wf, hs)
            self.assertEqual(q.dtype, mx.int8)
            self.assertEqual(s.dtype, mx.float32)
            self.assertEqual(tuple(q.shape), wf.shape)
            self.assertEqual(tuple(s.shape), wf.shape[:1])
            qn, sn = np.array(q).astype(np.int32), np.array(s)
            self.assertLessEqual(np.abs(qn).max(), 127)
            self.assertTrue(np.all(sn > 0))
            qr, sr = quantize_rows(mx.array(wf))
            dequant = lambda q, s: np.array(q).astype(np.float64) * np.array(s).astype(np.float64)[:, None]
            cal = row_errors(wf, dequant(q, s), hs)
            rtn = row_errors(wf, dequant(qr, sr), hs)
            self.assertTrue(np.all(cal <= rtn * (1 + 1e-9) + 1e-12), name)
            self.assertLess(cal.sum(), rtn.sum(), name)
            # deterministic
            q2, s2 = quantize_calibrated(wf, hs)
            self.assertTrue(np.array_equal(np.array(q2), np.array(q)) and np.array_equal(np.array(s2), sn))

    def test_embedding_weighs_its_input_role(self):
        w = {k: np.array(a, np.float32) for k, a in tensors(self.model).items()}
        counts, hout = self.hess["embed.count"], self.hess["embed"]
        q, s = quantize_embed(w["embed"], hout, counts, w["gru.wx"])
        self.assertEqual((q.dtype, tuple(q.shape), s.dtype, tuple(s.shape)),
                         (mx.int8, w["embed"].shape, mx.float32, (self.v,)))
        self.assertLessEqual(np.abs(np.array(q).astype(np.int32)).max(), 127)
        # without the input role: the output layer's calibration alone
        q0, s0 = quantize_embed(w["embed"], hout, counts, w["gru.wx"], input_weight=0)
        q1, s1 = quantize_calibrated(w["embed"], hout)
        self.assertTrue(np.array_equal(np.array(q0), np.array(q1)) and np.array_equal(np.array(s0), np.array(s1)))
        # with it: smaller errors on the GRU's input where tokens were read
        wx = w["gru.wx"].astype(np.float64)
        read_err = lambda q, s: (counts * (((w["embed"] - np.array(q).astype(np.float64) * np.array(s)[:, None])
                                            @ wx.T) ** 2).sum(1)).sum()
        self.assertLess(read_err(q, s), read_err(q1, s1))

    def test_exported_file_keeps_the_format(self):
        d = tempfile.mkdtemp(prefix="laya-int8-test-")
        try:
            vocab = os.path.join(d, "m.vocab.txt")
            with open(vocab, "w", encoding="utf-8") as f:
                f.write("".join(f"t{i}\n" for i in range(self.v)))
            plain = export(self.model, vocab, os.path.join(d, "plain.safetensors"), "int8")
            cal = export(self.model, vocab, os.path.join(d, "cal.safetensors"), "int8", self.hess)
            a, _ = mx.load(plain, return_metadata=True)
            b, meta = mx.load(cal, return_metadata=True)
            self.assertEqual(meta["dtype"], "int8")
            self.assertEqual({k: (x.dtype, x.shape) for k, x in a.items()},
                             {k: (x.dtype, x.shape) for k, x in b.items()})
            for name, shape in shapes(self.v, self.e, self.h).items():
                self.assertEqual(tuple(b[name].shape), shape)
                if len(shape) == 2:
                    self.assertEqual(b[name].dtype, mx.int8)
                    self.assertEqual(b[name + ".scale"].dtype, mx.float32)
            model, _ = load(cal, vocab)  # the loader's checks pass
            self.assertEqual(model.sizes, (self.v, self.e, self.h))
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
