"""The language model (models/FORMAT.md): a GRU over word embeddings whose
output layer is the same embedding matrix (tied), read through a projection
from the hidden state back into embedding space.

    h_t    = GRU(embed[x_t], h_{t-1})
    logits = embed . (W_proj h_t + b_proj) + b_out

Dropout (training only; `model.eval()` turns it off) on the embeddings going
in and on the hidden states going out: the prose half of the corpus is small
enough for a larger model to memorise it over many epochs.

Matrix products can run in bfloat16 (`matmul_dtype`, training on the GPU:
the tensor cores' fast path) while the weights, the optimizer and every
element-wise step stay float32.
"""

import mlx.core as mx
import mlx.nn as nn


def _mm(a, b, dtype):
    """a @ b with both operands in `dtype`, the result back in float32."""
    if dtype == mx.float32:
        return a @ b
    return (a.astype(dtype) @ b.astype(dtype)).astype(mx.float32)


class GRU(nn.GRU):
    """nn.GRU's parameters and equations (Wx [3H,E], Wh [3H,H], b [3H], bhn [H];
    gates r, z, n), stepped over a time-major copy of the input projection so
    each step reads one contiguous [B, 3H] slice, with a choice of matmul dtype."""

    def __call__(self, x, hidden=None, matmul_dtype=mx.float32):
        batch, steps, _ = x.shape
        size = self.hidden_size
        gx = (_mm(x, self.Wx.T, matmul_dtype) + self.b).transpose(1, 0, 2)  # [T, B, 3H]
        wh = self.Wh.T
        h = mx.zeros((batch, size), mx.float32) if hidden is None else hidden
        out = []
        for t in range(steps):
            gh = _mm(h, wh, matmul_dtype)
            g = gx[t]
            rz = mx.sigmoid(g[:, : 2 * size] + gh[:, : 2 * size])
            r, z = rz[:, :size], rz[:, size:]
            n = mx.tanh(g[:, 2 * size :] + r * (gh[:, 2 * size :] + self.bhn))
            h = n + z * (h - n)
            out.append(h)
        return mx.stack(out, axis=1)


class LayaLM(nn.Module):
    def __init__(self, vocab_size, embed_dim=256, hidden_dim=512, dropout=0.0, matmul_dtype=mx.float32):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.drop = nn.Dropout(dropout)
        self.gru = GRU(embed_dim, hidden_dim)
        self.proj = nn.Linear(hidden_dim, embed_dim)
        self.out_b = mx.zeros((vocab_size,))
        self.matmul_dtype = matmul_dtype

    def __call__(self, tokens, hidden=None):
        """tokens [B, T] -> logits [B, T, V] and the last hidden state [B, H]."""
        states = self.gru(self.drop(self.embed(tokens)), hidden, self.matmul_dtype)
        out = self.proj(self.drop(states))
        logits = _mm(out, self.embed.weight.T, self.matmul_dtype) + self.out_b
        return logits, states[:, -1]

    @property
    def sizes(self):
        v, e = self.embed.weight.shape
        return v, e, self.gru.Wh.shape[1]


def loss_fn(model, inputs, targets, hidden=None):
    """Mean next-token cross-entropy (full softmax)."""
    logits, _ = model(inputs, hidden)
    return nn.losses.cross_entropy(logits, targets, reduction="mean")


def loss_and_state(model, inputs, targets, hidden):
    """Loss and the last hidden state (truncated backpropagation through time:
    the state is carried into the next window, its gradient is not)."""
    logits, last = model(inputs, hidden)
    return nn.losses.cross_entropy(logits, targets, reduction="mean"), last
