"""peft LoRA on a tiny random Llama: run under `python -m runtime_shim` (npu) or plain (cpu).

Usage: client_peft.py npu|cpu OUT_DIR. A few LoRA steps, save_pretrained, reload the adapter,
merge_and_unload; writes OUT_DIR/result.json with losses and digests.
"""

import hashlib
import json
import sys
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

MODE, OUT = sys.argv[1], Path(sys.argv[2])
DEVICE = "npu" if MODE == "npu" else "cpu"


def base():
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    return LlamaForCausalLM(config).to(DEVICE)


def digest(state):
    h = hashlib.sha256()
    for name, tensor in sorted(state.items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


model = get_peft_model(
    base(), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
)
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
g = torch.Generator().manual_seed(1)
losses = []
for _ in range(4):
    ids = torch.randint(1, 64, (4, 10), generator=g).to(DEVICE)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    losses.append(loss.item())
model.save_pretrained(str(OUT / "adapter"))
reloaded = PeftModel.from_pretrained(base(), str(OUT / "adapter"))
probe = torch.arange(1, 9).view(1, 8).to(DEVICE)
with torch.no_grad():
    adapted = reloaded(input_ids=probe).logits
    merged = reloaded.merge_and_unload()
    merged_logits = merged(input_ids=probe).logits
result = {
    "device": str(next(model.parameters()).device),
    "losses": losses,
    "adapter": digest({k: v for k, v in model.state_dict().items() if "lora" in k}),
    "adapted_logits": digest({"l": adapted}),
    "merged": digest(merged.state_dict()),
    "merged_logits": digest({"l": merged_logits}),
}
(OUT / "result.json").write_text(json.dumps(result))
