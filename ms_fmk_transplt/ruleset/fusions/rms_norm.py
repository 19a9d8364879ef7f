"""A hand-written RMSNorm `forward` -> `torch_npu.npu_rms_norm(x, self.weight, epsilon=eps)[0]`.

Matched: a method `forward(self, x)` of straight-line code (fusions/inline.py) computing
`x * rsqrt(mean(x^2, -1, keepdim=True) + eps) * self.w` in any order of the three factors, the
square spelled `x.pow(2)`, `x ** 2`, `x * x`, `x.square()` or their torch functions, `rsqrt` as
`torch.rsqrt(...)` or `(...).rsqrt()`, `eps` an attribute of self or a number, and `self.w`
created in `__init__` as a one-dimensional parameter (`nn.Parameter(torch.ones(dim))`). `x` may
be cast to float32 for the computation (`x.float()`, `x.to(torch.float32)`) if the result is cast
back to x's dtype (`.type_as(x)`, `.to(x.dtype)` or a name holding it): that is what the fused
operator does. `x / sqrt(...)` (another rounding) and anything else is left to `--advice`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from ms_fmk_transplt.ruleset.fusions.inline import (
    Qualify,
    Replacement,
    argument,
    classes,
    code,
    inline,
    is_docstring,
    is_number,
    is_self_attribute,
    is_true,
    method,
    methods_of,
    parameters,
    receiver,
)

_FLOAT32 = {"torch.float32", "torch.float"}
_ONE_DIMENSIONAL = {"torch.ones", "torch.zeros", "torch.empty", "torch.randn", "torch.rand"}


class _Casts:
    """The dtype casts stripped from the factors of x, to check they come in pairs."""

    def __init__(self, qualify: Qualify, x: str) -> None:
        self.qualify = qualify
        self.x = x
        self.to_float = False
        self.back = False
        self.other = False  # a cast that is neither: no match

    def strip(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """`node` without the casts around it that the fused operator makes itself."""
        while True:
            call = method(node, "float")
            if call is not None and not call.args:
                self.to_float, node = True, receiver(call)
                continue
            call = method(node, "type_as")
            if (
                call is not None
                and len(call.args) == 1
                and code(call.args[0].value) in (self.x, f"({self.x})")
            ):
                self.back, node = True, receiver(call)
                continue
            call = method(node, "to")
            if call is not None and len(call.args) == 1 and call.args[0].keyword is None:
                target = call.args[0].value
                if self.qualify(target) in _FLOAT32:
                    self.to_float, node = True, receiver(call)
                    continue
                if code(target).strip("()") == f"{self.x}.dtype":
                    self.back, node = True, receiver(call)
                    continue
                self.other = True
            return node


def _factors(node: cst.BaseExpression, casts: _Casts) -> list[cst.BaseExpression]:
    node = casts.strip(node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return _factors(node.left, casts) + _factors(node.right, casts)
    return [node]


def _is_x(node: cst.BaseExpression, casts: _Casts) -> bool:
    return code(casts.strip(node)).strip("()") == casts.x


def _is_square(node: cst.BaseExpression, casts: _Casts) -> bool:
    node = casts.strip(node)
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Power):
            return is_number(node.right, 2) and _is_x(node.left, casts)
        return (
            isinstance(node.operator, cst.Multiply) and _is_x(node.left, casts) and _is_x(node.right, casts)
        )
    if not isinstance(node, cst.Call):
        return False
    name = casts.qualify(node.func)
    if name == "torch.pow":
        return _is_x(node.args[0].value, casts) and is_number(argument(node, 1, "exponent"), 2)
    if name == "torch.square":
        return len(node.args) == 1 and _is_x(node.args[0].value, casts)
    if name is None and method(node, "pow") is not None:
        return _is_x(receiver(node), casts) and is_number(argument(node, 0, "exponent"), 2)
    if name is None and method(node, "square") is not None:
        return not node.args and _is_x(receiver(node), casts)
    return False


def _is_mean_of_squares(node: cst.BaseExpression, casts: _Casts) -> bool:
    node = casts.strip(node)
    if not isinstance(node, cst.Call):
        return False
    if casts.qualify(node.func) == "torch.mean":
        operand, first = (node.args[0].value if node.args else None), 1
    elif casts.qualify(node.func) is None and method(node, "mean") is not None:
        operand, first = receiver(node), 0
    else:
        return False
    known = {"dim", "keepdim", "input"}
    if operand is None or any(a.star or (a.keyword and a.keyword.value not in known) for a in node.args):
        return False
    return (
        is_number(argument(node, first, "dim"), -1)
        and is_true(argument(node, first + 1, "keepdim"))
        and _is_square(operand, casts)
    )


def _epsilon(node: cst.BaseExpression) -> bool:
    return is_self_attribute(node) or is_number(node)


def _rsqrt_epsilon(node: cst.BaseExpression, casts: _Casts) -> cst.BaseExpression | None:
    """The epsilon of `rsqrt(mean(x^2, -1, keepdim=True) + eps)`, else None."""
    if not isinstance(node, cst.Call):
        return None
    if casts.qualify(node.func) == "torch.rsqrt" and len(node.args) == 1 and not node.args[0].keyword:
        total = node.args[0].value
    elif casts.qualify(node.func) is None and method(node, "rsqrt") is not None and not node.args:
        total = receiver(node)
    else:
        return None
    while isinstance(total, cst.BaseExpression) and (total.lpar or total.rpar):
        total = total.with_changes(lpar=(), rpar=())
    if not (isinstance(total, cst.BinaryOperation) and isinstance(total.operator, cst.Add)):
        return None
    for mean, eps in ((total.left, total.right), (total.right, total.left)):
        if _epsilon(eps) and _is_mean_of_squares(mean, casts):
            return eps
    return None


def _one_dimensional_parameters(init: cst.FunctionDef | None, qualify: Qualify) -> set[str]:
    """Attributes `__init__` sets to `nn.Parameter(torch.ones(n))` (one size argument, not a tuple)."""
    found: set[str] = set()
    if init is None or not isinstance(init.body, cst.IndentedBlock):
        return found
    for statement in init.body.body:
        if not (isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign)):
            continue
        assign = statement.body[0]
        target, value = assign.targets[0].target, assign.value
        if not (is_self_attribute(target) and isinstance(value, cst.Call) and len(value.args) >= 1):
            continue
        if qualify(value.func) != "torch.nn.Parameter" or value.args[0].keyword:
            continue
        inner = value.args[0].value
        if isinstance(inner, cst.Call) and qualify(inner.func) in _ONE_DIMENSIONAL and len(inner.args) >= 1:
            size = [a for a in inner.args if a.keyword is None]
            if any(a.star for a in inner.args):
                continue
            if len(size) == 1 and isinstance(size[0].value, (cst.Name, cst.Attribute, cst.Integer)):
                assert isinstance(target, cst.Attribute)
                found.add(target.attr.value)
    return found


def rms_norm(module: cst.Module, qualify: Qualify, new_name: str) -> Iterator[Replacement]:
    """The `forward` bodies of hand-written RMSNorm classes, each with the fused call's body."""
    for cls in classes(module):
        methods = methods_of(cls)
        forward = methods.get("forward")
        names = parameters(forward) if forward is not None else None
        if forward is None or names is None or len(names) != 2 or names[0] != "self":
            continue
        value = inline(forward, methods)
        if value is None:
            continue
        casts = _Casts(qualify, names[1])
        factors = _factors(value, casts)
        if len(factors) != 3 or casts.other or (casts.to_float and not casts.back):
            continue
        weights = [f for f in factors if is_self_attribute(f)]
        xs = [f for f in factors if _is_x(f, casts)]
        epsilons = [e for e in (_rsqrt_epsilon(casts.strip(f), casts) for f in factors) if e is not None]
        if not (len(weights) == len(xs) == len(epsilons) == 1) or casts.other:
            continue
        weight = weights[0]
        assert isinstance(weight, cst.Attribute)
        if weight.attr.value not in _one_dimensional_parameters(methods.get("__init__"), qualify):
            continue
        call = f"{new_name}({names[1]}, {code(weight)}, epsilon={code(epsilons[0])})[0]"
        yield forward, _body_builder(call), {"found": "hand-written RMSNorm", "new": new_name}


def _body_builder(call: str) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """The function as given, its body replaced by `return <call>` (a docstring kept)."""

    def build(node: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(node, cst.FunctionDef) and isinstance(node.body, cst.IndentedBlock)
        kept = [s for s in node.body.body[:1] if is_docstring(s)]
        line = cst.SimpleStatementLine(body=[cst.Return(value=cst.parse_expression(call))])
        return node.with_changes(body=node.body.with_changes(body=[*kept, line]))

    return build
