import os
import tempfile
import unittest

import numpy as np

from training import shards


class ShardsTest(unittest.TestCase):
    def test_cut_tensors_come_back_whole_in_a_folder_made_for_them(self):
        rng = np.random.default_rng(0)
        arrays = {"embed": rng.standard_normal((300, 64)).astype(np.float32),
                  "bias": rng.standard_normal(64).astype(np.float32)}
        with tempfile.TemporaryDirectory() as d:
            stem = os.path.join(d, "not", "yet", "there", "run")
            paths = shards.save(arrays, stem, limit=40_000)
            self.assertGreater(len(paths), 1)
            back = shards.load(stem)
        self.assertEqual(sorted(back), sorted(arrays))
        for name, a in arrays.items():
            np.testing.assert_array_equal(back[name], a)


if __name__ == "__main__":
    unittest.main()
