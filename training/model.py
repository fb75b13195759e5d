"""The language model (models/FORMAT.md): a GRU over word embeddings whose
output layer is the same embedding matrix (tied), read through a projection
from the hidden state back into embedding space.

    h_t    = GRU(embed[x_t], h_{t-1})
    logits = embed . (W_proj h_t + b_proj) + b_out

Dropout (training only; `model.eval()` turns it off) on the embeddings going
in and on the hidden states going out: the prose half of the corpus is small
enough for a larger model to memorise it over many epochs.
"""

import mlx.core as mx
import mlx.nn as nn


class LayaLM(nn.Module):
    def __init__(self, vocab_size, embed_dim=256, hidden_dim=512, dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.drop = nn.Dropout(dropout)
        self.gru = nn.GRU(embed_dim, hidden_dim)  # Wx [3H,E], Wh [3H,H], b [3H], bhn [H]; gates r, z, n
        self.proj = nn.Linear(hidden_dim, embed_dim)
        self.out_b = mx.zeros((vocab_size,))

    def __call__(self, tokens, hidden=None):
        """tokens [B, T] -> logits [B, T, V] and the last hidden state [B, H]."""
        states = self.gru(self.drop(self.embed(tokens)), hidden=hidden)
        logits = self.embed.as_linear(self.proj(self.drop(states))) + self.out_b
        return logits, states[:, -1]

    @property
    def sizes(self):
        v, e = self.embed.weight.shape
        return v, e, self.gru.Wh.shape[1]


def loss_fn(model, inputs, targets, hidden=None):
    """Mean next-token cross-entropy (full softmax)."""
    logits, _ = model(inputs, hidden)
    return nn.losses.cross_entropy(logits, targets, reduction="mean")
