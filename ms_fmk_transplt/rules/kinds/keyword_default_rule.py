"""KeywordDefaultRule: pass a keyword argument whose default means CUDA, when the call omits it.

`torch.random.fork_rng(devices=[0])` forks the CUDA generators unless told otherwise; the rule
adds `device_type="npu"`. A call that passes the keyword (or `**kwargs`) is left alone.
"""

from ms_fmk_transplt.rules import checks
from ms_fmk_transplt.rules.registry import kind


@kind(
    name="KeywordDefaultRule",
    schema={
        "required": ["func_name", "keyword", "value"],
        "properties": {
            "func_name": {"type": "string"},
            "keyword": {"type": "string"},
            "value": {"type": "string"},
        },
    },
    message="{old}(...) -> {new}",
)
class KeywordDefaultRule:
    @staticmethod
    def check(entry):
        problems = []
        if p := checks.dotted_name(entry["func_name"]):
            problems.append(("func_name", p))
        if p := checks.identifier(entry["keyword"]):
            problems.append(("keyword", p))
        if p := checks.expression(entry["value"]):
            problems.append(("value", p))
        return problems

    @staticmethod
    def summary(entry):
        return f"{entry['func_name']}(...) gets {entry['keyword']}={entry['value']} when it is not passed"

    @staticmethod
    def key(entry):
        return (entry["func_name"], entry["keyword"])

    @staticmethod
    def compile(rules, tables):
        for rule in rules:
            p = rule.params
            tables.keyword_defaults.setdefault(p["func_name"], []).append(rule)
            tables.add_trigger(p["func_name"])
