"""FusedCallRule: a call replaced by the torch_npu fused operator that computes it (`--opt-in`).

Applied only when the run opts into the rule's `opt_in` (`--opt-in affinity`); otherwise the rule
adds nothing to the run (`--advice` names the same replacement, with its condition). A handler,
named in the rule, rewrites one call or leaves it when the call is outside what the fused operator
is known to compute the same (the rule's `tolerance` says how close the result stays). A rule
with `half_precision` rewrites only in a file that evidently computes in float16/bfloat16
(autocast, `.half()`, a half dtype named): the fused kernel takes no float32.

Code: `FusedCall.rewrite_call`, a call hook (engine/interface/hooks.py) keyed by `func_name`; the handlers
are the functions of `HANDLERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import libcst as cst

from ms_fmk_transplt.engine.interface import Rule, Site, Tables
from ms_fmk_transplt.engine.naming import build_dotted
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind

# F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, *, enable_gqa)
_SDPA_PARAMETERS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")


def _arguments(call: cst.Call, names: tuple[str, ...]) -> dict[str, cst.BaseExpression] | None:
    """Parameter name -> value, None when a star argument or an unknown keyword makes it unsure."""
    given: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= len(names):
                return None
            given[names[index]] = arg.value
        elif arg.keyword.value in names:
            given[arg.keyword.value] = arg.value
        else:
            return None
    return given


def _is(node: cst.BaseExpression | None, *spellings: str) -> bool:
    return node is not None and cst.Module(body=[]).code_for_node(node).strip() in spellings


def sdpa_to_fusion_attention(call: cst.Call, params: dict[str, Any]) -> cst.BaseExpression | None:
    """`F.scaled_dot_product_attention(q, k, v[, is_causal=True][, scale=s])` as
    `torch_npu.npu_fusion_attention(q, k, v, q.size(1), "BNSD", ...)[0]`: BNSD is SDPA's layout,
    causal is sparse_mode 2 with torch_npu's 2048 x 2048 compressed mask, the scale SDPA's default
    1/sqrt(head_dim) unless given. Left as it is with a mask, dropout other than a literal 0, GQA,
    or a query that is not a plain name (it is read four times)."""
    given = _arguments(call, _SDPA_PARAMETERS)
    if given is None or not all(k in given for k in ("query", "key", "value")):
        return None
    query = given["query"]
    if (
        not isinstance(query, (cst.Name, cst.Attribute))
        or cst.Module(body=[]).code_for_node(query).count("(") > 0
    ):
        return None
    if "attn_mask" in given and not _is(given["attn_mask"], "None"):
        return None
    if "dropout_p" in given and not _is(given["dropout_p"], "0", "0.0", "0."):
        return None
    causal = given.get("is_causal")
    if causal is not None and not _is(causal, "True", "False"):
        return None
    q = cst.Module(body=[]).code_for_node(query)
    k = cst.Module(body=[]).code_for_node(given["key"])
    v = cst.Module(body=[]).code_for_node(given["value"])
    scale = (
        cst.Module(body=[]).code_for_node(given["scale"])
        if "scale" in given
        else f"1.0 / {q}.size(-1) ** 0.5"
    )
    extra = ""
    if _is(causal, "True"):
        mask = f"torch.ones(2048, 2048, dtype=torch.bool, device={q}.device).triu(1)"
        extra = f", atten_mask={mask}, sparse_mode=2"
    text = f'torch_npu.npu_fusion_attention({q}, {k}, {v}, {q}.size(1), "BNSD", scale={scale}{extra})[0]'
    return cst.parse_expression(text)


def optimizer_to_fused(call: cst.Call, params: dict[str, Any]) -> cst.BaseExpression | None:
    """`torch.optim.X(params, kw=...)` as `new_name(params, kw=...)` when every keyword is one the
    fused optimizer documents (`keywords`), those it requires (`required`) are given, and only the
    parameters are positional; else left (`fused=True`, `foreach=...`, `**options`)."""
    accepted, required = set(params.get("keywords", ())), set(params.get("required", ()))
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) != 1 or any(a.star for a in call.args):
        return None
    given = {a.keyword.value for a in call.args if a.keyword is not None}
    if not given <= accepted or not required <= given:
        return None
    return call.with_changes(func=build_dotted(params["new_name"]))


HANDLERS: dict[str, Callable[[cst.Call, dict[str, Any]], cst.BaseExpression | None]] = {
    "sdpa_to_fusion_attention": sdpa_to_fusion_attention,
    "optimizer_to_fused": optimizer_to_fused,
}


@kind(
    name="FusedCallRule",
    schema={
        "required": ["func_name", "new_name", "handler", "opt_in", "tolerance"],
        "properties": {
            "func_name": {"type": "string"},
            "new_name": {"type": "string"},
            "handler": {"type": "string"},
            "keywords": {"type": "array", "items": {"type": "string"}},
            "required": {"type": "array", "items": {"type": "string"}},
            "tolerance": {"type": "string"},
            "half_precision": {"type": "boolean"},
        },
    },
    message="{old}(...) -> {new} ({tolerance})",
)
class FusedCallRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return checks.problems(
            entry,
            func_name=checks.dotted_name,
            new_name=checks.dotted_name,
            handler=checks.one_of(HANDLERS, "handler"),
            opt_in=checks.non_empty("an opt_in name"),
        )

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"{entry['func_name']} -> {entry['new_name']} (opt-in: {entry['opt_in']})"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return (entry["func_name"], entry["handler"])

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            if p["opt_in"] not in tables.opt_ins:
                continue  # not asked for: --advice says where it would apply
            tables.add_call_hook(p["func_name"], FusedCall(rule, p["handler"], p["tolerance"]))
            tables.add_name_trigger(p["func_name"])


@dataclass(frozen=True)
class FusedCall:
    """Replace a call by the fused operator's expression its handler builds."""

    rule: Rule
    handler: str  # a name of HANDLERS (a name pickles with the tables, as a function may not)
    tolerance: str
    # last: its result is no longer a call (the fused operator's first output), which no later hook
    # could read; it sees the call as every other rule left it
    order: ClassVar[int] = 100

    def rewrite_call(self, site: Site, original: cst.Call, updated: cst.Call, name: str | None) -> cst.Call:
        """The fused operator's expression (a subscript of its result), or the call as it is."""
        if not site.imports_torch:
            return updated  # the replacement names torch (the causal mask)
        if self.rule.params.get("half_precision") and not site.half_precision:
            return updated  # the fused kernel takes float16/bfloat16 only: float32 stays advice
        new = HANDLERS[self.handler](updated, self.rule.params)
        if new is None:
            return updated
        new_name = self.rule.params["new_name"]
        site.report(original, self.rule, Operation.MODIFY, old=name, new=new_name, tolerance=self.tolerance)
        return new  # type: ignore[return-value]  # the engine puts any expression in the call's place
