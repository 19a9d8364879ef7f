"""Runtime findings (runtime_shim/diagnostics/findings.py, shapes.py): CUDA a dependency still
touches and operators whose shapes change per step, each at the dependency's and the script's line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch
from conftest import run_python

from runtime_shim.diagnostics.findings import TOP_KEY, Sites, merge_rows, short_path
from runtime_shim.diagnostics.shapes import ShapeRecorder, signature, signature_text

FAKELIB = {
    "fakelib/__init__.py": "",
    "fakelib/amp_utils.py": """\
        import torch


        def make_scaler():
            return torch.cuda.amp.GradScaler()


        def make_scaler_new_style():
            return torch.amp.GradScaler("cuda")


        def pick_device():
            return "cuda" if torch.cuda.is_available() else "cpu"


        def try_cuda_tensor():
            try:
                return torch.zeros(2, device="cuda")
            except (RuntimeError, AssertionError):
                return None
        """,
}

CUDA_SCRIPT = """\
    import torch
    import torch_npu  # noqa: F401
    from fakelib import amp_utils

    model = torch.nn.Linear(4, 2).to("npu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = amp_utils.make_scaler()
    for _ in range(3):
        amp_utils.make_scaler_new_style()
    device = amp_utils.pick_device()
    amp_utils.try_cuda_tensor()
    with torch.autocast("cuda"):
        y = model(torch.ones(3, 4, device="npu"))
    y.sum().backward()
    opt.step()
    """

NCCL_SCRIPT = """\
    import os

    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29571", RANK="0", WORLD_SIZE="1")
    try:
        dist.init_process_group("nccl")
    except Exception as exc:
        print("init failed:", type(exc).__name__)
    else:
        dist.destroy_process_group()
    """

TRAIN_SCRIPT = """\
    import sys

    import torch

    torch.manual_seed(0)
    emb = torch.nn.Embedding(50, 8).to("npu")
    head = torch.nn.Linear(8, 50).to("npu")
    opt = torch.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.1)
    varying = sys.argv[1] == "varying"
    for step in range(4):
        length = 5 + step if varying else 6
        tokens = torch.randint(0, 50, (2, length)).to("npu")
        hidden = emb(tokens)
        logits = head(hidden)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 50), tokens.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    """


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _run(tmp_path: Path, script: str, *args: str) -> list[dict]:
    project, deps = tmp_path / "project", tmp_path / "deps"
    _write(deps, FAKELIB)
    _write(project, {"main.py": script})
    report = tmp_path / "findings.json"
    from conftest import ROOT

    done = run_python(
        ["-m", "runtime_shim", str(project / "main.py"), *args],
        env_extra={"RUNTIME_SHIM_FINDINGS_REPORT": str(report), "PYTHONPATH": f"{ROOT}:{deps}"},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(report.read_text(encoding="utf-8"))[TOP_KEY]["findings"]


def _line(text: str, needle: str) -> int:
    lines = textwrap.dedent(text).splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


@pytest.mark.slow
def test_a_dependency_touching_cuda_is_named_with_the_scripts_line(tmp_path: Path) -> None:
    rows = _run(tmp_path, CUDA_SCRIPT)
    lib = textwrap.dedent(FAKELIB["fakelib/amp_utils.py"])
    main = str(tmp_path / "project" / "main.py")

    def found(kind: str, lib_needle: str | None, main_needle: str) -> dict:
        dep = f"deps/fakelib/amp_utils.py:{_line(lib, lib_needle)}" if lib_needle else None
        user = f"{main}:{_line(CUDA_SCRIPT, main_needle)}"
        matches = [
            r for r in rows if r["kind"] == kind and r["dependency_site"] == dep and r["user_site"] == user
        ]
        assert len(matches) == 1, (kind, dep, user, rows)
        return matches[0]

    scaler = found("amp_disabled", "torch.cuda.amp.GradScaler()", "make_scaler()")
    assert "GradScaler" in scaler["what"] and scaler["count"] == 1
    assert found("amp_disabled", 'GradScaler("cuda")', "make_scaler_new_style()")["count"] == 3
    assert (
        found("cuda_call", "torch.cuda.is_available()", "pick_device()")["what"] == "torch.cuda.is_available"
    )
    assert found("cuda_device", 'device="cuda"', "try_cuda_tensor()")["count"] == 1
    assert "autocast" in found("amp_disabled", None, 'torch.autocast("cuda")')["what"]
    # torch's own calls into torch.cuda (the GradScaler asking is_available) are not findings
    assert not [r for r in rows if r["kind"] == "dynamic_shapes"]
    assert len(rows) == 5, rows


@pytest.mark.slow
def test_a_nccl_request_is_a_finding(tmp_path: Path) -> None:
    rows = _run(tmp_path, NCCL_SCRIPT)
    main = str(tmp_path / "project" / "main.py")
    assert [(r["kind"], r["what"], r["dependency_site"], r["user_site"]) for r in rows] == [
        ("nccl", "init_process_group(backend='nccl')", None, f"{main}:{_line(NCCL_SCRIPT, 'nccl')}")
    ]


@pytest.mark.slow
@pytest.mark.parametrize("dispatch", ["1", "0"])
def test_shapes_that_change_per_step_are_found_and_fixed_ones_are_not(
    tmp_path: Path, dispatch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNTIME_SHIM_NATIVE_DISPATCH", dispatch)  # both dispatch paths (run_python keeps it)
    assert _run(tmp_path, TRAIN_SCRIPT, "fixed") == []
    rows = _run(tmp_path, TRAIN_SCRIPT, "varying")
    main = str(tmp_path / "project" / "main.py")
    sites = {(r["what"], r["user_site"].rpartition(":")[2]) for r in rows}
    assert {r["kind"] for r in rows} == {"dynamic_shapes"}
    assert all(r["user_site"].startswith(main + ":") for r in rows)
    # the head's matmul at its line, with the shapes of each step
    head = str(_line(TRAIN_SCRIPT, "logits = head(hidden)"))
    assert ("aten::addmm", head) in sites or ("aten::mm", head) in sites, sites
    mm = next(
        r for r in rows if r["user_site"].endswith(":" + head) and r["what"] in ("aten::addmm", "aten::mm")
    )
    assert mm["distinct_shapes"] == 4 and len(mm["shapes"]) == 4
    assert any("[10, 8]" in shape for shape in mm["shapes"]) and any(
        "[16, 8]" in shape for shape in mm["shapes"]
    )
    assert ("aten::embedding", str(_line(TRAIN_SCRIPT, "hidden = emb(tokens)"))) in sites


def test_recorder_compares_each_steps_shapes_with_the_first(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("x = 1\n")
    sites = Sites(str(tmp_path))
    recorder = ShapeRecorder(sites)
    recorder.watching = True  # start() would also enter the mode for good and hook the optimizers
    npu = torch.device("npu", 0)
    code = compile("a @ b\n(a + 1) @ b\n", str(script), "exec")
    for rows in (4, 4, 4):
        with recorder:
            exec(code, {"a": torch.ones(rows, 3, device=npu), "b": torch.ones(3, 2, device=npu)})
        recorder.close_step()
    assert recorder.rows() == []
    with recorder:
        exec(code, {"a": torch.ones(5, 3, device=npu), "b": torch.ones(3, 2, device=npu)})
    recorder.close_step()
    rows = recorder.rows()
    assert {(r["what"], r["user_site"]) for r in rows} == {
        ("aten::mm", f"{script}:1"),
        ("aten::mm", f"{script}:2"),
        ("aten::add.Tensor", f"{script}:2"),
    }
    assert next(r for r in rows if r["what"] == "aten::mm")["shapes"] == [
        "[4, 3] x [3, 2]",
        "[5, 3] x [3, 2]",
    ]


def test_signatures_see_only_npu_tensors() -> None:
    npu = torch.ones(2, 3, device="npu")
    assert signature((torch.ones(4), 1), {}) is None
    shapes = signature(([npu, npu], npu), {"other": torch.ones(1)})
    assert shapes == (((2, 3), (2, 3)), (2, 3))
    assert signature_text(shapes) == "([2, 3], [2, 3]) x [2, 3]"


def test_rows_of_processes_merge() -> None:
    row = {
        "kind": "cuda_call",
        "what": "torch.cuda.is_available",
        "dependency_path": "/l.py:3",
        "user_site": "/m.py:1",
    }
    shaped = {"kind": "dynamic_shapes", "what": "aten::mm", "dependency_path": None, "user_site": "/m.py:4"}
    merged = merge_rows(
        [{**row, "count": 2}, {**shaped, "count": 3, "shapes": ["[1]", "[2]"], "distinct_shapes": 2}],
        [{**row, "count": 1}, {**shaped, "count": 3, "shapes": ["[2]", "[3]"], "distinct_shapes": 2}],
    )
    assert [(r["kind"], r["count"], r["shapes"]) for r in merged] == [
        ("cuda_call", 3, []),
        ("dynamic_shapes", 6, ["[1]", "[2]", "[3]"]),
    ]


def test_short_path_names_the_path_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    assert (
        short_path(f"{tmp_path}/site-packages/timm/utils/cuda.py:40") == "site-packages/timm/utils/cuda.py:40"
    )
    assert short_path(None) is None


def test_recorder_stops_watching_after_its_steps(tmp_path: Path) -> None:
    recorder = ShapeRecorder(Sites(str(tmp_path)), steps=2)
    recorder.watching = True  # as start() leaves it, without entering the mode here
    script = str(tmp_path / "s.py")
    for step in range(4):
        recorder.current[(torch.ops.aten.mm.default, script, 1)] = {((step, 2),)}
        recorder.close_step()
    assert not recorder.watching
    # the first two steps were compared; what came after the limit is not
    assert [r["shapes"] for r in recorder.rows()] == [["[0, 2]", "[1, 2]"]]


def test_the_default_project_is_the_scripts_folder_once_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runtime_shim

    (tmp_path / "lib").mkdir()
    monkeypatch.setattr("sys.argv", [str(Path(runtime_shim.__file__).parent / "__main__.py"), "train.py"])
    sites = Sites(None)
    assert sites.kind(str(tmp_path / "train.py")) == 2  # not yet known: not cached either
    monkeypatch.setattr("sys.argv", [str(tmp_path / "train.py")])
    assert sites.kind(str(tmp_path / "train.py")) == 1
    assert sites.kind(str(tmp_path / "lib" / "x.py")) == 1
    assert sites.kind(torch.__file__) == 0
    assert sites.kind(str(tmp_path.parent / "elsewhere.py")) == 2


def test_distinct_signatures_counted_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runtime_shim.diagnostics import shapes

    monkeypatch.setattr(shapes, "SIGNATURES_COUNTED", 3)
    recorder = ShapeRecorder(Sites(str(tmp_path)))
    recorder.watching = True
    for step in range(6):
        recorder.current[(torch.ops.aten.mm.default, str(tmp_path / "s.py"), 1)] = {((step,),)}
        recorder.close_step()
    (row,) = recorder.rows()
    assert row["distinct_shapes"] == 3 and row["count"] == 6


SPAWNING_SCRIPT = """\
    import sys

    import torch.multiprocessing as mp
    import torch_npu  # noqa: F401
    from fakelib import amp_utils


    def work(rank):
        amp_utils.pick_device()


    if __name__ == "__main__":
        if sys.argv[1] == "spawn":
            mp.spawn(work, nprocs=2)
        else:
            amp_utils.make_scaler()
    """


@pytest.mark.slow
def test_processes_of_one_run_merge_their_findings_and_a_new_run_replaces_them(tmp_path: Path) -> None:
    from conftest import ROOT

    project, deps = tmp_path / "project", tmp_path / "deps"
    _write(deps, FAKELIB)
    _write(project, {"main.py": SPAWNING_SCRIPT})
    report = tmp_path / "findings.json"
    env = {
        "RUNTIME_SHIM_FINDINGS_REPORT": str(report),
        "RUNTIME_SHIM_FINDINGS_PROJECT": str(project),
        "PYTHONPATH": f"{ROOT}:{deps}",
    }
    done = run_python(["-m", "runtime_shim", str(project / "main.py"), "spawn"], env_extra=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(report.read_text(encoding="utf-8"))[TOP_KEY]
    assert len(document["pids"]) == 3
    (row,) = document["findings"]
    work_line = _line(SPAWNING_SCRIPT, "amp_utils.pick_device()")
    assert (row["kind"], row["count"], row["user_site"]) == (
        "cuda_call",
        2,
        f"{project / 'main.py'}:{work_line}",
    )
    done = run_python(["-m", "runtime_shim", str(project / "main.py"), "single"], env_extra=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [r["kind"] for r in json.loads(report.read_text(encoding="utf-8"))[TOP_KEY]["findings"]] == [
        "amp_disabled"
    ]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def test_libraries_are_never_the_standard_library_or_the_project(tmp_path: Path) -> None:
    import sysconfig

    sites = Sites(str(tmp_path))
    stdlib = sysconfig.get_paths()["stdlib"]
    assert sites.kind(f"{stdlib}/contextlib.py") == 0
    # pyenv and conda without a venv install libraries under the standard library's folder
    assert sites.kind(f"{stdlib}/site-packages/timm/utils/cuda.py") == 2
    assert sites.kind(str(tmp_path / ".venv" / "lib" / "site-packages" / "lib" / "x.py")) == 2
    assert sites.kind(str(tmp_path / "train.py")) == 1
    # a decorator library's wrapper passes the call on: the library that called it is the dependency
    assert sites.kind(f"{stdlib}/site-packages/typing_extensions.py") == 0
