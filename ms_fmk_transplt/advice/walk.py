"""One read-only walk of a module for the advice detectors: calls, products and assignments, each
with the blocks around it (functions, loops, ifs), and names resolved through the imports."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ms_fmk_transplt.engine.names import alias_table, dotted, iter_imports

# the blocks a site remembers: scopes (assignments are looked up per function) and control flow
Block = cst.FunctionDef | cst.ClassDef | cst.Lambda | cst.For | cst.While | cst.If
_BLOCKS = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.For, cst.While, cst.If)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass(frozen=True)
class Site:
    """A node and the blocks it lies in, outermost first."""

    node: cst.CSTNode
    blocks: tuple[Block, ...]

    @property
    def scope(self) -> Block | None:
        """The innermost function, class or lambda holding the node (None at module level)."""
        return next((b for b in reversed(self.blocks) if isinstance(b, _SCOPES)), None)


@dataclass
class Walked:
    """What the detectors read, gathered in one walk."""

    names: dict[str, str]
    calls: list[Site] = field(default_factory=list)
    products: list[Site] = field(default_factory=list)  # `a * b` and `a @ b`
    attributes: list[Site] = field(default_factory=list)  # outside annotations
    # per scope (id of its block, 0 for the module): name -> the values assigned to it, in order
    assigned: dict[int, dict[str, list[cst.BaseExpression]]] = field(default_factory=dict)
    # loops whose own body (not a nested function's) calls .backward() or .step(): training loops
    training_loops: set[int] = field(default_factory=set)

    def qualified(self, node: cst.CSTNode) -> str | None:
        """`torch.nn.functional.silu` for `F.silu` after `import torch.nn.functional as F`; None
        for an expression that is not a name chain or whose first name no import binds."""
        name = dotted(node)
        if name is None:
            return None
        first, _, rest = name.partition(".")
        bound = self.names.get(first)
        if bound is None:
            return None
        return f"{bound}.{rest}" if rest else bound

    def values(self, scope: Block | None, name: str) -> list[cst.BaseExpression]:
        """The values assigned to `name` in `scope` (a function's own assignments), in order."""
        return self.assigned.get(id(scope) if scope is not None else 0, {}).get(name, [])


class _Collector(cst.CSTVisitor):
    def __init__(self, walked: Walked) -> None:
        super().__init__()
        self.walked = walked
        self.blocks: list[Block] = []

    def _push(self, node: Block) -> None:
        self.blocks.append(node)

    def _pop(self, node: Block) -> None:
        self.blocks.pop()

    visit_FunctionDef = visit_ClassDef = visit_Lambda = visit_For = visit_While = visit_If = _push
    leave_FunctionDef = leave_ClassDef = leave_Lambda = leave_For = leave_While = leave_If = _pop  # type: ignore[assignment]

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        return False  # a dtype named in a type hint is no use of it

    def _site(self, node: cst.CSTNode) -> Site:
        return Site(node, tuple(self.blocks))

    def visit_Call(self, node: cst.Call) -> None:
        self.walked.calls.append(self._site(node))
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("backward", "step"):
            for block in reversed(self.blocks):
                if isinstance(block, _SCOPES):
                    break
                if isinstance(block, (cst.For, cst.While)):
                    self.walked.training_loops.add(id(block))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, (cst.Multiply, cst.MatrixMultiply)):
            self.walked.products.append(self._site(node))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.walked.attributes.append(self._site(node))

    def visit_Assign(self, node: cst.Assign) -> None:
        scope = self._site(node).scope
        table = self.walked.assigned.setdefault(id(scope) if scope is not None else 0, {})
        for target in node.targets:
            _bind(table, target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            scope = self._site(node).scope
            _bind(
                self.walked.assigned.setdefault(id(scope) if scope is not None else 0, {}),
                node.target,
                node.value,
            )


def _bind(
    table: dict[str, list[cst.BaseExpression]], target: cst.BaseExpression, value: cst.BaseExpression
) -> None:
    """Record `value` for a name target; each name of a tuple target gets the whole value (its
    source: `x1, x2 = x.chunk(2, -1)` binds both halves to `x.chunk(2, -1)`)."""
    if isinstance(target, cst.Name):
        table.setdefault(target.value, []).append(value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _bind(table, element.value, value)


def walk(module: cst.Module) -> Walked:
    """The sites of `module` the detectors read, in one pass."""
    walked = Walked(alias_table(iter_imports(module)))
    module.visit(_Collector(walked))
    return walked


def argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """The value given for a parameter by keyword, else at `position` (-1: keyword only)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if 0 <= position < len(positional):
        return positional[position].value
    return None


def has_star_kwargs(call: cst.Call) -> bool:
    """`f(**options)`: any parameter may be given there."""
    return any(a.star == "**" for a in call.args)


def method_name(call: cst.Call) -> str | None:
    """`mean` for `x.pow(2).mean(-1)`, None for a call of a plain name."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None
