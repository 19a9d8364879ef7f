"""A non-editable wheel install carries the built-in rules and the Ascend data."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds and installs a wheel: the --runslow tier

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_install_loads_builtin_rules(tmp_path: Path) -> None:
    # Build from a copy of the tracked tree: setuptools' in-tree build/ folder keeps files that
    # were since deleted or renamed, and would put them in the wheel.
    source = tmp_path / "source"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    # `build` shows the backend's own output, where setuptools prints its warnings (undeclared
    # data packages, deprecated metadata): a clean install prints none
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", str(wheels), str(source)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    warnings = [
        line
        for line in (built.stdout + built.stderr).splitlines()
        if "warning" in line.lower() and "byte-compiling is disabled" not in line  # PYTHONDONTWRITEBYTECODE
    ]
    assert warnings == [], "the wheel build warns:\n" + "\n".join(warnings)
    wheel = next(wheels.glob("ms_fmk_transplt-*.whl"))
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    code = (
        "import ms_fmk_transplt\n"
        "from ms_fmk_transplt.ruleset import load_rules\n"
        "from ms_fmk_transplt import data\n"
        "rules = load_rules()\n"
        "from ms_fmk_transplt.distributed.policy import policy\n"
        "assert policy().messages['DS001']\n"
        "print(ms_fmk_transplt.__file__)\n"
        "print(len(rules), sorted({r.id for r in rules})[0], data.default_release())\n"
    )
    # -S: no site processing, so the editable install's import hook cannot stand in for the wheel
    site_packages = next(p for p in sys.path if p.endswith("site-packages"))
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{target}:{site_packages}", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    where, summary = done.stdout.splitlines()
    assert where.startswith(str(target)), "the wheel, not the source tree, was imported"
    count, first, release = summary.split()
    assert int(count) >= 5 and first == "TP001" and release == "2.13.0"
    shim = target / "runtime_shim"
    for part in (
        "data/releases.json",
        "data/npu_ops_torch2.12.0_torchnpu26.1.0.txt",
        "_boot/sitecustomize.py",
        "torch_npu_stub/__init__.py",
        "torch_npu_stub/profiler.py",
        "torch_npu_stub/optim.py",
        "torch_npu_stub/contrib/transfer_to_npu.py",
        "patches/transfer_to_npu/transfer.py",
        "apex_stub/__init__.py",
        "apex_stub/amp.py",
        "apex_stub/optimizers.py",
        "data/npu_dtypes_torch2.12.0.txt",
        "patches/torch_npu_api.py",
        "backend/registration.py",
        "npu/__init__.py",
        "autocast/amp.py",
        "npu/utils.py",
        "backend/native.py",
        "csrc/npu_hooks.cpp",
        "torch_npu_stub/fusion_attention.py",
        "runtime/storage.py",
        "runtime/state.py",
        "autocast/policy.py",
        "diagnostics/step_record.py",
    ):
        assert (shim / part).is_file(), f"the wheel lacks runtime_shim/{part}"
    # one data file per release, and the shared mappings
    from ms_fmk_transplt import data

    package = target / "ms_fmk_transplt" / "data"
    for name in (
        "releases.json",
        "ascend_mappings.json",
        *(f"ascend_release_{v}.json" for v in data.releases()),
    ):
        assert (package / name).is_file(), f"the wheel lacks ms_fmk_transplt/data/{name}"
    # every C++ file the native part builds from (a missing header fails the build at first use)
    from runtime_shim.backend import native

    for source in native._SOURCES + native._HEADERS:
        assert (shim / "csrc" / source.name).is_file(), f"the wheel lacks runtime_shim/csrc/{source.name}"
