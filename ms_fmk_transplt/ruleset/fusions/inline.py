"""Hand-written forms of torch_npu's fused operators, matched where the fused call provably computes
the same, for the FusedPatternRule kind (`--opt-in affinity`).

A function's value is read by inlining: its assignments, in order, substituted into the returned
expression (and a call of a one-expression method of the same class, `self._norm(x.float())`,
substituted by its body), so that one expression tree stands for what the function computes.
Only straight-line functions are read (no branches, loops or other statements): what they
compute is then exactly that tree.

Each matcher yields (original node, builder of the replacement, fields of the finding).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

Qualify = Callable[[cst.CSTNode], "str | None"]
Replacement = tuple[cst.CSTNode, Callable[[cst.CSTNode], cst.CSTNode], dict[str, str]]
_CODE = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
    """The source text of `node`."""
    return _CODE.code_for_node(node).strip()


def _same(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return code(_bare(a)) == code(_bare(b))


def _bare(node: cst.CSTNode) -> cst.CSTNode:
    """`node` without the parentheses around it (they change no value)."""
    if isinstance(node, cst.BaseExpression) and (node.lpar or node.rpar):
        return node.with_changes(lpar=(), rpar=())
    return node


class _Substitute(cst.CSTTransformer):
    """Replace the names bound in `env` by their values; attribute names and keywords are no uses."""

    def __init__(self, env: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.env = env

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return False

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        return updated_node.with_changes(value=updated_node.value.visit(self))

    def visit_Arg(self, node: cst.Arg) -> bool:
        return False

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return updated_node.with_changes(value=updated_node.value.visit(self))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        value = self.env.get(original_node.value)
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if value else updated_node


def parameters(function: cst.FunctionDef) -> list[str] | None:
    """The plain positional parameters, None when there are others (defaults, *args, keywords)."""
    params = function.params
    if params.star_arg is not cst.MaybeSentinel.DEFAULT or params.kwonly_params or params.star_kwarg:
        return None
    if params.posonly_params or any(p.default is not None for p in params.params):
        return None
    return [p.name.value for p in params.params]


_NO_VALUE = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.NamedExpr, cst.Yield)


def _contains(node: cst.CSTNode, kinds: tuple[type, ...]) -> bool:
    return isinstance(node, kinds) or any(_contains(child, kinds) for child in node.children)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every node below it, parents first."""
    yield node
    for child in node.children:
        yield from walk(child)


def inline(
    function: cst.FunctionDef, methods: dict[str, cst.FunctionDef] | None = None
) -> cst.BaseExpression | None:
    """The expression `function` returns with its assignments substituted in, or None when its body
    is not straight-line assignments to plain names then one `return` (a docstring aside)."""
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    statements = list(body.body)
    if statements and is_docstring(statements[0]):
        statements = statements[1:]
    env: dict[str, cst.BaseExpression] = {}
    for index, statement in enumerate(statements):
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        value = small.value if isinstance(small, (cst.Assign, cst.Return)) else None
        if value is None or _contains(value, _NO_VALUE):
            return None
        substituted = value.visit(_Substitute(env))
        assert isinstance(substituted, cst.BaseExpression)
        value = substituted
        if methods is not None:
            value = _inline_methods(value, methods)
            if value is None:
                return None
        if isinstance(small, cst.Return):
            return value if index == len(statements) - 1 else None
        assert isinstance(small, cst.Assign)
        if len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
            return None
        env[small.targets[0].target.value] = value
    return None


def is_docstring(statement: cst.BaseStatement) -> bool:
    """A statement that is one string: a docstring where it stands first."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


class _InlineMethods(cst.CSTTransformer):
    """`self.m(a)` replaced by what method `m` of the class returns for `a`."""

    def __init__(self, methods: dict[str, cst.FunctionDef]) -> None:
        super().__init__()
        self.methods = methods
        self.failed = False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = updated_node.func
        if not (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return updated_node
        method = self.methods.get(func.attr.value)
        if method is None:
            return updated_node
        names = parameters(method)
        args = updated_node.args
        if names is None or len(names) != len(args) + 1 or any(a.keyword or a.star for a in args):
            self.failed = True
            return updated_node
        returned = inline(method)  # one level: a method calling methods is not inlined further
        if returned is None:
            self.failed = True
            return updated_node
        env = dict(zip(names[1:], (a.value for a in args)))
        result = returned.visit(_Substitute(env))
        assert isinstance(result, cst.BaseExpression)
        return result.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _inline_methods(
    value: cst.BaseExpression, methods: dict[str, cst.FunctionDef]
) -> cst.BaseExpression | None:
    inliner = _InlineMethods(methods)
    result = value.visit(inliner)
    assert isinstance(result, cst.BaseExpression)
    return None if inliner.failed else result


def classes(module: cst.Module) -> Iterator[cst.ClassDef]:
    """Every class of `module`, nested ones included."""
    todo: list[cst.CSTNode] = [module]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.ClassDef):
            yield node
        todo.extend(node.children)


def methods_of(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    """The methods defined directly in the class body, by name (undecorated ones)."""
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef) and not s.decorators}


def is_self_attribute(node: cst.CSTNode) -> bool:
    """`self.weight`."""
    node = _bare(node)
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def method(node: cst.CSTNode, name: str) -> cst.Call | None:
    """`node` as a call of method `name` (`x.float()`), else None."""
    node = _bare(node)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == name:
        return node
    return None


def receiver(call: cst.Call) -> cst.BaseExpression:
    """`x` of `x.f(...)`."""
    assert isinstance(call.func, cst.Attribute)
    return call.func.value


def argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """The value given for a parameter by keyword, else at `position`; None if absent."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if 0 <= position < len(positional) else None


def is_number(node: cst.CSTNode | None, value: float | None = None) -> bool:
    """A literal number (equal to `value` if given); `-1` counts."""
    if node is None:
        return False
    node = _bare(node)
    sign = 1.0
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node, sign = _bare(node.expression), -1.0
    if not isinstance(node, (cst.Integer, cst.Float)):
        return False
    return value is None or sign * float(node.evaluated_value) == value


def is_true(node: cst.CSTNode | None) -> bool:
    """The name `True`."""
    return node is not None and isinstance(_bare(node), cst.Name) and code(node) == "True"


def replacement(text: str, like: cst.CSTNode) -> cst.BaseExpression:
    """`text` parsed, keeping the parentheses `like` had."""
    new = cst.parse_expression(text)
    if isinstance(like, cst.BaseExpression):
        new = new.with_changes(lpar=like.lpar, rpar=like.rpar)
    return new


def chunked(value: cst.BaseExpression, qualify: Qualify) -> cst.BaseExpression | None:
    """`x` of `x.chunk(2, dim=-1)` / `torch.chunk(x, 2, -1)` (its two halves along the last dimension)."""
    if not isinstance(value, cst.Call) or any(a.star for a in value.args):
        return None
    if qualify(value.func) == "torch.chunk" and value.args and value.args[0].keyword is None:
        source, first = value.args[0].value, 1
    elif qualify(value.func) is None and method(value, "chunk") is not None:
        source, first = receiver(value), 0
    else:
        return None
    if len(value.args) != first + 2:
        return None
    chunks, dim = argument(value, first, "chunks"), argument(value, first + 1, "dim")
    return source if is_number(chunks, 2) and is_number(dim, -1) else None
