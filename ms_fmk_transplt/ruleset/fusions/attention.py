"""A hand-written attention `softmax(q @ k.transpose(-2, -1) * scale [+ causal mask], dim=-1) @ v`
-> `torch_npu.npu_fusion_attention(q, k, v, q.size(1), "BNSD", ..., scale=scale)[0]`.

Matched in a function's straight-line statements: the product with v of a softmax over the last
dimension (its input optionally cast up with `.float()`, its result optionally cast back with
`.type_as(q)` / `.to(q.dtype)`) of the scores `q @ k.transpose(-2, -1)` (or `transpose(2, 3)`,
`.mT`, `torch.matmul`) times a scale or divided by one (`math.sqrt(d)`, `d ** 0.5`), plus, if
any, a recognised causal mask: `self.m[:n, :n]` where `__init__` registers the buffer `m` as
`torch.full((L, L), float("-inf")).triu(1)` (directly or through one name). The causal mask is
torch_npu's sparse_mode 2 (top-left causal, its 2048 x 2048 compressed boolean mask, True =
masked out), the same as the additive mask for a square `[:n, :n]`. The statements that only
computed the scores and probabilities are removed with it (each reported); q, k and v must be
names no statement between them rebinds, and the names the removed statements bind used nowhere
else.

Assumed: q, k and v in BNSD (`[batch, heads, seq, head_dim]`, head_num = q.size(1)): the layout
the transposes of the last two dimensions imply for 4-dimensional tensors; the stand-in raises
on other ranks. Dropout on the probabilities, an additive mask of unknown contents, and anything
else are left to `--advice`.
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
    is_number,
    is_self_attribute,
    method,
    methods_of,
    receiver,
    replacement,
    walk,
)

_SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax"}
_MATMUL = {"torch.matmul"}
_CAUSAL_MASK = "torch.ones(2048, 2048, dtype=torch.bool, device={q}.device).triu(1)"


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    while node.lpar or node.rpar:
        node = node.with_changes(lpar=(), rpar=())
    return node


def _matmul(
    node: cst.BaseExpression, qualify: Qualify
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    node = _bare(node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        return node.left, node.right
    if (
        isinstance(node, cst.Call)
        and qualify(node.func) in _MATMUL
        and len(node.args) == 2
        and all(a.keyword is None and not a.star for a in node.args)
    ):
        return node.args[0].value, node.args[1].value
    return None


def _transposed(node: cst.BaseExpression, qualify: Qualify) -> cst.BaseExpression | None:
    """`k` of `k.transpose(-2, -1)` (either order, or 2 and 3) or `k.mT`."""
    node = _bare(node)
    if isinstance(node, cst.Attribute) and node.attr.value == "mT":
        return node.value
    call = method(node, "transpose")
    if call is None or qualify(call.func) is not None or len(call.args) != 2:
        return None
    if any(a.keyword or a.star for a in call.args):
        return None
    dims = {code(a.value) for a in call.args}
    return receiver(call) if dims in ({"-2", "-1"}, {"2", "3"}) else None


def _scale(
    node: cst.BaseExpression, qualify: Qualify, chain: _Chain, at: int
) -> tuple[cst.BaseExpression, str, int] | None:
    """(the scores product, the scale's code, where the product is read) of `s * scale`,
    `scale * s` or `s / d`, s the product or a name assigned it."""
    node = _bare(node)
    if not isinstance(node, cst.BinaryOperation):
        return None
    if isinstance(node.operator, cst.Divide):
        sides = [(node.left, f"1.0 / {code(_bare(node.right))}")]
    elif isinstance(node.operator, cst.Multiply):
        sides = [(node.left, code(_bare(node.right))), (node.right, code(_bare(node.left)))]
    else:
        return None
    for side, scale in sides:
        before = set(chain.chain)
        product, where = chain.resolve(side, at)
        if _matmul(product, qualify) is not None and "@" not in scale and "matmul" not in scale:
            return product, scale, where
        chain.chain = before
    return None


def _softmax_input(node: cst.BaseExpression, qualify: Qualify) -> tuple[cst.BaseExpression, str] | None:
    """(Y, the name whose dtype the result is cast back to, or "") of `softmax(Y, dim=-1)`
    (function or method), `.type_as(t)` / `.to(t.dtype)` after it or not."""
    node = _bare(node)
    back = ""
    typed = method(node, "type_as")
    moved = method(node, "to")
    for call in (typed, moved):
        if call is None or qualify(call.func) is not None or len(call.args) != 1 or call.args[0].keyword:
            continue
        target = _bare(call.args[0].value)
        if call is moved:  # only `.to(t.dtype)`: `.to(device)` or another dtype is no cast back
            if not (isinstance(target, cst.Attribute) and target.attr.value == "dtype"):
                return None
            target = _bare(target.value)
        if not isinstance(target, cst.Name):
            return None
        node, back = _bare(receiver(call)), target.value
        break
    if not isinstance(node, cst.Call) or any(a.star for a in node.args):
        return None
    if qualify(node.func) in _SOFTMAX:
        operand, first = argument(node, 0, "input"), 1
    elif qualify(node.func) is None and method(node, "softmax") is not None:
        operand, first = receiver(node), 0
    else:
        return None
    keywords = {a.keyword.value for a in node.args if a.keyword is not None}
    if not keywords <= {"input", "dim"} or operand is None or len(node.args) != first + 1:
        return None
    if not is_number(argument(node, first, "dim"), -1):
        return None
    operand = _bare(operand)
    upcast = method(operand, "float")
    return (_bare(receiver(upcast)) if upcast is not None and not upcast.args else operand), back


def _causal_buffers(init: cst.FunctionDef | None, qualify: Qualify) -> set[str]:
    """Buffers `__init__` registers as `torch.full((L, L), float("-inf")).triu(1)`."""
    found: set[str] = set()
    if init is None:
        return found
    values: dict[str, cst.BaseExpression] = {}
    for node in walk(init.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                values[target.value] = node.value if target.value not in values else cst.Name("None")
        if isinstance(node, cst.Call) and method(node, "register_buffer") is not None:
            if code(receiver(node)) != "self" or len(node.args) < 2:
                continue
            name, value = node.args[0].value, node.args[1].value
            if isinstance(value, cst.Name):
                value = values.get(value.value, value)
            if isinstance(name, cst.SimpleString) and _is_causal_fill(value, qualify):
                found.add(str(name.evaluated_value))
    return found


def _is_causal_fill(node: cst.BaseExpression, qualify: Qualify) -> bool:
    """`torch.full((L, L), float("-inf")).triu(1)` / `.triu(diagonal=1)`."""
    triu = method(node, "triu")
    if triu is None or qualify(triu.func) is not None or not is_number(argument(triu, 0, "diagonal"), 1):
        return False
    full = _bare(receiver(triu))
    if not (isinstance(full, cst.Call) and qualify(full.func) == "torch.full" and len(full.args) == 2):
        return False
    size, fill = full.args[0].value, full.args[1].value
    if not (isinstance(size, (cst.Tuple, cst.List)) and len(size.elements) == 2):
        return False
    square = code(size.elements[0].value) == code(size.elements[1].value)
    return square and code(fill).replace("'", '"') == 'float("-inf")'


def _is_causal_slice(node: cst.BaseExpression, buffers: set[str]) -> bool:
    """`self.m[:n, :n]` of a causal buffer m."""
    node = _bare(node)
    if not (isinstance(node, cst.Subscript) and is_self_attribute(node.value) and len(node.slice) == 2):
        return False
    assert isinstance(node.value, cst.Attribute)
    if node.value.attr.value not in buffers:
        return False
    parts = [element.slice for element in node.slice]
    if not all(isinstance(p, cst.Slice) and p.lower is None and p.step is None and p.upper for p in parts):
        return False
    uppers = [code(p.upper) for p in parts if isinstance(p, cst.Slice) and p.upper is not None]
    return uppers[0] == uppers[1]


class _Chain:
    """A function's straight-line statements, names followed back to the assignment each read
    reaches; `chain` collects the statements followed."""

    def __init__(self, statements: list[cst.BaseStatement]) -> None:
        self.statements = statements
        self.before: list[dict[str, int | None]] = []
        current: dict[str, int | None] = {}
        for index, statement in enumerate(statements):
            self.before.append(dict(current))
            target = _assigned_name(statement)
            for name in _bound(statement):
                current[name] = index if name == target else None
        self.chain: set[int] = set()

    def resolve(self, node: cst.BaseExpression, at: int) -> tuple[cst.BaseExpression, int]:
        """`node` with a name read at statement `at` replaced by the value assigned to it."""
        node = _bare(node)
        while isinstance(node, cst.Name):
            index = self.before[at].get(node.value)
            if index is None:
                break
            self.chain.add(index)
            statement = self.statements[index]
            assert isinstance(statement, cst.SimpleStatementLine) and isinstance(
                statement.body[0], cst.Assign
            )
            node, at = _bare(statement.body[0].value), index
        return node, at


def _assigned_name(statement: cst.BaseStatement) -> str | None:
    """`n` of a statement `n = value`."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            return target.value if isinstance(target, cst.Name) else None
    return None


def _fused(
    chain: _Chain,
    pair: tuple[cst.BaseExpression, cst.BaseExpression],
    at: int,
    qualify: Qualify,
    buffers: set[str],
    new: str,
) -> tuple[str, set[str], int] | None:
    """The fused call for the product `pair` read at statement `at`, the names it reads, and the
    statement its q and k are read at; None when it is not a recognised attention."""
    probabilities, where = chain.resolve(pair[0], at)
    softmax = _softmax_input(probabilities, qualify)
    if softmax is None:
        return None
    scores, where = chain.resolve(softmax[0], where)
    mask: cst.BaseExpression | None = None
    if isinstance(scores, cst.BinaryOperation) and isinstance(scores.operator, cst.Add):
        for scaled, masked in ((scores.left, scores.right), (scores.right, scores.left)):
            if _is_causal_slice(masked, buffers):
                mask = masked
                scores, where = chain.resolve(scaled, where)
                break
        else:
            return None
    parts = _scale(scores, qualify, chain, where)
    if parts is None:
        return None
    product, scale, where = parts
    operands = _matmul(product, qualify)
    assert operands is not None
    q, k, v = _bare(operands[0]), _transposed(operands[1], qualify), _bare(pair[1])
    if k is None or not all(isinstance(_bare(t), cst.Name) for t in (q, k, v)):
        return None
    k = _bare(k)
    if softmax[1] and softmax[1] not in (code(q), code(k), code(v)):
        return None  # cast to another tensor's dtype: the fused call returns q's
    names = {code(q), code(k), code(v)} | _uses(cst.parse_expression(scale))
    if mask is not None:
        names |= _uses(mask)
    qc = code(q)
    extra = f", atten_mask={_CAUSAL_MASK.format(q=qc)}" if mask is not None else ""
    sparse = ", sparse_mode=2" if mask is not None else ""
    text = f'{new}({qc}, {code(k)}, {code(v)}, {qc}.size(1), "BNSD"{extra}, scale={scale}{sparse})[0]'
    return text, names, where


def _bound(statement: cst.BaseStatement) -> set[str]:
    """Names a statement binds (any target form)."""
    names: set[str] = set()
    for node in walk(statement):
        targets: list[cst.CSTNode] = []
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, cst.AsName):
            targets = [node.name]
        for target in targets:
            names |= {n.value for n in walk(target) if isinstance(n, cst.Name)}
    return names


def _uses(node: cst.CSTNode) -> set[str]:
    """Names read in `node` (attribute names excluded)."""
    found: set[str] = set()
    todo = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        elif isinstance(current, (cst.Attribute, cst.Arg)):
            todo.append(current.value)  # not the attribute's name, not the keyword
            continue
        todo.extend(current.children)
    return found


def _function_matches(
    function: cst.FunctionDef, qualify: Qualify, buffers: set[str], new: str
) -> Iterator[tuple[cst.CSTNode, str, list[cst.BaseStatement]]]:
    """(the product with v, the fused call, the statements it makes dead) in `function`."""
    if not isinstance(function.body, cst.IndentedBlock):
        return
    statements = list(function.body.body)
    for index, statement in enumerate(statements):
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
            continue
        value = getattr(statement.body[0], "value", None)
        if not isinstance(value, cst.BaseExpression):
            continue
        for node in walk(value):
            pair = _matmul(node, qualify) if isinstance(node, cst.BaseExpression) else None
            if pair is None or not isinstance(_bare(pair[0]), cst.Name):
                continue
            chain = _Chain(statements)
            fused = _fused(chain, pair, index, qualify, buffers, new)
            if (
                fused is not None
                and chain.chain
                and _safe(statements, chain.chain, index, fused[1], fused[2])
            ):
                yield node, fused[0], [statements[i] for i in sorted(chain.chain)]


def _safe(statements: list[cst.BaseStatement], chain: set[int], at: int, names: set[str], read: int) -> bool:
    """The chain's statements bind only names nothing else reads (the product reads one once), and
    no other statement between where q and k are read and the product rebinds what the call reads."""
    bound: set[str] = set()
    for i in chain:
        bound |= _bound(statements[i])
    if bound & names:
        return False
    for i, statement in enumerate(statements):
        if i in chain:
            continue
        reads = _uses(statement) & bound
        if i == at:
            if sum(1 for n in walk(statement) if isinstance(n, cst.Name) and n.value in bound) != 1:
                return False
        elif reads:
            return False
        if min(read, *chain) <= i < at and _bound(statement) & names:
            return False
    return True


def attention(module: cst.Module, qualify: Qualify, new_name: str) -> Iterator[Replacement]:
    """Hand-written attentions of the module's methods whose fused call computes the same."""
    for cls in classes(module):
        methods = methods_of(cls)
        buffers = _causal_buffers(methods.get("__init__"), qualify)
        for name, function in methods.items():
            if name == "__init__":
                continue
            for product, text, dead in _function_matches(function, qualify, buffers, new_name):
                yield product, _expression_builder(text), {"found": "hand-written attention", "new": new_name}
                for statement in dead:
                    fields = {"found": "its scores and probabilities", "new": f"computed inside {new_name}"}
                    yield statement, _remove, fields


def _remove(node: cst.CSTNode) -> cst.CSTNode:
    return cst.RemovalSentinel.REMOVE  # type: ignore[return-value]  # a statement of a body: removed


def _expression_builder(text: str) -> Callable[[cst.CSTNode], cst.CSTNode]:
    def build(node: cst.CSTNode) -> cst.CSTNode:
        return replacement(text, node)

    return build
