"""qat.py's distillation loss: the KL alone by default, and with `hard` a
term that is zero only where the student already puts its mass on the
teacher's top token (PyTorch needed; the device machine and any machine
with torch run it)."""

import unittest

try:
    import torch
except ImportError:
    torch = None


@unittest.skipUnless(torch, "needs PyTorch")
class DistillLoss(unittest.TestCase):
    def setUp(self):
        from training.qat import distill_loss

        self.loss = distill_loss
        torch.manual_seed(0)
        self.lt = torch.randn(2, 3, 7)

    def test_the_same_logits_cost_nothing_without_hard(self):
        loss, kl = self.loss(self.lt.clone(), self.lt)
        self.assertAlmostEqual(loss.item(), 0.0, places=5)
        self.assertAlmostEqual(kl.item(), 0.0, places=5)

    def test_hard_adds_the_cross_entropy_on_the_teachers_top_token(self):
        ls = torch.randn(2, 3, 7)
        plain, kl = self.loss(ls, self.lt)
        mixed, kl2 = self.loss(ls, self.lt, hard=0.5)
        self.assertAlmostEqual(kl.item(), kl2.item(), places=6)
        top = self.lt.argmax(-1).flatten()
        ce = torch.nn.functional.cross_entropy(ls.flatten(0, 1), top)
        self.assertAlmostEqual(mixed.item(), plain.item() + 0.5 * ce.item(), places=5)

    def test_hard_pulls_a_student_that_matches_the_teacher_toward_the_top_token(self):
        lt = self.lt[:1, :1]
        for hard in (0.0, 1.0):
            ls = lt.clone().requires_grad_(True)
            loss, _ = self.loss(ls, lt, hard=hard)
            loss.backward()
            if hard:  # descent raises the top token's logit, and only it
                self.assertEqual(ls.grad[0, 0].argmin().item(), lt[0, 0].argmax().item())
                self.assertLess(ls.grad[0, 0].min().item(), 0.0)
            else:  # the KL is at its minimum: no pull at all
                self.assertLess(ls.grad.abs().max().item(), 1e-6)


if __name__ == "__main__":
    unittest.main()
