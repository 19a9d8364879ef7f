"""Checkpoints in a per-rank temporary folder: rank 0 saves, the others wait at a barrier and load,
so they must look in rank 0's folder. A `tempfile.mkdtemp()` a loaded path comes from is made on
rank 0 and its name given to every rank (torch.distributed.broadcast_object_list).

Where a path comes from is followed by name through the assignments of the load's own function
(`out = args.out or tempfile.mkdtemp()`, `path = os.path.join(out, "m.pt")`): a heuristic, so
every temporary folder keeps its DS113 note.
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.distributed.survey import Path, Survey, function_of

MKDTEMP = "tempfile.mkdtemp"


class _Parts(cst.CSTVisitor):
    """The names and calls inside an expression."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.calls: list[cst.Call] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


def _parts(node: cst.CSTNode) -> _Parts:
    parts = _Parts()
    node.visit(parts)
    return parts


def mkdtemp_sources(found: Survey, path: Path, load: cst.Call) -> list[cst.Call]:
    """The `tempfile.mkdtemp(...)` calls the file `load` reads may be in (heuristic, by name)."""
    mkdtemps = {id(call): call for call, callee in found.temporary if callee == MKDTEMP}
    if not mkdtemps or not load.args:
        return []
    given = next((a.value for a in load.args if a.keyword and a.keyword.value == "f"), load.args[0].value)
    function = function_of(path)
    # name -> ids of the mkdtemp calls its value may come from, to a fixed point
    sources: dict[str, set[int]] = {}
    changed = True
    while changed:
        changed = False
        for where, names, value in found.assignments:
            if where is not function:
                continue
            parts = _parts(value)
            came = {id(c) for c in parts.calls if id(c) in mkdtemps}
            came |= {i for name in parts.names for i in sources.get(name, ())}
            for name in names:
                if not came <= sources.setdefault(name, set()):
                    sources[name] |= came
                    changed = True
    parts = _parts(given)
    ids = {id(c) for c in parts.calls if id(c) in mkdtemps}
    ids |= {i for name in parts.names for i in sources.get(name, ())}
    return [mkdtemps[i] for i in mkdtemps if i in ids]
