# Sample model: nanoGPT-style char-level GPT (SDPA attention, weight tying, grad accumulation, cosine LR).
# Exercises: device_type = 'cuda' if 'cuda' in device, torch.amp.autocast vs nullcontext, torch.cuda.amp.GradScaler
#   (enabled=dtype == 'float16'), torch.cuda.is_bf16_supported(), backends.cuda.matmul.allow_tf32 /
#   cudnn.allow_tf32, x.pin_memory().to(device, non_blocking=True), AdamW(fused=...) chosen by device,
#   torch.save/torch.load(map_location=device).
"""
Tiny GPT trainer. Defaults are sized for a laptop CPU; on a GPU you would raise --n-layer/--n-embd.

$ python train.py --steps 20                      # cpu (fp32) or cuda (bf16/fp16 autocast)
$ python train.py --steps 20 --dtype float32      # no autocast anywhere
$ python train.py --steps 20 --dtype bfloat16     # bf16 autocast on whichever device (cpu included)
"""
import argparse
import inspect
import math
import os
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


# -----------------------------------------------------------------------------
# model

class LayerNorm(nn.Module):
    """LayerNorm but with an optional bias. PyTorch doesn't support simply bias=False"""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        # flash attention make GPU go brrrrr but support is only in PyTorch >= 2.0
        self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention') and config.flash
        if not self.flash:
            # causal mask to ensure that attention is only applied to the left in the input sequence
            self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                 .view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


@dataclass
class GPTConfig:
    block_size: int = 32
    vocab_size: int = 32
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True
    flash: bool = True


class GPT(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self):
        return sum(p.numel() for p in self.parameters()) - self.transformer.wpe.weight.numel()

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size, f"Cannot forward sequence of length {t}"
        pos = torch.arange(0, t, dtype=torch.long, device=device)  # shape (t)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])  # inference-time mini-optimization
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type, fused='auto'):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        # 2D params (matmuls + embeddings) decay, biases and layernorms don't.
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {'params': decay_params, 'weight_decay': weight_decay},
            {'params': nodecay_params, 'weight_decay': 0.0}
        ]
        # Create AdamW optimizer and use the fused version if it is available
        fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == 'cuda' if fused == 'auto' else fused == 'yes'
        extra_args = dict(fused=True) if use_fused else dict()
        optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
        print(f"using fused AdamW: {use_fused}")
        return optimizer


# -----------------------------------------------------------------------------
# config

def get_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out-dir', default=None, help='checkpoint directory (default: temp dir)')
    p.add_argument('--steps', type=int, default=20, help='max_iters')
    p.add_argument('--eval-interval', type=int, default=10)
    p.add_argument('--eval-iters', type=int, default=2)
    p.add_argument('--seed', type=int, default=1337)
    p.add_argument('--batch-size', type=int, default=8)
    p.add_argument('--block-size', type=int, default=32)
    p.add_argument('--grad-accum', type=int, default=2, help='gradient_accumulation_steps')
    p.add_argument('--n-layer', type=int, default=2)
    p.add_argument('--n-head', type=int, default=2)
    p.add_argument('--n-embd', type=int, default=32)
    p.add_argument('--dropout', type=float, default=0.1)
    p.add_argument('--lr', type=float, default=3e-3, help='max learning rate')
    p.add_argument('--min-lr', type=float, default=3e-4)
    p.add_argument('--warmup-iters', type=int, default=5)
    p.add_argument('--weight-decay', type=float, default=1e-1)
    p.add_argument('--grad-clip', type=float, default=1.0)
    # 'cuda', 'cuda:1', 'cpu', or 'mps' on macbooks
    p.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    p.add_argument('--dtype', default='auto', choices=['auto', 'float32', 'bfloat16', 'float16'],
                   help="'auto' = bfloat16 if the GPU supports it, else float16 (fp16 uses a GradScaler)")
    p.add_argument('--compile', action='store_true', help='use torch.compile (PyTorch 2.0)')
    p.add_argument('--fused', default='auto', choices=['auto', 'yes', 'no'],
                   help='fused AdamW: auto picks it on the GPU only')
    return p.parse_args()


# -----------------------------------------------------------------------------
# data: a toy "shakespeare_char" with a repetitive grammar so the loss goes down fast

def make_corpus(n_chars, seed):
    g = torch.Generator().manual_seed(seed)
    words = ["the ", "king ", "queen ", "doth ", "speak ", "of ", "love ", "and ", "war ", "!\n"]
    idx = torch.randint(0, len(words), (n_chars // 4,), generator=g).tolist()
    text = "".join(words[i] for i in idx)[:n_chars]
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    return data, len(chars)


def main():
    args = get_args()
    device = args.device
    dtype = args.dtype
    if dtype == 'auto':
        dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'

    out_dir = args.out_dir or tempfile.mkdtemp(prefix="nanogpt_")
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True  # allow tf32 on matmul
    torch.backends.cudnn.allow_tf32 = True  # allow tf32 on cudnn
    device_type = 'cuda' if 'cuda' in device else 'cpu'  # for later use in torch.autocast
    if device_type == 'cuda' and ':' in device:
        torch.cuda.set_device(device)  # e.g. --device cuda:1
    # note: float16 data type will automatically use a GradScaler
    ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
    # fp32 means no autocast at all; CPU autocast is only worth it in bf16, so fp16 on CPU runs in fp32
    if dtype == 'float32' or (device_type == 'cpu' and dtype == 'float16'):
        ctx = nullcontext()
    else:
        ctx = torch.amp.autocast(device_type=device_type, dtype=ptdtype)
    print(f"device={device} device_type={device_type} dtype={dtype}")

    data, vocab_size = make_corpus(20000, args.seed)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]
    # batches come from their own generator so dropout RNG use cannot shift the data order
    data_gen = torch.Generator().manual_seed(args.seed + 1)

    def get_batch(split):
        src = train_data if split == 'train' else val_data
        ix = torch.randint(len(src) - args.block_size - 1, (args.batch_size,), generator=data_gen)
        x = torch.stack([src[i:i + args.block_size] for i in ix])
        y = torch.stack([src[i + 1:i + 1 + args.block_size] for i in ix])
        if device_type == 'cuda':
            # pin arrays x,y, which allows us to move them to GPU asynchronously (non_blocking=True)
            x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
        else:
            x, y = x.to(device), y.to(device)
        return x, y

    model_args = dict(n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                      block_size=args.block_size, bias=True, vocab_size=vocab_size, dropout=args.dropout)
    model = GPT(GPTConfig(**model_args))
    print("number of parameters: %.2fK" % (model.get_num_params() / 1e3,))
    model.to(device)

    # initialize a GradScaler. If enabled=False scaler is a no-op
    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))
    optimizer = model.configure_optimizers(args.weight_decay, args.lr, (0.9, 0.95), device_type, args.fused)
    if args.compile:
        print("compiling the model... (takes a ~minute)")
        model = torch.compile(model)

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ['train', 'val']:
            losses = torch.zeros(args.eval_iters)
            for k in range(args.eval_iters):
                X, Y = get_batch(split)
                with ctx:
                    logits, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean()
        model.train()
        return out

    def get_lr(it):
        # 1) linear warmup, 2) cosine decay down to min learning rate
        if it < args.warmup_iters:
            return args.lr * (it + 1) / (args.warmup_iters + 1)
        decay_ratio = (it - args.warmup_iters) / max(1, args.steps - args.warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * min(decay_ratio, 1.0)))
        return args.min_lr + coeff * (args.lr - args.min_lr)

    X, Y = get_batch('train')  # fetch the very first batch
    t0 = time.time()
    best_val_loss = 1e9
    for iter_num in range(args.steps):
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr

        if iter_num > 0 and iter_num % args.eval_interval == 0:
            losses = estimate_loss()
            print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
            if losses['val'] < best_val_loss:
                best_val_loss = losses['val']
                checkpoint = {
                    'model': model.state_dict(),
                    'optimizer': optimizer.state_dict(),
                    'model_args': model_args,
                    'iter_num': iter_num,
                    'best_val_loss': best_val_loss,
                    'config': vars(args),
                }
                print(f"saving checkpoint to {out_dir}")
                torch.save(checkpoint, os.path.join(out_dir, 'ckpt.pt'))

        # forward backward update, with optional gradient accumulation to simulate larger batch size
        loss_accum = 0.0
        for micro_step in range(args.grad_accum):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / args.grad_accum  # scale the loss to account for gradient accumulation
            # immediately async prefetch next batch while model is doing the forward pass on the GPU
            X, Y = get_batch('train')
            # backward pass, with gradient scaling if training in fp16
            scaler.scale(loss).backward()
            loss_accum += loss.detach()
        # clip the gradient
        if args.grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        # step the optimizer and scaler if training in fp16
        scaler.step(optimizer)
        scaler.update()
        # flush the gradients as soon as we can, no need for this memory anymore
        optimizer.zero_grad(set_to_none=True)

        print(f"step={iter_num + 1} loss={loss_accum.item()!r}", flush=True)
        if iter_num % 5 == 0:
            dt = time.time() - t0
            t0 = time.time()
            print(f"iter {iter_num}: loss {loss_accum.item():.4f}, time {dt * 1000:.2f}ms, lr {lr:.2e}")

    # resume-style reload: map tensors straight onto our device
    ckpt_path = os.path.join(out_dir, 'ckpt.pt')
    if os.path.exists(ckpt_path):
        checkpoint = torch.load(ckpt_path, map_location=device)
        state_dict = checkpoint['model']
        unwanted_prefix = '_orig_mod.'  # torch.compile wraps the model
        for k, v in list(state_dict.items()):
            if k.startswith(unwanted_prefix):
                state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
        fresh = GPT(GPTConfig(**checkpoint['model_args'])).to(device)
        fresh.load_state_dict(state_dict)
        print(f"reloaded checkpoint from iter {checkpoint['iter_num']} "
              f"(best val loss {float(checkpoint['best_val_loss']):.4f})")


if __name__ == '__main__':
    main()
