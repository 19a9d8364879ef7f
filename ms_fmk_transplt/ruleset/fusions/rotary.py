"""A hand-written rotary embedding `x * cos + rotate_half(x) * sin` ->
`torch_npu.npu_rotary_mul(x, cos, sin)` (rotary_mode "half", the default of every release).

Matched: the sum, in any order of its terms and factors, where `rotate_half` is a function of the
same module, bound nowhere else, whose straight-line body returns `torch.cat((-x2, x1), dim=-1)` of
the two halves of its one parameter along the last dimension: `x[..., : x.shape[-1] // 2]` and
`x[..., x.shape[-1] // 2 :]` (or `x.size(-1)`), or the two names of `x.chunk(2, dim=-1)` /
`torch.chunk(x, 2, -1)`. That is npu_rotary_mul's "half" rotation. `x`, `cos` and `sin` must be
names, attributes or subscripts of them (read twice, or once, with no call between).

Assumed, not provable from the source: x is 4-dimensional in one of the layouts BNSD, BSND, SBND,
its last dimension even, and cos and sin 4-dimensional of a shape torch_npu documents for that
layout (11SD, B1SD, BNSD; 1S1D, BS1D, BSND; S11D, SB1D, SBND). The torch_npu stand-in raises a
ValueError naming the violated condition rather than broadcast otherwise. The interleaved rotation
(`x[..., ::2]`), other formulas and llama's complex product (`torch.view_as_complex`) are left to
`--advice`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from ms_fmk_transplt.ruleset.fusions.inline import (
    Qualify,
    Replacement,
    argument,
    chunked,
    code,
    is_docstring,
    is_number,
    method,
    parameters,
    receiver,
    replacement,
    walk,
)

_CAT = {"torch.cat", "torch.concat", "torch.concatenate"}
_SIMPLE = (cst.Name, cst.Attribute, cst.Subscript)
FIRST, SECOND = "first", "second"


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=(), rpar=()) if node.lpar or node.rpar else node


def _is_half_size(node: cst.BaseExpression | None, x: str) -> bool:
    """`x.shape[-1] // 2` or `x.size(-1) // 2`."""
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.FloorDivide)):
        return False
    if not is_number(node.right, 2):
        return False
    size = _bare(node.left)
    if isinstance(size, cst.Subscript) and len(size.slice) == 1:
        index = size.slice[0].slice
        return (
            code(size.value) == f"{x}.shape" and isinstance(index, cst.Index) and is_number(index.value, -1)
        )
    call = method(size, "size")
    return (
        call is not None
        and code(receiver(call)) == x
        and len(call.args) == 1
        and call.args[0].keyword is None
        and is_number(call.args[0].value, -1)
    )


def _slice_half(node: cst.BaseExpression, x: str) -> str | None:
    """FIRST for `x[..., : half]`, SECOND for `x[..., half :]`, else None."""
    node = _bare(node)
    if not (isinstance(node, cst.Subscript) and code(node.value) == x and len(node.slice) == 2):
        return None
    ellipsis, part = node.slice[0].slice, node.slice[1].slice
    if not (isinstance(ellipsis, cst.Index) and isinstance(ellipsis.value, cst.Ellipsis)):
        return None
    if not isinstance(part, cst.Slice) or part.step is not None:
        return None
    if part.lower is None and _is_half_size(part.upper, x):
        return FIRST
    if part.upper is None and _is_half_size(part.lower, x):
        return SECOND
    return None


def is_rotate_half(function: cst.FunctionDef, qualify: Qualify) -> bool:
    """`function(x)` returns `cat((-x2, x1), dim=-1)` of x's halves along its last dimension."""
    names = parameters(function)
    if names is None or len(names) != 1 or not isinstance(function.body, cst.IndentedBlock):
        return False
    x = names[0]
    statements = list(function.body.body)
    if statements and is_docstring(statements[0]):
        statements = statements[1:]
    halves: dict[str, str] = {}
    for index, statement in enumerate(statements):
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        if isinstance(small, cst.Return):
            return index == len(statements) - 1 and _is_rotation(small.value, x, halves, qualify)
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
            return False
        target = small.targets[0].target
        if isinstance(target, cst.Name) and target.value != x:
            half = _slice_half(small.value, x)
            if half is None:
                return False
            halves[target.value] = half
        elif (
            isinstance(target, cst.Tuple)
            and (source := chunked(small.value, qualify)) is not None
            and code(source) == x
        ):
            elements = [e.value for e in target.elements]
            if len(elements) != 2 or not all(isinstance(e, cst.Name) and e.value != x for e in elements):
                return False
            for element, half in zip(elements, (FIRST, SECOND)):
                assert isinstance(element, cst.Name)
                halves[element.value] = half
        else:
            return False
    return False


def _half(node: cst.BaseExpression, x: str, halves: dict[str, str]) -> str | None:
    node = _bare(node)
    if isinstance(node, cst.Name):
        return halves.get(node.value)
    return _slice_half(node, x)


def _is_rotation(value: cst.BaseExpression | None, x: str, halves: dict[str, str], qualify: Qualify) -> bool:
    """`torch.cat((-second, first), dim=-1)`."""
    if not (isinstance(value, cst.Call) and qualify(value.func) in _CAT) or any(a.star for a in value.args):
        return False
    if len(value.args) != 2 or not is_number(argument(value, 1, "dim"), -1):
        return False
    parts = argument(value, 0, "tensors")
    if not (isinstance(parts, (cst.Tuple, cst.List)) and len(parts.elements) == 2):
        return False
    negated, kept = (_bare(e.value) for e in parts.elements)
    if not (isinstance(negated, cst.UnaryOperation) and isinstance(negated.operator, cst.Minus)):
        return False
    return _half(negated.expression, x, halves) == SECOND and _half(kept, x, halves) == FIRST


def _rotations(module: cst.Module, qualify: Qualify) -> set[str]:
    """Names of the module's rotate_half functions that nothing else in the module binds."""
    defined: dict[str, int] = {}
    found: set[str] = set()
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            name = statement.name.value
            defined[name] = defined.get(name, 0) + 1
            if not statement.decorators and is_rotate_half(statement, qualify):
                found.add(name)
    return {name for name in found if defined[name] == 1 and not _bound_elsewhere(module, name)}


def _bound_elsewhere(module: cst.Module, name: str) -> bool:
    """`name` is bound in `module` other than by its top-level def (a parameter, an assignment, an
    import, a nested def or class): which function a call of it reaches is then not known."""
    top = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    todo: list[cst.CSTNode] = [module]
    while todo:
        node = todo.pop()
        todo.extend(node.children)
        bound: cst.CSTNode | None = None
        if isinstance(node, cst.Param):
            bound = node.name
        elif isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For)):
            bound = node.target
        elif isinstance(node, cst.ImportAlias):
            bound = node.asname.name if node.asname is not None else node.name
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)) and not any(node is t for t in top):
            bound = node.name
        if bound is not None and any(isinstance(n, cst.Name) and n.value == name for n in walk(bound)):
            return True
    return False


def _terms(
    node: cst.BaseExpression, rotations: set[str]
) -> tuple[cst.BaseExpression, cst.BaseExpression, cst.BaseExpression] | None:
    """(x, cos, sin) of `x * cos + rotate_half(x) * sin` (any order), else None."""
    node = _bare(node)
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)):
        return None
    for plain, rotated in ((node.left, node.right), (node.right, node.left)):
        plain, rotated = _bare(plain), _bare(rotated)
        if not all(
            isinstance(t, cst.BinaryOperation) and isinstance(t.operator, cst.Multiply)
            for t in (plain, rotated)
        ):
            continue
        assert isinstance(plain, cst.BinaryOperation) and isinstance(rotated, cst.BinaryOperation)
        for call, sin in ((rotated.left, rotated.right), (rotated.right, rotated.left)):
            x = _rotated(_bare(call), rotations)
            if x is None or not isinstance(_bare(sin), _SIMPLE) or _calls(sin):
                continue
            for same, cos in ((plain.left, plain.right), (plain.right, plain.left)):
                if code(_bare(same)) == code(x) and isinstance(_bare(cos), _SIMPLE) and not _calls(cos):
                    return x, _bare(cos), _bare(sin)
    return None


def _rotated(node: cst.BaseExpression, rotations: set[str]) -> cst.BaseExpression | None:
    """`x` of `rotate_half(x)`, x a name, an attribute or a subscript without calls."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in rotations):
        return None
    if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
        return None
    x = _bare(node.args[0].value)
    return x if isinstance(x, _SIMPLE) and not _calls(x) else None


def _calls(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Call) for n in walk(node))


def rotary(module: cst.Module, qualify: Qualify, new_name: str) -> Iterator[Replacement]:
    """Every `x * cos + rotate_half(x) * sin` of the module, with the fused call."""
    rotations = _rotations(module, qualify)
    if not rotations:
        return
    todo: list[cst.CSTNode] = [module]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.BinaryOperation):
            terms = _terms(node, rotations)
            if terms is not None:
                x, cos, sin = (code(t) for t in terms)
                fields = {"found": "hand-written rotary embedding", "new": new_name}
                yield node, _expression_builder(f"{new_name}({x}, {cos}, {sin})"), fields
                continue
        todo.extend(reversed(node.children))


def _expression_builder(text: str) -> Callable[[cst.CSTNode], cst.CSTNode]:
    def build(node: cst.CSTNode) -> cst.CSTNode:
        return replacement(text, node)

    return build
