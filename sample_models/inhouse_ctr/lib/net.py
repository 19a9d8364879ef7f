# -*- coding: utf-8 -*-
"""DeepFM-lite: field embeddings -> (first-order + FM interaction + MLP) -> logit.

Written to run on a CUDA GPU; works on CPU as well.
"""
import torch
import torch.nn as nn


class DeepFMLite(nn.Module):
    def __init__(self, num_fields, vocab_per_field, embed_dim=8, hidden=(64, 32), dropout=0.1):
        super(DeepFMLite, self).__init__()
        self.num_fields = num_fields
        # one shared table; field i owns rows [i*V, (i+1)*V)  — classic "offsets" trick
        self.embedding = nn.Embedding(num_fields * vocab_per_field, embed_dim)
        self.linear = nn.Embedding(num_fields * vocab_per_field, 1)
        self.register_buffer("offsets",
                             torch.arange(num_fields, dtype=torch.long) * vocab_per_field)
        layers, d = [], num_fields * embed_dim
        for h in hidden:
            layers += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(inplace=True), nn.Dropout(dropout)]
            d = h
        layers.append(nn.Linear(d, 1))
        self.mlp = nn.Sequential(*layers)
        nn.init.normal_(self.embedding.weight, std=0.05)
        nn.init.zeros_(self.linear.weight)

    def forward(self, x):
        # x: (B, num_fields) int64 feature ids; buffers follow the module, so no .cuda() needed here
        idx = x + self.offsets.unsqueeze(0)
        emb = self.embedding(idx)                                   # (B, F, D)
        first = self.linear(idx).sum(dim=(1, 2))                    # (B,)
        square_of_sum = emb.sum(dim=1).pow(2)
        sum_of_square = emb.pow(2).sum(dim=1)
        fm = 0.5 * (square_of_sum - sum_of_square).sum(dim=1)       # (B,)
        deep = self.mlp(emb.flatten(1)).squeeze(1)                  # (B,)
        return first + fm + deep


def build_model(cfg):
    return DeepFMLite(cfg["num_fields"], cfg["vocab_per_field"],
                      embed_dim=cfg["embed_dim"], hidden=tuple(cfg["hidden"]))
