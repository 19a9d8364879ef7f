"""One file's dealings with the project's other modules, for the device evidence (engine/device_evidence.py).

- **Its calls into them**: `move(x, "cuda")`, `Runner(model, "cuda")`, a method of an instance
  of the project's class (`r = Runner(); r.run(device="cuda")`, `self.runner.move("cuda")`),
  `helper(**{"device": "cuda"})`: the argument is a device when the parameter it binds reaches
  a device API there (engine/project_devices.py's `Reach`).
- **Their uses of its values**: a literal a top-level function returns (`def pick(): return
  "cuda"`), or a top-level constant (`ACCEL = "cuda"`), is a device when a module that imports
  it hands the value to a device API (`x.to(pick())`, `dev = pick(); model.to(dev)`), and a
  label, kept and not reported, when every use is a message (`print(pick())`, `logger.info`)
  or a comparison (engine/project_results.py, engine/project_index.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

import libcst as cst

from ms_fmk_transplt.engine.devices.device_flow import DeviceFlow, alias_key, returns
from ms_fmk_transplt.engine.project import CALLED, COMPARED, OWN, FirstParty, Reach, Returned, relative
from ms_fmk_transplt.engine.syntax import NodeIndex


class Marks(Protocol):
    """What the device evidence (engine/device_evidence.py's `DeviceContext`) lends: its marks and flow."""

    devices: dict[int, str]
    text: dict[int, str]
    flow: DeviceFlow

    def mark(self, values: Iterable[cst.BaseExpression], into: dict[int, str], why: str) -> None: ...


def _code(node: cst.CSTNode) -> str:
    return node.value if isinstance(node, cst.Name) else cst.Module(body=[]).code_for_node(node)


def _slot(slot: int | str) -> str:
    return f"its argument {slot + 1}" if isinstance(slot, int) else f"{slot}="


class ProjectCalls:
    """One file's view of the project's other modules: its calls into them, their uses of its values."""

    def __init__(
        self,
        project: FirstParty,
        qualify: Callable[[cst.CSTNode], str | None],
        takes_device: Callable[[str, int | str], str | None],
        messages: Iterable[str],
    ) -> None:
        layout = project.layout
        self.index = layout.index
        self.reach = Reach(layout.signatures, self.index.locate, takes_device)
        self.qualify = qualify
        self.takes_device = takes_device
        self.messages = frozenset(messages)  # print, info, warning: a value given to one is shown
        self.origin = project.path  # the file's own path
        self.relative: dict[str, str] = {}  # name a relative import binds -> its spelling (`..utils:move`)
        self.instances: dict[str, tuple[str, str]] = {}  # `r`, `.runner` -> (module path, class)

    def scan(self, nodes: NodeIndex, marks: Marks) -> None:
        """Read the file's relative imports and instances of the project's classes, and mark what
        its importers show its returned literals and constants to be."""
        for imported in nodes.of(cst.ImportFrom):  # from .helpers import move: `.helpers:move`
            if not imported.relative or isinstance(imported.names, cst.ImportStar):
                continue
            where = _code(imported.module) if imported.module is not None else None
            for alias in imported.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(bound, cst.Name):
                    self.relative[bound.value] = relative(len(imported.relative), where, _code(alias.name))
        facts = self.index.facts.get(self.origin)
        own = (
            {name.partition(".")[0] for name in facts.signatures} | facts.defined
            if facts is not None
            else set()
        )
        for assign in nodes.of(cst.Assign):  # r = Runner(), self.runner = helpers.Runner(...)
            value = assign.value
            if not isinstance(value, cst.Call):
                continue
            spelled = self.spelled(value.func)
            if spelled is None and isinstance(value.func, cst.Name) and value.func.value in own:
                spelled = f"{self.origin}{OWN}{value.func.value}"
            located = self.index.locate(spelled, self.origin) if spelled is not None else None
            if located is None:
                continue
            for target in assign.targets:
                key = alias_key(target.target)
                if key is not None:
                    self.instances[key] = located
        returned = self.index.returned(self.origin)
        if returned:
            self._returned(nodes, returned, marks)

    def spelled(self, func: cst.BaseExpression) -> str | None:
        """A callee as `Reach` spells it: qualified through the imports, or relatively (`.:helpers.move`)."""
        qualified = self.qualify(func)
        if qualified is not None:
            return qualified
        parts: list[str] = []
        while isinstance(func, cst.Attribute):
            parts.append(func.attr.value)
            func = func.value
        if isinstance(func, cst.Name) and func.value in self.relative:
            return ".".join([self.relative[func.value], *reversed(parts)])
        return None

    def callee(self, func: cst.BaseExpression) -> str | None:
        """The project's callable a call names: a function or class, or a method of an instance
        the file binds (`r.run`: `path::Runner.run`)."""
        spelled = self.spelled(func)
        if spelled is None and isinstance(func, cst.Attribute):
            instance = self.instances.get(alias_key(func.value) or "")
            if instance is not None:
                path, cls = instance
                spelled = f"{path}{OWN}{cls}.{func.attr.value}"
        return spelled

    def mark_call(
        self, node: cst.Call, marks: Marks, device_named: Callable[[str], bool], known: Callable[[str], bool]
    ) -> None:
        """`move(x, "cuda")` where the project's `helpers.move(batch, target)` hands `target` to
        `.to()`; a value of the project's enum (`TimerType("cuda")`) is a label."""
        callee = self.callee(node.func)
        if callee is None or known(callee):
            return
        found = self.reach.signature(callee, self.origin)
        if found is None:
            return
        name = callee.rpartition(OWN)[2] if OWN in callee else callee
        if found[1].enum and not device_named(name.rpartition(".")[2]):
            marks.mark((a.value for a in node.args[:1]), marks.text, f"a value of the project's enum {name}")
            return
        index = 0
        for arg in node.args:
            if arg.star == "**" and isinstance(arg.value, cst.Dict):  # helper(**{"device": "cuda"})
                for element in arg.value.elements:
                    key = element.key if isinstance(element, cst.DictElement) else None
                    word = key.evaluated_value if isinstance(key, cst.SimpleString) else None
                    if isinstance(word, str) and word.isidentifier():
                        self._mark(marks, name, callee, word, element.value)
                continue
            if arg.star:
                break
            slot: int | str = index if arg.keyword is None else arg.keyword.value
            index += arg.keyword is None
            self._mark(marks, name, callee, slot, arg.value)

    def _mark(self, marks: Marks, name: str, callee: str, slot: int | str, value: cst.BaseExpression) -> None:
        api = self.reach.reaches(callee, slot, self.origin)
        if api is not None:
            marks.mark([value], marks.devices, f"given to {name}() as {_slot(slot)}, which reaches {api}")

    def _returned(self, nodes: NodeIndex, returned: Returned, marks: Marks) -> None:
        """The file's top-level functions' returned literals and its constants, as its importers use them."""
        for module in nodes.of(cst.Module):
            for statement in module.body:
                if isinstance(statement, cst.FunctionDef):
                    name = statement.name.value
                    values = [r.value for r in returns(statement) if r.value is not None]
                    self._judge(f"returned by {name}()", returned.get(name + CALLED, ()), values, marks, True)
                elif isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
                            targets = small.targets if isinstance(small, cst.Assign) else [small]
                            for target in targets:
                                if isinstance(target.target, cst.Name):
                                    uses = returned.get(target.target.value, ())
                                    self._judge(
                                        f"bound to {target.target.value}", uses, [small.value], marks, False
                                    )

    def _judge(
        self,
        what: str,
        uses: tuple[tuple[str, tuple[str, int | str]], ...],
        values: list[cst.BaseExpression],
        marks: Marks,
        labels: bool,
    ) -> None:
        """Device when an importer hands the value to a device API; a label (`labels`: a result,
        not a constant, which may be compared with a device) when every importer only shows or
        compares it; else nothing is said."""
        if not uses or not values:
            return
        label = True
        for importer, (callee, slot) in uses:
            if callee == "":
                label = label and (callee, slot) == COMPARED
                continue
            api = self.takes_device(callee, slot) or self.reach.reaches(callee, slot, importer)
            if api is not None:
                called = api if api.endswith(")") else api + "()"
                marks.mark(values, marks.devices, f"{what}, which {importer} hands to {called}")
                for value in values:
                    marks.flow.reach(value, self.qualify)
                return
            label = label and callee.rpartition(".")[2] in self.messages
        if label and labels:
            marks.mark(values, marks.text, f"{what}, which the project only shows or compares")
