"""`torch.load` calls every rank makes after the barrier read what rank 0 saved: its tensors name
rank 0's device, so each load gets a `map_location` that puts them on the loading rank's device.

What a load's `map_location` says decides (read from literals only; anything else is left):
absent, or a dict that sends some location to a device: device locations go to the rank's device
and CPU tensors stay on the CPU; a fixed device ("cuda:0", "npu:0", `torch.device("cuda", 0)`,
a lambda that moves storages): the rank's device of that type; "cpu", an index-less device
("cuda": the current device, which the set-up makes the rank's own), the identity lambda (CPU)
or a name: unchanged.
"""

from __future__ import annotations

import ast

import libcst as cst

from ms_fmk_transplt.distributed import snippets

_KEYWORD = "map_location"
# torch.load(f, map_location, ...): the second positional parameter
_POSITION = 1
_DEVICE_CALLS = frozenset({"torch.device", "device"})


def rank_map_location(call: cst.Call, local_rank: str) -> cst.BaseExpression | None:
    """The `map_location` a shared `torch.load` needs on rank `local_rank`, or None to leave it."""
    if any(arg.star for arg in call.args):
        return None  # *args or **kwargs may carry a map_location of their own
    given = _given(call)
    if given is None:
        return _to_rank(local_rank)
    if isinstance(given, cst.SimpleString | cst.ConcatenatedString):
        text = _literal(given)
        return _fixed(text if isinstance(text, str) else None, local_rank)
    if isinstance(given, cst.Call) and _dotted(given.func) in _DEVICE_CALLS:
        return _fixed(_device_text(given), local_rank)
    if isinstance(given, cst.Lambda):
        return _lambda(given, local_rank)
    if isinstance(given, cst.Dict):
        values = [_literal(e.value) for e in given.elements if isinstance(e, cst.DictElement)]
        return None if values and all(v == "cpu" for v in values) else _to_rank(local_rank)
    return None


def with_map_location(call: cst.Call, value: cst.BaseExpression) -> cst.Call:
    """`call` with its `map_location` argument (keyword or second positional) set to `value`."""
    args = list(call.args)
    for index, arg in enumerate(args):
        if (arg.keyword is not None and arg.keyword.value == _KEYWORD) or (
            index == _POSITION and arg.keyword is None
        ):
            args[index] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    tight = cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )
    return call.with_changes(args=[*args, cst.Arg(value=value, keyword=cst.Name(_KEYWORD), equal=tight)])


def _given(call: cst.Call) -> cst.BaseExpression | None:
    for index, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == _KEYWORD:
            return arg.value
        if index == _POSITION and arg.keyword is None:
            return arg.value
    return None


def _to_rank(local_rank: str) -> cst.BaseExpression:
    # a storage saved on a device goes to this rank's device, one saved on the CPU stays there
    return snippets.expression(
        f'lambda storage, location: storage if location == "cpu" else storage.cuda({local_rank})'
    )


def _fixed(device: str | None, local_rank: str) -> cst.BaseExpression | None:
    """For a device named in full ("cuda:0"): the rank's device of that type."""
    if device is None or ":" not in device:
        return None  # "cpu", an index-less device (the current one: the rank's), or not a literal
    kind = device.split(":", 1)[0]
    if kind == "cpu":
        return None
    return snippets.expression(f'torch.device("{kind}", {local_rank})')


def _lambda(given: cst.Lambda, local_rank: str) -> cst.BaseExpression | None:
    params = given.params.params
    if params and isinstance(given.body, cst.Name) and given.body.value == params[0].name.value:
        return None  # `lambda storage, loc: storage`: everything on the CPU
    text = cst.Module([]).code_for_node(given)
    kind = "npu" if "npu" in text else "cuda"
    return snippets.expression(f'torch.device("{kind}", {local_rank})')


def _device_text(call: cst.Call) -> str | None:
    """`torch.device("cuda", 0)` / `torch.device("cuda:0")` / `torch.device(type=..., index=...)` as "cuda:0"."""
    kind: str | None = None
    index: object = None
    for position, arg in enumerate(call.args):
        name = arg.keyword.value if arg.keyword is not None else ("type", "index")[min(position, 1)]
        value = _literal(arg.value)
        if name == "type":
            kind = value if isinstance(value, str) else None
        elif name == "index":
            index = value if isinstance(value, int) else "?"
    if kind is None:
        return None
    return kind if index is None or ":" in kind else f"{kind}:{index}"


def _literal(node: cst.BaseExpression) -> object:
    try:
        return ast.literal_eval(cst.Module([]).code_for_node(node))
    except (ValueError, SyntaxError):
        return None


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""
