"""Import planning and insertion: what each imported name is bound to after the rewrites, which
imports a rewrite needs, and where `import torch_npu` goes (and whether it goes in at all).

The transformer asks this module; it keeps the rewrite primitives (renaming an import's names)
itself. Everything here is computed from the original module before the traversal, except the
insertion, which runs on the rewritten module once the traversal knows what the file needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from ms_fmk_transplt.engine.interface import ANY, FUNCTIONS, IMPORTS, ImportHook, ImportReason, Rule, Tables
from ms_fmk_transplt.engine.naming import Bindings, NameClaims, build_dotted, dotted, import_bindings
from ms_fmk_transplt.engine.syntax import transform


@dataclass
class ImportPlan:
    """The file's imports as the rewrites will leave them."""

    aliases: dict[str, str]  # bound name -> qualified name, before the rewrites
    rebound: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (new name, its target)
    has_torch_npu: bool = False
    imported_modules: set[str] = field(default_factory=set)  # `import a.b` statements
    anchor_line: cst.SimpleStatementLine | None = None  # the first line importing the insert's `after`
    entry_point: bool = False  # an `if __name__ == "__main__":` script, with the insert rule asking

    @property
    def renamed_names(self) -> dict[str, str]:
        """Bound names that change: `from torch.cuda.amp import autocast` -> `... import autocast`."""
        return {old: new for old, (new, _) in self.rebound.items() if old != new}

    def binding(self, name: str) -> tuple[str, str | None]:
        """(name after the rewrites, what it then refers to) for a name the file binds."""
        return self.rebound.get(name, (name, self.aliases.get(name)))

    def needed_import(self, target: str) -> str | None:
        """The module to import so that a freshly written dotted path `target` resolves, if any."""
        root = target.split(".", 1)[0]
        parent = target.rsplit(".", 1)[0] if "." in target else root
        if root in ("torch", "torch_npu") or parent == root:  # torch.npu needs only torch
            if self.aliases.get(root) != root or root in self.renamed_names:
                return root
            return None
        return None if parent in self.imported_modules else parent

    @property
    def imports_torch(self) -> bool:
        """Does the file import torch (or a torch submodule) anywhere?"""
        return any(q == "torch" or q.startswith("torch.") for q in self.aliases.values())


def plan_imports(
    tables: Tables,
    module: cst.Module,
    imports: Sequence[tuple[cst.SimpleStatementLine, cst.Import | cst.ImportFrom]],
    aliases: dict[str, str],
    claims: NameClaims | None = None,
) -> ImportPlan:
    """Plan every import of the module (`imports` as `names.iter_imports(lines=True)` gives them).

    `claims` answers which names the module already spells (made from `module` when not given).
    """
    plan = ImportPlan(aliases=aliases)
    claims = claims or NameClaims(module)
    insert = tables.hooks.one(IMPORTS, ANY)
    after = insert.after if insert else None
    for line, statement in imports:
        if plan.anchor_line is None and after and _imports(statement, after):
            plan.anchor_line = line
        _plan_import(plan, tables, statement, claims)
    plan.entry_point = bool(insert and insert.entry_points) and any(
        _is_main_guard(statement) for statement in module.body
    )
    return plan


def _plan_import(
    plan: ImportPlan, tables: Tables, statement: cst.Import | cst.ImportFrom, claims: NameClaims
) -> None:
    for bound, qualified, alias in import_bindings(statement):
        if qualified == "torch_npu" or qualified.startswith("torch_npu."):
            plan.has_torch_npu = True
        full = dotted(alias.name)
        if isinstance(statement, cst.Import) and full:
            plan.imported_modules.add(full)
        target = f"{dotted(statement.module)}.{full}" if isinstance(statement, cst.ImportFrom) else full
        if not target:
            continue
        match = tables.lookup(target)
        if match is None or match.new is None:
            continue
        new_target = match.new + target[len(match.prefix) :]
        if isinstance(statement, cst.Import):
            if alias.asname is not None:
                plan.rebound[bound] = (bound, new_target)
            else:
                root = new_target.split(".", 1)[0]
                plan.rebound[bound] = (root, root)
        elif alias.asname is not None:
            plan.rebound[bound] = (bound, new_target)
        else:
            # `from apex.normalization import FusedLayerNorm` -> `from torch.nn import LayerNorm`,
            # unless LayerNorm means something else here (then `... import LayerNorm as
            # FusedLayerNorm`): an import, a def, a parameter, a star import's name, or importers
            # of FusedLayerNorm through __all__
            last = new_target.rsplit(".", 1)[-1]
            free = last == bound or not (claims.spoken(last) or claims.exported(bound))
            plan.rebound[bound] = (last if free else bound, new_target)


def plan_function_imports(
    tables: Tables,
    imports: Sequence[tuple[cst.SimpleStatementLine, cst.Import | cst.ImportFrom]],
    bindings: Bindings,
    claims: NameClaims,
) -> tuple[dict[str, tuple[str, Rule]], dict[cst.ImportAlias, tuple[str, str | None, str]]]:
    """`from lib import func` under a user rule renaming the bare name `func`.

    Returns the names whose every use is renamed (name -> (new name, rule)) and, per import alias
    (by id), (name to import, name to keep bound or None, why it is kept). The binding is renamed
    unless another binding or `__all__` needs the name, or the new name is taken; then the new
    function is imported under the old name.
    """
    renames: dict[str, tuple[str, Rule]] = {}
    planned: dict[cst.ImportAlias, tuple[str, str | None, str]] = {}
    if not tables.hooks.keyed(FUNCTIONS):
        return renames, planned
    for _, statement in imports:
        if not isinstance(statement, cst.ImportFrom) or isinstance(statement.names, cst.ImportStar):
            continue
        for alias in statement.names:
            if not isinstance(alias.name, cst.Name):
                continue
            old = alias.name.value
            entry = tables.hooks.one(FUNCTIONS, old)
            if entry is None or entry.new is None:
                continue
            asname = (
                alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
            )
            if asname is not None and asname != old:
                planned[alias] = (entry.new, asname, "")
                continue
            reason = ""
            if old in bindings.bound:
                reason = f"this file also binds {old} itself"
            elif old in bindings.exported:
                reason = f"__all__ exports {old}"
            elif claims.spoken(entry.new):  # bound, imported, or loaded from a star import
                reason = f"{entry.new} is already a name in this file"
            planned[alias] = (entry.new, old if reason else None, reason)
            if not reason:
                renames[old] = (entry.new, entry.rule)
    return renames, planned


@dataclass(frozen=True)
class Insertion:
    """Where the inserted import went: after `anchor` (an original node, or the module itself), or
    before it (`line_offset` 0)."""

    anchor: cst.CSTNode
    message: str
    line_offset: int = 1


def insert_module_import(
    insert: ImportHook,
    plan: ImportPlan,
    original: cst.Module,
    updated: cst.Module,
    *,
    needs_module: bool,
    uses_needed_api: bool,
    name_needed: bool,
    anchor_updated: cst.SimpleStatementLine | None,
    device_imports: Sequence[tuple[cst.SimpleStatementLine, cst.SimpleStatementLine]] = (),
) -> tuple[cst.Module, Insertion | None]:
    """`import torch_npu` (the rule's `module`) into the rewritten module, when the file needs it.

    Needed when a rewrite needs it (`needs_module`), when the file asks torch.accelerator for its
    device, when it is an entry point that imports torch, or when a rewrite spelled out the module's
    name (`name_needed`). `anchor_updated` is the rewritten anchor line, for an anchor inside a
    block. A file that imports no torch (an mmcv/mmengine config) keeps its imports:
    its values are converted, and whoever loads it imports torch_npu with torch.
    """
    module_name = insert.module
    body = list(updated.body)
    imported = any(
        r == module_name or r.startswith(module_name + ".") for s in body for r in _imported_roots(s)
    )
    wanted = needs_module or uses_needed_api or (plan.entry_point and plan.anchor_line is not None)
    if not plan.imports_torch and not plan.entry_point:
        wanted = False
    line = cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=build_dotted(module_name))])])
    if not name_needed and (plan.has_torch_npu or imported):
        return _import_before_first_need(updated, line, insert, device_imports)
    if not name_needed and not wanted:
        return updated, None
    if uses_needed_api and not needs_module:
        message = insert.message(ImportReason.ACCELERATOR)
    elif not needs_module and not name_needed:
        message = insert.message(ImportReason.ENTRY_POINT)
    else:
        message = insert.message(ImportReason.NEEDED)
    anchor_line = plan.anchor_line
    if anchor_line is None or any(s is anchor_line for s in original.body):
        index = _insert_position(original.body, body, insert.after)
        anchor = original.body[index - 1] if 0 < index <= len(original.body) else original
        body.insert(index, line)
        return updated.with_changes(body=body), Insertion(anchor, message)
    # the first torch import sits in a block (try: import torch / except ImportError): go next to it
    assert anchor_updated is not None
    before = imports_device_module(anchor_updated)
    return transform(updated, _InsertNextTo(anchor_updated, line, before)), Insertion(anchor_line, message)


def _import_before_first_need(
    updated: cst.Module,
    line: cst.SimpleStatementLine,
    insert: ImportHook,
    device_imports: Sequence[tuple[cst.SimpleStatementLine, cst.SimpleStatementLine]],
) -> tuple[cst.Module, Insertion | None]:
    """A file that imports torch_npu already gets it once more only where a top-level line the
    conversion made import torch.npu (`from torch import cuda`) would run first: torch has no npu
    until torch_npu is imported."""
    if not device_imports:
        return updated, None
    module_name = insert.module
    rewritten = {id(new): old for old, new in device_imports}
    body = list(updated.body)
    for index, statement in enumerate(body):
        if _imports_at_load(statement, module_name):
            return updated, None
        anchor = rewritten.get(id(statement))
        if anchor is None:
            continue
        assert isinstance(statement, cst.SimpleStatementLine)
        # the blank lines above go above both; a comment stays with its statement
        lines = list(statement.leading_lines)
        blank = next((i for i, empty in enumerate(lines) if empty.comment is not None), len(lines))
        body[index] = statement.with_changes(leading_lines=lines[blank:])
        body.insert(index, line.with_changes(leading_lines=lines[:blank]))
        message = insert.message(ImportReason.BEFORE_OWN_IMPORT)
        return updated.with_changes(body=body), Insertion(anchor, message, line_offset=0)
    return updated, None


def _imports_at_load(statement: cst.CSTNode, module_name: str) -> bool:
    """Does a top-level statement import `module_name` when the module loads (not in a def)?"""
    finder = _LoadTimeImport(module_name)
    statement.visit(finder)
    return finder.found


class _LoadTimeImport(cst.CSTVisitor):
    def __init__(self, module_name: str) -> None:
        super().__init__()
        self.module_name, self.found = module_name, False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found or isinstance(node, (cst.FunctionDef, cst.Lambda, cst.BaseExpression)):
            return False
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            name = self.module_name
            self.found = any(
                r == name or r.startswith(name + ".")
                for r in _imported_roots(cst.SimpleStatementLine([node]))
            )
            return False
        return True


def add_needed_imports(module: cst.Module, names: set[str]) -> cst.Module:
    """`import name` for each dotted name a rewrite spelled out, where the file lacks it."""
    if not names:
        return module
    # libcst.codemod costs ~0.4 s to import; only a few files ever need it
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    context = CodemodContext()
    for name in sorted(names):
        AddImportsVisitor.add_needed_import(context, name)
    return module.visit(AddImportsVisitor(context))


class _InsertNextTo(cst.CSTTransformer):
    """Put `line` right after (or before) one statement line, found by identity."""

    def __init__(self, target: cst.CSTNode | None, line: cst.SimpleStatementLine, before: bool) -> None:
        super().__init__()
        self.target, self.line, self.before = target, line, before

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not isinstance(node, cst.BaseExpression)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.SimpleStatementLine]:
        if original_node is not self.target:
            return updated_node
        pair = [self.line, updated_node] if self.before else [updated_node, self.line]
        return cst.FlattenSentinel(pair)


def _imports(statement: cst.Import | cst.ImportFrom, root: str) -> bool:
    if isinstance(statement, cst.Import):
        names = [dotted(a.name) or "" for a in statement.names]
    else:
        names = [] if statement.relative or statement.module is None else [dotted(statement.module) or ""]
    return any(n == root or n.startswith(root + ".") for n in names)


def _is_main_guard(statement: cst.CSTNode) -> bool:
    """`if __name__ == "__main__":` at module level."""
    if not isinstance(statement, cst.If) or not isinstance(statement.test, cst.Comparison):
        return False
    parts = [statement.test.left, *(c.comparator for c in statement.test.comparisons)]
    names = {p.value for p in parts if isinstance(p, cst.Name)}
    strings = {p.evaluated_value for p in parts if isinstance(p, cst.SimpleString)}
    return "__name__" in names and "__main__" in strings


def _imported_roots(statement: cst.CSTNode) -> set[str]:
    roots: set[str] = set()
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, cst.Import):
                roots.update((dotted(a.name) or "") for a in small.names)
            elif isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
                roots.add(dotted(small.module) or "")
    return roots


def imports_device_module(statement: cst.CSTNode) -> bool:
    """Does an (updated) statement import torch.npu, which needs torch_npu first?

    `import torch.npu`, `from torch.npu import amp`, and `from torch import npu` (torch has no
    `npu` until torch_npu gives it one).
    """
    if any(r == "torch.npu" or r.startswith("torch.npu.") for r in _imported_roots(statement)):
        return True
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return any(
        isinstance(small, cst.ImportFrom)
        and not small.relative
        and dotted(small.module) == "torch"
        and not isinstance(small.names, cst.ImportStar)
        and any(dotted(alias.name) == "npu" for alias in small.names)
        for small in statement.body
    )


def _insert_position(original: Sequence[cst.CSTNode], updated: Sequence[cst.CSTNode], after: str) -> int:
    """Just after the first top-level import of `after` (before it if it imports torch.npu)."""
    for i, statement in enumerate(original):
        roots = _imported_roots(statement)
        if any(r == after or r.startswith(after + ".") for r in roots):
            return i if imports_device_module(updated[i]) else i + 1
    # no top-level import of it: after the docstring and __future__ imports
    index = 0
    for i, statement in enumerate(original):
        if isinstance(statement, cst.SimpleStatementLine) and statement.body:
            small = statement.body[0]
            is_doc = (
                i == 0
                and isinstance(small, cst.Expr)
                and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
            )
            is_future = isinstance(small, cst.ImportFrom) and dotted(small.module) == "__future__"
            if is_doc or is_future:
                index = i + 1
                continue
        break
    return index
