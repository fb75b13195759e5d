"""A tiny end-to-end run on CPU: texts -> vocabulary -> token ids -> training
(tiny config, with a resume) -> export in f32/bf16/int8 -> the checked loader,
and the exported tensors stepped by FORMAT.md's equations in numpy."""

import json
import os
import shutil
import tempfile
import unittest

import mlx.core as mx
import numpy as np

from training.evaluate import evaluate
from training.export import FormatError, export, load, tensors
from training.model import LayaLM
from training.train import config, train
from training.vocab import Vocab, choose, count_tokens, coverage, write

mx.set_default_device(mx.cpu)

TEXTS = [
    "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n",
    "The quick brown fox jumps over the lazy dog.\nThe dog sleeps.\n",
    "local function greet(name)\n  return 'hello ' .. name\nend\n",
    ":set tabstop=4 shiftwidth=4 expandtab\n:help 'tabstop'\n",
    "fn main() {\n    let v: Vec<u8> = vec![1, 2, 3];\n    println!(\"{:?}\", v);\n}\n",
] * 6


def format_step(t, h, w):
    """One step exactly as models/FORMAT.md writes it (numpy, f32)."""
    H = h.shape[0]
    x = w["embed"][t]
    gx = w["gru.wx"] @ x + w["gru.b"]
    gh = w["gru.wh"] @ h
    sig = lambda v: 1 / (1 + np.exp(-v))
    r = sig(gx[:H] + gh[:H])
    z = sig(gx[H : 2 * H] + gh[H : 2 * H])
    n = np.tanh(gx[2 * H :] + r * (gh[2 * H :] + w["gru.bhn"]))
    h2 = (1 - z) * n + z * h
    logits = w["embed"] @ (w["proj.w"] @ h2 + w["proj.b"]) + w["out.b"]
    return h2, logits


class Pipeline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="laya-train-test-")
        cls.vocab_path = os.path.join(cls.dir, "m.vocab.txt")
        write(choose(count_tokens(TEXTS), 60), cls.vocab_path)
        cls.vocab = Vocab(cls.vocab_path)
        cls.ids = np.concatenate([np.array(cls.vocab.encode(t), np.uint16) for t in TEXTS])
        cls.cfg = config("tiny")
        cls.model, cls.history = train(cls.ids, {"all": cls.ids}, len(cls.vocab), cls.cfg,
                                       os.path.join(cls.dir, "ckpt"), log=lambda m: None)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def test_vocabulary_file(self):
        self.assertEqual(self.vocab.tokens[:3], ["<unk>", "<s>", "<nl>"])
        self.assertEqual(len(self.vocab), 60)
        self.assertEqual(self.vocab.encode("return zzzunknown\n")[:1], [1])
        self.assertIn(0, self.vocab.encode("zzzunknown"))
        self.assertGreater(coverage(self.vocab, TEXTS)["coverage"], 0.8)

    def test_training_learns(self):
        self.assertLess(self.history[-1]["all_loss"], np.log(len(self.vocab)) - 0.5)

    def test_resume_continues_the_same_run(self):
        d = os.path.join(self.dir, "resume")
        train(self.ids, {}, len(self.vocab), self.cfg, d, log=lambda m: None, until=20)
        resumed, _ = train(self.ids, {}, len(self.vocab), self.cfg, d, log=lambda m: None)
        for name, a in tensors(self.model).items():
            np.testing.assert_allclose(np.array(tensors(resumed)[name]), np.array(a), rtol=1e-4, atol=1e-5,
                                       err_msg=name)

    def test_truncated_bptt_resumes_with_its_carried_state(self):
        from dataclasses import replace
        cfg = replace(self.cfg, tbptt=True, batch_size=3, seq_len=5)
        whole, _ = train(self.ids, {}, len(self.vocab), cfg, os.path.join(self.dir, "tb-whole"), log=lambda m: None)
        d = os.path.join(self.dir, "tb-split")
        train(self.ids, {}, len(self.vocab), cfg, d, log=lambda m: None, until=17)
        self.assertTrue(os.path.exists(os.path.join(d, "hidden.safetensors")))
        resumed, _ = train(self.ids, {}, len(self.vocab), cfg, d, log=lambda m: None)
        for name, a in tensors(whole).items():
            np.testing.assert_allclose(np.array(tensors(resumed)[name]), np.array(a), rtol=1e-4, atol=1e-5,
                                       err_msg=name)

    def test_stop_after_checkpoints_and_resumes(self):
        d = os.path.join(self.dir, "stop")
        _, hist = train(self.ids, {}, len(self.vocab), self.cfg, d, log=lambda m: None, stop_after=0)
        with open(os.path.join(d, "state.json")) as f:
            self.assertEqual(json.load(f)["step"], 1)
        resumed, _ = train(self.ids, {}, len(self.vocab), self.cfg, d, log=lambda m: None)
        for name, a in tensors(self.model).items():
            np.testing.assert_allclose(np.array(tensors(resumed)[name]), np.array(a), rtol=1e-4, atol=1e-5,
                                       err_msg=name)

    def test_export_and_reload(self):
        x = mx.array(np.array([self.vocab.encode(TEXTS[0])[:12]], np.int32))
        ref, _ = self.model(x)
        for dtype, tol in (("f32", 1e-6), ("bf16", 0.05), ("int8", 0.05)):
            path = export(self.model, self.vocab_path, os.path.join(self.dir, f"m-{dtype}.safetensors"), dtype)
            model, meta = load(path, self.vocab_path)
            self.assertEqual(meta["dtype"], dtype)
            self.assertEqual(meta["vocab_sha256"], self.vocab.sha256)
            self.assertEqual((meta["vocab_size"], meta["embed_dim"], meta["hidden_dim"]), ("60", "16", "24"))
            got, _ = model(x)
            err = float(mx.max(mx.abs(got - ref)) / mx.max(mx.abs(ref)))
            self.assertLess(err, tol, dtype)
            agree = float(mx.mean(mx.argmax(got, -1) == mx.argmax(ref, -1)))
            self.assertGreaterEqual(agree, 0.9, dtype)

    def test_format_equations_match_the_model(self):
        path = export(self.model, self.vocab_path, os.path.join(self.dir, "eq.safetensors"), "f32")
        w = {k: np.array(v) for k, v in mx.load(path).items()}
        seq = self.vocab.encode(TEXTS[1])[:10]
        ref, _ = self.model(mx.array(np.array([seq], np.int32)))
        ref = np.array(ref)[0]
        h = np.zeros(w["gru.wh"].shape[1], np.float32)
        for i, t in enumerate(seq):
            h, logits = format_step(t, h, w)
            np.testing.assert_allclose(logits, ref[i], rtol=1e-3, atol=1e-4)

    def test_loader_rejects_bad_files(self):
        good = export(self.model, self.vocab_path, os.path.join(self.dir, "good.safetensors"), "int8")
        arrays, meta = mx.load(good, return_metadata=True)

        def bad(name, arrays=arrays, meta=meta):
            path = os.path.join(self.dir, name + ".safetensors")
            mx.save_safetensors(path, arrays, metadata=meta)
            return path

        cases = [
            (bad("wrong-shape", {**arrays, "proj.b": mx.zeros((7,))}), "`proj.b`"),
            (bad("missing", {k: v for k, v in arrays.items() if k != "gru.bhn"}), "`gru.bhn` is missing"),
            (bad("wrong-dtype", {**arrays, "embed": arrays["embed"].astype(mx.float32)}), "`embed`"),
            (bad("no-scale", {k: v for k, v in arrays.items() if k != "embed.scale"}), "`embed.scale`"),
            (bad("tokenizer", meta={**meta, "tokenizer": "other"}), "tokenizer"),
            (bad("hash", meta={**meta, "vocab_sha256": "0" * 64}), "SHA-256"),
            (bad("sizes", meta={**meta, "hidden_dim": "25"}), "expected"),
        ]
        for path, words in cases:
            with self.subTest(path=os.path.basename(path)):
                with self.assertRaises(FormatError) as ctx:
                    load(path, self.vocab_path)
                self.assertIn(words, str(ctx.exception))
                self.assertIn(path, str(ctx.exception))

    def test_evaluation_metrics(self):
        r = evaluate(self.model, self.ids, self.vocab.tokens, batch_rows=2, window=16)
        self.assertLess(r["perplexity"], len(self.vocab))
        self.assertGreaterEqual(r["next_word_top3"], r["next_word_top1"])
        self.assertGreater(r["next_word_top1"], 0.0)

    def test_untrained_model_is_worse(self):
        fresh = LayaLM(len(self.vocab), 16, 24)
        a = evaluate(fresh, self.ids, self.vocab.tokens, batch_rows=2, window=16)
        b = evaluate(self.model, self.ids, self.vocab.tokens, batch_rows=2, window=16)
        self.assertLess(b["perplexity"], a["perplexity"])


if __name__ == "__main__":
    unittest.main()
