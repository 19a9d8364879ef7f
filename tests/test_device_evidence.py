"""engine/devices/device_evidence.py: a string literal in its context -> device, text or unknown."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest

from ms_fmk_transplt.engine.devices import DeviceAnswer, DeviceContext, DeviceSpec
from ms_fmk_transplt.engine.naming import alias_table, iter_imports

SPEC = {
    "calls": {"torch.device": [0], "to": [0]},
    "keywords": ["device", "map_location"],
    "names": [r"(\w+\.)*\w*device(_type)?(\.type)?"],
    "option_keywords": ["default", "choices"],
    "text_calls": ["os.path.join"],
    "text_keywords": ["dest"],
    "text_targets": ["__all__"],
}


def _verdicts(source: str, params: dict | None = None) -> list[DeviceAnswer]:
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
    spec.add(SPEC if params is None else params)
    context = DeviceContext(spec, qualify)
    context.scan(module)
    found: list[cst.SimpleString] = []

    class Collect(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            if str(node.evaluated_value).startswith("cuda"):
                found.append(node)

    module.visit(Collect())
    return [context.verdict(node, str(node.evaluated_value), "cuda")[0] for node in found]


D, T, U = DeviceAnswer.DEVICE, DeviceAnswer.TEXT, DeviceAnswer.UNKNOWN


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
def test_verdict(source: str, expected: list[DeviceAnswer]) -> None:
    assert _verdicts(source) == expected


def test_a_new_api_is_data() -> None:
    """Adding a device-taking call to the spec makes its argument a device."""
    assert _verdicts('mesh = init_device_mesh("cuda", (2,))') == [U]
    SPEC["calls"]["init_device_mesh"] = [0]
    try:
        assert _verdicts('mesh = init_device_mesh("cuda", (2,))') == [D]
    finally:
        del SPEC["calls"]["init_device_mesh"]


def _shipped() -> dict:
    """The device rule's `device_context` as shipped (rules/builtin/device.json)."""
    document = json.loads((Path(__file__).parent.parent / "rules" / "builtin" / "device.json").read_text())
    (rule,) = [r for r in document["rules"]["StringLiteralRule"] if r["id"] == "TP103"]
    return rule["device_context"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # class 1: APIs derived from torch's signatures (data/torch_device_apis.json)
        ('torch.device(type="cuda", index=i)', [D]),
        ('torch.device(index=i, type=kind)\nx = dict(type="cuda")', [U]),
        ('torch.is_autocast_enabled("cuda")', [D]),
        ('torch.get_autocast_dtype("cuda")', [D]),
        ('import functools\nf = functools.partial(torch.autocast, "cuda")', [D]),
        ('import functools\nf = functools.partial(print, "cuda")', [U]),
        ('torch.Generator(device="cuda")', [D]),
        ('m = AutoModel.from_pretrained(p, device_map="cuda")', [D]),
        ('m = AutoModel.from_pretrained(p, revision="cuda")', [U]),
        ('loader = torch.utils.data.DataLoader(ds, pin_memory_device="cuda")', [D]),
        # class 2: shapes the flow analysis follows
        ('def pick():\n    return "cuda" if torch.cuda.is_available() else "cpu"', [D]),
        ('def pick():\n    return "cuda" if fast else "slow"', [U]),
        ('x = "cuda" if ngpu > 0 else other', [D]),
        ('match dev.type:\n    case "cuda":\n        pass', [D]),
        ('match mode:\n    case "cuda":\n        pass', [U]),
        ('@pytest.mark.parametrize("device", ["cpu", "cuda"])\ndef test(device): pass', [D]),
        ('@pytest.mark.parametrize("name", ["cuda", "other"])\ndef test(name): pass', [U]),
        ('assert x.device.type == "cuda"', [D]),
        ('setattr(ns, "device", "cuda")', [D]),
        ('setattr(ns, "flavour", "cuda")', [U]),
        ('device, backend = "cuda", "nccl"', [D]),
        ('name, backend = "cuda", "nccl"', [U]),
        ('class Device(enum.Enum):\n    CUDA = "cuda"', [D]),
        ('class Kind(enum.Enum):\n    CUDA = "cuda"', [T]),  # a label: compared with its own members
        ('class C:\n    device: str = "cuda"', [D]),
        ('class C:\n    device: str = field(default="cuda")', [D]),
        ('class C:\n    label: str = field(default="cuda")', [U]),
        ('DEFAULT_DEVICE = "cuda"\nGPU = "cuda"', [D, D]),
        ('DEFAULT_NAME = "cuda"', [U]),
        ('cfg.MODEL.DEVICE = "cuda"', [D]),
        ('ok = devices[0] == "cuda"', [D]),
        ('ok = names[0] == "cuda"', [U]),
        ('ok = args.device.startswith("cuda")', [D]),
        ('ok = args.name.startswith("cuda")', [U]),
        ('ok = dev.type == "cuda"', [D]),
        ('ok = str(x.device) == "cuda"', [D]),
        ('b = {"cuda": "nccl", "cpu": "gloo"}[device.type]', [D]),
        ('b = {"cuda": "nccl", "cpu": "gloo"}[name]', [U]),
        ('__all__ = ["cuda", "cpu"]', [T]),
    ],
)
def test_verdict_with_the_shipped_data(source: str, expected: list[DeviceAnswer]) -> None:
    assert _verdicts(source, _shipped()) == expected


def test_the_derived_device_apis_are_shipped() -> None:
    """data/torch_device_apis.json (tools/derive_device_apis.py) holds what torch's signatures say."""
    from ms_fmk_transplt import data

    calls = data.torch_device_apis()["calls"]
    assert calls["torch.device"] == {"keywords": ["device", "type"], "positions": [0]}
    assert calls["torch.get_autocast_dtype"]["positions"] == [0]
    assert calls["torch.zeros"] == {"keywords": ["device"], "positions": []}
    # torch.cuda's own functions, and the static and class methods of torch's classes
    assert calls["torch.cuda.get_device_properties"] == {"keywords": ["device"], "positions": [0]}
    assert calls["torch.distributed.DeviceMesh.from_group"] == {"keywords": ["device_type"], "positions": [1]}
    # methods of torch's test base classes, called on self: self.create_pg("cuda")
    assert data.torch_device_apis()["methods"]["create_pg"] == {"keywords": ["device"], "positions": [0]}


@pytest.mark.slow
def test_the_derived_device_apis_are_current() -> None:
    """Regenerating from the pinned torch gives the committed file (imports torch: slow tier)."""
    import subprocess
    import sys

    pytest.importorskip("torch")
    root = Path(__file__).parent.parent
    done = subprocess.run(
        [sys.executable, "tools/derive_device_apis.py", "--check"], cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
