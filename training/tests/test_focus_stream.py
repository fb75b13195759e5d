"""`encode --focus`: the fine-tuning stream towards a few languages holds
every training document of them, their docs' prose, a stable share of the
rest, and the validation and test streams copied beside it."""

import os
import tempfile
import unittest
from unittest import mock

import numpy as np

from training import data
from training.vocab import Vocab

VOCAB = os.path.join(os.path.dirname(__file__), "..", "..", "models", "laya-default.vocab.txt")

DOCS = [{"kind": "code", "lang": "shell", "src": "debian-shell", "text": 'echo "$HOME"\n'},
        {"kind": "code", "lang": "ruby", "src": "gems", "text": "puts 'hi'\n"},
        {"kind": "prose", "src": "shell-docs", "text": "The shell reads a line.\n"},
        {"kind": "prose", "src": "rust-docs", "text": "Borrowing rules.\n"},
        {"kind": "code", "lang": "python", "src": "pypi", "text": "print(1)\n"}]


class FocusStream(unittest.TestCase):
    def test_in_focus(self):
        self.assertEqual([data.in_focus(d, ["shell"]) for d in DOCS], [True, False, True, False, False])
        self.assertEqual([data.in_focus(d, ["ruby"]) for d in DOCS], [False, True, False, False, False])

    def run_focus(self, general):
        with tempfile.TemporaryDirectory() as tmp:
            src, out = os.path.join(tmp, "data"), os.path.join(tmp, "focus")
            os.makedirs(src)
            np.arange(5, dtype=np.uint16).tofile(os.path.join(src, "valid.shell.u16"))
            np.arange(3, dtype=np.uint16).tofile(os.path.join(src, "train.u16"))  # not copied
            with mock.patch.object(data, "DATA", src), mock.patch.object(data, "read_docs", lambda split: iter(DOCS)):
                data.build_focus(VOCAB, ["shell"], general, out, log=lambda *_: None, workers=1)
            self.assertEqual(sorted(os.listdir(out)), ["train.u16", "valid.shell.u16"])
            np.testing.assert_array_equal(np.fromfile(os.path.join(out, "valid.shell.u16"), np.uint16), np.arange(5))
            return np.fromfile(os.path.join(out, "train.u16"), np.uint16)

    def test_stream_holds_the_focus_and_a_share_of_the_rest(self):
        v = Vocab(VOCAB)
        lengths = [len(v.encode(d["text"])) for d in DOCS]
        self.assertEqual(len(self.run_focus(0.0)), lengths[0] + lengths[2])
        self.assertEqual(len(self.run_focus(1.0)), sum(lengths))
        np.testing.assert_array_equal(self.run_focus(1.0), self.run_focus(1.0))  # a fixed order


if __name__ == "__main__":
    unittest.main()
