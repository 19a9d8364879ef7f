"""Tiny models and a training loop shared by the runtime parity tests and bench/.

Every model is small enough that a few training steps take milliseconds; each
exercises a different part of the device: matmul/autograd (MLP), conv +
BatchNorm + dropout (CNN), recurrent kernels (LSTM, GRU), attention and LayerNorm
(Transformer), views / in-place writes through views (ViewInplace), and an LLM-style decoder
block (Llama: RMSNorm, rotary embeddings, SwiGLU, causal scaled_dot_product_attention).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(32, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)
        )

    def forward(self, x):
        return self.net(x)


class CNN(nn.Module):
    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        c = channels
        self.features = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1),
            nn.BatchNorm2d(c),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Dropout(0.2),
            nn.Conv2d(c, 2 * c, 3, padding=1),
            nn.BatchNorm2d(2 * c),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(2 * c, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class LSTMClassifier(nn.Module):
    def __init__(self, vocab: int = 50, hidden: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.lstm = nn.LSTM(16, hidden, num_layers=1, batch_first=True)
        self.head = nn.Linear(hidden, 5)

    def forward(self, tokens):
        out, (h, _) = self.lstm(self.embed(tokens))
        return self.head(out[:, -1] + h[-1])


class GRUClassifier(nn.Module):
    def __init__(self, vocab: int = 50, hidden: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.gru = nn.GRU(16, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 5)

    def forward(self, tokens):
        out, h = self.gru(self.embed(tokens))
        return self.head(out[:, -1] + h[-1])


class RMSNorm(nn.Module):
    """Llama's RMSNorm, written out as LLM scripts do (not nn.RMSNorm)."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    """One pre-norm decoder block: RMSNorm, rotary causal attention (SDPA), RMSNorm, SwiGLU."""

    def __init__(self, d_model: int = 32, heads: int = 4, hidden: int = 64, seq: int = 12) -> None:
        super().__init__()
        self.heads = heads
        self.attn_norm = RMSNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.mlp_norm = RMSNorm(d_model)
        self.gate = nn.Linear(d_model, hidden, bias=False)
        self.up = nn.Linear(d_model, hidden, bias=False)
        self.down = nn.Linear(hidden, d_model, bias=False)
        head_dim = d_model // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(seq).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def _rotary(self, x):
        seq = x.shape[-2]
        return x * self.cos[:seq] + _rotate_half(x) * self.sin[:seq]

    def forward(self, x):
        batch, seq, d_model = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).split(d_model, dim=-1)
        q, k, v = (t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(self._rotary(q), self._rotary(k), v, is_causal=True)
        x = x + self.out(attn.transpose(1, 2).reshape(batch, seq, d_model))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class TinyLlama(nn.Module):
    def __init__(self, vocab: int = 50, d_model: int = 32, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(LlamaBlock(d_model) for _ in range(layers))
        self.norm = RMSNorm(d_model)
        self.head = nn.Linear(d_model, 5, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, -1])


class TinyTransformer(nn.Module):
    def __init__(self, vocab: int = 50, d_model: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(1, 12, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, 5)

    def forward(self, tokens):
        x = self.encoder(self.embed(tokens) + self.pos)
        return self.head(self.norm(x).mean(dim=1))


class ViewInplace(nn.Module):
    """Views, slicing writes, in-place ops and transposes in the forward pass."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(24, 24)
        self.b = nn.Linear(12, 10)
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x):
        h = self.a(x)  # (B, 24)
        h = h.view(-1, 4, 6).transpose(1, 2)  # non-contiguous view (B, 6, 4)
        h = h * self.scale  # broadcast over the last dim
        out = torch.zeros(h.shape[0], 12, device=x.device, dtype=h.dtype)
        out[:, :6] = h[:, :, 0]  # write through a view of `out`
        out[:, 6:].copy_(h[:, :, 1:].sum(-1))
        out.mul_(0.5).add_(1.0)  # in place on the base
        flat = out.unsqueeze(1).expand(-1, 2, -1).reshape(-1, 12)[::2]
        y = torch.relu_(self.b(flat))
        return y.t().contiguous().t()


@dataclass(frozen=True)
class ModelCase:
    name: str
    build: Callable[[], nn.Module]
    batch: Callable[[torch.Generator], tuple[torch.Tensor, torch.Tensor]]


def _dense(g, batch=16):
    return torch.randn(batch, 32, generator=g), torch.randint(0, 10, (batch,), generator=g)


def _images(g, batch=8, size=16):
    return torch.randn(batch, 3, size, size, generator=g), torch.randint(0, 10, (batch,), generator=g)


def _tokens(g, batch=8):
    return torch.randint(0, 50, (batch, 12), generator=g), torch.randint(0, 5, (batch,), generator=g)


def _view(g, batch=16):
    return torch.randn(batch, 24, generator=g), torch.randint(0, 10, (batch,), generator=g)


CASES = {
    "mlp": ModelCase("mlp", MLP, _dense),
    "cnn": ModelCase("cnn", CNN, _images),
    "lstm": ModelCase("lstm", LSTMClassifier, _tokens),
    "transformer": ModelCase("transformer", TinyTransformer, _tokens),
    "gru": ModelCase("gru", GRUClassifier, _tokens),
    "llama": ModelCase("llama", TinyLlama, _tokens),
    "view_inplace": ModelCase("view_inplace", ViewInplace, _view),
}

OPTIMIZERS = {
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adamw_foreach": lambda params: torch.optim.AdamW(params, lr=1e-3, foreach=True),
    "adamw_fused": lambda params: torch.optim.AdamW(params, lr=1e-3, fused=True),
    "adamw_single": lambda params: torch.optim.AdamW(params, lr=1e-3, foreach=False),
}


def train(case: ModelCase, optimizer: str, device: str, steps: int = 3, seed: int = 0):
    """Train ``case`` for ``steps`` on ``device``; return (losses, CPU copies of the parameters and buffers).

    The model is built and the data drawn on the host with the same seed on
    every device, as a script does before moving things to its device.
    """
    torch.manual_seed(seed)
    model = case.build().to(device)
    opt = OPTIMIZERS[optimizer](model.parameters())
    g = torch.Generator().manual_seed(seed + 1)
    batches = [case.batch(g) for _ in range(steps)]
    losses = []
    model.train()
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return losses, state
