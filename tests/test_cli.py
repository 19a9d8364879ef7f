"""The command line, run as a user runs it: exit codes, outputs, and an input left untouched."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from ms_fmk_transplt.cli import app

runner = CliRunner()


def _run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def _snapshot(root: Path) -> dict[str, str]:
    """Every path below root with its content hash, mode, or link target."""
    seen = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            seen[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            seen[rel] = hashlib.sha256(path.read_bytes()).hexdigest() + oct(path.stat().st_mode)
        else:
            seen[rel] = "dir" + oct(path.stat().st_mode)
    return seen


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text(
        "import torch\n\nif torch.cuda.is_available():\n    model = Net().cuda()\n"
    )
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "util.py").write_text("import torch.cuda as tc\n\nn = tc.device_count()\n")
    (root / "run.sh").write_text("#!/bin/sh\npython train.py\n")
    (root / "run.sh").chmod(0o755)
    (root / "data.bin").write_bytes(bytes(range(256)))
    return root


def test_help_names_the_guide_options() -> None:
    result = _run("--help")
    assert result.exit_code == 0
    for option in ("--input", "--output", "--rule", "--force", "--quiet"):
        assert option in result.output
    assert _run("-h").exit_code == 0


def test_no_arguments_shows_help() -> None:
    assert "Usage" in _run().output


def test_converts_a_project(project: Path, tmp_path: Path) -> None:
    before = _snapshot(project)
    result = _run("-i", str(project), "-o", str(tmp_path / "out"), "-q")
    assert result.exit_code == 0, result.output
    final = tmp_path / "out" / "proj_msft"
    assert (final / "train.py").read_text() == (
        "import torch\nimport torch_npu\n\nif torch.npu.is_available():\n    model = Net().npu()\n"
    )
    assert (
        final / "pkg" / "util.py"
    ).read_text() == "import torch_npu\nimport torch.npu as tc\n\nn = tc.device_count()\n"
    assert (final / "data.bin").read_bytes() == bytes(range(256))
    assert os.access(final / "run.sh", os.X_OK)
    assert _snapshot(project) == before
    rows = list(csv.reader((final / "change_list.csv").open()))
    assert rows[0] == ["File", "Start Line", "End Line", "Operation Type", "Message", "Rule"]
    assert [
        "train.py",
        "3",
        "3",
        "MODIFY",
        "torch.cuda.is_available -> torch.npu.is_available",
        "TP101",
    ] in rows
    report = json.loads((final / "report.json").read_text())
    assert report["totals"]["files_converted"] == 2
    workbook = openpyxl.load_workbook(final / "unsupported_op.xlsx")
    assert workbook.sheetnames == ["Summary", "Unsupported", "Check on NPU", "Changes"]
    log = (final / "msFmkTranspltlog.txt").read_text()
    assert "train.py:4 [TP201] MODIFY .cuda(...) -> .npu(...) (heuristic)" in log
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")], (
        "staging folder left behind"
    )


def test_single_file_input(project: Path, tmp_path: Path) -> None:
    result = _run("-i", str(project / "train.py"), "-o", str(tmp_path / "out"), "-q")
    assert result.exit_code == 0
    assert (
        (tmp_path / "out" / "train_msft" / "train.py")
        .read_text()
        .startswith("import torch\nimport torch_npu\n")
    )


def test_existing_output_refused_then_forced(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _run("-i", str(project), "-o", str(out), "-q").exit_code == 0
    (out / "proj_msft" / "stale.txt").write_text("old")
    (out / "keep.txt").write_text("not ours")
    result = _run("-i", str(project), "-o", str(out), "-q")
    assert result.exit_code == 2
    assert "output folder already exists" in result.output and "--force" in result.output
    assert _run("-i", str(project), "-o", str(out), "-q", "--force").exit_code == 0
    assert not (out / "proj_msft" / "stale.txt").exists()
    assert (out / "keep.txt").read_text() == "not ours"


def test_output_inside_input_is_not_walked(project: Path) -> None:
    out = project / "converted"
    assert _run("-i", str(project), "-o", str(out), "-q").exit_code == 0
    assert _run("-i", str(project), "-o", str(out), "-q", "--force").exit_code == 0
    assert not (out / "proj_msft" / "converted").exists()


def test_an_earlier_output_inside_the_input_is_not_converted_again(project: Path) -> None:
    (project / "fft.py").write_text("import torch\ny = torch.fft.fftshift(torch.zeros(2))\n")  # an issue
    assert _run("-i", str(project), "-o", str(project), "-q", "--no-cache").exit_code == 0  # -i X -o X
    assert (project / "proj_msft" / "train.py").is_file()
    before = _snapshot(project / "proj_msft")
    result = _run("-i", str(project), "-o", str(project / "o2"), "-q", "--no-cache")
    assert result.exit_code == 0, result.output
    out = project / "o2" / "proj_msft"
    assert not (out / "proj_msft").exists() and (out / "train.py").is_file()
    assert "proj_msft/: output of an earlier ms_fmk_transplt run, not converted again" in " ".join(
        result.output.split()
    )
    log = (out / "msFmkTranspltlog.txt").read_text()
    assert "\n== not walked: output of an earlier ms_fmk_transplt run ==\nproj_msft/\n" in log
    assert _snapshot(project / "proj_msft") == before  # read by nobody, changed by nobody
    # analyse does not count its issues twice either
    issues = json.loads(_run("analyse", str(project), "-q", "--no-cache", "--no-xlsx", "--report-format",
                             "json").stdout)["issues"]  # fmt: skip
    assert [issue["file"] for issue in issues] == ["fft.py"]


@pytest.mark.parametrize(
    "folder, log, walked",
    [
        ("old_msft", "msFmkTranspltlog.txt", False),
        ("old_msft", "msFmkTranspltlog.msft.txt", False),  # the project had a file of the log's name
        ("old_msft_multi", "msFmkTranspltlog.txt", False),  # distributed's
        (".old_msft.partial-99999999", "", False),  # a killed run's staging folder
        ("tools_msft", "", True),  # a user's folder that merely ends so
        ("old_msft", "notes.txt", True),
        ("logs", "msFmkTranspltlog.txt", True),
    ],
)
def test_only_folders_this_tool_wrote_are_left_out(project: Path, tmp_path: Path, folder: str, log: str,
                                                   walked: bool) -> None:  # fmt: skip
    (project / "pkg" / folder).mkdir()
    (project / "pkg" / folder / "m.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    if log:
        (project / "pkg" / folder / log).write_text("log")
    result = _run("-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache")
    assert result.exit_code == 0, result.output
    copied = tmp_path / "out" / "proj_msft" / "pkg" / folder / "m.py"
    assert copied.exists() == walked
    assert ("not converted again" in result.output) != walked
    if walked:
        assert ".npu()" in copied.read_text()


def test_input_inside_output_folder_is_refused(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run("-i", str(project), "-o", str(out), "-q")
    result = _run("-i", str(out / "proj_msft"), "-o", str(tmp_path), "-q", "--force")
    assert result.exit_code == 0  # proj_msft -> proj_msft_msft: a different folder
    result = _run("-i", str(out / "proj_msft" / "pkg"), "-o", str(out / "proj_msft"), "-q")
    assert result.exit_code == 0


@pytest.mark.parametrize(
    "args,message",
    [
        (["-i", "nowhere"], "both -i/--input and -o/--output are required"),
        (["-i", "nowhere", "-o", "out"], "input not found: nowhere"),
        (
            ["-i", ".", "-o", "out", "-v", "9.9.9"],
            "unknown release '9.9.9'; shipped: 2.1.0, 2.6.0, 2.7.1, 2.8.0, 2.9.0, 2.10.0, 2.11.0, 2.12.0, 2.13.0",
        ),
    ],
)
def test_usage_errors(args, message, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _run(*args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_bad_rule_file_converts_nothing(project: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text('{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 0, "arg_new": "("}]}}')
    result = _run("-i", str(project), "-o", str(tmp_path / "out"), "-r", str(rules))
    assert result.exit_code == 2
    assert f"{rules}: /rules/ArgsModifyRule/0/arg_new:" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_user_rules_apply(project: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps({"rules": {"FuncNameModifyRule": [{"old_name": "Net", "new_name": "NpuNet"}]}})
    )
    assert _run("-i", str(project), "-o", str(tmp_path / "out"), "-r", str(rules), "-q").exit_code == 0
    assert "NpuNet().npu()" in (tmp_path / "out" / "proj_msft" / "train.py").read_text()


def test_user_bare_function_rule_renames_the_import(tmp_path: Path) -> None:
    """The porting guide's own form, `"old_name": "func"`, on a function imported by name."""
    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_text(
        "from lib import func\nfrom lib import func as f\n\ny = func(1)\ncallbacks = [func, f]\n"
    )
    (src / "own.py").write_text("def func(x):\n    return x\n\ny = func(1)\n")
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps({"rules": {"FuncNameModifyRule": [{"old_name": "func", "new_name": "new_func"}]}})
    )
    assert _run("-i", str(src), "-o", str(tmp_path / "out"), "-r", str(rules), "-q").exit_code == 0
    final = tmp_path / "out" / "proj_msft"
    assert (final / "train.py").read_text() == (
        "from lib import new_func\nfrom lib import new_func as f\n\ny = new_func(1)\ncallbacks = [new_func, f]\n"
    )
    assert (final / "own.py").read_text() == (src / "own.py").read_text()
    log = (final / "msFmkTranspltlog.txt").read_text()
    assert "func kept: this file defines its own func" in log


def test_done_when_tree_with_bad_files(tmp_path: Path) -> None:
    """The issue's acceptance run: Python 2, binary .py, syntax error and a symlink loop."""
    src = tmp_path / "tree"
    (src / "sub").mkdir(parents=True)
    (src / "good.py").write_text("import torch\nx = torch.cuda.device_count()\n")
    (src / "sub" / "legacy.py").write_text("import torch\nprint 'gpus', torch.cuda.device_count()\n")
    (src / "blob.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (src / "broken.py").write_text("def f(:\n    pass\n")
    os.symlink("b", src / "a")
    os.symlink("a", src / "b")
    os.symlink("..", src / "sub" / "up")  # a directory loop if it were followed
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            {
                "rules": {
                    "FuncNameModifyRule": [
                        {"old_name": "torch.cuda.device_count", "new_name": "torch.npu.device_count"}
                    ]
                }
            }
        )
    )
    before = _snapshot(src)
    result = _run("-i", str(src), "-o", str(tmp_path / "out"), "-r", str(rules), "-q")
    assert result.exit_code == 1
    final = tmp_path / "out" / "tree_msft"
    assert (final / "good.py").read_text() == "import torch\nimport torch_npu\nx = torch.npu.device_count()\n"
    assert (final / "sub" / "legacy.py").read_bytes() == (src / "sub" / "legacy.py").read_bytes()
    assert (final / "blob.py").read_bytes() == (src / "blob.py").read_bytes()
    assert os.readlink(final / "sub" / "up") == ".."
    log = (final / "msFmkTranspltlog.txt").read_text()
    for line in (
        "a: symlink loop",
        "b: symlink loop",
        "sub/legacy.py: syntax error at line 2: Missing parentheses in call to 'print'",
        "blob.py: contains a NUL byte at offset 8",
        "broken.py: syntax error at line 1: invalid syntax",
    ):
        assert line in log
    assert _snapshot(src) == before


def test_symlinks_out_of_the_tree_broken_or_looping_are_linked_and_said(tmp_path: Path) -> None:
    """`data -> /mnt/datasets` is a project's layout, not a failure: the copy links to the same place
    (absolute), nothing is read through it, the run says so and exits 0, the gate can pass."""
    src = tmp_path / "tree"
    src.mkdir()
    (tmp_path / "secret.py").write_text("import torch\ntorch.cuda.nvtx.range_push('x')\n")
    (tmp_path / "datasets").mkdir()
    os.symlink(tmp_path / "secret.py", src / "leak.py")
    os.symlink("../datasets", src / "data")  # relative, leaving the tree
    os.symlink("/mnt/nowhere", src / "gone")
    os.symlink("loop", src / "loop")
    (src / "ok.py").write_text("x = 2\n")
    result = _run("-i", str(src), "-o", str(tmp_path / "out"), "-q")
    assert result.exit_code == 0, result.output
    final = tmp_path / "out" / "tree_msft"
    assert os.readlink(final / "leak.py") == str(tmp_path / "secret.py")
    assert os.readlink(final / "data") == str(tmp_path / "datasets")
    assert (os.readlink(final / "gone"), os.readlink(final / "loop")) == ("/mnt/nowhere", "loop")
    assert result.stderr.splitlines() == [
        f"warning: data: symlink to ../datasets outside the input tree, linked to {tmp_path / 'datasets'} and not analysed",
        "warning: gone: broken symlink to /mnt/nowhere, linked as written",
        f"warning: leak.py: symlink to {tmp_path / 'secret.py'} outside the input tree, linked to {tmp_path / 'secret.py'} and not analysed",
        "warning: loop: symlink loop, linked as written",
    ]
    log = (final / "msFmkTranspltlog.txt").read_text()
    assert "== symlinks reproduced, not followed ==\ndata: symlink to ../datasets outside" in log
    # the gate sees nothing through the link: the file outside is not analysed
    gate = _run("analyse", str(src), "--no-xlsx", "-q", "--fail-on", "unsupported")
    assert gate.exit_code == 0, gate.output
    # the twin: a link inside the tree is reproduced relative, with nothing said
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.py").write_text("x = 1\n")
    os.symlink("a.py", tmp_path / "in" / "b.py")
    inside = _run("-i", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "-q")
    assert inside.exit_code == 0 and inside.stderr == ""
    assert os.readlink(tmp_path / "out" / "in_msft" / "b.py") == "a.py"


def test_strict_exit_code_for_unsupported(tmp_path: Path) -> None:
    src = tmp_path / "s"
    src.mkdir()
    (src / "m.py").write_text("import torch\ntorch.cuda.nvtx.range_push('x')\n")
    assert _run("-i", str(src), "-o", str(tmp_path / "o1"), "-q").exit_code == 0
    assert _run("-i", str(src), "-o", str(tmp_path / "o2"), "-q", "--strict").exit_code == 3


def test_rules_list() -> None:
    result = _run("rules", "list")
    assert result.exit_code == 0
    assert "TP101" in result.output and "ModuleMemberRule" in result.output


def test_rules_doc_into_a_missing_folder_makes_it(tmp_path: Path) -> None:
    target = tmp_path / "docs" / "new" / "rules.md"
    assert _run("rules", "doc", "-o", str(target)).exit_code == 0
    assert target.read_text().startswith("#")
    (tmp_path / "afile").write_text("x")
    result = _run("rules", "doc", "-o", str(tmp_path / "afile" / "rules.md"))
    assert result.exit_code == 2 and "cannot write" in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_console_scripts_and_module(tmp_path: Path, project: Path) -> None:
    bindir = Path(sys.executable).parent
    for command in (
        [str(bindir / "ms_fmk_transplt")],
        [str(bindir / "ms-fmk-transplt")],
        [sys.executable, "-m", "ms_fmk_transplt"],
    ):
        done = subprocess.run([*command, "--help"], capture_output=True, text=True)
        assert done.returncode == 0 and "--input" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-i", str(project), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0
    assert "converted" in done.stderr and done.stdout == ""
    quiet = subprocess.run(
        [
            sys.executable,
            "-m",
            "ms_fmk_transplt",
            "-i",
            str(project),
            "-o",
            str(tmp_path / "o"),
            "--force",
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""


def test_opt_in_fused_optimizers(tmp_path: Path) -> None:
    src = tmp_path / "s"
    src.mkdir()
    (src / "m.py").write_text("from apex.optimizers import FusedSGD\nopt = FusedSGD(params, lr=0.1)\n")
    assert _run("-i", str(src), "-o", str(tmp_path / "plain"), "-q").exit_code == 0
    assert (tmp_path / "plain" / "s_msft" / "m.py").read_text() == (src / "m.py").read_text()
    assert (
        _run("-i", str(src), "-o", str(tmp_path / "opt"), "-q", "--opt-in", "fused-optimizers").exit_code == 0
    )
    assert (tmp_path / "opt" / "s_msft" / "m.py").read_text() == (
        "from torch_npu.optim import NpuFusedSGD\nopt = NpuFusedSGD(params, lr=0.1)\n"
    )
    result = _run("-i", str(src), "-o", str(tmp_path / "bad"), "--opt-in", "everything")
    assert (
        result.exit_code == 2
        and "unknown --opt-in everything; valid: affinity, fused-optimizers" in result.output
    )


def test_release_changes_the_rules(tmp_path: Path) -> None:
    """torch.npu of torch_npu 6.0.0 (PyTorch 2.1.0) lacks graph capture; 26.1.0 has it."""
    src = tmp_path / "s"
    src.mkdir()
    (src / "m.py").write_text("import torch\ntorch.cuda.graph(g)\n")
    assert _run("-i", str(src), "-o", str(tmp_path / "new"), "-q").exit_code == 0
    assert "torch.npu.graph(g)" in (tmp_path / "new" / "s_msft" / "m.py").read_text()
    assert _run("-i", str(src), "-o", str(tmp_path / "old"), "-q", "-v", "2.1.0").exit_code == 0
    assert "torch.cuda.graph(g)" in (tmp_path / "old" / "s_msft" / "m.py").read_text()
    assert (
        "torch.cuda.graph has no NPU counterpart"
        in (tmp_path / "old" / "s_msft" / "msFmkTranspltlog.txt").read_text()
    )


def test_killed_run_leftovers_are_removed(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    dead = out / ".proj_msft.partial-999999999"
    dead.mkdir(parents=True)
    (dead / "half.py").write_text("x = ")
    assert _run("-i", str(project), "-o", str(out), "-q").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["proj_msft"]


def test_launch_scripts_and_configs_are_reported_not_changed(tmp_path: Path) -> None:
    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_text("import torch\n")
    run_sh = (
        "#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0,1\nexport NCCL_SOCKET_IFNAME=eth0\n"
        'echo "training on cuda"\ntorchrun train.py --device cuda\n'
    )
    (src / "run.sh").write_text(run_sh)
    (src / "config.yaml").write_text("device: cuda\nname: cuda-run\n")
    assert _run("-i", str(src), "-o", str(tmp_path / "out"), "-q").exit_code == 0
    final = tmp_path / "out" / "proj_msft"
    assert (final / "run.sh").read_text() == run_sh
    rows = list(csv.reader((final / "change_list.csv").open()))
    reported = {(r[0], r[1], r[5]) for r in rows[1:]}
    assert reported == {
        ("run.sh", "2", "TP801"),
        ("run.sh", "3", "TP802"),
        ("run.sh", "5", "TP803"),
        ("config.yaml", "1", "TP803"),
    }
    sheet = openpyxl.load_workbook(final / "unsupported_op.xlsx")["Unsupported"]
    assert [c.value for c in sheet["A"]][1:] == ["config.yaml", "run.sh", "run.sh", "run.sh"]


def test_a_run_big_enough_for_the_progress_bar_finishes(tmp_path: Path) -> None:
    # the bar starts at PROGRESS_MIN_FILES files; stopping it enters the console as a context
    # manager, which once met a lazy stand-in for the console instead of the console itself
    from ms_fmk_transplt.cli import PROGRESS_MIN_FILES

    root = tmp_path / "many"
    root.mkdir()
    for number in range(PROGRESS_MIN_FILES + 5):
        (root / f"m{number}.py").write_text("import torch\n\nx = torch.ones(2).cuda()\n")
    for command in ((), ("analyse",)):
        args = ["-i", str(root), "-o", str(tmp_path / "-".join(command)), *command]
        done = subprocess.run(
            [sys.executable, "-m", "ms_fmk_transplt", *args], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr


def test_analyse_takes_the_options_given_before_it(project: Path, tmp_path: Path) -> None:
    # as `distributed` is called: ms_fmk_transplt -i SRC -o OUT analyse
    out = tmp_path / "reports"
    done = _run("-i", str(project), "-o", str(out), "-v", "2.1.0", "analyse", "-q")
    assert done.exit_code == 0, done.output
    assert json.loads((out / "report.json").read_text())["release"] == "2.1.0"
    assert (out / "unsupported_op.xlsx").exists()
    # the command's own option wins over the one before it
    own = tmp_path / "own"
    assert _run("-i", str(project), "-o", str(out), "analyse", "-o", str(own), "-q").exit_code == 0
    assert (own / "report.json").exists()
    # one that analyse has no use for is refused, not dropped
    refused = _run("-i", str(project), "--force", "analyse", "-q")
    assert refused.exit_code == 2 and "--force" in refused.output and "analyse" in refused.output


def test_an_input_without_python_files_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("import torch\n")
    for args in (["-i", "empty", "-o", "out", "-q", "--force"], ["analyse", "empty", "--no-xlsx", "-q"]):
        result = _run(*args)
        assert result.exit_code == 0 and result.stderr == "warning: no Python files found in empty\n", args
    # analyse takes the files a hook passes (a script with a python shebang and no suffix among them)
    result = _run("analyse", "notes.txt", "--no-xlsx", "-q")
    assert result.exit_code == 0 and result.stderr == "warning: no Python files found in notes.txt\n"
    # a conversion of one such file is a mistake: refused, nothing written
    result = _run("-i", "notes.txt", "-o", "out", "-q", "--force")
    assert result.exit_code == 2 and not (tmp_path / "out" / "notes_msft").exists()
    assert result.stderr == (
        "error: input notes.txt is not a Python file or notebook (.py, .ipynb): give one, or a folder\n"
    )
    excluded = _run("analyse", "tests", "--no-xlsx", "-q", "--exclude", "*.py")
    assert excluded.exit_code == 0
    assert excluded.stderr == "warning: no Python files to analyse in tests: every one matches --exclude\n"
    # the twin: a folder with a Python file says nothing of the kind
    assert _run("analyse", "tests", "--no-xlsx", "-q").stderr == ""


def test_rules_doc_to_dash_is_stdout(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    plain = _run("rules", "doc")
    dashed = _run("rules", "doc", "-o", "-")
    assert dashed.exit_code == 0 and plain.exit_code == 0
    assert dashed.stdout == plain.stdout and dashed.stdout.startswith("#")
    assert list(tmp_path.iterdir()) == []  # no file named -


def _exit_code_tables(readme: str) -> list[list[str]]:
    """The first column of every README table of exit codes (headed `code` or `exit code`)."""
    tables, rows = [], None
    for line in readme.splitlines():
        cells = (
            [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else None
        )
        if cells and cells[0] in ("code", "exit code"):
            rows = []
            tables.append(rows)
        elif cells is None:
            rows = None
        elif rows is not None and not set(cells[0]) <= set("-: "):
            rows.append(cells[0])
    return tables


def test_every_exit_code_table_lists_the_signal_codes() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    tables = _exit_code_tables(readme)
    assert len(tables) >= 2  # the converter's and verify's
    for codes in tables:
        assert "130, 143" in codes, codes
    assert "130 / 143 interrupted" in " ".join(_run("verify", "--help").output.split())


@pytest.mark.parametrize("signal_exc, code", [("KeyboardInterrupt", 130), ("Terminated", 143)])
def test_verify_interrupted_exits_with_the_signals_code(
    tmp_path: Path, monkeypatch, signal_exc: str, code: int
) -> None:
    import ms_fmk_transplt.verify as verify_package
    from ms_fmk_transplt.interrupts import Terminated

    def interrupted(request, say):
        raise Terminated if signal_exc == "Terminated" else KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("")
    monkeypatch.setattr(verify_package, "verify", interrupted)
    result = _run("verify", "--", "python", "t.py")
    assert result.exit_code == code
    assert result.stderr == "interrupted\n"


def test_a_failed_file_does_not_hide_the_gate_or_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Python 2 file fails; the gate's and --strict's findings in the other files are still said
    (exit 1, the failed files' code, first in the table), and without it the gate's code is 4."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("import torch\nimport cupy\n")
    (tmp_path / "src" / "py2.py").write_text('print "hello"\n')
    gated = _run("analyse", "src", "--no-xlsx", "-q", "--fail-on", "unsupported")
    assert gated.exit_code == 1
    assert gated.stderr.splitlines()[0].startswith("failed: py2.py: syntax error at line 1")
    assert "a.py:2:1: unsupported [TP531] cupy has no NPU counterpart" in gated.stderr
    assert "gate: 1 issue(s) at or above --fail-on unsupported" in gated.stderr
    strict = _run("-i", "src", "-o", "out", "-q", "--strict")
    assert (
        strict.exit_code == 1
        and "strict: 1 use(s) of APIs Ascend does not support in 1 file(s)" in strict.stderr
    )
    (tmp_path / "src" / "py2.py").unlink()
    assert _run("analyse", "src", "--no-xlsx", "-q", "--fail-on", "unsupported").exit_code == 4
