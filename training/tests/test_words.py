"""The word list beside the vocabulary (FORMAT.md `<stem>.words.txt`): the
vocabulary step run on a tiny corpus writes it in the right format, with the
out-of-vocabulary total and only listed words outside the vocabulary; export's
install copies it beside each model; the shipped list is well formed."""

import json
import os
import shutil
import tempfile
import unittest
from collections import Counter
from unittest import mock

from training import __main__ as cli
from training.corpus import build
from training.data import copies
from training.tokenizer import is_word, tokenize
from training.vocab import Vocab, read_words, words_path, write_words

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODELS = os.path.join(ROOT, "models")

# Eight frequent words fill a vocabulary of 11 (with the three specials); the
# rest are out of it: `kubectl` and `deserialize_map` (listed: 4+ characters,
# twice or more), `foo` (too short), `onceonly` (once), `Zeta9`/`zeta9` (case
# kept apart, both listed; `zeta9` occurs once in a document the training
# stream takes three times).
TRAIN = [
    {"src": "pypi", "kind": "code", "text": "fn the of and to a is in\n" * 3 +
     "deserialize_map deserialize_map deserialize_map kubectl foo foo foo Zeta9 Zeta9 onceonly\n"},
    {"src": "nvim-runtime", "kind": "code", "text": "fn the of and to a is in kubectl zeta9\n"},
]
TEST = [{"src": "crates", "kind": kind, "text": "the of kubectl\n"} for kind in ("prose", "code")]


class VocabularyStepWritesTheWordList(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="laya-words-test-")
        corpus, out = os.path.join(cls.dir, "corpus"), os.path.join(cls.dir, "out")
        os.makedirs(corpus)
        for split, recs in (("train", TRAIN), ("test", TEST)):
            with open(os.path.join(corpus, f"{split}.jsonl"), "w", encoding="utf-8") as f:
                f.write("".join(json.dumps(r) + "\n" for r in recs))
        with mock.patch.object(build, "OUT", corpus), mock.patch.object(cli, "OUT", out), \
                mock.patch.object(cli, "log", lambda m: None):
            cli.main(["vocab", "--size", "11", "--workers", "1"])
        cls.vocab = Vocab(os.path.join(out, "laya-default.vocab.txt"))
        cls.words_path = words_path(cls.vocab.path)
        cls.total, cls.listed = read_words(cls.words_path)
        # What the weighted stream counts.
        cls.counts = Counter(t for r in TRAIN for _ in range(copies(r)) for t in tokenize(r["text"]))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def test_file_format(self):
        with open(self.words_path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        self.assertEqual(lines[-1], "")
        self.assertEqual(lines[0], f"<unk>\t{self.total}")
        for line in lines[1:-1]:
            word, count = line.split("\t")
            self.assertTrue(is_word(word) and count.isdigit(), line)

    def test_lists_frequent_long_out_of_vocabulary_words_most_frequent_first(self):
        self.assertEqual(self.listed, [("kubectl", 4), ("deserialize_map", 3), ("zeta9", 3), ("Zeta9", 2)])
        known = set(self.vocab.tokens)
        self.assertFalse(known & {w for w, _ in self.listed})
        self.assertEqual(self.vocab.tokens[3:], ["a", "and", "fn", "in", "is", "of", "the", "to"])

    def test_total_counts_every_out_of_vocabulary_word_token(self):
        known = set(self.vocab.tokens)
        expected = sum(n for t, n in self.counts.items() if is_word(t) and t not in known)
        self.assertEqual(self.total, expected)
        self.assertGreater(self.total, sum(n for _, n in self.listed))  # foo, onceonly

    def test_install_stores_the_lists_once_for_a_model_and_its_dtype_variants(self):
        src, dst = os.path.join(self.dir, "src"), os.path.join(self.dir, "dst")
        os.makedirs(src)
        os.makedirs(dst)
        for name in ("m.safetensors", "m-bf16.safetensors", "m.vocab.txt"):
            open(os.path.join(src, name), "w").close()
        shutil.copyfile(self.words_path, os.path.join(src, "m.words.txt"))
        for old in ("m-bf16.words.txt", "m-bf16.vocab.txt"):  # an older install's copies
            open(os.path.join(dst, old), "w").close()
        cli.install(src, dst, ["m", "m-bf16"])
        self.assertEqual(read_words(os.path.join(dst, "m.words.txt")), (self.total, self.listed))
        self.assertTrue(os.path.exists(os.path.join(dst, "m.vocab.txt")))
        self.assertTrue(os.path.exists(os.path.join(dst, "m-bf16.safetensors")))
        self.assertFalse(os.path.exists(os.path.join(dst, "m-bf16.words.txt")))
        self.assertFalse(os.path.exists(os.path.join(dst, "m-bf16.vocab.txt")))


class ReadWordsRejectsBadFiles(unittest.TestCase):
    def test_bad_files(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.words.txt")
            write_words(10, [("kubectl", 3)], path)
            self.assertEqual(read_words(path), (10, [("kubectl", 3)]))
            for text in ("kubectl\t3\n", "<unk>\t10\nkube ctl\t3\n", "<unk>\t10\nkubectl\n", "<unk>\t10\nkubectl\t3"):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                with self.assertRaises(ValueError, msg=repr(text)):
                    read_words(path)


class ShippedWordList(unittest.TestCase):
    def test_each_model_has_a_well_formed_list_outside_its_vocabulary(self):
        # The bf16 variant shares these lists (FORMAT.md).
        for stem in ("laya-default",):
            path = os.path.join(MODELS, f"{stem}.words.txt")
            if not os.path.exists(path):
                self.skipTest(f"no word list shipped for {stem}")
            total, listed = read_words(path)
            vocab = set(Vocab(os.path.join(MODELS, f"{stem}.vocab.txt")).tokens)
            self.assertGreater(len(listed), 50_000)
            self.assertLessEqual(len(listed), 100_000)
            self.assertFalse(vocab & {w for w, _ in listed})
            self.assertTrue(all(len(w) >= 4 and n >= 2 for w, n in listed))
            counts = [n for _, n in listed]
            self.assertEqual(counts, sorted(counts, reverse=True))
            self.assertGreater(total, sum(counts))


if __name__ == "__main__":
    unittest.main()
