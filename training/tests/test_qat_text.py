"""qat.py --text: each row reads on through its own stretch of the stream,
window after window, and starts afresh when the pass wraps (no PyTorch
needed: the windows are numpy)."""

import unittest

import numpy as np

from training.qat import stretches, text_window


class TextWindows(unittest.TestCase):
    def test_rows_read_their_own_stretch_on_and_wrap(self):
        ids = np.arange(1001, dtype=np.uint16)  # 1000 tokens after the first
        b, t = 4, 10  # stretches of 250 tokens: 24 windows a pass
        first, fresh = text_window(ids, b, t, 0)
        self.assertTrue(fresh)
        self.assertEqual(first.shape, (b, t + 1))
        self.assertEqual(first[:, 0].tolist(), [0, 250, 500, 750])
        second, fresh = text_window(ids, b, t, 1)
        self.assertFalse(fresh)
        self.assertEqual(second[:, 0].tolist(), first[:, -1].tolist())  # the next window goes on from the last token
        last, _ = text_window(ids, b, t, 23)
        self.assertTrue((last[:, -1] < np.array([250, 500, 750, 1000]) + 1).all())  # never past its stretch
        again, fresh = text_window(ids, b, t, 24)
        self.assertTrue(fresh)
        self.assertEqual(again.tolist(), first.tolist())


class Stretches(unittest.TestCase):
    def test_stretches_are_consecutive_and_spread_from_start_to_end(self):
        ids = np.arange(1000, dtype=np.uint16)
        out = stretches(ids, 4, 10).reshape(4, 10)
        self.assertEqual(out[:, 0].tolist(), [0, 330, 660, 990])  # the last ends with the stream
        self.assertEqual(out[-1, -1], 999)
        for row in out:
            self.assertEqual(np.diff(row.astype(int)).tolist(), [1] * 9)


if __name__ == "__main__":
    unittest.main()
