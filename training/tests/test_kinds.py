"""Where each word is written (FORMAT.md `<stem>.kinds.txt`): comments and
strings are told from code in each language; the kinds step run on a tiny
corpus counts prose, comments/strings and code apart for the model's words
only and writes the file in the right format; the shipped file (when there
is one) is well formed and has more prose in `weather` than in `isprint`."""

import json
import os
import tempfile
import unittest

from training import __main__ as cli
from training import kinds

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODELS = os.path.join(ROOT, "models")

C_DOC = '/* The weather */\nint main(void) {\n    // print the weather\n    printf("weather: %s\\n", isprint);\n}\n'
TRAIN = [
    {"src": "man-pages", "kind": "prose", "lang": "en", "text": "The weather is fine. The weather is cold.\n"},
    {"src": "crates", "kind": "code", "lang": "c", "text": C_DOC},
    {"src": "crates", "kind": "code", "lang": "python", "text": "isprint = 1  # weather\nx = 'isprint'\n"},
    {"src": "man-pages", "kind": "prose", "lang": "en", "text": "Use isprint() and 'iskeyword' or p->weather.\n"},
]


class NotesAndKinds(unittest.TestCase):
    def test_comments_and_strings_of_each_language(self):
        spans = [C_DOC[s:e] for s, e in kinds.notes(C_DOC, "c")]
        self.assertEqual(spans, ["/* The weather */", "// print the weather", '"weather: %s\\n"'])
        py = 'def f():\n    """Doc string."""\n    return "#x"  # note\n'
        self.assertEqual([py[s:e] for s, e in kinds.notes(py, "python")], ['"""Doc string."""', '"#x"', "# note"])
        lua = "local s = [[long]] -- comment\n--[[ block ]] x = 'y'\n"
        self.assertEqual([lua[s:e] for s, e in kinds.notes(lua, "lua")],
                         ["[[long]]", "-- comment", "--[[ block ]]", "'y'"])
        vim = '" a comment\nlet x = "str" " trailing\n'
        self.assertEqual([vim[s:e] for s, e in kinds.notes(vim, "vim")][:2], ['" a comment', '"str"'])
        rust = "fn f<'a>(x: &'a str) -> char { 'x' } // done\n"
        self.assertEqual([rust[s:e] for s, e in kinds.notes(rust, "rust")], ["'x'", "// done"])
        self.assertEqual(kinds.notes("anything # here", "nolanguage"), [])

    def test_the_kind_at_the_cursor(self):
        cases = [
            ('printf("usage: %s f', "c", "string"),
            ('printf("usage")', "c", "code"),
            ("x = 1; // the wea", "c", "comment"),
            ("x = 1; // done\ny = ", "c", "code"),
            ("/* a block\n   that goes on", "cpp", "comment"),
            ("/* closed */ int", "c", "code"),
            ('def f():\n    """Returns the', "python", "string"),
            ("x = 1  # the", "python", "comment"),
            ("local x = 1 -- the", "lua", "comment"),
            ("--[[ long\n comment", "lua", "comment"),
            ('  " a vim comment', "vim", "comment"),
            ("let x = 'abc", "vim", "string"),
            ("let s = `templ", "javascript", "string"),
            ("anything", "nolanguage", "code"),
        ]
        for text, lang, want in cases:
            self.assertEqual(kinds.kind_at_end(text, lang), want, (text, lang))

    def test_typing_on_gives_the_kinds_of_reading_from_the_start(self):
        docs = [(C_DOC * 2, "c"), ('def f():\n    """Doc\n    string."""\n    return "#x"  # note\n' * 2, "python"),
                ("local s = [[long\n]] -- comment\n--[[ block\n ]] x = 'y'\n", "lua"),
                ('" a comment\nlet x = "str"\n  " another\n', "vim")]
        for doc, lang in docs:
            typed = kinds.KindAtEnd(lang)
            for i in range(len(doc)):
                self.assertEqual(typed.feed(doc[i]), kinds.kind_at_end(doc[:i + 1], lang), (lang, doc[:i + 1]))


class KindsStep(unittest.TestCase):
    def test_names_in_prose_are_code(self):
        text = "call isprint() on os.path, p->next, std::vector, 'iskeyword' or `printf`; the end. Then"
        named = [m.group(0) for m in kinds._WORD.finditer(text) if kinds.used_as_code(text, *m.span())]
        self.assertEqual(named, ["isprint", "path", "next", "vector", "iskeyword", "printf"])

    def test_counts_and_file(self):
        with tempfile.TemporaryDirectory() as d:
            stem = os.path.join(d, "m")
            with open(stem + ".vocab.txt", "w") as f:
                f.write("<unk>\n<s>\n<nl>\nThe\nweather\nis\nisprint\n.\nnever\niskeyword\n")
            with open(stem + ".words.txt", "w") as f:
                f.write("<unk>\t5\nprintf\t2\n")
            corpus = os.path.join(d, "train.jsonl")
            with open(corpus, "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in TRAIN))
            cli.main(["kinds", "--corpus", corpus, "--stem", stem, "--workers", "1"])
            totals, rows = kinds.read(stem + ".kinds.txt")
        # Prose: 8 + 4 words (Use and or p). Comments and strings: 8 in C
        # (The weather, print the weather, weather s n), 1 in Python
        # (weather). Code: int main void printf isprint in C, isprint 1 x
        # 'isprint' in Python (a string of one name is a name), isprint()
        # 'iskeyword' ->weather in prose.
        self.assertEqual(totals, (12, 9, 12))
        self.assertEqual(rows["weather"], (2, 4, 1))
        self.assertEqual(rows["isprint"], (0, 0, 4))
        self.assertEqual(rows["iskeyword"], (0, 0, 1))
        self.assertEqual(rows["printf"], (0, 0, 1))
        self.assertEqual(rows["The"], (2, 1, 0))
        self.assertNotIn("never", rows)  # not seen
        self.assertNotIn("main", rows)  # not a word of the model

    def test_bad_files_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.kinds.txt")
            for text in ("weather\t1\t2\t3\n", "<unk>\t1\t2\t3\nweather\t1\t2\n", "<unk>\t1\t2\t3\nwea ther\t1\t2\t3\n",
                         "<unk>\t1\t2\t3\nweather\t1\t2\t3", "<unk>\t1\t2\t3\nw\t1\t1\t1\nw\t1\t1\t1\n"):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                with self.assertRaises(ValueError, msg=repr(text)):
                    kinds.read(path)


class ShippedKinds(unittest.TestCase):
    def test_the_shipped_file_is_well_formed_and_says_prose_from_code(self):
        path = os.path.join(MODELS, "laya-default.kinds.txt")
        if not os.path.exists(path):
            self.skipTest("no kinds file shipped")
        totals, rows = kinds.read(path)
        words = kinds.model_words(os.path.join(MODELS, "laya-default.vocab.txt"),
                                  os.path.join(MODELS, "laya-default.words.txt"))
        self.assertTrue(set(rows) <= words)

        def prose(w):
            p, _, c = rows[w]
            return (p + 1) / totals[0] / ((p + 1) / totals[0] + (c + 1) / totals[2])

        self.assertGreater(prose("weather"), 0.6)
        self.assertLess(prose("isprint"), 0.2)
