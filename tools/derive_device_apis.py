"""Derive which torch functions and classes take a device, from the pinned torch itself.

Run from the repository root with the project's venv (torch installed by tools/setup.sh):
    .venv/bin/python tools/derive_device_apis.py [--check]
Writes ms_fmk_transplt/data/torch_device_apis.json: for each public callable, the positions and
keyword names of its parameters that take a device (`device`, `device_type`, `device_types`, `pin_memory_device`,
`output_device`, and `type` of `torch.device`), and under "methods" the same for the methods of
torch's test base classes (`DistributedTestBase.create_pg`), by method name. Python callables are read with
`inspect.signature`; builtins (which have none) from the type stubs torch ships
(`torch/_C/__init__.pyi`, `torch/_C/_VariableFunctions.pyi`), every overload merged. A public
name counts only when it is the object the stub or module defines (`torch.zeros is
torch._C._VariableFunctions.zeros`). The converter reads the JSON; it never imports torch.
Under "members", the names (all but dunders) of the torch.cuda modules whose members a rule moves
one by one. `--check` exits 1 when the committed file differs from what this torch gives.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "ms_fmk_transplt" / "data" / "torch_device_apis.json"

# the namespaces a training script calls into; torch.cuda's members are renamed as a whole, and
# their device arguments are devices too (`torch.cuda.get_device_properties("cuda")`)
MODULES = (
    "torch",
    "torch.amp",
    "torch.random",
    "torch.accelerator",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.parallel",
    "torch.distributed",
    "torch.distributed.device_mesh",
    "torch.utils.data",
    "torch.testing",
    "torch.cuda",
    "torch.cuda.random",
    "torch.cuda.memory",
    "torch.library",
)
DEVICE_PARAMS = frozenset({"device", "device_type", "device_types", "pin_memory_device", "output_device"})
# parameters that take a device only in one callable (`torch.device(type="cuda", index=0)`)
OWN_PARAMS = {"torch.device": frozenset({"type"})}
STUBS = {"_C/__init__.pyi": "torch._C", "_C/_VariableFunctions.pyi": "torch._C._VariableFunctions"}
# test base classes whose methods a test suite calls on `self` (`self.create_pg("cuda")`): read from
# the source, since importing them needs test-only packages; recorded by method name
TEST_BASES = {"testing/_internal/common_distributed.py": ("DistributedTestBase",)}
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _add(found: dict[str, dict[str, set]], name: str, params: list[tuple[str, bool]]) -> None:
    """Record `params` ((name, positional?) in order, self/cls dropped) of callable `name`."""
    wanted = DEVICE_PARAMS | OWN_PARAMS.get(name, frozenset())
    position = 0
    for param, positional in params:
        if param in wanted:
            entry = found.setdefault(name, {"positions": set(), "keywords": set()})
            entry["keywords"].add(param)
            if positional:
                entry["positions"].add(position)
        position += positional


def _from_signatures(found: dict[str, dict[str, set]]) -> None:
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", None) or dir(module):
            obj = getattr(module, name, None)
            if name.startswith("_") or obj is None or not callable(obj):
                continue
            try:
                signature = inspect.signature(obj)
            except (TypeError, ValueError):
                continue  # a builtin: read from the stubs
            params = [(p.name, p.kind in _POSITIONAL) for p in signature.parameters.values()]
            _add(found, f"{module_name}.{name}", params)
            if inspect.isclass(obj):
                _from_class_methods(found, f"{module_name}.{name}", obj)


def _from_class_methods(found: dict[str, dict[str, set]], qualified: str, cls: type) -> None:
    """The static and class methods a class defines (`DeviceMesh.from_group(group, "cuda")`)."""
    for name, member in vars(cls).items():
        if name.startswith("_") or not isinstance(member, (staticmethod, classmethod)):
            continue
        try:
            signature = inspect.signature(getattr(cls, name))
        except (TypeError, ValueError):
            continue
        params = [(p.name, p.kind in _POSITIONAL) for p in signature.parameters.values()]
        _add(found, f"{qualified}.{name}", params)


def _stub_params(function: ast.FunctionDef) -> list[tuple[str, bool]]:
    args = function.args
    positional = [a.arg for a in args.posonlyargs + args.args if a.arg not in ("self", "cls")]
    return [(a, True) for a in positional] + [(a.arg, False) for a in args.kwonlyargs]


def _from_stubs(found: dict[str, dict[str, set]]) -> None:
    import torch

    base = Path(torch.__file__).parent
    for stub, module_name in STUBS.items():
        module: Any = torch
        for part in module_name.split(".")[1:]:
            module = getattr(module, part)
        tree = ast.parse((base / stub).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                if getattr(torch, node.name, None) is getattr(module, node.name, object()):
                    _add(found, f"torch.{node.name}", _stub_params(node))
            elif isinstance(node, ast.ClassDef) and getattr(torch, node.name, None) is getattr(
                module, node.name, object()
            ):
                for member in node.body:
                    if isinstance(member, ast.FunctionDef) and member.name in ("__init__", "__new__"):
                        _add(found, f"torch.{node.name}", _stub_params(member))


def _from_test_bases(found: dict[str, dict[str, set]]) -> None:
    import torch

    base = Path(torch.__file__).parent
    for source, classes in TEST_BASES.items():
        tree = ast.parse((base / source).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name in classes:
                for member in node.body:
                    if isinstance(member, ast.FunctionDef) and not member.name.startswith("_"):
                        _add(found, member.name, _stub_params(member))


# modules whose every member a rule moves to torch.npu one by one (ModuleMemberRule): their own
# names, so a member that torch does not have (`torch.cuda.synchronise`) is told from one the NPU lacks
MEMBER_MODULES = (
    "torch.cuda",
    "torch.cuda.amp",
    "torch.cuda.random",
    "torch.cuda.memory",
    "torch.cuda.streams",
    "torch.cuda.graphs",
)


def _members() -> dict[str, list[str]]:
    return {
        name: sorted(n for n in dir(importlib.import_module(name)) if not n.startswith("__"))
        for name in MEMBER_MODULES
    }


def derive() -> dict[str, Any]:
    """The document: the torch version and, per qualified name, positions and keywords."""
    import torch

    found: dict[str, dict[str, set]] = {}
    _from_signatures(found)
    _from_stubs(found)
    methods: dict[str, dict[str, set]] = {}
    _from_test_bases(methods)
    return {
        "source": "tools/derive_device_apis.py: inspect.signature and torch/_C/*.pyi of the pinned torch",
        "torch": torch.__version__.split("+")[0],
        "calls": _listed(found),
        "methods": _listed(methods),
        "members": _members(),
    }


def _listed(found: dict[str, dict[str, set]]) -> dict[str, dict[str, list]]:
    return {
        name: {"positions": sorted(entry["positions"]), "keywords": sorted(entry["keywords"])}
        for name, entry in sorted(found.items())
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file")
    args = parser.parse_args()
    text = json.dumps(derive(), indent=1, sort_keys=True) + "\n"
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT.relative_to(ROOT)}: {'up to date' if same else 'differs from this torch'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(json.loads(text)['calls'])} callables)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
