"""CudaSourceRule: report a call that builds CUDA sources (`.cu`, `.cuh` files named in its arguments).

`torch.utils.cpp_extension.load(name, sources=["k.cpp", "k.cu"])` compiles CUDA code that no NPU
runs, while the same call with C++ sources only builds a CPU extension and is left alone. The
call is matched by qualified name; any string literal among its arguments (nested in lists or
tuples too) ending in one of `suffixes`, or any of the `keywords` given (`load_inline(...,
cuda_sources=...)`), makes it an UNSUPPORTED finding.

Code: `CudaSources.rewrite_call` (reports only), a call hook (engine/interface/hooks.py) keyed by `func_name`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from ms_fmk_transplt.engine.interface import CALLS, Rule, Site, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="CudaSourceRule",
    schema={
        "required": ["func_name"],
        "properties": {
            "func_name": {"type": "string"},
            "suffixes": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "keywords": {"type": "array", "items": {"type": "string"}},
        },
    },
    message="{old} has no NPU counterpart",
)
class CudaSourceRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return [("func_name", p)] if (p := checks.dotted_name(entry["func_name"])) else []

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"report {entry['func_name']} calls that compile CUDA sources"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["func_name"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            suffixes = tuple(rule.params.get("suffixes", [".cu", ".cuh"]))
            name = rule.params["func_name"]
            # one rule per function: a later one replaces an earlier one
            tables.hooks.remove(CALLS, name, lambda hook: isinstance(hook, CudaSources))
            keywords = tuple(rule.params.get("keywords", ()))
            tables.add_call_hook(name, CudaSources(rule, suffixes, keywords))
            tables.add_name_trigger(name)


@dataclass(frozen=True)
class CudaSources:
    """Report a call whose string arguments name CUDA sources (files ending in `suffixes`)."""

    rule: Rule
    suffixes: tuple[str, ...]
    keywords: tuple[str, ...] = ()  # arguments that hold CUDA code themselves: cuda_sources=
    order: ClassVar[int] = 0  # reports only, changes nothing

    def rewrite_call(self, site: Site, original: cst.Call, updated: cst.Call, name: str | None) -> cst.Call:
        """`updated` unchanged; an UNSUPPORTED finding when a CUDA source is among the arguments."""
        cuda = [v for a in original.args for v in _strings(a.value) if v.endswith(self.suffixes)]
        cuda += [
            f"{a.keyword.value}=" for a in original.args if a.keyword and a.keyword.value in self.keywords
        ]
        if cuda:
            what = f"{name} of CUDA sources ({', '.join(cuda)})"
            site.report_unsupported(
                original, self.rule, what, self.rule.params.get("suggestion", ""), api=name or ""
            )
        return updated


def _strings(node: cst.BaseExpression) -> Iterator[str]:
    """The string literals of an argument, inside lists and tuples too."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        if isinstance(value, str):
            yield value
    elif isinstance(node, (cst.List, cst.Tuple)):
        for element in node.elements:
            yield from _strings(element.value)
