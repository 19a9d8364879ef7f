"""KeywordRenameRule: rename a keyword argument of one function, `profile(use_cuda=...)` -> `use_npu=`.

`func_name` is a dotted name resolved through the file's imports, as in FuncNameModifyRule.
"""

from ms_fmk_transplt.engine.tables import KeywordRename
from ms_fmk_transplt.rules import checks
from ms_fmk_transplt.rules.registry import kind


@kind(
    name="KeywordRenameRule",
    schema={
        "required": ["func_name", "keyword", "new_keyword"],
        "properties": {
            "func_name": {"type": "string"},
            "keyword": {"type": "string"},
            "new_keyword": {"type": "string"},
        },
    },
    message="{old}= -> {new}=",
)
class KeywordRenameRule:
    @staticmethod
    def check(entry):
        problems = []
        if p := checks.dotted_name(entry["func_name"]):
            problems.append(("func_name", p))
        problems += [(k, p) for k in ("keyword", "new_keyword") if (p := checks.identifier(entry[k]))]
        return problems

    @staticmethod
    def summary(entry):
        return f"{entry['func_name']}({entry['keyword']}=...) -> {entry['new_keyword']}=..."

    @staticmethod
    def key(entry):
        return (entry["func_name"], entry["keyword"])

    @staticmethod
    def compile(rules, tables):
        for rule in rules:
            p = rule.params
            tables.keywords.setdefault(p["func_name"], []).append(
                KeywordRename(rule, p["keyword"], p["new_keyword"])
            )
            tables.add_trigger(p["keyword"])
