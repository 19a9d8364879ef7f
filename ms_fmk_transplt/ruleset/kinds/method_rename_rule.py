"""MethodRenameRule: rename a method call by name alone, `x.cuda(...)` -> `x.npu(...)`.

A heuristic: the receiver's type is not known statically. It never touches a method whose
receiver resolves to an imported module, nor an attribute that is not called (`args.cuda`).

Code: name table `Tables.methods`; applied by engine/transformer.py `leave_Call`.
"""

from ms_fmk_transplt.engine.tables import Rename
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import kind


@kind(
    name="MethodRenameRule",
    schema={
        "required": ["method", "new_method"],
        "properties": {"method": {"type": "string"}, "new_method": {"type": "string"}},
    },
    message=".{old}(...) -> .{new}(...)",
    heuristic=True,
)
class MethodRenameRule:
    @staticmethod
    def check(entry):
        return [(k, p) for k in ("method", "new_method") if (p := checks.identifier(entry[k]))]

    @staticmethod
    def summary(entry):
        return f"method call .{entry['method']}(...) -> .{entry['new_method']}(...) (by name)"

    @staticmethod
    def key(entry):
        return entry["method"]

    @staticmethod
    def compile(rules, tables):
        for rule in rules:
            tables.methods[rule.params["method"]] = Rename(rule, rule.params["new_method"])
            tables.add_trigger(rule.params["method"])
