"""One read-only walk of a module for the advice detectors: calls, products and assignments, each
with the blocks around it (functions, loops, ifs), and names resolved through the imports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from ms_fmk_transplt.engine.naming import alias_table, dotted, iter_imports
from ms_fmk_transplt.engine.syntax import child_nodes

# the blocks a site remembers: scopes (assignments are looked up per function) and control flow
Block = cst.FunctionDef | cst.ClassDef | cst.Lambda | cst.For | cst.While | cst.If
_BLOCKS = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.For, cst.While, cst.If)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# looked up by class, not isinstance: libcst's node classes are ABCs, whose check is slow
_BLOCK_CLASSES = frozenset(_BLOCKS)
_SCOPE_CLASSES = frozenset(_SCOPES)
_LOOP_CLASSES = frozenset({cst.For, cst.While})
# leaves and formatting: nothing a detector reads lies below them
_SKIPPED = frozenset(
    {cst.Annotation, cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.Newline, cst.EmptyLine}
    | {cst.TrailingWhitespace, cst.Comment, cst.LeftParen, cst.RightParen, cst.Comma, cst.Dot, cst.Colon}
    | {cst.AssignEqual, cst.Semicolon, cst.LeftSquareBracket, cst.RightSquareBracket}
    | {cst.SimpleString, cst.Integer, cst.Float, cst.Import, cst.ImportFrom}
)


#: what a detector yields: the advice id, the node it is about, and the API or setting it names ("" for a pattern)
Hit = tuple[str, cst.CSTNode, str]


@dataclass(frozen=True)
class Located:
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
    calls: list[Located] = field(default_factory=list)
    products: list[Located] = field(default_factory=list)  # `a * b` and `a @ b`
    attributes: list[Located] = field(default_factory=list)  # outside annotations
    # per scope (id of its block, 0 for the module): name -> the values assigned to it, in order
    assigned: dict[int, dict[str, list[cst.BaseExpression]]] = field(default_factory=dict)
    # loops whose own body (not a nested function's) calls .backward() or .step(): training loops
    training_loops: set[int] = field(default_factory=set)
    # `a[key] = value` assignments (`os.environ["NAME"] = "0"`)
    item_assigns: list[Located] = field(default_factory=list)

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


def _collect(walked: Walked, module: cst.Module) -> None:
    """Fill `walked` in one depth-first pass over the fields (engine/syntax/traverse.py's `child_nodes`),
    not a `cst.CSTVisitor`, which rebuilds every node it passes (three times the cost here)."""
    todo: list[tuple[cst.CSTNode, tuple[Block, ...]]] = [(module, ())]
    while todo:
        node, blocks = todo.pop()
        kind = node.__class__
        if kind is cst.Call:
            assert isinstance(node, cst.Call)
            walked.calls.append(Located(node, blocks))
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("backward", "step"):
                for block in reversed(blocks):
                    if block.__class__ in _SCOPE_CLASSES:
                        break
                    if block.__class__ in _LOOP_CLASSES:
                        walked.training_loops.add(id(block))
        elif kind is cst.BinaryOperation:
            assert isinstance(node, cst.BinaryOperation)
            if isinstance(node.operator, (cst.Multiply, cst.MatrixMultiply)):
                walked.products.append(Located(node, blocks))
        elif kind is cst.Attribute:
            walked.attributes.append(Located(node, blocks))
        elif kind is cst.Assign or kind is cst.AnnAssign:
            assert isinstance(node, (cst.Assign, cst.AnnAssign))
            scope = Located(node, blocks).scope
            table = walked.assigned.setdefault(id(scope) if scope is not None else 0, {})
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    _bind(table, target.target, node.value)
                if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Subscript):
                    walked.item_assigns.append(Located(node, blocks))
            elif node.value is not None:
                _bind(table, node.target, node.value)
        inner = (*blocks, cast(Block, node)) if kind in _BLOCK_CLASSES else blocks
        # reversed onto the stack: popped in source order, so sites are listed as they appear; a
        # type hint is skipped whole (a dtype named there is no use of it)
        children = [child for child in child_nodes(node) if child.__class__ not in _SKIPPED]
        todo.extend((child, inner) for child in reversed(children))


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
    _collect(walked, module)
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
