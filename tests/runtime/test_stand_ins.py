"""Every module that stands in for a third-party one (torch_npu, apex, torch.npu and their
submodules) answers a name it does not simulate as a missing name: AttributeError on ``M.X``,
ImportError on ``from M import X``, so clients' feature probes take their fallback.

The modules are found by walking the stand-in packages on disk; one child process imports each
under its public name (``torch_npu.contrib.transfer_to_npu`` patches torch, so not in this one).
"""

from __future__ import annotations

import json
import pkgutil

import pytest
from conftest import ROOT, run_python

#: public package -> the runtime_shim package that stands in for it
_PACKAGES = {
    "torch_npu": ROOT / "runtime_shim" / "torch_npu_stub",
    "apex": ROOT / "runtime_shim" / "apex_stub",
    "torch_npu.npu": ROOT / "runtime_shim" / "npu",
}
#: stand-ins reached by another name than their file's (activate.py's aliases, torch.npu's submodules)
_ALIASES = (
    "torch_npu.npu.amp",
    "torch_npu.npu.random",
    "torch.npu",
    "torch.npu.amp",
    "torch.npu.random",
    "torch.npu.utils",
)
_MISSING = "not_a_simulated_name"


def _walk(public: str, path) -> list[str]:
    names = [public]
    for info in pkgutil.iter_modules([str(path)]):
        if info.name.startswith("_"):
            continue
        if info.ispkg:
            names += _walk(f"{public}.{info.name}", path / info.name)
        else:
            names.append(f"{public}.{info.name}")
    return names


STAND_INS = sorted({n for public, path in _PACKAGES.items() for n in _walk(public, path)} | set(_ALIASES))

_CHILD = f"""
import importlib, json, sys
import runtime_shim
runtime_shim.activate()

def outcome(action):
    try:
        action()
    except Exception as exc:
        return [type(exc).__name__, str(exc)]
    return ["no error", ""]

results = {{}}
for public in sys.argv[1:]:
    module = importlib.import_module(public)
    results[public] = {{
        "attribute": outcome(lambda: getattr(module, "{_MISSING}")),
        "hasattr": outcome(lambda: hasattr(module, "{_MISSING}") and 1 / 0),
        "from_import": outcome(lambda: exec("from " + public + " import {_MISSING}", {{}})),
        "dunder": outcome(lambda: module.__not_a_dunder__),
    }}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, list[str]]]:
    proc = run_python(["-c", _CHILD, *STAND_INS])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_walk_finds_every_stand_in_package_and_submodule():
    for expected in (
        "apex",
        "apex.amp",
        "apex.optimizers",
        "torch_npu",
        "torch_npu.optim",
        "torch_npu.profiler",
        "torch_npu.contrib",
        "torch_npu.contrib.transfer_to_npu",
        "torch_npu.npu",
        "torch_npu.npu.memory",
        "torch_npu.npu.utils",
    ):
        assert expected in STAND_INS


@pytest.mark.parametrize("public", STAND_INS)
def test_an_unsimulated_name_is_a_missing_attribute(outcomes, public):
    got = outcomes[public]
    kind, message = got["attribute"]
    assert kind == "AttributeError", got
    assert message.endswith(f".{_MISSING} is not simulated by runtime_shim"), message
    assert got["hasattr"] == ["no error", ""]
    assert got["from_import"][0] == "ImportError", got
    assert f"cannot import name {_MISSING!r}" in got["from_import"][1]
    # a dunder stays a plain miss: the import system, copy and pickle probe those
    kind, message = got["dunder"]
    assert kind == "AttributeError" and message.endswith("has no attribute '__not_a_dunder__'"), got
