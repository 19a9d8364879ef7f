"""ImportInsertRule: `import torch_npu` once, after the first `import torch`, in files that need it.

A file needs it when another rule flagged `needs_torch_npu` changed it and it does not import
the module already; with `entry_points`, so does every script with an `if __name__ == "__main__":`
block that imports torch (torch.accelerator and every module the script imports then see the
NPU). Placed after the first import of torch, inside the same block when that import is guarded
(`try: import torch`), and before the first import of torch.npu, which only exists after it.
`when_used` names APIs whose use alone needs it (torch.accelerator finds the NPU only once
torch_npu is imported).

Code: `Tables.import_insert`; applied by engine/importing/imports.py `insert_module_import` (from `leave_Module`).
"""

from collections.abc import Hashable

from ms_fmk_transplt.engine.interface import Rule, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="ImportInsertRule",
    schema={
        "required": ["module"],
        "properties": {
            "module": {"type": "string"},
            "after": {"type": "string"},
            "entry_points": {"type": "boolean"},
            "when_used": {"type": "array", "items": {"type": "string"}},
        },
    },
    message="import {module}",
)
class ImportInsertRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        problems = []
        if p := checks.dotted_name(entry["module"]):
            problems.append(("module", p))
        if "after" in entry and (p := checks.dotted_name(entry["after"])):
            problems.append(("after", p))
        for i, name in enumerate(entry.get("when_used", [])):
            if p := checks.dotted_name(name):
                problems.append((f"when_used/{i}", p))
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"insert `import {entry['module']}` after the first import of {entry.get('after', 'torch')}"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return "ImportInsertRule"

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        tables.import_insert = rules[-1]
        for name in rules[-1].params.get("when_used", []):
            tables.needs_module.add(name)
            tables.add_name_trigger(name)
        if rules[-1].params.get("entry_points"):
            # an entry point is a file with both words (`if __name__ == "__main__":`)
            entry_point = (rules[-1].params.get("after", "torch"), "__main__")
            tables.triggers.add(entry_point)
            tables.text_triggers.add(entry_point)
