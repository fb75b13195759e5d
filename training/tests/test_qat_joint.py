"""qat.py --joint's loss: both the full-precision and the quantized logits
learn the teacher, and the mutual term pulls them toward each other
(PyTorch needed; the device machine and any machine with torch run it)."""

import unittest

try:
    import torch
except ImportError:
    torch = None


@unittest.skipUnless(torch, "needs PyTorch")
class JointLoss(unittest.TestCase):
    def setUp(self):
        from training.qat import distill_loss, joint_loss

        self.joint, self.distill = joint_loss, distill_loss
        torch.manual_seed(0)
        self.lt = torch.randn(2, 3, 7)

    def test_nothing_to_learn_when_both_are_the_teacher(self):
        loss, parts = self.joint(self.lt.clone(), self.lt.clone(), self.lt, 2.0)
        self.assertAlmostEqual(loss.item(), 0.0, places=5)
        for p in parts:
            self.assertAlmostEqual(p.item(), 0.0, places=5)

    def test_the_loss_is_both_distillations_plus_the_mutual_term(self):
        lf, lq = torch.randn(2, 3, 7), torch.randn(2, 3, 7)
        loss, (kf, kq, kfq) = self.joint(lf, lq, self.lt, 0.5)
        self.assertAlmostEqual(kf.item(), self.distill(lf, self.lt)[1].item(), places=5)
        self.assertAlmostEqual(kq.item(), self.distill(lq, self.lt)[1].item(), places=5)
        self.assertAlmostEqual(kfq.item(), self.distill(lq, lf)[1].item(), places=5)
        self.assertAlmostEqual(loss.item(), kf.item() + kq.item() + 0.5 * kfq.item(), places=5)
        self.assertGreater(kfq.item(), 0.0)

    def test_the_mutual_term_moves_the_full_precision_logits_toward_the_quantized(self):
        lq = self.lt[:1, :1].clone()
        lq[0, 0, 3] += 4.0  # the quantized weights' favourite is token 3, the teacher's another
        for mutual in (0.0, 10.0):
            lf = self.lt[:1, :1].clone().requires_grad_(True)
            loss, _ = self.joint(lf, lq, self.lt[:1, :1], mutual)
            loss.backward()
            if mutual:  # descent raises token 3's logit in the full-precision path
                self.assertEqual(lf.grad[0, 0].argmin().item(), 3)
            else:  # the full-precision logits are the teacher's: no pull at all
                self.assertLess(lf.grad.abs().max().item(), 1e-6)


if __name__ == "__main__":
    unittest.main()
