"""PatchTargetRule: a dotted API path passed as a string (a mock target) follows the API's rename.

`mock.patch("torch.cuda.is_available", return_value=False)` patches an API the converted code no
longer calls: its calls became `torch.npu.is_available()`, so the patch must name that too. A
module imported by a name in a string (`importlib.import_module("torch.cuda")`, `__import__`,
`importlib.util.find_spec`) is the same case: the string names what the code would name. The
string's path is read from its `torch` segment on (`"pkg.utils.torch.cuda.device_count"` reaches
torch through `pkg.utils`: marked heuristic) and renamed by the same tables as code
(`Tables.lookup`); a path no rule renames is left alone. `func_name` is dotted (resolved through
the imports) or a bare name matched as any call or method call of that name (`mocker.patch`,
`monkeypatch.setattr`: heuristic); the target is the positional argument `arg_idx` (default 0) or
the keyword `keyword`. A string renamed by a rule that needs torch_npu (`torch.cuda` ->
`torch.npu`) needs it too: the file gets `import torch_npu` whether or not the entry says
`needs_torch_npu` (before, a user's entry without it patched `torch.npu.*` unimported).

Code: `PatchTarget.rewrite_call`, a call hook (engine/interface/hooks.py) keyed by `func_name`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from ms_fmk_transplt.engine.interface import Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind

_ROOTS = ("torch",)  # where a dotted API path in the string starts


@kind(
    name="PatchTargetRule",
    schema={
        "required": ["func_name"],
        "properties": {
            "func_name": {"type": "string"},
            "arg_idx": {"type": "integer", "minimum": 0},
            "keyword": {"type": "string"},
        },
    },
    message="{old} -> {new}",
)
class PatchTargetRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return checks.problems(entry, func_name=checks.dotted_name, keyword=checks.identifier)

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"API paths given as strings to {entry['func_name']}(...) follow the API's rename"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["func_name"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            name = p["func_name"]
            hook = PatchTarget(rule, p.get("arg_idx", 0), p.get("keyword"))
            tables.add_call_hook(name, hook, by_short_name="." not in name)
            # it acts only on a string target that spells an API a rename covers: the fast path
            # reads those strings (engine/conversion/fast_path.py), and the rename's own trigger words are in them
            tables.path_string_calls.add(name)


@dataclass(frozen=True)
class PatchTarget:
    """Rename the API path of a string target argument, `"torch.cuda.x"` -> `"torch.npu.x"`."""

    rule: Rule
    arg_idx: int
    keyword: str | None
    order: ClassVar[int] = 0

    def rewrite_call(self, site: Site, original: cst.Call, updated: cst.Call, name: str | None) -> cst.Call:
        """The call with its target string renamed, when a rule renames the path in it."""
        index = self._target(original)
        if index is None:
            return updated
        literal = original.args[index].value
        assert isinstance(literal, cst.SimpleString)
        value = literal.evaluated_value
        if not isinstance(value, str):
            return updated
        parts = value.split(".")
        for start, part in enumerate(parts):
            if part not in _ROOTS:
                continue
            path = ".".join(parts[start:])
            answer = site.renamed(path)
            if answer is None or answer[0] == path:
                continue
            renamed, renamer = answer
            new_value = ".".join([*parts[:start], renamed])
            site.report(
                literal,
                self.rule,
                Operation.MODIFY,
                heuristic=start > 0 or name is None,
                old=value,
                new=new_value,
            )
            if renamer.needs_torch_npu:  # the string now names what only torch_npu defines
                site.require_torch_npu()
            new_literal = literal.with_changes(
                value=f"{literal.prefix}{literal.quote}{new_value}{literal.quote}"
            )
            args = list(updated.args)
            args[index] = args[index].with_changes(value=new_literal)
            return updated.with_changes(args=args)
        return updated

    def _target(self, call: cst.Call) -> int | None:
        """The index of the target argument when it is a plain string literal."""
        found = None
        for i, arg in enumerate(call.args):
            if arg.keyword is not None and self.keyword is not None and arg.keyword.value == self.keyword:
                found = i
        if found is None:
            positional = 0
            for i, arg in enumerate(call.args):
                if arg.star:
                    return None
                if arg.keyword is None:
                    if positional == self.arg_idx:
                        found = i
                        break
                    positional += 1
        if found is None:
            return None
        value = call.args[found].value
        if not isinstance(value, cst.SimpleString) or "\\" in value.value:
            return None
        return found
