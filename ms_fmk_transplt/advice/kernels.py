"""Hand-written forms of the operators torch_npu fuses: RMSNorm, rotary embedding, SwiGLU and
attention, found by their structure (and `scaled_dot_product_attention` by name).

Each detector yields (pattern, node, api). Values are followed through the assignments of the
function that holds them (`variance = x.pow(2).mean(-1); x * torch.rsqrt(variance + eps)`),
flow-insensitively and a few assignments deep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import libcst as cst

from ms_fmk_transplt.advice.walk import Block, Hit, Located, Walked, argument, method_name

_DEPTH = 4  # assignments followed from a name
_CODE = cst.Module(body=[])


def _calls(walked: Walked, node: cst.CSTNode, names: set[str], methods: set[str]) -> bool:
    """`node` calls one of `names` (resolved through imports) or a method named in `methods` on a
    value no import binds (`x.rsqrt()`)."""
    if not isinstance(node, cst.Call):
        return False
    qualified = walked.qualified(node.func)
    if qualified is not None:
        return qualified in names
    return method_name(node) in methods


def _operand(walked: Walked, call: cst.Call) -> cst.BaseExpression | None:
    """The tensor a function or method form operates on: `torch.f(x)` and `x.f()` both give x."""
    if walked.qualified(call.func) is None and isinstance(call.func, cst.Attribute):
        return call.func.value
    return call.args[0].value if call.args else None


def _is_two(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) and float(node.value) == 2.0


def _same(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return _CODE.code_for_node(a).strip() == _CODE.code_for_node(b).strip()


def _through(
    walked: Walked, scope: Block | None, node: cst.BaseExpression, test: Callable[[cst.BaseExpression], bool]
) -> bool:
    """`test` holds for `node`, or `node` is a name of which some assigned value passes it."""
    seen: set[str] = set()
    todo = [(node, 0)]
    while todo:
        current, depth = todo.pop()
        if test(current):
            return True
        if isinstance(current, cst.Name) and current.value not in seen and depth < _DEPTH:
            seen.add(current.value)
            todo += [(value, depth + 1) for value in walked.values(scope, current.value)]
    return False


def _mentions(
    walked: Walked, scope: Block | None, node: cst.CSTNode, test: Callable[[cst.CSTNode], bool]
) -> bool:
    """Some node inside `node` passes `test`, names followed to their assigned values."""
    seen: set[str] = set()
    todo: list[tuple[cst.CSTNode, int]] = [(node, 0)]
    while todo:
        current, depth = todo.pop()
        if test(current):
            return True
        if isinstance(current, cst.Name):
            if current.value not in seen and depth < _DEPTH:
                seen.add(current.value)
                todo += [(value, depth + 1) for value in walked.values(scope, current.value)]
            continue
        todo += [(child, depth) for child in current.children]
    return False


# ------------------------------------------------------------------ RMSNorm


def _square(walked: Walked, node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Power):
            return _is_two(node.right)
        return isinstance(node.operator, cst.Multiply) and _same(node.left, node.right)
    if _calls(walked, node, {"torch.pow"}, {"pow"}):
        assert isinstance(node, cst.Call)
        exponent = argument(
            node, 0 if method_name(node) == "pow" and walked.qualified(node.func) is None else 1, "exponent"
        )
        return _is_two(exponent)
    return _calls(walked, node, {"torch.square"}, {"square"})


def _mean_of_squares(walked: Walked, scope: Block | None, node: cst.BaseExpression) -> bool:
    def test(value: cst.BaseExpression) -> bool:
        if not _calls(walked, value, {"torch.mean"}, {"mean"}):
            return False
        assert isinstance(value, cst.Call)
        operand = _operand(walked, value)
        return operand is not None and _through(walked, scope, operand, lambda v: _square(walked, v))

    return _through(walked, scope, node, test)


def rms_norm(walked: Walked) -> Iterator[Hit]:
    """`rsqrt(mean(x^2) + eps)` or `sqrt(mean(x^2) + eps)`: the root mean square of a normalisation."""
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        if not _calls(walked, call, {"torch.rsqrt", "torch.sqrt"}, {"rsqrt", "sqrt"}):
            continue
        total = _operand(walked, call)
        if not (isinstance(total, cst.BinaryOperation) and isinstance(total.operator, cst.Add)):
            continue
        if any(_mean_of_squares(walked, site.scope, side) for side in (total.left, total.right)):
            yield "rms_norm", call, ""


# ------------------------------------------------------------------ rotary embedding


def _half_of(walked: Walked, scope: Block | None, node: cst.BaseExpression) -> str | None:
    """The code of the tensor `node` is a slice or chunk of (`x` for `x[..., :h]`, or for a name
    assigned from `x.chunk(2, -1)`), None when it is not one."""
    for value in [node, *(walked.values(scope, node.value) if isinstance(node, cst.Name) else [])]:
        if isinstance(value, cst.Subscript):
            return _CODE.code_for_node(value.value)
        if _calls(walked, value, {"torch.chunk", "torch.split", "torch.tensor_split"}, {"chunk", "split"}):
            assert isinstance(value, cst.Call)
            operand = _operand(walked, value)
            return None if operand is None else _CODE.code_for_node(operand)
    return None


def _last_dim(node: cst.BaseExpression | None) -> bool:
    return (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
        and node.expression.value == "1"
    )


def rotary(walked: Walked) -> Iterator[Hit]:
    """`cat((-x2, x1), dim=-1)` (or stack, interleaved) of two parts of one tensor: rotate_half."""
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        if walked.qualified(call.func) not in ("torch.cat", "torch.stack", "torch.concat"):
            continue
        parts = argument(call, 0, "tensors")
        if not (isinstance(parts, (cst.Tuple, cst.List)) and len(parts.elements) == 2):
            continue
        first, second = (element.value for element in parts.elements)
        if not (isinstance(first, cst.UnaryOperation) and isinstance(first.operator, cst.Minus)):
            continue
        if not _last_dim(argument(call, 1, "dim")):
            continue
        source = _half_of(walked, site.scope, first.expression)
        if source is not None and source == _half_of(walked, site.scope, second):
            yield "rotary", call, ""


def _multiplications(walked: Walked) -> Iterator[tuple[Located, cst.BinaryOperation]]:
    """The `a * b` products of the module, with where each lies."""
    for site in walked.products:
        node = site.node
        assert isinstance(node, cst.BinaryOperation)
        if isinstance(node.operator, cst.Multiply):
            yield site, node


def rotary_complex(walked: Walked) -> Iterator[Hit]:
    """`view_as_complex(x) * freqs_cis`: llama's rotary embedding as a complex product."""
    for site, node in _multiplications(walked):
        for side in (node.left, node.right):
            if _through(
                walked, site.scope, side, lambda v: _calls(walked, v, {"torch.view_as_complex"}, set())
            ):
                yield "rotary_complex", node, ""
                break


# ------------------------------------------------------------------ SwiGLU

_SILU = {"torch.nn.functional.silu", "torch.silu"}


def swiglu(walked: Walked) -> Iterator[Hit]:
    """`silu(a) * b`, b a tensor (not a number)."""
    for _, node in _multiplications(walked):
        for gate, other in ((node.left, node.right), (node.right, node.left)):
            if _calls(walked, gate, _SILU, set()) and not isinstance(other, (cst.Integer, cst.Float)):
                yield "swiglu", node, ""
                break


# ------------------------------------------------------------------ attention

_MATMUL = {"torch.matmul", "torch.bmm"}
_SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax"}


def _transposed(walked: Walked, node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Attribute):
        return node.attr.value in ("mT", "T")
    return _calls(walked, node, {"torch.transpose"}, {"transpose"})


def _matmul_operands(
    walked: Walked, node: cst.CSTNode
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        return node.left, node.right
    if isinstance(node, cst.Call) and _calls(walked, node, _MATMUL, {"matmul", "bmm"}):
        if walked.qualified(node.func) is None and isinstance(node.func, cst.Attribute) and node.args:
            return node.func.value, node.args[0].value
        if len(node.args) >= 2:
            return node.args[0].value, node.args[1].value
    return None


def _scores(walked: Walked, node: cst.CSTNode) -> bool:
    """`q @ k.transpose(-2, -1)` (or matmul / bmm of a transposed right operand)."""
    pair = _matmul_operands(walked, node)
    return pair is not None and _transposed(walked, pair[1])


def _probabilities(walked: Walked, scope: Block | None, node: cst.CSTNode) -> bool:
    """A softmax of attention scores."""
    if not _calls(walked, node, _SOFTMAX, {"softmax"}):
        return False
    assert isinstance(node, cst.Call)
    operand = _operand(walked, node)
    return operand is not None and _mentions(walked, scope, operand, lambda n: _scores(walked, n))


def attention(walked: Walked) -> Iterator[Hit]:
    """`softmax(q @ k.transpose(-2, -1) ...) @ v`, through the names the steps are assigned to;
    one per function."""
    done: set[int] = set()
    for site in [*walked.products, *walked.calls]:
        operands = _matmul_operands(walked, site.node)
        scope = site.scope
        # the scores product is not the product with v, even where a name followed through the
        # function's later assignments reaches the softmax (x = attn @ v; q = x.reshape(...))
        if operands is None or id(scope) in done or _scores(walked, site.node):
            continue
        if _mentions(walked, scope, operands[0], partial(_probabilities, walked, scope)):
            done.add(id(scope))
            yield "attention", site.node, ""


def sdpa(walked: Walked) -> Iterator[Hit]:
    """`torch.nn.functional.scaled_dot_product_attention(...)`."""
    api = "torch.nn.functional.scaled_dot_product_attention"
    for site in walked.calls:
        assert isinstance(site.node, cst.Call)
        if walked.qualified(site.node.func) == api:
            yield "sdpa", site.node, api


DETECTORS = (rms_norm, rotary, rotary_complex, swiglu, attention, sdpa)
