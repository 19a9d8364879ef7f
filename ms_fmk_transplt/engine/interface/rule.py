"""A rule as the engine sees it, whatever file it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Example:
    """A runnable example: `before` converts to `after` (equal when nothing may change)."""

    before: str
    after: str
    release: str | None = None  # the Ascend release data it needs, when not the default
    file: str | None = None  # a non-Python file name (run.sh, config.yaml) the example stands for
    opt_in: str | None = None  # the --opt-in it runs under, when its rewrite needs one


@dataclass(frozen=True)
class Rule:
    """One entry of a rule file, validated."""

    id: str
    kind: str
    params: dict[str, Any]
    summary: str
    message: str  # template rendered with the finding's named fields
    origin: str  # "<file>:<json pointer>", used in errors and reports
    examples: tuple[Example, ...] = ()
    needs_torch_npu: bool = False  # its rewrites only work once torch_npu is imported
    user: bool = False
    tags: tuple[str, ...] = field(default=())
    # its kind reports the support lists' verdict: another rule's report of the API outranks it
    support_list: bool = False
    target: str = "npu"  # the first --target its file serves; its examples convert for it

    def render(self, **fields: Any) -> str:
        """The finding message for this rule, one line, no trailing period."""
        try:
            text = self.message.format(**fields)
        except (KeyError, IndexError, ValueError):
            text = self.message
        return " ".join(text.split()).rstrip(".")
