"""FuncNameModifyRule (porting guide): rename a function.

A dotted `old_name` (`torch.cuda.synchronize`) matches every reference that resolves to it
through the file's imports: `torch.cuda.synchronize()`, `tc.synchronize` after
`import torch.cuda as tc`, `from torch.cuda import synchronize`; called or not. A bare
`old_name` (`func`) is a heuristic: it matches calls `func(...)` and method calls `x.func(...)`
by name alone, and un-called uses of a name the file binds nowhere (`from lib import *`), and
`new_name` must then be a bare name too. A function imported by name,
`from lib import func` (also relative), is renamed consistently: the import becomes
`from lib import new_func` and every use, called or not, follows; `from lib import func as f`
becomes `from lib import new_func as f`. Where renaming the binding could break the file (it
binds `func` itself as well, `__all__` exports it, or `new_func` is already a name in it), the
import becomes `from lib import new_func as func`, which changes what the name means and
nothing else, and the finding says why. `lib.func` on an imported module is renamed called or
not. A file that defines its own `func` keeps its calls and gets one report: by name alone a
call cannot be told from the library's.

Code: name tables `renames`, `methods`, `functions`; applied by engine/tables.py (`Tables.lookup`), engine/renames.py, engine/imports.py.
"""

from collections.abc import Hashable

from ms_fmk_transplt.engine.rule import Rule
from ms_fmk_transplt.engine.tables import Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="FuncNameModifyRule",
    schema={
        "required": ["old_name", "new_name"],
        "properties": {"old_name": {"type": "string"}, "new_name": {"type": "string"}},
    },
    message="{old} -> {new}",
)
class FuncNameModifyRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        problems = [(k, p) for k in ("old_name", "new_name") if (p := checks.dotted_name(entry[k]))]
        if not problems and "." not in entry["old_name"] and "." in entry["new_name"]:
            problems.append(
                ("new_name", "a bare old_name renames by name alone, so new_name must be a bare name too")
            )
        if not problems and entry["old_name"] == entry["new_name"]:
            problems.append(("new_name", "new_name is the same as old_name"))
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"rename function {entry['old_name']} to {entry['new_name']}"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["old_name"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            old, new = rule.params["old_name"], rule.params["new_name"]
            entry = tables.rename(rule, new, rule.params.get("suggestion", ""))
            if "." in old:
                tables.renames[old] = entry
            else:
                tables.methods[old] = entry
                tables.functions[old] = entry
            tables.add_trigger(old)
