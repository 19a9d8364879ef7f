"""ResultUseRule: report uses of a call's result that break because the NPU API returns None.

`torch.cuda.get_device_capability()` gives `(8, 0)` on a GPU; torch_npu's counterpart returns
None, so the rename alone turns working code into a TypeError (or, for `==`, a silently false
test). Reported where the result is unpacked (`major, minor = f()`), indexed (`f()[0]`),
compared (`f() >= (8, 0)`), iterated, or bound to a name that the file later uses so; printing
it or passing it on is left alone. With `attributes`, reading one of those attributes of the
result is a use too: `torch.cuda.get_device_properties(0).multi_processor_count` becomes a call
to torch_npu's, whose properties have no such field (AttributeError); `.name` is not listed.
Nothing is rewritten: the right replacement depends on what the check guards, which the
`suggestion` spells out.

Code: `BreakingResult.result_used`, a result hook (engine/interface/hooks.py) keyed by `name`; the
engine finds the uses of a call's result and the names bound to it (engine/conversion/call_results.py).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.interface import RESULTS, ResultUse, Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="ResultUseRule",
    schema={
        "required": ["name", "returns", "suggestion"],
        "properties": {
            "name": {"type": "string"},
            "returns": {"type": "string"},
            "suggestion": {"type": "string"},
            "attributes": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
    },
    message="{old} returns {returns} on the NPU: {use}; {suggestion}",
)
class ResultUseRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        problems = [("name", p)] if (p := checks.dotted_name(entry["name"])) else []
        for i, attribute in enumerate(entry.get("attributes", ())):
            if p := checks.identifier(attribute):
                problems.append((f"attributes/{i}", p))
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        if entry.get("attributes"):
            return f"reads of {entry['name']}()'s attributes that {entry['returns']} lacks (reported)"
        return f"uses of {entry['name']}() that break because it returns {entry['returns']} on the NPU (reported)"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["name"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            attributes = frozenset(rule.params.get("attributes", ()))
            tables.hooks.put(RESULTS, rule.params["name"], BreakingResult(rule, attributes))
            tables.add_name_trigger(rule.params["name"])


_USES = {
    ResultUse.UNPACK: "unpacking it raises TypeError",
    ResultUse.INDEX: "indexing it raises TypeError",
    ResultUse.ITERATE: "iterating it raises TypeError",
    ResultUse.COMPARE_EQUAL: "comparing it with == is always False",
    ResultUse.ORDER: "ordering it raises TypeError",
}


@dataclass(frozen=True)
class BreakingResult:
    """Report each use of the result that breaks once the call returns None."""

    rule: Rule
    attributes: frozenset[str] = frozenset()  # with these, attribute reads are the only uses reported

    def result_used(self, site: Site, node: cst.CSTNode, name: str, use: ResultUse, through: str) -> None:
        """An UNSUPPORTED finding saying how the use breaks and what to write instead."""
        if self.attributes:
            if use is not ResultUse.ATTRIBUTE or not isinstance(node, cst.Attribute):
                return
            if node.attr.value not in self.attributes:
                return
            text = f"reading .{node.attr.value} raises AttributeError"
        elif use is ResultUse.ATTRIBUTE:
            return
        else:
            text = _USES[use]
        text += f" (through {through})" if through else ""
        message = self.rule.render(
            old=name, returns=self.rule.params["returns"], use=text, suggestion=self.rule.params["suggestion"]
        )
        site.report_message(node, self.rule, Operation.UNSUPPORTED, message)
