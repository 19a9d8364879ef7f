"""The benchmark scripts' helpers: corpus preparation without the network, the phase profile, the
report check, the literal-role bench's judging and its labelled data set."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_scale  # noqa: E402  (bench/ holds scripts, not a package)
import check_reports  # noqa: E402
import device_dispatch  # noqa: E402
import literal_roles  # noqa: E402
import mine_device_dispatch  # noqa: E402
import profile_phases  # noqa: E402

from ms_fmk_transplt.records import FileResult, Finding, Operation, Status  # noqa: E402
from ms_fmk_transplt.run import REPORTS  # noqa: E402


def test_corpus_names_and_pins() -> None:
    assert sorted(bench_scale.PREPARE) == ["generated", "timm", "transformers"]
    assert bench_scale.PINNED["timm"][:2] == ("timm", "0.6.12")
    assert bench_scale.PINNED["transformers"] == ("transformers", "4.46.3", "src/transformers")
    assert bench_scale.corpus_label("transformers", 3) == "transformers-4.46.3"
    assert bench_scale.corpus_label("generated", 3) == "generated x3"


def test_generated_tree_is_copies_of_both_pinned_packages(tmp_path: Path) -> None:
    for folder, name in (("timm-0.6.12", "a.py"), ("transformers-4.46.3", "b.py")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text("import torch\n")
        (tmp_path / folder / ".complete").write_text("ok\n")  # prepared: no download
    tree = bench_scale.prepare_generated(tmp_path, 2)
    found = sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file())
    assert found == [
        ".complete",
        "copy_000/timm-0.6.12/a.py",
        "copy_000/transformers-4.46.3/b.py",
        "copy_001/timm-0.6.12/a.py",
        "copy_001/transformers-4.46.3/b.py",
    ]
    assert bench_scale.count(tree) == (4, 4)


def test_peak_memory_walks_the_process_tree_as_a_scan_of_every_process_does(tmp_path) -> None:
    # a parent with a child and a grandchild, all asleep: both walks find the same three processes.
    # Each touches a file once it is about to sleep, so that no interpreter is still loading (and
    # growing) between the two reads.
    ready = [tmp_path / name for name in ("parent", "child", "grandchild")]
    sleep = "import pathlib, time; pathlib.Path({!r}).touch(); time.sleep(30)"
    grandchild = sleep.format(str(ready[2]))
    child = (
        f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {grandchild!r}]); "
        + sleep.format(str(ready[1]))
    )
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {child!r}]); "
            + sleep.format(str(ready[0])),
        ]
    )
    try:
        for _ in range(400):
            if all(path.exists() for path in ready):
                break
            time.sleep(0.05)
        assert len(_descendants(parent.pid)) == 2
        walked, scanned = bench_scale._tree_rss(parent.pid), bench_scale._scanned_tree_rss(parent.pid)
        assert walked > 0 and abs(walked - scanned) < 2**20  # RSS moves a little between the two reads
    finally:
        for pid in [*_descendants(parent.pid), parent.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        parent.wait()


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        children = bench_scale._children(todo.pop()) or []
        found += children
        todo += children
    return found


def test_report_check_passes_a_real_run_and_names_what_disagrees(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "ms_fmk_transplt",
        "-i",
        str(ROOT / "sample_models"),
        "-o",
        str(tmp_path),
        "-q",
    ]
    subprocess.run(command, check=True, capture_output=True)
    folder = tmp_path / "sample_models_msft"
    problems, summary = check_reports.check(folder)
    assert problems == [] and "findings" in summary and "Summary" in summary
    rows = (folder / "change_list.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "change_list.csv").write_text("".join(rows[:-1]), encoding="utf-8")  # a row lost
    log = folder / "msFmkTranspltlog.txt"
    log.write_text(
        log.read_text(encoding="utf-8").replace("findings_modify: ", "findings_modify: 9"), encoding="utf-8"
    )
    problems, _ = check_reports.check(folder)
    assert any(p.startswith("change_list.csv:") for p in problems)
    assert any(p.startswith("msFmkTranspltlog.txt: findings_modify") for p in problems)


def test_phase_profile_of_sample_models_mirrors_the_engine() -> None:
    result = profile_phases.profile(ROOT / "sample_models", "2.1.0", check=True)  # check: same results
    assert list(result.conversion) == list(profile_phases.PHASES)
    assert list(result.reports) == list(REPORTS)
    assert result.files == sum(result.statuses.values()) > 0
    lines = profile_phases.table(result, None).splitlines()
    assert lines[:2] == ["| part | phase | CPU s | share |", "|---|---|---:|---:|"]
    phases = [line.split(" | ")[1] for line in lines[2:] if line.startswith("| convert |")]
    assert phases == [*profile_phases.PHASES, "total"]


# --- bench/literal_roles.py: the labelled set of real device-looking literals ---------------------

_SOURCE = (
    "import torch\n"
    "x = torch.zeros(2, device='cuda')\n"
    "print('runs on cuda')\n"
    "DEFAULT = 'cuda'\n"
    "y = f'cuda:{rank}'  ;  z = 'nccl'\n"
)


def _label(
    line: int, column: int, text: str, role: str, expected: str, path: str = "a.py"
) -> dict[str, object]:
    return {
        "repo": "someone/proj",
        "commit": "0" * 40,
        "path": path,
        "line": line,
        "column": column,
        "role": role,
        "expected": expected,
        "digest": literal_roles.digest(text),
        "why": "",
    }


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_literals_are_string_tokens_with_one_based_columns() -> None:
    found = literal_roles.literals(_SOURCE + "w = 'CU' 'DA_VISIBLE'\nv = 'other'\n")
    assert [(x.line, x.column, x.text) for x in found] == [
        (2, 27, "'cuda'"),
        (3, 7, "'runs on cuda'"),
        (4, 11, "'cuda'"),
        (5, 5, "f'cuda:{rank}'"),
        (5, 28, "'nccl'"),
    ]
    # an implicitly concatenated piece is its own token: each is judged alone
    assert [x.column for x in literal_roles.literals("s = 'cu' 'da'\n", needles=("cu", "da"))] == [5, 10]


def _fake_result(source: str) -> FileResult:
    """What a converter might do: rewrite the device and the f-string, add an import, report DEFAULT."""
    out = source.replace("device='cuda'", "device='npu'").replace("f'cuda:{rank}'", "f'npu:{rank}'")
    out = out.replace("import torch\n", "import torch\nimport torch_npu\n")
    findings = (
        Finding("TP103", Operation.MODIFY, 2, 2, "'cuda' -> 'npu'", column=27),
        Finding("TP103", Operation.UNSUPPORTED, 4, 4, "kept", heuristic=True, column=11),
        Finding("TP999", Operation.CHECK, 5, 5, "elsewhere on the line", column=1),
    )
    return FileResult("a.py", Status.CONVERTED, findings, output=out.encode())


def test_judge_tells_converted_reported_and_silent_apart() -> None:
    labels = [
        literal_roles.Label(**_label(2, 27, "'cuda'", "device", "'npu'")),  # type: ignore[arg-type]
        literal_roles.Label(**_label(3, 7, "'runs on cuda'", "prose", "keep")),  # type: ignore[arg-type]
        literal_roles.Label(**_label(4, 11, "'cuda'", "device", "'npu'")),  # type: ignore[arg-type]
        literal_roles.Label(**_label(5, 5, "f'cuda:{rank}'", "device", "f'npu:{rank}'")),  # type: ignore[arg-type]
        literal_roles.Label(**_label(5, 28, "'nccl'", "backend", "'hccl'")),  # type: ignore[arg-type]
        literal_roles.Label(**_label(4, 11, "'other'", "device", "'npu'")),  # type: ignore[arg-type]
    ]
    outcomes = literal_roles.judge(_SOURCE.encode(), _fake_result(_SOURCE), labels)
    assert [(o.kind, o.new_text) for o in outcomes] == [
        ("converted", "'npu'"),
        ("silent", ""),
        ("reported", ""),
        ("converted", "f'npu:{rank}'"),
        ("silent", ""),
        ("missing", ""),  # the digest does not match the literal at that position
    ]
    assert outcomes[2].heuristic and "TP999 col 1" in outcomes[4].detail
    failed = FileResult("a.py", Status.FAILED, reason="syntax error")
    assert [o.kind for o in literal_roles.judge(_SOURCE.encode(), failed, labels[:1])] == ["failed"]


def _mirror(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    """A git repository laid out as `fetch` would leave it: MIRRORS/someone+proj/repo (a git dir)."""
    work = tmp_path / "work"
    work.mkdir()
    for name, text in files.items():
        (work / name).write_text(text)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    mirrors = tmp_path / "mirrors"
    (mirrors / "someone+proj").mkdir(parents=True)
    (work / ".git").rename(mirrors / "someone+proj" / "repo")
    return mirrors, commit


def test_measure_reads_the_pinned_commit_and_reports(tmp_path: Path) -> None:
    mirrors, commit = _mirror(tmp_path, {"a.py": _SOURCE})
    rows = [
        _label(2, 27, "'cuda'", "device", "'npu'"),
        _label(3, 7, "'runs on cuda'", "prose", "keep"),
        _label(4, 11, "'cuda'", "device", "'npu'"),
        _label(5, 5, "f'cuda:{rank}'", "device", "f'npu:{rank}'"),
        _label(5, 28, "'nccl'", "backend", "'hccl'"),
        _label(1, 1, "'x'", "prose", "keep", path="gone.py"),
    ]
    for row in rows:
        row["commit"] = commit
    labels = literal_roles.load_labels(_write(tmp_path / "labels.jsonl", rows))
    seen: list[str] = []

    def convert(path: str, data: bytes, tables: object) -> FileResult:
        seen.append(path)
        assert data.decode() == _SOURCE and tables == "T"
        return _fake_result(data.decode())

    measured = literal_roles.measure(labels, mirrors, convert, "T")
    assert seen == ["a.py"]  # one conversion per file, none for the file the commit lacks
    assert [o.kind for _, o in measured] == [
        "converted",
        "silent",
        "reported",
        "converted",
        "silent",
        "missing",
    ]
    figures = literal_roles.figures(measured)
    assert figures["device_precision"] == (2, 2) and figures["device_recall"] == (2, 3)
    assert figures["rewrite_recall"] == (2, 4) and figures["devices_kept_silently"] == 0
    text = literal_roles.report(measured)
    assert "converted as a device: precision 100.0% (2/2), recall 66.7% (2/3)" in text
    assert "someone/proj:a.py:4:11  device -> 'npu': kept, reported" in text
    assert (
        "someone/proj:a.py:5:28  backend -> 'hccl': kept SILENTLY (findings on the line: TP999 col 1)" in text
    )
    assert re.search(r"someone/proj:gone.py:1:1  MISSING .*not readable", text)


def test_main_with_the_real_engine_on_a_synthetic_mirror(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = "import torch\nx = torch.ones(1).to(torch.device('cuda'))\nprint('moved to cuda')\n"
    mirrors, commit = _mirror(tmp_path, {"m.py": source})
    rows = [
        _label(2, 35, "'cuda'", "device", "'npu'", path="m.py"),
        _label(3, 7, "'moved to cuda'", "prose", "keep", path="m.py"),
    ]
    for row in rows:
        row["commit"] = commit
    data = _write(tmp_path / "l.jsonl", rows)
    assert literal_roles.main(["--mirrors", str(mirrors), "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "precision 100.0% (1/1), recall 100.0% (1/1)" in out and "mistakes (0):" in out
    assert literal_roles.main(["--mirrors", str(tmp_path / "none"), "--data", str(data)]) == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"role": "colour"}, "role 'colour' is not one of"),
        ({"line": "3"}, "line must be int"),
        ({"expected": "keep"}, "role device with expected 'keep'"),
        ({"commit": "abc"}, "commit is 40 hex digits"),
    ],
)
def test_bad_label_lines_name_the_file_and_line(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    good = _label(2, 27, "'cuda'", "device", "'npu'")
    path = _write(tmp_path / "l.jsonl", [good, {**good, "line": 9, **change}])
    with pytest.raises(ValueError, match=re.escape(f"{path}:2: ") + ".*" + re.escape(message)):
        literal_roles.load_labels(path)
    _write(path, [good, good])
    with pytest.raises(ValueError, match=re.escape(f"{path}:2: duplicate")):
        literal_roles.load_labels(path)


def test_the_labelled_set_is_large_diverse_and_well_formed() -> None:
    labels = literal_roles.load_labels(literal_roles.DATA)  # schema, roles, duplicates
    assert len(labels) >= 400
    per_repo = Counter(label.repo for label in labels)
    assert len(per_repo) >= 20 and max(per_repo.values()) <= 40
    assert all(
        len({x.commit for x in labels if x.repo == repo}) == 1 for repo in per_repo
    )  # one pin per repo
    assert all(
        re.fullmatch(r"[0-9a-f]{40}", x.commit) and re.fullmatch(r"[0-9a-f]{12}", x.digest) for x in labels
    )
    roles = Counter(label.role for label in labels)
    assert roles["device"] >= 100 and roles["prose"] >= 50 and roles["external"] >= 5
    for label in labels:
        if label.role in literal_roles.DEVICE_ROLES:
            assert "npu" in label.expected and "cuda" not in label.expected.split("{")[0], label.where
        if label.role == "backend":
            assert "hccl" in label.expected.lower(), label.where


def test_conversion_cpu_of_a_folder(tmp_path: Path) -> None:
    """bench/convert_cpu.py converts every .py file of the folder and prints its best CPU time."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    (tmp_path / "sub" / "b.py").write_text("print('no torch')\n")
    (tmp_path / "notes.txt").write_text("not Python\n")
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "convert_cpu.py"),
            str(tmp_path),
            "--runs",
            "2",
            "--label",
            "here",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert re.fullmatch(
        r"here: 2 files, 3 lines, conversion CPU best of 2: \d+\.\d{3} s \([\d,]+ lines/s\), load [\d.]+\n",
        proc.stdout,
    ), proc.stdout


# What callgrind writes when counting starts inside a call: the frames already running when it
# started (the interpreter's loop) are shown with the whole count as their own.
_CALLGRIND_OUTPUT = """# callgrind format
version: 1
creator: callgrind-3.19.0
cmd: python bench_instructions.py --child gru npu:0
positions: line
events: Ir
summary: 0

ob=(1) /lib/libtorch_cpu.so
fl=(1) ???
fn=(1) PyEval_EvalCode
0 1600
cfn=(2) at::add(at::Tensor const&, at::Tensor const&)
calls=1 0
0 1600
fn=(2)
0 1000
cfn=(3) malloc
calls=2 0
0 600
fn=(3)
0 600

totals: 1600
"""


def test_instruction_counts_are_read_from_callgrinds_output(tmp_path: Path) -> None:
    import bench_instructions

    out = tmp_path / "callgrind.out"
    out.write_text(_CALLGRIND_OUTPUT)
    assert bench_instructions.totals(out) == 1600  # "totals", not the "summary" of a late start
    (tmp_path / "empty.out").write_text("events: Ir\nsummary: 0\n")
    with pytest.raises(SystemExit, match=r"no instruction total in .*empty\.out"):
        bench_instructions.totals(tmp_path / "empty.out")
    cpu = {"at::add": 900, "malloc": 500, "gone": 7}
    npu = {"at::add": 1000, "malloc": 800, "runtime_shim::to_cpu": 50}
    assert bench_instructions.growth(cpu, npu) == [
        ("malloc", 500, 800),
        ("at::add", 900, 1000),
        ("runtime_shim::to_cpu", 0, 50),
        ("gone", 7, 0),
    ]


@pytest.mark.skipif(
    not shutil.which("callgrind_annotate"), reason="valgrind's callgrind_annotate is not installed"
)
def test_each_functions_own_count_without_the_callers_outside_the_counted_steps(tmp_path: Path) -> None:
    import bench_instructions

    out = tmp_path / "callgrind.out"
    out.write_text(_CALLGRIND_OUTPUT)
    assert bench_instructions.by_function(out) == {
        "at::add(at::Tensor const&, at::Tensor const&)": 1000,
        "malloc": 600,
    }


# --- bench/device_dispatch.py: labelled dispatch sites of real multi-device code ----------------------
_DISPATCH = (
    "import torch\n"
    "def sync(dev):\n"
    "    if dev == 'cuda':\n"
    "        torch.cuda.synchronize()\n"
    "    elif dev == 'npu':\n"
    "        torch.npu.synchronize()\n"
    "def only():\n"
    "    if torch.cuda.is_available():\n"
    "        torch.cuda.synchronize()\n"
    "def nested(dev):\n"
    "    if dev in ('cpu', 'cuda'):\n"
    "        if dev == 'cuda':\n"
    "            torch.cuda.empty_cache()\n"
    "    elif dev == 'npu':\n"
    "        pass\n"
)


def test_mining_labels_from_the_code_alone() -> None:
    """A CUDA line beside an NPU branch is `keep` (also inside a nested chain); one without is `convert`."""
    assert sorted(set(mine_device_dispatch.sites(_DISPATCH))) == [
        (3, "keep"),
        (4, "keep"),
        (8, "convert"),
        (9, "convert"),
        (11, "keep"),
        (12, "keep"),
        (13, "keep"),
    ]


def test_dispatch_bench_finds_changed_lines_and_new_duplicates() -> None:
    old = "import torch\nx = ['cuda', 'npu']\ny = 1\n"
    new = "import torch\nimport torch_npu\nx = ['npu', 'npu']\ny = 1\n"
    assert device_dispatch.changed_lines(old, new) == {2}  # an inserted line changes nothing
    assert device_dispatch.duplicates(new) - device_dispatch.duplicates(old) == Counter({"npu": 1})
    assert device_dispatch.duplicates("d = {'cuda': 1, 'npu': 2}\n") == Counter()


def test_dispatch_data_is_facts_only() -> None:
    """Every record names where the line is and its label, with the line's digest, never its code."""
    sites = device_dispatch.load()
    assert len(sites) >= 150 and len({s.repo for s in sites}) >= 12
    for line in device_dispatch.DATA.read_text().splitlines():
        assert set(json.loads(line)) == {"repo", "commit", "path", "line", "digest", "label"}
