"""Training configurations (hyper-parameters), shared by the MLX trainer and
the PyTorch fallback; no framework imports here."""

from dataclasses import dataclass, fields, replace


@dataclass
class Config:
    embed_dim: int = 256
    hidden_dim: int = 512
    dropout: float = 0.0  # on embeddings in and hidden states out (training only)
    seq_len: int = 64  # tokens per window (backpropagation through time)
    batch_size: int = 32
    # True: each batch row reads on through its own stretch of the stream and
    # carries its hidden state into the next window (truncated BPTT), so
    # short windows still train on long contexts. False: random windows,
    # each starting from a zero state.
    tbptt: bool = False
    matmul_dtype: str = "float32"  # or "bfloat16" (the GPU's tensor cores; weights stay float32)
    steps: int = 2000
    lr: float = 3e-3
    warmup: int = 100
    min_lr: float = 1e-4
    weight_decay: float = 0.01
    clip: float = 1.0
    eval_every: int = 500
    eval_tokens: int = 100_000  # of each valid stream, per evaluation
    ckpt_every: int = 500
    seed: int = 0


CONFIGS = {
    # runs on CPU in seconds; for the tests
    "tiny": Config(embed_dim=16, hidden_dim=24, dropout=0.1, seq_len=12, batch_size=4, steps=40, lr=1e-2, warmup=5,
                   eval_every=20, eval_tokens=2000, ckpt_every=20),
    # a first model on a 2-core CPU in about a quarter of an hour
    "cpu": Config(seq_len=48, batch_size=32, steps=1200, lr=4e-3, warmup=50, eval_every=400,
                  eval_tokens=30_000, ckpt_every=200),
    # the real run on one NVIDIA GPU (H = 768: the GRU's share of a word-boundary
    # step on the CPU backend grows from ~20 % to ~35 %; the output layer still dominates)
    "gpu": Config(hidden_dim=768, dropout=0.1, seq_len=128, batch_size=256, steps=12000, lr=2e-3, warmup=200,
                  min_lr=5e-5, eval_every=2000, eval_tokens=500_000, ckpt_every=2000),
    # the same model trained at GPU speed: wide batches of short windows that
    # carry their state (truncated BPTT), bfloat16 matrix products
    "gpu-fast": Config(hidden_dim=768, dropout=0.1, seq_len=32, batch_size=2048, tbptt=True,
                       matmul_dtype="bfloat16", steps=6000, lr=3e-3, warmup=200, min_lr=5e-5, eval_every=1000,
                       eval_tokens=500_000, ckpt_every=1000),
}


def config(name, **overrides):
    return replace(CONFIGS[name], **{k: v for k, v in overrides.items() if v is not None})


def parse_variant(text):
    """"batch_size=1024,matmul_dtype=bfloat16" -> overrides typed like Config's fields."""
    types = {f.name: f.type for f in fields(Config)}
    out = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=", 1)
        kind = types[key]
        out[key] = value.lower() in ("1", "true", "yes") if kind is bool else kind(value)
    return out
