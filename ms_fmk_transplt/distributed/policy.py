"""What the distributed mode rewrites and reports, read from policy.json (data, not code)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ms_fmk_transplt.records import Finding, Operation


@dataclass(frozen=True)
class Policy:
    """The name lists and the message and suggestion templates of policy.json."""

    ddp_members: frozenset[str]
    log_methods: frozenset[str]
    log_objects: frozenset[str]
    eval_loader_words: tuple[str, ...]
    epoch_words: tuple[str, ...]
    saver_words: tuple[str, ...]  # a function named so that saves a checkpoint is guarded where called
    move_methods: frozenset[str]
    loader_positional: tuple[str, ...]
    messages: dict[str, str]
    suggestions: dict[str, str]

    def finding(self, rule_id: str, operation: Operation, lines: tuple[int, int], **fields: str) -> Finding:
        """A finding of the mode, its message and suggestion rendered from the templates."""
        return Finding(
            rule_id=rule_id,
            operation=operation,
            start_line=lines[0],
            end_line=lines[1],
            message=self.messages[rule_id].format(**fields),
            suggestion=self.suggestions.get(rule_id, "").format(**fields),
        )


@cache
def policy() -> Policy:
    """The shipped policy, read once."""
    raw = json.loads((Path(__file__).with_name("policy.json")).read_text(encoding="utf-8"))
    return Policy(
        ddp_members=frozenset(raw["ddp_members"]),
        log_methods=frozenset(raw["log_methods"]),
        log_objects=frozenset(raw["log_objects"]),
        eval_loader_words=tuple(raw["eval_loader_words"]),
        epoch_words=tuple(raw["epoch_words"]),
        saver_words=tuple(raw["saver_words"]),
        move_methods=frozenset(raw["move_methods"]),
        loader_positional=tuple(raw["loader_positional"]),
        messages=raw["messages"],
        suggestions=raw["suggestions"],
    )
