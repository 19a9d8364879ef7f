"""transformers' Trainer on tiny random models: run under `python -m runtime_shim` (npu) or plain (cpu).

Usage: client_transformers.py npu|cpu OUT_DIR. Writes OUT_DIR/result.json: per model the logged
losses, eval loss, a digest of the final weights, the weights after resuming from a checkpoint,
and greedy generate() tokens of the reloaded model.
"""

import hashlib
import json
import sys
from pathlib import Path

import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    Trainer,
    TrainingArguments,
)

MODE, OUT = sys.argv[1], Path(sys.argv[2])
VOCAB, SEQ = 64, 12


def model_of(kind):
    torch.manual_seed(0)
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=2))
    if kind == "llama":
        config = LlamaConfig(
            vocab_size=VOCAB,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=32,
        )
        return LlamaForCausalLM(config)
    config = BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    return BertForMaskedLM(config)


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (n, SEQ), generator=g)
    return [
        {"input_ids": row, "labels": row.clone(), "attention_mask": torch.ones(SEQ, dtype=torch.long)}
        for row in ids
    ]


def digest(model):
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def args(folder, **extra):
    return TrainingArguments(
        output_dir=str(folder),
        max_steps=4,
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        gradient_accumulation_steps=2,
        learning_rate=1e-3,
        logging_steps=1,
        save_steps=2,
        save_strategy="steps",
        report_to=[],
        use_cpu=MODE == "cpu",
        seed=0,
        data_seed=0,
        dataloader_num_workers=0,
        disable_tqdm=True,
        **extra,
    )


results = {}
for kind in ("gpt2", "llama", "bert"):
    folder = OUT / kind
    trainer = Trainer(
        model=model_of(kind), args=args(folder), train_dataset=data(32, 1), eval_dataset=data(8, 2)
    )
    trainer.train()
    device = str(next(trainer.model.parameters()).device)
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    eval_loss = trainer.evaluate()["eval_loss"]
    final = digest(trainer.model)
    trainer.save_model(str(folder / "final"))
    resumed = Trainer(model=model_of(kind), args=args(folder), train_dataset=data(32, 1))
    resumed.train(resume_from_checkpoint=str(folder / "checkpoint-2"))
    entry = {
        "device": device,
        "losses": losses,
        "eval_loss": eval_loss,
        "final": final,
        "resumed": digest(resumed.model),
    }
    if kind != "bert":
        reloaded = type(trainer.model).from_pretrained(str(folder / "final")).to(device)
        prompt = torch.tensor([[1, 2, 3, 4]], device=device)
        tokens = reloaded.generate(prompt, max_new_tokens=5, do_sample=False, pad_token_id=0)
        entry["generate"] = tokens.cpu().tolist()
        entry["reloaded"] = digest(reloaded) == final
    results[kind] = entry
(OUT / "result.json").write_text(json.dumps(results, indent=1))
