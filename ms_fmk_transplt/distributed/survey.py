"""The read-only pass of the distributed mode: what the main script holds and where.

One walk records, per scope (the module, each function and class), its top-level statements and
which of them hold the things the rewrite needs: DataLoader assignments, epoch loops, the target
model's assignments, device moves and amp.initialize, the first statement that uses the model,
prints, logs, checkpoint saves and loads, seeds, DataParallel, IterableDataset classes, and signs
that the script is distributed already.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeGuard

import libcst as cst
from libcst.metadata import MetadataWrapper

from ms_fmk_transplt.distributed.policy import Policy
from ms_fmk_transplt.engine.naming import alias_table, dotted, iter_imports

DATALOADER = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel"})
ITERABLE = frozenset({"torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"})
DISTRIBUTED = {
    "torch.distributed.init_process_group": "init_process_group",
    "torch.multiprocessing.spawn": "torch.multiprocessing.spawn",
    "torch.nn.parallel.DistributedDataParallel": "DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": "DistributedDataParallel",
    "torch.utils.data.DistributedSampler": "DistributedSampler",
    "torch.utils.data.distributed.DistributedSampler": "DistributedSampler",
}
BATCH_NORMS = frozenset({"torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d"})
TEMPORARY = frozenset({"tempfile.mkdtemp", "tempfile.TemporaryDirectory", "tempfile.mkstemp"})
SEEDS = frozenset(
    {
        "torch.manual_seed",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "random.seed",
        "numpy.random.seed",
    }
)


Path = tuple[cst.BaseStatement, ...]  # the statements enclosing a node, outermost first


@dataclass
class Scope:
    """A module, function or class body: its top-level statements, in order."""

    node: cst.CSTNode
    statements: list[cst.BaseStatement] = field(default_factory=list)


@dataclass
class Loader:
    """`name = DataLoader(...)` at statement level."""

    name: str
    call: cst.Call
    statement: cst.SimpleStatementLine
    anchor: cst.BaseStatement  # the scope's top-level statement holding it
    scope: Scope


@dataclass
class Survey:
    """Everything the transform needs, keyed by the original nodes (identity)."""

    aliases: dict[str, str]
    scopes: list[Scope] = field(default_factory=list)
    anchor_of: dict[int, tuple[Scope, cst.BaseStatement]] = field(default_factory=dict)  # id(node) ->
    loaders: list[Loader] = field(default_factory=list)
    unassigned_loaders: list[cst.Call] = field(default_factory=list)
    epoch_loops: list[tuple[Scope, cst.For]] = field(default_factory=list)
    assigned: dict[str, list[tuple[Scope, cst.BaseStatement]]] = field(default_factory=dict)
    assigned_call: dict[str, str] = field(default_factory=dict)  # name -> callee of its last assignment
    assigned_at: dict[str, list[Path]] = field(default_factory=dict)  # name -> statement paths
    moves: dict[str, list[Path]] = field(default_factory=dict)  # `m.to(d)`, `m.double()` lines
    amp_initialize: list[Path] = field(default_factory=list)
    uses: dict[str, list[Path]] = field(default_factory=dict)  # m(...) or f(..., m, ...)
    optimizer_models: list[str] = field(default_factory=list)
    data_parallel: list[tuple[cst.Call, cst.SimpleStatementLine | None]] = field(default_factory=list)
    guarded: list[tuple[cst.BaseStatement, str]] = field(default_factory=list)  # print/log/save lines
    saves: list[cst.Call] = field(default_factory=list)
    saves_in: list[tuple[cst.BaseStatement, cst.FunctionDef | None]] = field(default_factory=list)
    named_calls: list[tuple[cst.SimpleStatementLine, str]] = field(default_factory=list)
    save_lines: list[cst.BaseStatement] = field(default_factory=list)  # guarded saves and save calls
    loads: list[tuple[Path, cst.Call]] = field(default_factory=list)
    seeds: list[cst.Call] = field(default_factory=list)
    batch_norms: list[tuple[cst.Call, str]] = field(default_factory=list)
    temporary: list[tuple[cst.Call, str]] = field(default_factory=list)
    # every `names = value` with the function it is in (None: the module), for following paths
    assignments: list[tuple[cst.FunctionDef | None, list[str], cst.BaseExpression]] = field(
        default_factory=list
    )
    iterable_classes: list[cst.ClassDef] = field(default_factory=list)
    module_classes: set[str] = field(default_factory=set)  # classes of the script deriving from a *Module
    distributed: list[tuple[cst.Call, str]] = field(default_factory=list)
    main_guard: cst.If | None = None
    setup_anchor: cst.BaseStatement | None = None
    attributes: list[cst.Attribute] = field(default_factory=list)
    bound: set[str] = field(default_factory=set)

    def qualified(self, node: cst.BaseExpression) -> str | None:
        """The dotted name of `node` through the file's imports (None when not a name chain)."""
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        base = self.aliases.get(head)
        if base is None:
            return name
        return f"{base}.{rest}" if rest else base


def survey(wrapper: MetadataWrapper, policy: Policy) -> Survey:
    """Walk the wrapper's module once and record what the rewrite needs."""
    module = wrapper.module
    found = Survey(aliases=alias_table(iter_imports(module)))
    walker = _SurveyVisitor(found, policy)
    wrapper.visit(walker)
    _checkpoint_saves(found, policy)
    found.setup_anchor = _setup_anchor(module)
    for statement in module.body:
        if _is_main_guard(statement):
            found.main_guard = statement
    return found


def _checkpoint_saves(found: Survey, policy: Policy) -> None:
    """Saves run on rank 0 only: a function of the script named for saving (save_checkpoint) is
    guarded where it is called, so what it does after saving (copy to model_best) runs on rank 0
    too; any other save is guarded itself."""
    savers = {
        f.name.value: f
        for _, f in found.saves_in
        if f is not None and any(word in f.name.value.lower() for word in policy.saver_words)
    }
    called = {name for _, name in found.named_calls if name in savers}
    for line, name in found.named_calls:
        if name in called:
            found.guarded.append((line, "checkpoint save"))
            found.save_lines.append(line)
    for saving, function in found.saves_in:
        if function is None or function.name.value not in called:
            found.guarded.append((saving, "checkpoint save"))
            found.save_lines.append(saving)


def _setup_anchor(module: cst.Module) -> cst.BaseStatement | None:
    """The last import of the module's leading statements (before its first def, class or block)."""
    anchor = None
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            if all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body):
                anchor = statement
        elif not isinstance(statement, cst.Try):
            break
    return anchor


def function_of(path: Path) -> cst.FunctionDef | None:
    """The innermost function around a statement path (None at module level)."""
    return next((s for s in reversed(path) if isinstance(s, cst.FunctionDef)), None)


def _is_main_guard(statement: cst.CSTNode) -> TypeGuard[cst.If]:
    if not isinstance(statement, cst.If) or not isinstance(statement.test, cst.Comparison):
        return False
    left = statement.test.left
    return isinstance(left, cst.Name) and left.value == "__name__"


def _names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _names(element.value)]
    return []


class _SurveyVisitor(cst.CSTVisitor):
    """Fills a Survey; tracks the scope stack and the top-level statement of the current scope."""

    def __init__(self, found: Survey, policy: Policy) -> None:
        super().__init__()
        self.found, self.policy = found, policy
        self.stack: list[tuple[Scope, list[int]]] = []  # scope, [statement depth]
        self.anchor: list[cst.BaseStatement | None] = []
        self.with_stack: list[cst.With] = []
        self.path: list[cst.BaseStatement] = []

    # scopes and anchors
    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Module):
            self._push(node)
        elif isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            scope, depth = self.stack[-1]
            if depth[0] == 0:
                scope.statements.append(node)
                self.anchor[-1] = node
            depth[0] += 1
            self.path.append(node)
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                self._visit_definition(node)
                self._push(node)
            if isinstance(node, cst.With):
                self.with_stack.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            self.stack.pop()
            self.anchor.pop()
        if isinstance(original_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and self.stack:
            self.stack[-1][1][0] -= 1
            self.path.pop()
        if isinstance(original_node, cst.With):
            self.with_stack.pop()
        super().on_leave(original_node)

    def _push(self, node: cst.CSTNode) -> None:
        scope = Scope(node)
        self.found.scopes.append(scope)
        self.stack.append((scope, [0]))
        self.anchor.append(None)

    def _here(self) -> tuple[Scope, cst.BaseStatement]:
        scope = self.stack[-1][0]
        anchor = self.anchor[-1]
        assert anchor is not None
        return scope, anchor

    def _visit_definition(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        self.found.bound.add(node.name.value)
        if isinstance(node, cst.ClassDef):
            for base in node.bases:
                qualified = self.found.qualified(base.value) or ""
                if qualified in ITERABLE:
                    self.found.iterable_classes.append(node)
                if qualified.split(".")[-1] == "Module" or qualified in self.found.module_classes:
                    self.found.module_classes.add(node.name.value)
        else:
            for param in node.params.params:
                self.found.bound.add(param.name.value)

    # statements
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) != 1:
            return
        small = node.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            self._statement_call(node, small.value)
        elif isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
            call = small.value
            callee = self.found.qualified(call.func)
            if (
                callee in DATALOADER
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
            ):
                scope, anchor = self._here()
                name = small.targets[0].target.value
                self.found.loaders.append(Loader(name, call, node, anchor, scope))
            for target in small.targets:
                for name in _names(target.target):
                    self.found.assigned_call[name] = dotted(call.func) or ""
            first = call.args[0].value if call.args else None
            if (
                callee in DATA_PARALLEL
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and isinstance(first, cst.Name)
                and first.value == small.targets[0].target.value
            ):
                self.found.data_parallel.append((call, node))
            if callee is not None and callee.endswith("amp.initialize"):
                self.found.amp_initialize.append(tuple(self.path))

    def _statement_call(self, line: cst.SimpleStatementLine, call: cst.Call) -> None:
        callee = self.found.qualified(call.func)
        func = call.func
        is_print = isinstance(func, cst.Name) and func.value == "print"
        is_log = (
            isinstance(func, cst.Attribute)
            and func.attr.value in self.policy.log_methods
            and isinstance(func.value, cst.Name)
            and func.value.value in self.policy.log_objects
        )
        if callee == "torch.save":
            with_ = self.with_stack[-1] if self.with_stack else None
            saving = (
                with_
                if with_ is not None and len(with_.body.body) == 1 and with_.body.body[0] is line
                else line
            )
            function = next((s for s in reversed(self.path) if isinstance(s, cst.FunctionDef)), None)
            self.found.saves_in.append((saving, function))
        elif isinstance(func, cst.Name):
            self.found.named_calls.append((line, func.value))
        if is_print or is_log:
            self.found.guarded.append((line, "print()" if is_print else "logging"))
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.attr.value in self.policy.move_methods
        ):
            self.found.moves.setdefault(func.value.value, []).append(tuple(self.path))

    def visit_Assign(self, node: cst.Assign) -> None:
        names = [name for target in node.targets for name in _names(target.target)]
        self.found.assignments.append((function_of(tuple(self.path)), names, node.value))
        for target in node.targets:
            for name in _names(target.target):
                self.found.bound.add(name)
                self.found.assigned.setdefault(name, []).append(self._here())
                self.found.assigned_at.setdefault(name, []).append(tuple(self.path))

    def visit_For(self, node: cst.For) -> None:
        for name in _names(node.target):
            self.found.bound.add(name)
        if isinstance(node.target, cst.Name) and any(w in node.target.value for w in self.policy.epoch_words):
            scope, _ = self._here()
            if not any(s is scope for s, _ in self.found.epoch_loops):  # the outermost one only
                self.found.epoch_loops.append((scope, node))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        return None

    # expressions
    def visit_Call(self, node: cst.Call) -> None:
        callee = self.found.qualified(node.func)
        if callee in DISTRIBUTED:
            self.found.distributed.append((node, DISTRIBUTED[callee]))
        elif (
            callee in DATA_PARALLEL and node.args and not any(c is node for c, _ in self.found.data_parallel)
        ):
            self.found.data_parallel.append((node, None))
        elif callee in SEEDS:
            self.found.seeds.append(node)
        elif callee in BATCH_NORMS:
            self.found.batch_norms.append((node, callee))
        elif callee in TEMPORARY:
            self.found.temporary.append((node, callee))
        elif callee == "torch.save":
            self.found.saves.append(node)
        elif callee == "torch.load":
            self.found.loads.append((tuple(self.path), node))
        elif callee in DATALOADER and not any(x.call is node for x in self.found.loaders):
            self.found.unassigned_loaders.append(node)
        if callee is not None and callee.startswith("torch.optim.") and node.args:
            first = node.args[0].value
            if (
                isinstance(first, cst.Call)
                and isinstance(first.func, cst.Attribute)
                and first.func.attr.value == "parameters"
                and isinstance(first.func.value, cst.Name)
            ):
                self.found.optimizer_models.append(first.func.value.value)
        used = [arg.value for arg in node.args] + [node.func]
        for name in used:
            if isinstance(name, cst.Name) and self.path and not (callee or "").endswith("amp.initialize"):
                self.found.uses.setdefault(name.value, []).append(tuple(self.path))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name):
            self.found.attributes.append(node)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            bound = dotted(alias.asname.name if alias.asname else alias.name) or ""
            self.found.bound.add(bound.split(".")[0])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            bound = alias.asname.name if alias.asname else alias.name
            name = dotted(bound)
            if name:
                self.found.bound.add(name)
