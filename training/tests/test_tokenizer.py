"""The Python tokenizer reproduces the shared vectors (the Rust engine checks the same file)."""

import json
import os
import unittest

from training.tokenizer import tokenize

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "tokenizer_vectors.json")


class TokenizerVectors(unittest.TestCase):
    def test_vectors(self):
        with open(VECTORS, encoding="utf-8") as f:
            cases = json.load(f)
        self.assertGreaterEqual(len(cases), 40)
        for case in cases:
            with self.subTest(text=case["text"]):
                self.assertEqual(tokenize(case["text"]), case["tokens"])

    def test_words_are_metrics_words(self):
        # A word token is exactly METRICS.md's word: a maximal run of [A-Za-z0-9_].
        self.assertEqual(tokenize("a_b9 x-y"), ["a_b9", "x", "-", "y"])
        self.assertEqual(tokenize("\u00e9t\u00e9"), ["\u00e9", "t", "\u00e9"])

    def test_blanks_are_skipped_but_newlines_kept(self):
        self.assertEqual(tokenize(" \t\r\n\v\f x \n"), ["\n", "x", "\n"])


if __name__ == "__main__":
    unittest.main()
