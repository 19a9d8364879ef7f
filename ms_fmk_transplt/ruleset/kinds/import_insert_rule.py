"""ImportInsertRule: `import torch_npu` once, after the first `import torch`, in files that need it.

A file needs it when another rule flagged `needs_torch_npu` changed it and it does not import
the module already; with `entry_points`, so does every script with an `if __name__ == "__main__":`
block that imports torch (torch.accelerator and every module the script imports then see the
NPU). Placed after the first import of torch, inside the same block when that import is guarded
(`try: import torch`), and before the first import of torch.npu, which only exists after it.
`when_used` names APIs whose use alone needs it (torch.accelerator finds the NPU only once
torch_npu is imported).

Code: `ModuleImport.needed_by` and `message` (the finding's words for each reason the engine
gives: needed by a rewrite, by torch.accelerator, by an entry point, before the file's own
import), with the module, `after` and `entry_points`, an import hook
(engine/interface/hooks.py's `ImportHook`) under "*": the rewrites ask for the import through the `Site`,
and engine/importing/imports.py `insert_module_import` places it (engine/importing/import_statements.py
`finish_module`, as the transformer leaves the module).
"""

from collections.abc import Hashable
from dataclasses import dataclass

from ms_fmk_transplt.engine.interface import ANY, IMPORTS, ImportReason, Rule, Tables
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
        rule = rules[-1]
        p = rule.params
        hook = ModuleImport(
            rule,
            p["module"],
            p.get("after", "torch"),
            bool(p.get("entry_points")),
            tuple(p.get("when_used", ())),
        )
        tables.hooks.put(IMPORTS, ANY, hook)
        for name in hook.when_used:
            tables.add_name_trigger(name)
        if hook.entry_points:
            # an entry point is a file with both words (`if __name__ == "__main__":`)
            entry_point = (hook.after, "__main__")
            tables.triggers.add(entry_point)
            tables.text_triggers.add(entry_point)


@dataclass(frozen=True)
class ModuleImport:
    """`import <module>` after the first import of `after`, where the file needs it."""

    rule: Rule
    module: str
    after: str = "torch"
    entry_points: bool = False
    when_used: tuple[str, ...] = ()  # APIs whose use alone needs it

    def needed_by(self, name: str) -> bool:
        return any(name == used or name.startswith(used + ".") for used in self.when_used)

    def message(self, reason: ImportReason) -> str:
        return self.rule.render(module=self.module) + _WHY[reason].format(module=self.module)


# what the finding adds to the rule's message, by the reason the engine placed the import
_WHY = {
    ImportReason.NEEDED: "",
    ImportReason.ACCELERATOR: (
        " (the script asks torch.accelerator for its device: the NPU is registered by this import)"
    ),
    ImportReason.ENTRY_POINT: (
        " (entry-point script: registers the NPU for torch.accelerator and every module it imports)"
    ),
    ImportReason.BEFORE_OWN_IMPORT: (
        " (this line's npu import needs it before the file's own import of {module} runs)"
    ),
}
