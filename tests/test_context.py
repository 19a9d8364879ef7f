"""engine/context.py: a string literal in its context -> device, text or unknown."""

from __future__ import annotations

import libcst as cst
import pytest

from ms_fmk_transplt.engine.context import DeviceContext, DeviceSpec, Verdict
from ms_fmk_transplt.engine.names import alias_table, iter_imports

SPEC = {
    "calls": {"torch.device": [0], "to": [0]},
    "keywords": ["device", "map_location"],
    "names": [r"(\w+\.)*\w*device(_type)?(\.type)?"],
    "option_keywords": ["default", "choices"],
    "text_calls": ["os.path.join"],
    "text_keywords": ["dest"],
    "text_targets": ["__all__"],
}


def _verdicts(source: str) -> list[Verdict]:
    """The verdict of every "cuda"/"cuda:..." literal in `source`, in order."""
    module = cst.parse_module("import os\nimport torch\n" + source)
    aliases = alias_table(statement for _, statement in iter_imports(module, lines=True))

    def qualify(node: cst.CSTNode) -> str | None:
        if isinstance(node, cst.Name):
            return aliases.get(node.value)
        if isinstance(node, cst.Attribute):
            base = qualify(node.value)
            return f"{base}.{node.attr.value}" if base else None
        return None

    spec = DeviceSpec()
    spec.add(SPEC)
    context = DeviceContext(spec, qualify)
    context.scan(module)
    found: list[cst.SimpleString] = []

    class Collect(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            if str(node.evaluated_value).startswith("cuda"):
                found.append(node)

    module.visit(Collect())
    return [context.verdict(node, str(node.evaluated_value), "cuda") for node in found]


D, T, U = Verdict.DEVICE, Verdict.TEXT, Verdict.UNKNOWN


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('torch.device("cuda")', [D]),
        ('x.to("cuda")', [D]),
        ('x.float("cuda")', [U]),
        ('"cuda:1"', [D]),
        ('"cuda:" + str(rank)', [D]),
        ('if x.device.type == "cuda": pass', [D]),
        ('ok = "cuda" in args.device', [D]),
        ('if mode == "cuda": pass', [U]),
        ('device = "cuda" if ok else "cpu"', [D]),
        ('kind = "cuda"\ntorch.device(kind)', [D]),
        ('kind = "cuda"\nprint(kind)', [U]),
        ('def f(device="cuda"): pass', [D]),
        ('cfg = {"device": "cuda", "name": "cuda"}', [D, U]),
        ('p.add_argument("--device", default="cuda", choices=["cuda"])', [D, D]),
        ('p.add_argument("--gpu", dest="cuda")', [T]),
        ('__all__ = ["cuda"]', [T]),
        ('os.path.join(here, "cuda")', [T]),
    ],
)
def test_verdict(source: str, expected: list[Verdict]) -> None:
    assert _verdicts(source) == expected


def test_a_new_api_is_data() -> None:
    """Adding a device-taking call to the spec makes its argument a device."""
    assert _verdicts('mesh = init_device_mesh("cuda", (2,))') == [U]
    SPEC["calls"]["init_device_mesh"] = [0]
    try:
        assert _verdicts('mesh = init_device_mesh("cuda", (2,))') == [D]
    finally:
        del SPEC["calls"]["init_device_mesh"]
