"""Device tests that guard a CUDA-only implementation: kept as written, and reported.

`if input.device.type != 'cuda': return False` in stylegan2-ada's `_should_use_custom_op` picks a
cuDNN-only operator for CUDA tensors and `torch.nn.functional.conv2d` for any other; converted to
`'npu'`, it would send Ascend to the cuDNN operator. Such a test stays as written (the NPU takes
the portable path, as the CPU does) and is reported. A device test *guards CUDA-only code* when:
- it compares something device-typed with `"cuda"` (`x.device.type == "cuda"`, `!=` too) or reads
  `x.is_cuda`, in the test of an `if`;
- and the CUDA side leads only to CUDA-only code: every statement of the `if`'s body (for `==`,
  `is_cuda`) is CUDA-only, or another condition of the same test is (`impl == "cuda" and
  x.device.type == "cuda" and _init()`, `_init()` building a CUDA extension); for `!=` with an
  early exit (`return False`) in a function, every `if` of the module that tests that function's
  result (`if _should_use_custom_op(x): ...`) has a CUDA-only body.
CUDA-only code names an API of the rule data's `cuda_only_apis` (`torch.backends.cudnn`,
`torch.utils.cpp_extension`, `triton`, cuDNN-only torch operators), holds a string matching
`cuda_only_strings` (`"aten::cudnn_convolution_backward_weight"`, a CUDA source `"op.cu"`), or
calls a function or class of the module that does, or reads a name bound to such a value
(`_plugin = get_plugin(sources=["bias_act.cu"])`, later `_plugin.bias_act(...)`). A
`torch.cuda.synchronize()` under the test is no such code: it has an NPU counterpart, and the test
converts as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import libcst as cst

from ms_fmk_transplt.engine.devices.device_evidence import DeviceSpec
from ms_fmk_transplt.engine.syntax import NodeIndex, children

_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


class CudaOnlyGuards:
    """The `"cuda"` literals (and `.is_cuda` reads) of device tests that guard CUDA-only code."""

    def __init__(
        self,
        spec: DeviceSpec,
        qualify: Callable[[cst.CSTNode], str | None],
        typed: Callable[[cst.BaseExpression], bool],
    ) -> None:
        self.spec = spec
        self.qualify = qualify
        self.typed = typed  # is an expression device-typed (engine/devices/device_evidence.py)
        self.own: set[str] = set()  # the module's functions, classes and names that touch CUDA-only code
        self.guards: list[tuple[cst.CSTNode, str]] = []  # (node kept, what CUDA-only code it guards)

    def scan(self, nodes: NodeIndex) -> None:
        """Find the module's CUDA-only code, then the device tests guarding only it."""
        defined: list[tuple[str, cst.CSTNode]] = [(f.name.value, f) for f in nodes.of(cst.FunctionDef)]
        defined += [(c.name.value, c) for c in nodes.of(cst.ClassDef)]
        assigned = [
            (t.target.value, a.value)
            for a in nodes.of(cst.Assign)
            for t in a.targets
            if isinstance(t.target, cst.Name)
        ]
        # one that tests for CUDA itself picks among implementations (`fused_act(x, impl)`): not CUDA-only
        defined = [(name, node) for name, node in defined if not _dispatches(node)]
        while True:  # a function calling one that builds a CUDA extension touches it too
            before = len(self.own)
            for name, node in (*defined, *assigned):
                if name not in self.own and self._touches(node):
                    self.own.add(name)
            if len(self.own) == before:
                break
        exits: list[tuple[cst.CSTNode, cst.If]] = []  # `if x.device.type != "cuda": return False`
        for test in nodes.of(cst.If):
            for kept, equal in self._cuda_tests(test.test):
                others = [c for c in _conditions(test.test) if not any(n is kept for n in _walk(c))]
                if equal and (self._only(_statements(test.body)) or any(self._touches(c) for c in others)):
                    self.guards.append((kept, self._what([test])))
                elif not equal and _exits(test.body):
                    exits.append((kept, test))
        if not exits:
            return
        results = _tested_results(nodes)
        owner = _owners(nodes)
        for kept, test in exits:
            bodies = results.get(owner.get(id(test), ""), [])
            if bodies and all(self._only(b) for b in bodies):
                self.guards.append((kept, self._what([s for b in bodies for s in b])))

    def _cuda_tests(self, test: cst.BaseExpression) -> Iterator[tuple[cst.CSTNode, bool]]:
        """The `"cuda"` literal of each `device == "cuda"` (True) / `!=` (False) in a test, and
        each `x.is_cuda` read (True); not under `not`."""
        for condition in _conditions(test):
            if isinstance(condition, cst.Attribute) and condition.attr.value == "is_cuda":
                yield condition, True
            if not isinstance(condition, cst.Comparison) or len(condition.comparisons) != 1:
                continue
            target = condition.comparisons[0]
            if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                continue
            sides = (condition.left, target.comparator)
            for literal, other in (sides, sides[::-1]):
                if (
                    isinstance(literal, cst.SimpleString)
                    and literal.evaluated_value == "cuda"
                    and self.typed(other)
                ):
                    yield literal, isinstance(target.operator, cst.Equal)

    def _only(self, body: Iterable[cst.CSTNode]) -> bool:
        """Every statement of a body is CUDA-only (a docstring or `pass` aside), and there is one."""
        statements = [s for s in body if not _trivial(s)]
        return bool(statements) and all(self._touches(s) for s in statements)

    def _touches(self, node: cst.CSTNode) -> bool:
        return next(self._markers(node), None) is not None

    def _markers(self, node: cst.CSTNode) -> Iterator[str]:
        """The CUDA-only code under a node, as code."""
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.SimpleString):
                value = current.evaluated_value
                if isinstance(value, str) and any(p.fullmatch(value) for p in self.spec.cuda_only_strings):
                    yield value
                continue
            if isinstance(current, (cst.Name, cst.Attribute)):
                qualified = self.qualify(current) or ""
                if any(
                    qualified == api or qualified.startswith(api + ".") for api in self.spec.cuda_only_apis
                ):
                    yield qualified
                    continue
                if isinstance(current, cst.Name) and current.value in self.own:
                    yield current.value
                    continue
            if isinstance(current, cst.Attribute):  # `_plugin.fused_act`: not the attribute's name
                stack.append(current.value)
                continue
            stack.extend(children(current))

    def _what(self, nodes: Iterable[cst.CSTNode]) -> str:
        """The first CUDA-only code under the nodes, for the finding."""
        return next((m for node in nodes for m in self._markers(node)), "CUDA-only code")


def _dispatches(node: cst.CSTNode) -> bool:
    """Does a function or class test for CUDA itself (a `"cuda"` literal, `.is_cuda`)?"""
    for current in _walk(node):
        if isinstance(current, cst.SimpleString) and current.evaluated_value == "cuda":
            return True
        if isinstance(current, cst.Attribute) and current.attr.value == "is_cuda":
            return True
    return False


def _conditions(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The conditions an `and` joins (one for any other test)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        yield from _conditions(test.left)
        yield from _conditions(test.right)
    else:
        yield test


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def _trivial(statement: cst.CSTNode) -> bool:
    if isinstance(statement, cst.SimpleStatementLine):
        return all(
            isinstance(s, cst.Pass) or (isinstance(s, cst.Expr) and isinstance(s.value, cst.SimpleString))
            for s in statement.body
        )
    return False


def _exits(body: cst.BaseSuite) -> bool:
    """A body that leaves (`return False`, `raise`): what follows it is the CUDA side."""
    if isinstance(body, cst.SimpleStatementSuite):
        return any(isinstance(s, _EXITS) for s in body.body)
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    return isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, _EXITS) for s in last.body)


def _statements(body: cst.BaseSuite) -> list[cst.CSTNode]:
    return list(body.body)


def _tested_results(nodes: NodeIndex) -> dict[str, list[list[cst.CSTNode]]]:
    """Function name -> the bodies of the `if`s whose test calls it, not negated (`if f(x):`)."""
    found: dict[str, list[list[cst.CSTNode]]] = {}
    for test in nodes.of(cst.If):
        for condition in _conditions(test.test):
            if isinstance(condition, cst.Call) and isinstance(condition.func, cst.Name):
                found.setdefault(condition.func.value, []).append(_statements(test.body))
    return found


def _owners(nodes: NodeIndex) -> dict[int, str]:
    """id(`if` statement) -> the name of the innermost function holding it."""
    found: dict[int, str] = {}
    for function in nodes.of(cst.FunctionDef):
        stack: list[cst.CSTNode] = [function.body]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.If):
                found[id(current)] = function.name.value
            if not isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                stack.extend(children(current))
    return found
