"""The reporting half of the `Site` the hooks see (engine/interface/hooks.py): findings wait in `pending`.

The transformer inherits it; hooks, the renames and the support classifier's verdicts all record
their findings here, at original nodes, and engine/conversion/convert.py places them afterwards.
"""

from __future__ import annotations

import re
from typing import Any

import libcst as cst

from ms_fmk_transplt.engine.interface import Match, Rule, Tables
from ms_fmk_transplt.engine.reporting.messages import join_clauses
from ms_fmk_transplt.engine.reporting.pending import Pending
from ms_fmk_transplt.engine.reporting.support import SupportClassifier, operation_of
from ms_fmk_transplt.records import Operation, Support

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class SiteReports:
    """Findings of one file, waiting for their positions; `needs_torch_npu` once a rewrite needs it."""

    tables: Tables
    support: SupportClassifier

    def __init__(self) -> None:
        self.type_checks: set[int] = set()  # ids of the classes isinstance/issubclass name (walk.py)
        self.pending: list[Pending] = []
        self.needs_torch_npu = False

    def require_torch_npu(self) -> None:
        """The file's rewrites need `import torch_npu` (hooks.Site)."""
        self.needs_torch_npu = True

    @property
    def release(self) -> str:
        """The Ascend release converted for (hooks.Site)."""
        return self.tables.release

    def report(
        self, node: cst.CSTNode, rule: Rule, operation: Operation, heuristic: bool = False, **fields: Any
    ) -> None:
        """Record a finding at `node` (an original node) rendered from the rule's template."""
        fields.setdefault("release", self.tables.release)
        self.pending.append(Pending(node, rule, operation, rule.render(**fields), heuristic))
        if operation is not Operation.UNSUPPORTED and rule.needs_torch_npu:
            self.needs_torch_npu = True

    def report_unsupported(
        self, node: cst.CSTNode, rule: Rule, what: str, suggestion: str = "", api: str = ""
    ) -> None:
        """An UNSUPPORTED finding: `what` cannot run on the NPU as written; `suggestion` says what to do."""
        noop = bool(rule.params.get("noop"))
        counterpart = "device-agnostic" if self.tables.target == "accelerator" else "NPU"
        text = f"{what} has no effect on the NPU" if noop else f"{what} has no {counterpart} counterpart"
        suggestion = suggestion.format(release=self.tables.release) if suggestion else ""
        self.pending.append(
            Pending(
                node,
                rule,
                Operation.UNSUPPORTED,
                join_clauses(text, suggestion),
                noop=noop,
                api=api or (what if _DOTTED.fullmatch(what) else ""),
                support=Support.NO_EFFECT if noop else Support.UNSUPPORTED,
                suggestion=suggestion,
            )
        )

    def report_message(
        self,
        node: cst.CSTNode,
        rule: Rule,
        operation: Operation,
        message: str,
        heuristic: bool = False,
        api: str = "",
        support: Support | None = None,
        related: cst.CSTNode | None = None,
        within: int = 0,
        suggestion: str = "",
    ) -> None:
        """A finding at `node` (an original node) with a message the caller wrote; `{line}` in it
        becomes the line of the original node `related`; `within`: on that line of the node."""
        self.pending.append(
            Pending(
                node,
                rule,
                operation,
                message,
                heuristic,
                api=api,
                support=support,
                related=related,
                within=within,
                suggestion=suggestion,
            )
        )

    def renamed(self, name: str) -> tuple[str, Rule] | None:
        """What a qualified API name becomes under the rules, and the rule that renames it (None:
        no rule does)."""
        match = self.tables.lookup(name)
        if match is None or match.new is None:
            return None
        return match.new + name[len(match.prefix) :], match.rule

    def report_kept(self, node: cst.CSTNode, rule: Rule, message: str) -> None:
        """Something left as written that may be wrong on the NPU (a heuristic UNSUPPORTED finding)."""
        self.pending.append(Pending(node, rule, Operation.UNSUPPORTED, message, heuristic=True))

    def report_match(self, node: cst.CSTNode, match: Match) -> None:
        """A qualified name the tables rewrite (MODIFY) or report (no replacement); a class an
        `isinstance` / `issubclass` tests against is no use of it (none of its code runs)."""
        if match.new is None and id(node) in self.type_checks:
            return
        if match.new is None:
            self.report_unsupported(node, match.rule, match.prefix, match.suggestion)
        else:
            self.report(node, match.rule, Operation.MODIFY, old=match.prefix, new=match.new)

    def qualify(self, node: cst.CSTNode) -> str | None:
        """The qualified name an original Name/Attribute chain refers to (the transformer's)."""
        raise NotImplementedError

    def name_by_string(self, call: cst.Call, owner: cst.BaseExpression, attr: cst.BaseExpression) -> None:
        """`getattr(torch, "cuda")`: the name a rule rewrites, spelled as a string, is reported."""
        base = self.qualify(owner)
        if base is None or not isinstance(attr, cst.SimpleString):
            return
        value = attr.evaluated_value
        if not isinstance(value, str):
            return
        match = self.tables.lookup(f"{base}.{value}")
        if match is None or match.prefix != f"{base}.{value}":
            return
        target = f"the string {value!r} (write {match.new.rsplit('.', 1)[-1]!r})" if match.new else ""
        message = f"{match.prefix} looked up by name is not converted; change {target or 'it by hand'}"
        self.report_message(call, match.rule, Operation.UNSUPPORTED, message)

    def classify(
        self, node: cst.CSTNode, name: str | None, heuristic: bool = False, rewritten: bool = False
    ) -> None:
        """Ask the classifier about one use of API `name` (None: reported by a rule, nothing to ask)."""
        verdict = self.support.classify(node, name, rewritten) if name else None
        if verdict is None:
            return
        self.pending.append(
            Pending(
                node,
                verdict.rule,
                operation_of(verdict),
                join_clauses(verdict.message, verdict.suggestion),
                heuristic=heuristic,
                api=name or "",
                support=verdict.support,
                dtypes=verdict.dtypes,
                suggestion=verdict.suggestion,
                source=verdict.source,
            )
        )
