"""A hand-written SwiGLU `silu(a) * b` -> `torch_npu.npu_swiglu(...)` where a and b are provably
the two halves npu_swiglu splits its input into:

* `a, b = x.chunk(2, dim=-1)` (or `torch.chunk(x, 2, -1)`), each name and `x` bound once in the
  function, `x` before the split: `silu(a) * b` is `npu_swiglu(x, dim=-1)`;
* `a = self.p(x)`, `b = self.q(x)` (written in place, or through names bound once with `x` bound
  once too), `p` and `q` created in `__init__` as `nn.Linear` with the same in and out features:
  the two halves of `torch.cat((a, b), dim=-1)`, which npu_swiglu splits back.

Elsewhere (a gate and an input of unknown shapes) the product is left to `--advice`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from ms_fmk_transplt.ruleset.fusions.inline import (
    Qualify,
    Replacement,
    argument,
    chunked,
    classes,
    code,
    is_self_attribute,
    methods_of,
    replacement,
)

_SILU = {"torch.nn.functional.silu", "torch.silu"}
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


class _Function:
    """A function's own assignments (name -> [(order, value)]) and products, in source order."""

    def __init__(self, function: cst.FunctionDef) -> None:
        self.bound: dict[str, list[tuple[int, cst.BaseExpression]]] = {}
        self.positions: dict[str, int] = {}  # the place of a name in the tuple it is unpacked into
        self.products: list[tuple[int, cst.BinaryOperation]] = []
        for p in function.params.params:
            self.bound.setdefault(p.name.value, []).append((-1, p.name))
        order = 0
        todo: list[cst.CSTNode] = list(reversed(function.body.children))
        while todo:
            node = todo.pop()
            order += 1
            if isinstance(node, _SCOPES):
                continue
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
                self.products.append((order, node))
            targets: list[cst.BaseExpression] = []
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, (cst.For, cst.With, cst.NamedExpr)):
                targets = (
                    [node.target]
                    if not isinstance(node, cst.With)
                    else [item.asname.name for item in node.items if item.asname is not None]
                )
            for target in targets:
                if isinstance(target, cst.Tuple):
                    for index, element in enumerate(target.elements):
                        if isinstance(element.value, cst.Name):
                            self.positions[element.value.value] = index
                for name in _names(target):
                    value = node.value if isinstance(node, cst.Assign) else None
                    self.bound.setdefault(name, []).append((order, value or cst.Name("None")))
            todo.extend(reversed(node.children))

    def only(self, name: str) -> tuple[int, cst.BaseExpression] | None:
        """The one binding of `name` in the function, None when it has none or several."""
        bindings = self.bound.get(name, [])
        return bindings[0] if len(bindings) == 1 else None


def _names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _names(target.value)


def _gate(node: cst.BaseExpression, qualify: Qualify) -> cst.BaseExpression | None:
    """`a` of `F.silu(a)`."""
    if isinstance(node, cst.Call) and qualify(node.func) in _SILU and len(node.args) == 1:
        arg = node.args[0]
        return arg.value if arg.keyword is None and not arg.star else None
    return None


def _from_chunk(
    function: _Function, gate: cst.BaseExpression, up: cst.BaseExpression, at: int, qualify: Qualify
) -> str | None:
    """The code of `x` when gate and up are the first and second halves of `x.chunk(2, dim=-1)`."""
    if not (isinstance(gate, cst.Name) and isinstance(up, cst.Name)):
        return None
    a, b = function.only(gate.value), function.only(up.value)
    if a is None or b is None or a[0] != b[0] or not 0 <= a[0] < at:
        return None
    if (function.positions.get(gate.value), function.positions.get(up.value)) != (0, 1):
        return None
    statement_value = a[1]
    # the values bound per name are the whole right-hand side: read the target's order from it
    source = chunked(statement_value, qualify)
    if not isinstance(source, cst.Name):
        return None
    bound = function.bound.get(source.value, [])
    if len(bound) != 1 or bound[0][0] >= a[0]:
        return None
    return source.value


def _projection(node: cst.BaseExpression, function: _Function, at: int) -> tuple[str, str, bool] | None:
    """(`p`, code of `x`, read through a name) for `self.p(x)`, written in place or bound once to a
    name before `at`."""
    named = isinstance(node, cst.Name)
    if isinstance(node, cst.Name):
        bound = function.only(node.value)
        if bound is None or not 0 <= bound[0] < at:
            return None
        node = bound[1]
    if not (isinstance(node, cst.Call) and is_self_attribute(node.func) and len(node.args) == 1):
        return None
    arg = node.args[0]
    if arg.keyword is not None or arg.star or not isinstance(arg.value, cst.Name):
        return None
    assert isinstance(node.func, cst.Attribute)
    return node.func.attr.value, arg.value.value, named


def _linears(init: cst.FunctionDef | None, qualify: Qualify) -> dict[str, tuple[str, str]]:
    """Attributes `__init__` sets to `nn.Linear(in, out, ...)`: name -> (code of in, code of out)."""
    found: dict[str, tuple[str, str]] = {}
    if init is None:
        return found
    todo: list[cst.CSTNode] = [init.body]
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and is_self_attribute(node.targets[0].target)
        ):
            value, target = node.value, node.targets[0].target
            assert isinstance(target, cst.Attribute)
            if isinstance(value, cst.Call) and qualify(value.func) == "torch.nn.Linear":
                sizes = argument(value, 0, "in_features"), argument(value, 1, "out_features")
                if sizes[0] is not None and sizes[1] is not None and not any(a.star for a in value.args):
                    found[target.attr.value] = (code(sizes[0]), code(sizes[1]))
        todo.extend(node.children)
    return found


def swiglu(module: cst.Module, qualify: Qualify, new_name: str) -> Iterator[Replacement]:
    """`silu(a) * b` products whose halves npu_swiglu provably computes, with the fused call."""
    torch_bound = qualify(cst.Name("torch")) == "torch"
    for cls in [None, *classes(module)]:
        functions = _functions(module) if cls is None else list(methods_of(cls).values())
        linears = _linears(methods_of(cls).get("__init__"), qualify) if cls is not None else {}
        for definition in functions:
            function = _Function(definition)
            for at, product in function.products:
                for gate_side, up in ((product.left, product.right), (product.right, product.left)):
                    gate = _gate(gate_side, qualify)
                    if gate is None:
                        continue
                    text = _fused_text(function, gate, up, at, qualify, linears, torch_bound, new_name)
                    if text is not None:
                        fields = {"found": "hand-written SwiGLU", "new": new_name}
                        yield product, _expression_builder(text), fields
                        break


def _fused_text(
    function: _Function,
    gate: cst.BaseExpression,
    up: cst.BaseExpression,
    at: int,
    qualify: Qualify,
    linears: dict[str, tuple[str, str]],
    torch_bound: bool,
    new_name: str,
) -> str | None:
    source = _from_chunk(function, gate, up, at, qualify)
    if source is not None:
        return f"{new_name}({source}, dim=-1)"
    first, second = _projection(gate, function, at), _projection(up, function, at)
    if first is None or second is None or first[1] != second[1] or not torch_bound:
        return None
    # read in one expression, `x` is the same value in both; read in two statements, only if it is
    # bound once in the function (so nothing between them rebinds it)
    if (first[2] or second[2]) and function.only(first[1]) is None:
        return None
    if first[0] not in linears or linears.get(first[0]) != linears.get(second[0]):
        return None
    return f"{new_name}(torch.cat(({code(gate)}, {code(up)}), dim=-1), dim=-1)"


def _functions(module: cst.Module) -> list[cst.FunctionDef]:
    """The module-level functions."""
    return [s for s in module.body if isinstance(s, cst.FunctionDef)]


def _expression_builder(text: str) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """The replacement expression, in the parentheses the replaced one had."""

    def build(node: cst.CSTNode) -> cst.CSTNode:
        return replacement(text, node)

    return build
