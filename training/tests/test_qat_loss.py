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

    def test_soft_adds_the_softened_kl_and_costs_nothing_at_the_teacher(self):
        from training.qat import soft_kl

        loss, _ = self.loss(self.lt.clone(), self.lt, soft=3.0)
        self.assertAlmostEqual(loss.item(), 0.0, places=5)
        ls = torch.randn(2, 3, 7)
        plain, kl = self.loss(ls, self.lt)
        mixed, kl2 = self.loss(ls, self.lt, soft=3.0)
        self.assertAlmostEqual(kl.item(), kl2.item(), places=6)
        self.assertAlmostEqual(mixed.item(), plain.item() + soft_kl(ls, self.lt, 3.0).item(), places=5)
        self.assertAlmostEqual(soft_kl(ls, self.lt, 1.0).item(), kl.item(), places=5)

    def test_soft_weighs_an_unlikely_tokens_error_more_than_the_kl(self):
        """The same error in the logit of a likely and of an unlikely token:
        the KL at 1 hardly sees the second; softened, it sees it far more."""
        from training.qat import soft_kl

        lt = torch.tensor([[[6.0, 3.0, 0.0, -2.0, -2.0]]])
        likely, unlikely = lt.clone(), lt.clone()
        likely[..., 1] += 0.5
        unlikely[..., 3] += 0.5
        plain = self.loss(unlikely, lt)[1].item() / self.loss(likely, lt)[1].item()
        soft = soft_kl(unlikely, lt, 3.0).item() / soft_kl(likely, lt, 3.0).item()
        self.assertLess(plain, 0.01)
        self.assertGreater(soft, 10 * plain)


if __name__ == "__main__":
    unittest.main()
