"""One file's dealings with the project's other modules, for the device evidence (engine/devices/device_evidence.py).

- **Its calls into them**: `move(x, "cuda")`, `Runner(model, "cuda")`, a method of an instance
  of the project's class (`r = Runner(); r.run(device="cuda")`, `self.runner.move("cuda")`, an
  instance a factory returns, `r = make_runner()`, or a parameter or attribute annotated with the
  class, `def go(r: Runner)`; a method inherited from a base in another module),
  `helper(**{"device": "cuda"})`: the argument is a device when the parameter it binds reaches
  a device API there (engine/project/project_devices.py's `Reach`).
- **Their uses of its values**: a literal a top-level function returns (`def pick(): return
  "cuda"`), or a top-level constant (`ACCEL = "cuda"`), is a device when a module that imports
  it hands the value to a device API (`x.to(pick())`, `dev = pick(); model.to(dev)`), and a
  label, kept and not reported, when every use is a message (`print(pick())`, `logger.info`)
  or a comparison (engine/project/project_results.py, engine/project/project_index.py).
- **Its comparisons with their functions' results**: `if kernel_kind() == "cuda":`, the literal
  as the result is (`result_of`, engine/devices/project_compares.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import libcst as cst

from ms_fmk_transplt.engine.devices.device_flow import DeviceFlow, alias_key, returns
from ms_fmk_transplt.engine.devices.project_compares import mark_compared
from ms_fmk_transplt.engine.project import CALLED, COMPARED, OWN, FirstParty, Reach, Returned, relative
from ms_fmk_transplt.engine.syntax import NodeIndex


class Marks(Protocol):
    """What the device evidence (engine/devices/device_evidence.py's `DeviceContext`) lends: its marks and flow."""

    devices: dict[int, str]
    text: dict[int, str]
    flow: DeviceFlow

    def mark(self, values: Iterable[cst.BaseExpression], into: dict[int, str], why: str) -> None: ...


def _code(node: cst.CSTNode) -> str:
    return node.value if isinstance(node, cst.Name) else cst.Module(body=[]).code_for_node(node)


def _into(marks: Marks, device: bool) -> dict[int, str]:
    return marks.devices if device else marks.text


def _slot(slot: int | str) -> str:
    return f"its argument {slot + 1}" if isinstance(slot, int) else f"{slot}="


def _annotated(annotation: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The classes a type names: `Runner`, `pkg.Runner`, `Optional[Runner]`, `Runner | None`,
    `"Runner"` (a forward reference)."""
    if isinstance(annotation, (cst.Name, cst.Attribute)):
        yield annotation
    elif isinstance(annotation, cst.Subscript):
        for element in annotation.slice:
            if isinstance(element.slice, cst.Index):
                yield from _annotated(element.slice.value)
    elif isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        yield from _annotated(annotation.left)
        yield from _annotated(annotation.right)
    elif isinstance(annotation, cst.SimpleString):
        text = annotation.evaluated_value
        if isinstance(text, str) and all(part.isidentifier() for part in text.split(".")):
            yield cst.parse_expression(text)


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
        self.reach = Reach(layout.signatures, self.index.locate, takes_device, self.index.inherited)
        self.qualify = qualify
        self.takes_device = takes_device
        self.messages = frozenset(messages)  # print, info, warning: a value given to one is shown
        self.origin = project.path  # the file's own path
        self.relative: dict[str, str] = {}  # name a relative import binds -> its spelling (`..utils:move`)
        self.instances: dict[str, tuple[str, str]] = {}  # `r`, `.runner` -> (module path, class)
        self.own: set[str] = set()  # the file's own functions, classes and variables

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
        own = self.own = (
            {name.partition(".")[0] for name in facts.signatures} | facts.defined
            if facts is not None
            else set()
        )
        for assign in nodes.of(cst.Assign):  # r = Runner(), self.runner = helpers.Runner(...)
            value = assign.value
            located = self._class(value.func, own) if isinstance(value, cst.Call) else None
            if located is None:
                continue
            located = self.index.made_by(*located)  # r = make_runner(): the class it returns
            for target in assign.targets:
                key = alias_key(target.target)
                if key is not None:
                    self.instances[key] = located
        # def go(r: Runner), r: Optional[Runner] = None, self.runner: "Runner"
        typed: list[tuple[cst.BaseExpression, cst.Annotation | None]] = [
            (p.name, p.annotation) for p in nodes.of(cst.Param)
        ]
        typed += [(a.target, a.annotation) for a in nodes.of(cst.AnnAssign)]
        for held, annotation in typed:
            key = alias_key(held) if annotation is not None else None
            if key is None or annotation is None:
                continue
            for named in _annotated(annotation.annotation):
                located = self._class(named, own)
                if located is not None:
                    self.instances[key] = located
                    if isinstance(held, cst.Name):  # a class's `runner: Runner`, read as self.runner
                        self.instances.setdefault("." + held.value, located)
                    break
        returned = self.index.returned(self.origin)
        if returned:
            self._returned(nodes, returned, marks)
        # if kernel_kind() == "cuda": the literal is what kernel_kind()'s result is
        mark_compared(
            nodes, self.result_of, lambda values, device, why: marks.mark(values, _into(marks, device), why)
        )

    def _class(self, func: cst.BaseExpression, own: set[str]) -> tuple[str, str] | None:
        """(module path, name) of the project's class or function a call or annotation names."""
        spelled = self.spelled(func)
        if spelled is None and isinstance(func, cst.Name) and func.value in own:
            spelled = f"{self.origin}{OWN}{func.value}"
        return self.index.locate(spelled, self.origin) if spelled is not None else None

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
            made = func.value  # Fast().move(...), make_runner().move(...)
            located = self._class(made.func, self.own) if isinstance(made, cst.Call) else None
            instance = self.index.made_by(*located) if located is not None else None
            instance = instance or self.instances.get(alias_key(func.value) or "")
            if instance is not None:
                path, cls = instance
                spelled = f"{path}{OWN}{cls}.{func.attr.value}"
        return spelled

    def mark_call(
        self, node: cst.Call, marks: Marks, device_named: Callable[[str], bool], known: Callable[[str], bool]
    ) -> None:
        """`move(x, "cuda")` where the project's `helpers.move(batch, target)` hands `target` to
        `.to()`; a value of the project's enum (`TimerType("cuda")`) is a label."""
        if not node.args:  # nothing to mark: the callee is not looked for
            return
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
        device, label = self._verdict(uses)
        if device is not None:
            marks.mark(values, marks.devices, f"{what}, which {device}")
            for value in values:
                marks.flow.reach(value, self.qualify)
        elif label and labels:
            marks.mark(values, marks.text, f"{what}, which the project only shows or compares")

    def _verdict(self, uses: tuple[tuple[str, tuple[str, int | str]], ...]) -> tuple[str | None, bool]:
        """(`train.py hands to x.to()` when an importer hands the value to a device API, whether
        every importer only shows or compares it)."""
        label = True
        for importer, (callee, slot) in uses:
            if callee == "":
                label = label and (callee, slot) == COMPARED
                continue
            api = self.takes_device(callee, slot) or self.reach.reaches(callee, slot, importer)
            if api is not None:
                return f"{importer} hands to {api if api.endswith(')') else api + '()'}", False
            label = label and callee.rpartition(".")[2] in self.messages
        return None, label

    def result_of(self, func: cst.BaseExpression) -> tuple[bool, str] | None:
        """What the result of a call of the project's top-level function is, from every use the
        project makes of it: (True, why) a device, (False, why) a label (it returns only string
        literals, which every module only shows or compares), else None."""
        spelled = self.spelled(func)
        if spelled is None and isinstance(func, cst.Name) and func.value in self.own:
            spelled = f"{self.origin}{OWN}{func.value}"
        located = self.index.locate(spelled, self.origin) if spelled is not None else None
        if located is None or "." in located[1]:
            return None
        path, name = located
        uses = self.index.returned(path).get(name + CALLED, ())
        device, label = self._verdict(uses) if uses else (None, False)
        if device is not None:
            return True, f"compared with the result of the project's {name}(), which {device}"
        facts = self.index.facts.get(path)
        if label and facts is not None and name in facts.worded:
            return (
                False,
                f"compared with the project's {name}(), a label: the project only shows or compares it",
            )
        return None
