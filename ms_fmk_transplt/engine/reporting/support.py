"""API-support classification: what the selected release says about one API use, and why.

The transformer asks `SupportClassifier.classify` about every resolved torch name it meets (and,
heuristically, about `x.method()` calls), naming the API as the converted code will call it: after
a rewrite that is the new name (`x.cuda()` becomes `x.npu()`: `torch.Tensor.npu` is classified,
never `torch.Tensor.cuda`). The verdict comes from, in order:

1. the release's API lists (the support kind's `SupportHook` in `Tables.hooks`: the native list,
   then msFmkTransplt's), with the
   dtypes a partial entry gives; a partial use whose code shows a dtype outside them (`.double()`,
   `dtype=torch.float64`) is `unsupported-dtype`;
2. `torch.npu.*`: the `torch.cuda.*` entry of the same member, then torch.npu's public names;
3. an ATen operator torch_npu has an NPU kernel for (the hook's `aten_ops`): `torch.relu` runs
   `aten::relu`, so it is supported by kernel though the list does not name it;
4. otherwise a called torch name is not verified (absent from the lists is not unsupported).

The verdict and its words are the support kind's (ruleset/kinds/api_support_rule.py); this module
reads what a use's code shows and counts the supported uses, which are counted, not listed. Advice is the rules' own (the hook's `advice`, by API
name or dotted prefix), else a sentence per status.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ms_fmk_transplt.engine.interface import ANY, SUPPORT, Classified, Match, Tables, Tally
from ms_fmk_transplt.records import Operation, Support

# the lists' dtype words for torch's dtype names and for the tensor methods that cast
DTYPE_WORDS = {
    "float64": "fp64",
    "double": "fp64",
    "float32": "fp32",
    "float": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
    "int16": "int16",
    "short": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
    "complex64": "complex64",
    "cfloat": "complex64",
    "complex128": "complex128",
    "cdouble": "complex128",
}
CASTS = {
    "double": "fp64",
    "float": "fp32",
    "half": "fp16",
    "bfloat16": "bf16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "char": "int8",
    "byte": "uint8",
    "bool": "bool",
}
# dtypes of an operand that is an index, a target or a mask (`cross_entropy(x, y.long())`,
# `embedding(ids.long(), w)`): the operation does not compute in them, so they say nothing of
# the dtypes it supports
INDEX_DTYPES = frozenset({"int64", "int32", "int16", "int8", "uint8", "bool"})
# methods that leave a tensor on the host: what is called on their result runs on the CPU
HOST_METHODS = frozenset({"cpu", "numpy", "tolist"})
# methods that move a tensor to some device (the one named, or an accelerator)
MOVE_METHODS = frozenset({"to", "cuda", "npu"})


def _host_device(value: str | bytes | None) -> bool:
    return isinstance(value, str) and value.split(":")[0] == "cpu"


def on_host(receiver: cst.BaseExpression) -> bool:
    """`x.cpu()`, `x.detach().to("cpu")`, `x.cpu()[0]`: a receiver whose last move is to the
    CPU, so a tensor method called on it runs there, whatever the NPU supports."""
    node = receiver
    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
            continue
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            return False
        method = node.func.attr.value
        if method in HOST_METHODS:
            return True
        if method in MOVE_METHODS:
            target = next(
                (a.value for a in node.args if a.keyword is None or a.keyword.value == "device"), None
            )
            if method == "to" and isinstance(target, cst.SimpleString):
                return _host_device(target.evaluated_value)
            if not (
                method == "to" and isinstance(target, cst.Attribute) and target.attr.value in DTYPE_WORDS
            ):
                return False  # moved to a device, or to what the code does not spell
        node = node.func.value


# namespaces whose functions are ATen operators of the same name (with a prefix for some)
_ATEN_NAMESPACES = {
    "torch": "",
    "torch.Tensor": "",
    "torch.nn.functional": "",
    "torch.linalg": "linalg_",
    "torch.special": "special_",
    "torch.fft": "fft_",
}
_CHECKS = (Support.PARTIAL, Support.NOT_VERIFIED, Support.DTYPE)


def operation_of(verdict: Classified) -> Operation:
    """CHECK for a use that may run (nothing changed; --strict ignores it), else UNSUPPORTED."""
    return Operation.CHECK if verdict.support in _CHECKS else Operation.UNSUPPORTED


def aten_op(name: str) -> str | None:
    """The ATen operator a torch function or tensor method name runs, when the name says it."""
    namespace, _, last = name.rpartition(".")
    prefix = _ATEN_NAMESPACES.get(namespace)
    if prefix is None or not last or not last[0].islower():
        return None
    return prefix + last


def converted_name(name: str, match: Match | None) -> str | None:
    """The API the converted code calls for `name`: itself, its rewrite, or None (reported, kept)."""
    if match is None:
        return name
    if match.new is None:
        return None
    return match.new + name[len(match.prefix) :]


class SupportJudge:
    """The release's verdict on API uses, whatever tree the use was read from; counts the supported.

    The syntax side says two things about a use: whether it is invoked (called, a decorator, a
    base class) and, for a partial entry, which dtype the code shows. `SupportClassifier` reads
    them from libcst's tree, engine/conversion/fast_path.py from CPython's ast.
    """

    def __init__(self, tables: Tables) -> None:
        self.hook = tables.hooks.one(SUPPORT, ANY)
        self.supported = 0  # uses a list (or torch.npu's surface) gives as supported
        self.by_kernel = 0  # uses absent from the lists whose ATen operator has an NPU kernel

    def judge(
        self, name: str, invoked: bool, dtype_shown: Callable[[str], str | None], rewritten: bool = False
    ) -> Classified | None:
        """The verdict on one use of API `name`, or None when it is supported (counted).

        `invoked`: the use is a call, a decorator or a base class; `dtype_shown(dtypes)`: a dtype
        the use's code shows outside `dtypes`. `rewritten`: `name` is what a rule rewrote the code
        to; absent from every list, the rule's target is taken as the NPU's own API (counted).
        """
        if self.hook is None:
            return None
        verdict = self.hook.judge(name, invoked, dtype_shown, rewritten)
        if verdict is Tally.SUPPORTED:
            self.supported += 1
        elif verdict is Tally.BY_KERNEL:
            self.by_kernel += 1
        elif isinstance(verdict, Classified):
            return verdict
        return None

    def lists_method(self, method: str) -> bool:
        """The lists hold `torch.Tensor.<method>` (a method matched by name: a heuristic)."""
        return self.hook is not None and self.hook.lists_method(method)


class SupportClassifier(SupportJudge):
    """Classifies API uses of one libcst module as the transformer meets them."""

    def __init__(self, tables: Tables, qualify: Callable[[cst.CSTNode], str | None]) -> None:
        super().__init__(tables)
        self.qualify = qualify
        self._invoked: set[int] = set()  # references that are called, decorate or are subclassed
        self._calls: dict[int, cst.Call] = {}  # id(func) -> the call, for the dtypes it shows
        self._annotation_depth = 0

    # ---- what the traversal tells us -----------------------------------------------------------
    def called(self, call: cst.Call) -> None:
        """`call.func` is invoked; the call's arguments may show a dtype."""
        self._invoked.add(id(call.func))
        self._calls[id(call.func)] = call

    def invoked(self, node: cst.CSTNode) -> None:
        """`node` is used as an API (a decorator, a base class)."""
        self._invoked.add(id(node))

    def enter_annotation(self) -> None:
        """Names inside a type annotation are not uses."""
        self._annotation_depth += 1

    def leave_annotation(self) -> None:
        """The annotation entered last is left."""
        self._annotation_depth -= 1

    def tensor_method(self, func: cst.Attribute, own: bool, renamed: str | None) -> str | None:
        """`x.name()` matched by name alone (a heuristic): the torch.Tensor method the converted call
        names (`renamed` by a method rule, unless the file `own`s the name), when the lists hold it
        and the receiver is no literal nor a tensor moved to the CPU (`x.cpu().numpy()`)."""
        method = renamed if renamed is not None and not own else func.attr.value
        if not own and self.lists_method(method) and not is_host_or_literal(func.value):
            return f"torch.Tensor.{method}"
        return None

    # ---- the verdict ----------------------------------------------------------------------------
    def classify(self, node: cst.CSTNode, name: str, rewritten: bool = False) -> Classified | None:
        """The verdict on one use of API `name` at `node`, or None when it is supported (counted)."""
        if self._annotation_depth:
            return None
        invoked = id(node) in self._invoked or isinstance(node, cst.Call)
        return self.judge(name, invoked, lambda dtypes: self._dtype_shown(node, dtypes), rewritten)

    def _dtype_shown(self, node: cst.CSTNode, dtypes: str) -> str | None:
        """A dtype the code shows for this use that `dtypes` lacks: `dtype=torch.float64`,
        `x.double().sum()`, `x.to(torch.half)`; None when it shows none or only listed ones."""
        call = node if isinstance(node, cst.Call) else self._calls.get(id(node))
        if call is None:
            return None
        allowed = set(dtypes.split())
        shown: list[str] = []
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword in (None, "dtype"):
                word = self._dtype_word(arg.value)
                if word is not None and (keyword == "dtype" or _is_cast(call)):
                    shown.append(word)
            if keyword is None and isinstance(arg.value, cst.Call):  # torch.matmul(x.double(), y)
                shown += [w for w in self._cast_to(arg.value) if w not in INDEX_DTYPES]
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):  # x.double().sum()
            shown += self._cast_to(func.value)
        outside = [word for word in shown if word not in allowed]
        return outside[0] if outside else None

    def _cast_to(self, call: cst.Call) -> list[str]:
        """The dtype a cast call gives its result: `x.double()`, `x.to(torch.float64)`."""
        if not isinstance(call.func, cst.Attribute):
            return []
        cast = CASTS.get(call.func.attr.value)
        if cast is not None and not call.args:
            return [cast]
        if _is_cast(call):
            return [w for a in call.args if (w := self._dtype_word(a.value)) is not None]
        return []

    def _dtype_word(self, expr: cst.BaseExpression) -> str | None:
        name = self.qualify(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if name is None or not name.startswith("torch."):
            return None
        return DTYPE_WORDS.get(name[len("torch.") :])


def _is_cast(call: cst.Call) -> bool:
    """`x.to(...)` or `x.type(...)`: its positional dtype is the result's dtype."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "type")


# receivers that are never tensors: "a,b".split(",") is str.split
_LITERALS = (
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.Integer,
    cst.Float,
    cst.List,
    cst.Dict,
    cst.Tuple,
    cst.Set,
    cst.ListComp,
    cst.DictComp,
    cst.SetComp,
)


def is_host_or_literal(receiver: cst.BaseExpression) -> bool:
    """A receiver that is no NPU tensor: a literal, or a tensor moved to the CPU (`on_host`)."""
    return isinstance(receiver, _LITERALS) or on_host(receiver)
