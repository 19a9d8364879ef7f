"""What converted code runs on: the `--target` choices and the oldest PyTorch each one's forms need.

A module of its own, free of imports, so that the run checks `--target` before it loads any
rule (a fully cached run imports neither the rules nor libcst).
"""

from __future__ import annotations

TARGETS = ("npu", "accelerator")  # --target: what converted code runs on (README, docs/rules.md)
DEFAULT_TARGET = "npu"
# the PyTorch a target's forms need at the least: `-v` of an older release refuses the target
TARGET_MIN_TORCH = {"accelerator": "2.7"}
