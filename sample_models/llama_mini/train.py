# Sample model: a Llama-style decoder (RMSNorm, rotary position embedding, SwiGLU MLP, causal attention
# written out as softmax(q @ k^T) @ v, grouped-query heads), trained on a synthetic next-token task.
# Exercises: torch.device("cuda" if ... ), model.to(device), torch.cuda.manual_seed_all, x.to(device,
#   non_blocking=True), torch.cuda.synchronize, torch.cuda.max_memory_allocated, AdamW, and the hand-written
#   forms `--advice` names a torch_npu fused operator for (npu_rms_norm, npu_rotary_mul, npu_swiglu,
#   npu_fusion_attention).
"""
Tiny Llama-style trainer.

$ python train.py --steps 20            # cuda when available, else cpu
$ python train.py --steps 20 --no-cuda  # cpu
$ python train.py --steps 20 --bf16     # the forward pass under bfloat16 autocast
"""
import argparse
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        return self.weight * hidden_states.to(input_dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, cos, sin):
    # cos, sin: [1, 1, seq, head_dim] broadcast over batch and heads ([batch, heads, seq, head_dim])
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Rotary(nn.Module):
    def __init__(self, head_dim, max_len, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_len).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x, seq_len):
        # in x's dtype, as the product with x is (bfloat16 under autocast)
        return self.cos[None, None, :seq_len].to(x.dtype), self.sin[None, None, :seq_len].to(x.dtype)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, max_len):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = dim // n_heads
        self.q_proj = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * self.head_dim, dim, bias=False)
        self.rotary = Rotary(self.head_dim, max_len)
        mask = torch.full((max_len, max_len), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        bsz, seq, _ = x.shape
        q = self.q_proj(x).view(bsz, seq, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(q, seq)
        q, k = apply_rotary(q, k, cos, sin)
        repeat = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(repeat, dim=1)
        v = v.repeat_interleave(repeat, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + self.mask[:seq, :seq]
        probs = F.softmax(scores.float(), dim=-1).type_as(q)
        out = torch.matmul(probs, v)
        return self.o_proj(out.transpose(1, 2).reshape(bsz, seq, -1))


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.input_norm = RMSNorm(args.dim)
        self.attn = Attention(args.dim, args.n_heads, args.n_kv_heads, args.seq_len)
        self.post_norm = RMSNorm(args.dim)
        self.mlp = MLP(args.dim, args.hidden)

    def forward(self, x):
        x = x + self.attn(self.input_norm(x))
        return x + self.mlp(self.post_norm(x))


class Llama(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.embed = nn.Embedding(args.vocab, args.dim)
        self.layers = nn.ModuleList(Block(args) for _ in range(args.n_layers))
        self.norm = RMSNorm(args.dim)
        self.lm_head = nn.Linear(args.dim, args.vocab, bias=False)

    def forward(self, tokens, targets):
        h = self.embed(tokens)
        for layer in self.layers:
            h = layer(h)
        logits = self.lm_head(self.norm(h))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def batches(args, generator):
    """Synthetic sequences with a learnable rule: each token is the previous one plus a fixed step."""
    while True:
        start = torch.randint(0, args.vocab, (args.batch_size, 1), generator=generator)
        step = torch.randint(1, 4, (args.batch_size, 1), generator=generator)
        seq = (start + step * torch.arange(args.seq_len + 1)) % args.vocab
        yield seq[:, :-1], seq[:, 1:]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", default=None, help="checkpoint directory (default: temp dir)")
    p.add_argument("--no-cuda", action="store_true")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=16)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--n-layers", type=int, default=2)
    p.add_argument("--n-heads", type=int, default=4)
    p.add_argument("--n-kv-heads", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--bf16", action="store_true", help="autocast the forward pass to bfloat16")
    args = p.parse_args()

    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    torch.manual_seed(args.seed)
    if use_cuda:
        torch.cuda.manual_seed_all(args.seed)
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="llama_mini_")
    os.makedirs(out_dir, exist_ok=True)

    model = Llama(args).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    data = batches(args, torch.Generator().manual_seed(args.seed))
    model.train()
    for step in range(args.steps):
        tokens, targets = next(data)
        tokens = tokens.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            loss = model(tokens, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        print(f"step={step + 1} loss={loss.item()!r}", flush=True)
    if use_cuda:
        torch.cuda.synchronize()
        print(f"max memory: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
    torch.save(model.state_dict(), os.path.join(out_dir, "llama_mini.pt"))


if __name__ == "__main__":
    main()
