"""The GPU trainer's --init: a models/FORMAT.md file's tensors load back into
PyTorch's model as the same model (skipped where PyTorch is not installed,
as on CI; the device machine has it)."""

import unittest


class TorchInitTest(unittest.TestCase):
    def test_format_tensors_load_back_as_the_same_model(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no PyTorch")
        from training.torch_train import LayaTorch

        torch.manual_seed(0)
        a, b = LayaTorch(50, 8, 16), LayaTorch(50, 8, 16)
        x = torch.randint(0, 50, (2, 5))
        self.assertFalse(torch.allclose(a(x)[0], b(x)[0]))  # two fresh models differ
        b.load_format_tensors({k: torch.from_numpy(v) for k, v in a.format_tensors().items()})
        torch.testing.assert_close(a(x)[0], b(x)[0])


if __name__ == "__main__":
    unittest.main()
