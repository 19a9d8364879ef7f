"""ArgsModifyRule (porting guide): replace one argument of a call with new source text.

`func_name` matches like FuncNameModifyRule's `old_name` (dotted: resolved through imports;
bare: any call or method call of that name, a heuristic). `arg_idx` is the 0-based position among
positional arguments; the optional extension `arg_name` also matches that keyword argument.
An absent argument is not added. A `*args` before the position makes it unknowable: reported.
"""

from ms_fmk_transplt.engine.tables import ArgRewrite
from ms_fmk_transplt.rules import checks
from ms_fmk_transplt.rules.registry import kind


@kind(
    name="ArgsModifyRule",
    schema={
        "required": ["func_name", "arg_idx", "arg_new"],
        "properties": {
            "func_name": {"type": "string"},
            "arg_idx": {"type": "integer", "minimum": 0},
            "arg_new": {"type": "string"},
            "arg_name": {"type": "string"},
        },
    },
    message="argument {old} -> {new}",
)
class ArgsModifyRule:
    @staticmethod
    def check(entry):
        problems = []
        if p := checks.dotted_name(entry["func_name"]):
            problems.append(("func_name", p))
        if p := checks.expression(entry["arg_new"]):
            problems.append(("arg_new", p))
        if "arg_name" in entry and (p := checks.identifier(entry["arg_name"])):
            problems.append(("arg_name", p))
        return problems

    @staticmethod
    def summary(entry):
        return f"argument {entry['arg_idx']} of {entry['func_name']} becomes {entry['arg_new']}"

    @staticmethod
    def key(entry):
        return (entry["func_name"], entry["arg_idx"], entry.get("arg_name"))

    @staticmethod
    def compile(rules, tables):
        for rule in rules:
            p = rule.params
            rewrite = ArgRewrite(rule, p["arg_idx"], p.get("arg_name"), p["arg_new"])
            table = tables.args_by_name if "." in p["func_name"] else tables.args_by_method
            table.setdefault(p["func_name"], []).append(rewrite)
            tables.add_trigger(p["func_name"])
