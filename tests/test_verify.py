"""`verify`'s logic without running anything: records, comparison, verdicts, commands, call sites, reports."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ms_fmk_transplt.verify import launch
from ms_fmk_transplt.verify.launch import CommandError, RunOutput, parse_command
from ms_fmk_transplt.verify.report import json_document, size_text, text_lines
from ms_fmk_transplt.verify.session import Outcome
from ms_fmk_transplt.verify.sites import original_line, original_site
from ms_fmk_transplt.verify.step_records import (
    AFFINITY,
    EXACT,
    HALF_PRECISION,
    RankRecord,
    RecordError,
    compare_step,
    computes_in,
    first_difference,
    read_records,
    same_value,
    tolerance_for,
)
from ms_fmk_transplt.verify.verdict import OpFinding, SideResult, VerifyStatus, judge, read_opcheck

PARAMS = [["fc.weight", [2, 3], "float32", "aa"], ["fc.bias", [2], "float32", "bb"]]


def _step(number, loss=0.5, params=PARAMS, rank=0, memory=None):
    return {
        "step": number,
        "rank": rank,
        "optimizer": 0,
        "losses": [loss],
        "params": params,
        "memory": memory or {},
    }


def _write(folder: Path, name: str, lines: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines))


def _records(
    tmp_path: Path, name: str, steps: list[dict], end: str | None = "limit"
) -> dict[int, RankRecord]:
    folder = tmp_path / name
    lines = [*steps, *([{"end": end, "steps": len(steps), "memory": {}}] if end else [])]
    _write(folder, f"rank{steps[0]['rank'] if steps else 0}.pid1.jsonl", lines)
    return read_records(folder)


def test_read_records_steps_end_and_peak_memory(tmp_path):
    _write(
        tmp_path,
        "rank1.pid7.jsonl",
        [
            _step(2, rank=1, memory={"npu:1": [300, 400]}),
            _step(1, rank=1, memory={"npu:1": [500, 500]}),
            {"end": "exit", "steps": 2, "memory": {"npu:1": [450, 900]}},
        ],
    )
    ranks = read_records(tmp_path)
    assert list(ranks) == [1]
    assert [s.number for s in ranks[1].steps] == [1, 2]
    assert ranks[1].ended == "exit"
    assert ranks[1].memory == {"npu:1": (500, 900)}
    assert ranks[1].steps[0].params[0].shape == (2, 3)


def test_read_records_missing_folder_bad_line_and_cut_last_line(tmp_path):
    assert read_records(tmp_path / "none") == {}
    (tmp_path / "rank0.pid1.jsonl").write_text(json.dumps(_step(1)) + "\n" + json.dumps(_step(2))[:40])
    assert [s.number for s in read_records(tmp_path)[0].steps] == [1]
    (tmp_path / "rank0.pid1.jsonl").write_text('{"step": 1}\n')
    with pytest.raises(RecordError, match=r"rank0\.pid1\.jsonl:1: unreadable step record"):
        read_records(tmp_path)


def test_same_value_is_bitwise_with_nan_equal():
    assert same_value(float("nan"), float("nan"))
    assert same_value(0.1, 0.1)
    assert not same_value(0.1, 0.1 + math.ulp(0.1))
    assert not same_value(1.0, "digest:ab")


def test_first_difference_names_step_rank_loss_and_parameter(tmp_path):
    cpu = _records(tmp_path, "cpu", [_step(1), _step(2), _step(3)])
    changed = [["fc.weight", [2, 3], "float32", "aa"], ["fc.bias", [2], "float32", "cc"]]
    npu = _records(tmp_path, "npu", [_step(1), _step(2, params=changed), _step(3, loss=0.25, params=changed)])
    difference = first_difference(cpu, npu)
    assert difference is not None
    assert (difference.step, difference.rank, difference.param, difference.loss) == (2, 0, "fc.bias", None)
    assert difference.what == "parameter fc.bias float32[2] has different values"


def test_first_difference_earliest_step_over_ranks(tmp_path):
    def both(rank, diff_at):
        steps = [_step(n, rank=rank) for n in (1, 2, 3)]
        other = [_step(n, rank=rank, loss=0.5 if n < diff_at else 0.75) for n in (1, 2, 3)]
        _write(tmp_path / "cpu", f"rank{rank}.pid{rank}.jsonl", steps)
        _write(tmp_path / "npu", f"rank{rank}.pid{rank}.jsonl", other)

    both(0, 3)
    both(1, 2)
    difference = first_difference(read_records(tmp_path / "cpu"), read_records(tmp_path / "npu"))
    assert difference is not None
    assert (difference.step, difference.rank, difference.loss) == (2, 1, (0.5, 0.75))
    assert "loss 0.5 on the CPU, 0.75 on the simulated NPU" in difference.what


def test_compare_step_shape_and_missing_parameters(tmp_path):
    cpu = _records(tmp_path, "cpu", [_step(1)])[0].steps[0]
    reshaped = _records(tmp_path, "a", [_step(1, params=[["fc.weight", [3, 2], "float32", "aa"], PARAMS[1]])])
    missing = _records(tmp_path, "b", [_step(1, params=PARAMS[:1])])
    extra = _records(tmp_path, "c", [_step(1, params=[*PARAMS, ["x", [1], "float16", "dd"]])])
    assert (
        "float32[2, 3] on the CPU, float32[3, 2] on the simulated NPU"
        in compare_step(cpu, reshaped[0].steps[0]).what
    )
    assert (
        compare_step(cpu, missing[0].steps[0]).what
        == "parameter fc.bias is missing from the converted run's step"
    )
    assert compare_step(cpu, extra[0].steps[0]).param == "x"
    assert compare_step(cpu, cpu) is None


def test_parameters_are_matched_by_position_not_by_a_name_that_repeats(tmp_path):
    # records of a step whose parameters come from root modules made apart, named without their
    # owner (as before the recorder prefixed them): two `weight`s of one shape
    params = [
        ["weight", [10, 6], "float32", "embedding"],
        ["weight_ih_l0", [24, 6], "float32", "lstm"],
        ["weight", [10, 6], "float32", "decoder"],
    ]
    cpu = _records(tmp_path, "cpu", [_step(1, params=params)])
    assert first_difference(cpu, _records(tmp_path, "npu", [_step(1, params=params)])) is None
    changed = [*params[:2], ["weight", [10, 6], "float32", "changed"]]
    difference = first_difference(cpu, _records(tmp_path, "other", [_step(1, params=changed)]))
    assert difference is not None and difference.param == "weight"
    assert difference.what == "parameter weight (parameter 3 of the step) float32[10, 6] has different values"
    # the same parameters in another order are different parameters at each position
    swapped = [params[2], params[1], params[0]]
    difference = first_difference(cpu, _records(tmp_path, "swapped", [_step(1, params=swapped)]))
    assert difference is not None
    assert difference.what == "parameter weight (parameter 1 of the step) float32[10, 6] has different values"


def _side(tmp_path, name, steps, returncode=0, end="limit", **kw):
    records = _records(tmp_path, name, steps, end) if steps else {}
    return SideResult(returncode, records, **kw)


@pytest.mark.parametrize(
    ("case", "status", "message"),
    [
        ("identical", VerifyStatus.IDENTICAL, "identical: 2 step(s), losses and every parameter bit for bit"),
        (
            "different",
            VerifyStatus.DIFFERENT,
            "different at step 2, rank 0: loss 0.5 on the CPU, 0.9 on the simulated NPU",
        ),
        (
            "fewer",
            VerifyStatus.DIFFERENT,
            "different: rank 0 made 2 step(s) on the CPU and 1 on the simulated NPU",
        ),
        (
            "npu_crash",
            VerifyStatus.NPU_FAILED,
            "the converted script exited 1 on the simulated NPU after 1 step(s)",
        ),
        ("npu_timeout", VerifyStatus.NPU_FAILED, "the converted script timed out on the simulated NPU"),
        ("cpu_crash", VerifyStatus.CPU_FAILED, "the original exited 1 on the CPU after 1 step(s)"),
        (
            "cuda",
            VerifyStatus.NEEDS_CUDA,
            "not compared: the original cannot run on the CPU (AssertionError: Torch not",
        ),
        (
            "cuda_late",
            VerifyStatus.NEEDS_CUDA,
            "identical for the 1 step(s) the original made on the CPU before it needed CUDA",
        ),
        ("cuda_npu_crash", VerifyStatus.NPU_FAILED, "the original cannot run on the CPU"),
        (
            "both_fail",
            VerifyStatus.CPU_FAILED,
            "the original exited 1 on the CPU after 0 step(s); the converted script exited 1 too",
        ),
        (
            "cuda_late_npu_crash",
            VerifyStatus.NPU_FAILED,
            "the original stopped on the CPU at step 1 needing CUDA",
        ),
        ("nothing", VerifyStatus.NO_STEPS, "no optimizer step or backward() was seen in either run"),
        ("teardown", VerifyStatus.IDENTICAL, "identical"),
        ("npu_teardown", VerifyStatus.NPU_FAILED, "exited 134"),
    ],
)
def test_verdicts(tmp_path, case, status, message):
    two = [_step(1), _step(2)]
    cuda = "AssertionError: Torch not compiled with CUDA enabled"
    cpu, npu = {
        "identical": (_side(tmp_path, "c", two), _side(tmp_path, "n", two)),
        "different": (_side(tmp_path, "c", two), _side(tmp_path, "n", [_step(1), _step(2, loss=0.9)])),
        "fewer": (_side(tmp_path, "c", two), _side(tmp_path, "n", [_step(1)], end="exit")),
        "npu_crash": (_side(tmp_path, "c", two), _side(tmp_path, "n", [_step(1)], 1, end=None)),
        "npu_timeout": (_side(tmp_path, "c", two), _side(tmp_path, "n", [], timed_out=True)),
        "cpu_crash": (_side(tmp_path, "c", [_step(1)], 1, end=None), _side(tmp_path, "n", two)),
        "cuda": (_side(tmp_path, "c", [], 1, needs_cuda=cuda), _side(tmp_path, "n", two)),
        "cuda_late": (
            _side(tmp_path, "c", [_step(1)], 1, end=None, needs_cuda=cuda),
            _side(tmp_path, "n", two),
        ),
        "cuda_npu_crash": (_side(tmp_path, "c", [], 1, needs_cuda=cuda), _side(tmp_path, "n", [], 1)),
        "both_fail": (_side(tmp_path, "c", [], 1), _side(tmp_path, "n", [], 1)),
        "cuda_late_npu_crash": (
            _side(tmp_path, "c", [_step(1)], 1, end=None, needs_cuda=cuda),
            _side(tmp_path, "n", [_step(1)], 1, end=None),
        ),
        "nothing": (_side(tmp_path, "c", []), _side(tmp_path, "n", [])),
        "teardown": (_side(tmp_path, "c", two, 134, teardown_abort=True), _side(tmp_path, "n", two)),
        "npu_teardown": (_side(tmp_path, "c", two), _side(tmp_path, "n", two, 134, teardown_abort=True)),
    }[case]
    verdict = judge(cpu, npu)
    assert verdict.status is status
    assert message in verdict.message
    assert verdict.exit_code == status.value
    if case == "teardown":
        assert verdict.notes == (
            "the CPU reference's stock gloo aborted while tearing down, after its last step",
        )


def test_fail_on_ops_turns_identical_and_cuda_only_into_exit_6(tmp_path):
    two = [_step(1), _step(2)]
    ops = [OpFinding("mm", 8, "unsupported_dtype", "fp64", "t.py:3")]
    cpu, npu = _side(tmp_path, "c", two), _side(tmp_path, "n", two)
    assert judge(cpu, npu, ops).status is VerifyStatus.IDENTICAL
    gated = judge(cpu, npu, ops, fail_on_ops=True)
    assert gated.status is VerifyStatus.UNSUPPORTED_OPS and gated.exit_code == 6
    assert gated.message.endswith("operator(s) a real NPU lacks or runs on the CPU: mm")
    assert judge(cpu, npu, [], fail_on_ops=True).status is VerifyStatus.IDENTICAL
    different = _side(tmp_path, "d", [_step(1), _step(2, loss=0.1)])
    assert judge(cpu, different, ops, fail_on_ops=True).status is VerifyStatus.DIFFERENT


def test_read_opcheck_keeps_unsupported_rows(tmp_path):
    report = tmp_path / "ops.json"
    assert read_opcheck(report) is None
    rows = [
        {
            "op": "mm",
            "count": 3,
            "status": "unsupported_dtype",
            "unsupported_dtypes": "fp64",
            "first_call_site": "a.py:2",
        },
        {
            "op": "add.Tensor",
            "count": 9,
            "status": "supported",
            "unsupported_dtypes": "",
            "first_call_site": "a.py:1",
        },
        {
            "op": "_fft_r2c",
            "count": 1,
            "status": "unsupported",
            "unsupported_dtypes": "",
            "first_call_site": "a.py:4",
        },
    ]
    report.write_text(json.dumps({"ops": rows}))
    assert [(f.op, f.status) for f in read_opcheck(report)] == [
        ("mm", "unsupported_dtype"),
        ("_fft_r2c", "unsupported"),
    ]


@pytest.mark.parametrize(
    ("command", "script", "args"),
    [
        (["python", "train.py", "--epochs", "1"], "train.py", ("--epochs", "1")),
        (["python3", "-u", "train.py"], "train.py", ()),
        (["/usr/bin/python3.11", "train.py", "-x"], "train.py", ("-x",)),
        (["train.py", "--lr", "0.1"], "train.py", ("--lr", "0.1")),
    ],
)
def test_parse_command(tmp_path, monkeypatch, command, script, args):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("")
    target = parse_command(command)
    assert (str(target.script), target.args) == (script, args)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ([], "no script given"),
        (["python"], "no script given"),
        (["python", "-m", "pkg.train"], "python -m MODULE is not supported"),
        (["python", "-c", "pass"], "python option -c is not supported"),
        (["torchrun", "train.py"], "give the script, not torchrun"),
        (["python", "missing.py"], "script not found: missing.py"),
        (["python", "data.txt"], "not a Python script: data.txt"),
    ],
)
def test_parse_command_errors(tmp_path, monkeypatch, command, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.txt").write_text("")
    with pytest.raises(CommandError, match=message):
        parse_command(command)


def test_commands_and_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("RUNTIME_SHIM_ACTIVE", "1")
    target = launch.Target(Path("train.py"), ("--epochs", "1"))
    one = launch.Settings(steps=5, seed=3, nproc=1, timeout=None, cwd=tmp_path)
    two = launch.Settings(steps=0, seed=None, nproc=2, timeout=None, cwd=tmp_path)
    assert launch.cpu_command(target, one)[1:] == ["train.py", "--epochs", "1"]
    assert launch.npu_command(Path("out/train.py"), target, two)[1:] == [
        "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "-m", "runtime_shim", "out/train.py", "--epochs", "1",
    ]  # fmt: skip
    cpu_env = launch.environment(tmp_path / "cpu", one, None)
    assert cpu_env["PYTHONPATH"].split(":")[0].endswith("runtime_shim/_boot")
    assert cpu_env["PYTHONPATH"].endswith(":/elsewhere")
    assert (cpu_env["RUNTIME_SHIM_RECORD_STEPS"], cpu_env["RUNTIME_SHIM_RECORD_SEED"]) == ("5", "3")
    assert cpu_env["CUDA_VISIBLE_DEVICES"] == "" and "RUNTIME_SHIM_ACTIVE" not in cpu_env
    npu_env = launch.environment(tmp_path / "npu", two, tmp_path / "ops.json")
    assert npu_env["RUNTIME_SHIM_OPCHECK_REPORT"] == str(tmp_path / "ops.json")
    assert "RUNTIME_SHIM_RECORD_SEED" not in npu_env and "CUDA_VISIBLE_DEVICES" not in npu_env


def _output(tmp_path, label, returncode=0, stderr=""):
    return RunOutput(
        label, ("python", "t.py"), returncode, False, 1.5, tmp_path / "o", tmp_path / "e", tmp_path, stderr
    )


def test_needs_cuda_reads_the_exception_line(tmp_path):
    stderr = 'Traceback:\n    raise AssertionError("Torch not compiled with CUDA enabled")\nAssertionError: Torch not compiled with CUDA enabled\n'
    assert (
        _output(tmp_path, "cpu", 1, stderr).needs_cuda()
        == "AssertionError: Torch not compiled with CUDA enabled"
    )
    assert _output(tmp_path, "cpu", 0, stderr).needs_cuda() is None
    assert _output(tmp_path, "cpu", 1, "ValueError: bad\n").needs_cuda() is None


def test_original_line_maps_inserted_and_changed_lines():
    original = ["import torch", "x = 1", "y = x.cuda()", "z = 2"]
    converted = ["import torch", "import torch_npu", "x = 1", "y = x.npu()", "z = 2"]
    assert [original_line(original, converted, n) for n in range(1, 6)] == [1, 2, 2, 3, 4]


def test_original_site(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "src" / "t.py").write_text("import torch\na = 1\nb = a.cuda()\n")
    (tmp_path / "out" / "t.py").write_text("import torch\nimport torch_npu\na = 1\nb = a.npu()\n")
    site = f"{tmp_path / 'out' / 't.py'}:4"
    assert original_site(site, tmp_path / "out", tmp_path / "src", tmp_path) == "src/t.py:3"
    assert original_site("/lib/other.py:9", tmp_path / "out", tmp_path / "src", tmp_path) == "/lib/other.py:9"
    assert original_site("<internal>", tmp_path / "out", tmp_path / "src", tmp_path) == "<internal>"


def test_reports(tmp_path):
    cpu_records = _records(tmp_path, "c", [_step(1), _step(2)])
    npu_records = _records(tmp_path, "n", [_step(1), _step(2, loss=0.25, memory={"npu:0": [2048, 4096]})])
    ops = [OpFinding("mm", 8, "unsupported_dtype", "fp64", "t.py:3")]
    verdict = judge(SideResult(0, cpu_records), SideResult(0, npu_records), ops)
    outcome = Outcome(
        verdict, Path("t.py"), Path("out/t.py"), _output(tmp_path, "cpu"), _output(tmp_path, "npu"),
        cpu_records, npu_records, ops, (), None,
    )  # fmt: skip
    text = "\n".join(text_lines(outcome))
    assert "result: different at step 2, rank 0: loss 0.5 on the CPU, 0.25 on the simulated NPU" in text
    assert "      loss: 0.5 (CPU) vs 0.25 (simulated NPU)" in text
    assert "aten::mm x8 unsupported_dtype (fp64) at t.py:3" in text
    assert "simulated NPU peak memory, rank 0: npu:0 2.00 KiB allocated, 4.00 KiB reserved" in text
    assert text.endswith("exit 1")
    document = json.loads(json_document(outcome))
    assert document["status"] == "different" and document["exit_code"] == 1
    assert document["first_difference"]["step"] == 2 and document["first_difference"]["loss"] == [0.5, 0.25]
    assert document["npu"]["losses"]["0"] == [[0.5], [0.25]]
    assert document["npu_peak_memory"] == {"0": {"npu:0": {"allocated": 2048, "reserved": 4096}}}
    assert document["operator_check"][0]["op"] == "mm"
    assert size_text(1536) == "1.50 KiB" and size_text(12) == "12 bytes"


def test_runtime_findings_are_mapped_to_the_original_and_reported(tmp_path):
    from dataclasses import replace

    from ms_fmk_transplt.verify import runtime_findings

    (tmp_path / "src").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "src" / "t.py").write_text("import torch\nfrom lib import amp\ns = amp.scaler()\ny = m(x)\n")
    (tmp_path / "out" / "t.py").write_text(
        "import torch\nimport torch_npu\nfrom lib import amp\ns = amp.scaler()\ny = m(x)\n"
    )
    report = tmp_path / "findings.json"
    rows = [
        {"kind": "amp_disabled", "what": "torch GradScaler('cuda') disabled", "dependency_site": "deps/lib/amp.py:5",
         "dependency_path": "/d/deps/lib/amp.py:5", "user_site": f"{tmp_path / 'out' / 't.py'}:4", "count": 3,
         "shapes": []},
        {"kind": "dynamic_shapes", "what": "aten::mm", "dependency_site": None, "user_site":
         f"{tmp_path / 'out' / 't.py'}:5", "count": 4, "shapes": ["[1, 2]", "[2, 2]", "[3, 2]", "[4, 2]"],
         "distinct_shapes": 5},
        {"kind": "dynamic_shapes", "what": "aten::t", "user_site": f"{tmp_path / 'out' / 't.py'}:5", "count": 4,
         "shapes": ["[1, 2]", "[2, 2]"], "distinct_shapes": 2},
    ]  # fmt: skip
    report.write_text(json.dumps({"runtime_findings": {"findings": rows}}))
    env = runtime_findings.environment(report, tmp_path / "out")
    assert env == {
        "RUNTIME_SHIM_FINDINGS_REPORT": str(report),
        "RUNTIME_SHIM_FINDINGS_PROJECT": str(tmp_path / "out"),
    }
    found = runtime_findings.read(report, tmp_path / "out", tmp_path / "src", tmp_path)
    assert found is not None and [f.user_site for f in found] == ["src/t.py:3", "src/t.py:4", "src/t.py:4"]
    assert runtime_findings.read(tmp_path / "none.json", tmp_path, tmp_path, tmp_path) is None
    cpu_records = _records(tmp_path, "c", [_step(1)])
    verdict = judge(SideResult(0, cpu_records), SideResult(0, cpu_records), [])
    outcome = Outcome(
        verdict, Path("t.py"), Path("out/t.py"), _output(tmp_path, "cpu"), _output(tmp_path, "npu"),
        cpu_records, cpu_records, [], (), None, findings=found,
    )  # fmt: skip
    text = text_lines(outcome)
    assert (
        "  CUDA still touched: torch GradScaler('cuda') disabled at deps/lib/amp.py:5 <- src/t.py:3 (x3)"
        in text
    )
    # one line per script line: its first operator's shapes, then the others
    assert (
        "  dynamic shapes: aten::mm at src/t.py:4, shapes [1, 2] / [2, 2] / [3, 2] (+2 more); also aten::t"
        in text
    )
    assert text[-1] == "exit 0"  # findings never change the verdict
    document = json.loads(json_document(outcome))
    assert document["exit_code"] == 0
    assert document["runtime_findings"][0] == {
        "kind": "amp_disabled", "what": "torch GradScaler('cuda') disabled", "dependency_site": "deps/lib/amp.py:5",
        "user_site": "src/t.py:3", "count": 3, "shapes": [], "distinct_shapes": 0,
    }  # fmt: skip
    assert json.loads(json_document(replace(outcome, findings=None)))["runtime_findings"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["verify", "--", "python", "nothere.py"], "script not found: nothere.py"),
        (["verify", "python", "-m", "pkg"], "python -m MODULE is not supported"),
        (
            ["verify", "--converted", "c", "-o", "o", "--", "python", "t.py"],
            "--converted uses an existing conversion",
        ),
        (
            ["verify", "--converted", "c", "--", "python", "t.py"],
            "--converted c: no converted script t.py in it",
        ),
        (["verify", "-i", "elsewhere", "--", "python", "t.py"], "is not inside the project -i"),
    ],
)
def test_cli_usage_errors_exit_2(tmp_path, monkeypatch, args, message):
    from click.testing import CliRunner

    from ms_fmk_transplt.cli import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "c").mkdir()
    done = CliRunner().invoke(app, args, catch_exceptions=False)
    assert done.exit_code == 2
    assert message in " ".join(done.output.split())


def test_run_timeout_kills_the_whole_run(tmp_path):
    """A run past --timeout is killed with everything it started (torchrun's ranks, workers)."""
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "grandchild.pid"
    child = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    settings = launch.Settings(steps=1, seed=None, nproc=1, timeout=3, cwd=tmp_path)
    env = {"RUNTIME_SHIM_RECORD": str(tmp_path / "rec"), "PATH": "/usr/bin:/bin"}
    started = time.perf_counter()
    output = launch.run("cpu", [sys.executable, "-c", child], env, tmp_path, settings)
    assert output.timed_out and output.returncode != 0
    assert time.perf_counter() - started < 30
    grandchild = int(pid_file.read_text())
    for _ in range(50):  # reaped by init shortly after the kill
        if subprocess.run(
            ["ps", "-p", str(grandchild), "-o", "stat="], capture_output=True, text=True
        ).stdout.strip() in ("", "Z"):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"process {grandchild} outlived the timeout")


def test_unreadable_parameters_are_noted(tmp_path):
    params = [["w", [2], "float32", "unreadable: RuntimeError"]]
    cpu = _side(tmp_path, "c", [_step(1, params=params)])
    npu = _side(tmp_path, "n", [_step(1, params=params)])
    verdict = judge(cpu, npu)
    assert verdict.status is VerifyStatus.IDENTICAL
    assert verdict.notes == ("parameters the recorder could not read, so not compared: w",)


def _broken_project(tmp_path: Path) -> Path:
    project = tmp_path / "bad"
    project.mkdir()
    (project / "syn.py").write_text("import torch\ndef f(:\n    pass\n")
    (project / "other.py").write_text("import torch\nx = (\n")
    (project / "ok.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    return project


@pytest.mark.parametrize("given", [[], ["-i", "syn.py"], ["-o", "out"]], ids=["folder", "file", "kept"])
def test_an_entry_script_that_fails_to_convert_stops_verify_with_exit_2(tmp_path, monkeypatch, given):
    from click.testing import CliRunner

    import ms_fmk_transplt.verify.session as session
    from ms_fmk_transplt.cli import app

    project = _broken_project(tmp_path)
    monkeypatch.chdir(project)
    ran = []
    monkeypatch.setattr(session.launch, "run", lambda *args: ran.append(args))
    done = CliRunner().invoke(app, ["verify", *given, "--", "python", "syn.py"], catch_exceptions=False)
    assert done.exit_code == 2 and ran == []
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: conversion failed: {project / 'syn.py'}: syntax error at line 2: invalid syntax"
    ]
    assert "other.py" not in done.stderr  # a neighbour's failure is no reason to stop


def test_a_neighbour_that_fails_to_convert_is_a_note(tmp_path, monkeypatch):
    from ms_fmk_transplt.verify.session import Request, _converted_script

    project = _broken_project(tmp_path)
    monkeypatch.chdir(project)
    request = Request(command=["python", "ok.py"], cwd=project)
    target = parse_command(list(request.command))
    converted, _, _, notes = _converted_script(request, target, tmp_path / "work", lambda line: None)
    assert converted.read_text() == "import torch\nimport torch_npu\nx = torch.zeros(1).npu()\n"
    assert notes == (
        "not converted: other.py: syntax error at line 2: '(' was never closed",
        "not converted: syn.py: syntax error at line 2: invalid syntax",
    )


def test_a_worker_lost_in_verifys_conversion_is_a_failed_conversion_exit_2(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import ms_fmk_transplt.run as run_module
    import ms_fmk_transplt.verify.session as session
    from ms_fmk_transplt.cli import app
    from ms_fmk_transplt.interrupts import WorkerLost

    def lost(options):
        raise WorkerLost("a worker process ended abruptly (killed, or out of memory?): the run was stopped")

    project = _broken_project(tmp_path)
    monkeypatch.chdir(project)
    ran = []
    monkeypatch.setattr(session.launch, "run", lambda *args: ran.append(args))
    monkeypatch.setattr(run_module, "convert_project", lost)
    done = CliRunner().invoke(app, ["verify", "--", "python", "ok.py"], catch_exceptions=False)
    assert done.exit_code == 2 and ran == []
    assert [line for line in done.stderr.splitlines() if line.startswith("error:")] == [
        "error: conversion failed: a worker process ended abruptly (killed, or out of memory?): the run was stopped"
    ]


def test_tolerance_exact_by_default_relative_with_affinity_and_used_by_the_comparison(tmp_path):
    """A loss 1e-7 apart (relative) is a difference when exact and alike under --opt-in affinity's
    tolerance; one 1e-3 apart is a difference under both; the report states the tolerance used."""
    assert tolerance_for(()) is EXACT and tolerance_for(("fused-optimizers",)) is EXACT
    assert tolerance_for(("affinity",)) is AFFINITY and AFFINITY.relative == 1e-5
    other = [["fc.weight", [2, 3], "float32", "cc"], ["fc.bias", [2], "float32", "dd"]]
    cpu = _side(tmp_path, "c", [_step(1), _step(2, loss=0.5)])
    near = _side(tmp_path, "n", [_step(1, params=other), _step(2, loss=0.5 * (1 + 1e-7), params=other)])
    far = _side(tmp_path, "f", [_step(1), _step(2, loss=0.5 * (1 + 1e-3))])
    assert judge(cpu, near).status is VerifyStatus.DIFFERENT
    alike = judge(cpu, near, tolerance=AFFINITY)
    assert alike.status is VerifyStatus.IDENTICAL and alike.tolerance is AFFINITY
    assert alike.message == "alike: 2 step(s), losses within a relative 1e-05 of the original's"
    assert judge(cpu, far, tolerance=AFFINITY).status is VerifyStatus.DIFFERENT
    same = judge(cpu, cpu, tolerance=AFFINITY)
    assert (
        same.message
        == "identical: 2 step(s), losses and every parameter bit for bit (a relative 1e-05 allowed)"
    )
    outcome = Outcome(
        alike, Path("t.py"), Path("out/t.py"), _output(tmp_path, "cpu"), _output(tmp_path, "npu"),
        cpu.records, near.records, [], (), None,
    )  # fmt: skip
    text = "\n".join(text_lines(outcome))
    assert (
        "  tolerance: losses within a relative 1e-05 (--opt-in affinity: fused operators round in another order)"
        in text
    )
    document = json.loads(json_document(outcome))
    assert document["tolerance"] == {"kind": "relative", "relative": 1e-05, "why": AFFINITY.why}
    exact = judge(cpu, cpu)
    outcome = Outcome(
        exact, Path("t.py"), Path("out/t.py"), _output(tmp_path, "cpu"), _output(tmp_path, "npu"),
        cpu.records, cpu.records, [], (), None,
    )  # fmt: skip
    assert "  tolerance: exact: losses and every parameter bit for bit" in text_lines(outcome)
    assert json.loads(json_document(outcome))["tolerance"]["kind"] == "exact"


def test_a_run_computing_in_half_precision_takes_that_dtypes_tolerance_under_affinity(tmp_path):
    """The step records say which dtypes a run computed in (its enabled autocasts, its parameters):
    with --opt-in affinity a bfloat16 or float16 run is held to that dtype's unit roundoff, the
    coarser one when both; float32 keeps 1e-5, and without affinity every run stays exact."""
    half = [["fc.weight", [2, 3], "float16", "aa"]]
    records = {
        "fp32": _records(tmp_path, "fp32", [_step(1)], "limit"),
        "bf16": _records(tmp_path, "bf16", [{**_step(1), "autocast": ["bfloat16"]}], "limit"),
        "fp16": _records(tmp_path, "fp16", [_step(1, params=half)], "limit"),
    }
    assert computes_in(records["fp32"]) == {"float32"}
    assert computes_in(records["bf16"]) == {"float32", "bfloat16"}
    assert computes_in(records["fp16"], records["bf16"]) == {"float16", "float32", "bfloat16"}
    assert tolerance_for(("affinity",), computes_in(records["fp32"])) is AFFINITY
    bf16 = tolerance_for(("affinity",), computes_in(records["bf16"], records["fp32"]))
    assert bf16.relative == HALF_PRECISION["bfloat16"] == 2**-8 and "in bfloat16" in bf16.why
    assert tolerance_for(("affinity",), {"float16"}).relative == 2**-11
    assert tolerance_for(("affinity",), {"float16", "bfloat16"}).relative == 2**-8
    assert tolerance_for((), {"bfloat16"}) is EXACT  # must-not-change: no fused operator, no slack
    # a loss 1e-4 apart (relative): a difference under float32's tolerance, alike under bfloat16's
    cpu = _side(tmp_path, "c", [_step(1, loss=0.5)])
    npu = _side(tmp_path, "n", [_step(1, loss=0.5 * (1 + 1e-4))])
    assert judge(cpu, npu, tolerance=AFFINITY).status is VerifyStatus.DIFFERENT
    assert judge(cpu, npu, tolerance=bf16).status is VerifyStatus.IDENTICAL
