"""verify's reference run and failure reports, without running a script: which run is the reference
(the CPU, or transfer_to_npu when the CPU cannot be one), the verdicts it gives, and the exception
line of a failed run read from the process records or from stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ms_fmk_transplt.verify import launch
from ms_fmk_transplt.verify.failures import (
    Failure,
    failure_lines,
    parse_traceback,
    project_test,
    read_failures,
)
from ms_fmk_transplt.verify.launch import RunOutput
from ms_fmk_transplt.verify.report import json_document, text_lines
from ms_fmk_transplt.verify.session import Outcome, _cpu_unfit
from ms_fmk_transplt.verify.step_records import Param, RankRecord, Step
from ms_fmk_transplt.verify.verdict import Reference, SideResult, VerifyStatus, judge

ROOT = Path(__file__).resolve().parents[1]

PLAIN = """\
Traceback (most recent call last):
  File "/proj/train.py", line 30, in <module>
    main()
  File "/proj/train.py", line 12, in main
    x = helper()
        ^^^^^^^^
  File "/usr/lib/python3.11/site-packages/lib/core.py", line 40, in helper
    raise ValueError("bad shape")
ValueError: bad shape
"""

CHAINED = """\
Traceback (most recent call last):
  File "/proj/train.py", line 5, in <module>
    import missing
ModuleNotFoundError: No module named 'missing'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/proj/train.py", line 7, in <module>
    raise RuntimeError("no fallback either")
RuntimeError: no fallback either
"""

# what mp.spawn's parent raises: the child's traceback inside its own exception's message
SPAWNED = """\
Traceback (most recent call last):
  File "/proj/ddp.py", line 50, in <module>
    mp.spawn(train, nprocs=2)
  File "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 215, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException:

-- Process 1 terminated with the following error:
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 90, in _wrap
    fn(i, *args)
  File "/proj/ddp.py", line 21, in train
    raise RuntimeError("rank 1 lost its shard")
RuntimeError: rank 1 lost its shard
"""

# torchrun's summary after a rank's traceback (lines prefixed by rank)
TORCHRUN = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/proj/ddp.py", line 21, in <module>
[rank1]:     raise RuntimeError("rank 1 lost its shard")
[rank1]: RuntimeError: rank 1 lost its shard
E1128 10:00:00.000000 123 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1)
Traceback (most recent call last):
  File "/venv/bin/torchrun", line 8, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/proj/ddp.py FAILED
"""


@pytest.mark.parametrize(
    ("text", "frames", "exception"),
    [
        (PLAIN, [("/proj/train.py", 30), ("/proj/train.py", 12), ("/usr/lib/python3.11/site-packages/lib/core.py", 40)], "ValueError: bad shape"),
        (CHAINED, [("/proj/train.py", 7)], "RuntimeError: no fallback either"),
        (SPAWNED, [("/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", 90), ("/proj/ddp.py", 21)], "RuntimeError: rank 1 lost its shard"),
        (TORCHRUN, [("/venv/bin/torchrun", 8)], "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"),
    ],
)  # fmt: skip
def test_parse_traceback_takes_the_last_one(text, frames, exception):
    parsed = parse_traceback(text)
    assert parsed is not None
    assert list(parsed.frames) == frames and parsed.exception == exception
    assert parsed.spawned == (1 if text is SPAWNED else None)


def test_parse_traceback_without_one():
    assert parse_traceback("killed\n") is None
    assert parse_traceback('Traceback (most recent call last):\n  File "a.py", line 1\n') is None


def _records(folder: Path, rank: int, pid: int, text: str, when: float = 0.0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record = {"rank": rank, "pid": pid, "time": when, "traceback": text}
    (folder / f"error.rank{rank}.pid{pid}.json").write_text(json.dumps(record))


def test_read_failures_prefers_the_ranks_records_and_names_the_projects_frame(tmp_path):
    proj = tmp_path / "proj"
    _records(tmp_path / "rec", 1, 20, PLAIN.replace("/proj", str(proj)))
    _records(tmp_path / "rec", 0, 10, PLAIN.replace("/proj", str(proj)))
    _records(tmp_path / "rec", 2, 30, SPAWNED.replace("/proj", str(proj)), when=5.0)
    (tmp_path / "rec" / "error.rank3.pid1.json").write_text("{not json")  # skipped
    _records(tmp_path / "rec", 0, 5, TORCHRUN.replace("/proj", str(proj)))  # the agent's: not a cause
    failures = read_failures(tmp_path / "rec", TORCHRUN, project_test(proj), lambda site: Path(site).name)
    assert failures == [
        Failure("ValueError: bad shape", "train.py:12", (0, 1)),
        Failure("RuntimeError: rank 1 lost its shard", "ddp.py:21", (1,)),  # mp.spawn's process 1
    ]
    assert failure_lines(failures) == [
        "ranks 0, 1: ValueError: bad shape (train.py:12)",
        "rank 1: RuntimeError: rank 1 lost its shard (ddp.py:21)",
    ]
    # the first written comes first: the root cause before the ranks it took down
    _records(tmp_path / "rec", 2, 30, SPAWNED.replace("/proj", str(proj)), when=-1.0)
    assert read_failures(tmp_path / "rec", "", project_test(proj))[0].ranks == (1,)
    # one process alone is not named by its rank
    assert failure_lines([Failure("ValueError: x", "t.py:1", (0,))]) == ["ValueError: x (t.py:1)"]


def test_read_failures_falls_back_to_stderr(tmp_path):
    proj = tmp_path / "proj"
    stderr = SPAWNED.replace("/proj", str(proj))
    assert read_failures(tmp_path / "none", stderr, project_test(proj)) == [
        Failure("RuntimeError: rank 1 lost its shard", f"{proj}/ddp.py:21", (1,))
    ]
    # no traceback at all (a C++ abort): the last line said
    assert read_failures(tmp_path / "none", "terminate called\nAborted\n", project_test(proj)) == [
        Failure("Aborted", None, ())
    ]
    assert read_failures(tmp_path / "none", "", project_test(proj)) == []


def test_project_test_excludes_installed_packages(tmp_path):
    test = project_test(tmp_path)
    assert test(str(tmp_path / "a.py"))
    assert not test(str(tmp_path / "venv" / "lib" / "site-packages" / "x.py"))
    assert not test("/elsewhere/a.py") and not test("<string>")


def test_failure_lines_cap(tmp_path):
    many = [Failure(f"E{i}: x", None, (i,)) for i in range(6)]
    lines = failure_lines(many)
    assert (
        lines[0] == "rank 0: E0: x"
        and lines[1] == "rank 1: E1: x"
        and lines[-1] == "and 2 other cause(s)"
        and len(lines) == 5
    )


def test_the_failure_hook_records_the_exception_of_every_process(tmp_path):
    """runtime_shim's boot hook writes the exception that ends a process, with its rank."""
    script = tmp_path / "boom.py"
    script.write_text("def f():\n    raise KeyError('shard')\n\nf()\n")
    env = {
        "PYTHONPATH": f"{ROOT / 'runtime_shim' / '_boot'}:{ROOT}",
        "RUNTIME_SHIM_RECORD": str(tmp_path / "rec"),
        "RANK": "3",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "KeyError: 'shard'" in done.stderr  # the usual traceback still printed
    failures = read_failures(tmp_path / "rec", "", project_test(tmp_path))
    assert failures == [Failure("KeyError: 'shard'", f"{script}:2", (3,))]
    # not recording: no hook, no file
    env.pop("RUNTIME_SHIM_RECORD")
    subprocess.run([sys.executable, str(script)], env=env, capture_output=True)
    assert len(list((tmp_path / "rec").iterdir())) == 1


PARAMS = (Param("w", (2,), "float32", "aa"),)


def _side(steps: int, returncode: int = 0, **kw) -> SideResult:
    record = RankRecord(
        [Step(n, 0, 0, (0.5,), PARAMS) for n in range(1, steps + 1)], "exit" if not returncode else None
    )
    return SideResult(returncode, {0: record} if steps else {}, **kw)


def _output(tmp_path: Path, label: str, returncode: int = 0, stderr: str = "") -> RunOutput:
    return RunOutput(
        label, ("python", "t.py"), returncode, False, 1.0, tmp_path, tmp_path, tmp_path / label, stderr
    )


DISABLED = "grad_scaler.py:31: UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling."
CUDA = "AssertionError: Torch not compiled with CUDA enabled"


@pytest.mark.parametrize(
    ("cpu", "stderr", "why"),
    [
        (_side(3), "", None),
        (_side(3, 1), "ValueError: late", None),  # failed after steps for its own reasons: the CPU stands
        (_side(0, 1, needs_cuda=CUDA), CUDA, f"the original needs CUDA on the CPU ({CUDA})"),
        (_side(2, 1, needs_cuda=CUDA), CUDA, f"the original needs CUDA on the CPU ({CUDA})"),
        (_side(0), "", "the original made no optimizer step on the CPU"),
        (_side(0, 1), "IndexError: list index out of range", "the original exited 1 on the CPU before its first step"),
        (_side(3), DISABLED, "on the CPU torch switched off a CUDA feature the script uses (torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.)"),
        (_side(3, 1), DISABLED, None),
    ],
)  # fmt: skip
def test_when_the_cpu_cannot_be_the_reference(tmp_path, cpu, stderr, why):
    assert _cpu_unfit(cpu, _output(tmp_path, "cpu", cpu.returncode, stderr)) == why


def test_cuda_disabled_markers(tmp_path):
    autocast = "x.py:4: UserWarning: CUDA is not available or torch_xla is imported. Disabling autocast."
    assert _output(tmp_path, "cpu", 0, autocast).cuda_disabled() == (
        "CUDA is not available or torch_xla is imported. Disabling autocast."
    )
    assert _output(tmp_path, "cpu", 0, "UserWarning: something else").cuda_disabled() is None


TRANSFER = Reference("transfer", "the original needs CUDA on the CPU (x)", _side(0, 1, needs_cuda=CUDA))


@pytest.mark.parametrize(
    ("reference", "npu", "status", "message"),
    [
        (_side(3), _side(3), VerifyStatus.IDENTICAL, "identical: 3 step(s)"),
        (_side(3), _side(2), VerifyStatus.DIFFERENT, "rank 0 made 3 step(s) under transfer_to_npu and 2 in the converted copy"),
        (_side(0), _side(3), VerifyStatus.NO_STEPS, "the original made no optimizer step on the CPU nor under transfer_to_npu: nothing to compare; the converted script made 3 step(s)"),
        (_side(0), _side(0), VerifyStatus.NO_STEPS, "no optimizer step or backward() was seen in either run"),
        (_side(1, 1), _side(3), VerifyStatus.CPU_FAILED, "the original exited 1 under transfer_to_npu after 1 step(s)"),
        (_side(0, 1, needs_cuda=CUDA), _side(3), VerifyStatus.NEEDS_CUDA, f"the original cannot run on the CPU nor under transfer_to_npu ({CUDA})"),
        (_side(3), _side(1, 1), VerifyStatus.NPU_FAILED, "the converted script exited 1 on the simulated NPU after 1 step(s)"),
    ],
)  # fmt: skip
def test_verdicts_with_the_transfer_reference(reference, npu, status, message):
    verdict = judge(reference, npu, None, False, TRANSFER)
    assert verdict.status is status and message in verdict.message, verdict.message
    assert verdict.notes[0] == (
        "reference: the original under transfer_to_npu on the simulated NPU, because the original needs CUDA on the CPU (x)"
    )


def test_a_cpu_reference_with_no_step_is_no_steps_never_different():
    verdict = judge(_side(0), _side(4))
    assert verdict.status is VerifyStatus.NO_STEPS
    assert verdict.message.startswith("the original made no optimizer step on the CPU: nothing to compare")


def test_loss_difference_names_the_transfer_reference():
    npu = SideResult(0, {0: RankRecord([Step(1, 0, 0, (0.25,), PARAMS)], "exit")})
    verdict = judge(_side(1), npu, None, False, TRANSFER)
    assert verdict.message == (
        "different at step 1, rank 0: loss 0.5 under transfer_to_npu, 0.25 in the converted copy"
    )


def test_commands_and_environments_of_the_three_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_TRANSFER_TO_NPU", "1")
    monkeypatch.delenv("RUNTIME_SHIM_DEVICE_COUNT", raising=False)
    target = launch.Target(Path("train.py"), ("--lr", "1"))
    two = launch.Settings(steps=3, seed=0, nproc=2, timeout=None, cwd=tmp_path, devices=2)
    assert launch.transfer_command(target, two)[1:] == [
        "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "-m", "runtime_shim", "--transfer-to-npu", "train.py", "--lr", "1",
    ]  # fmt: skip
    cpu = launch.environment(tmp_path / "c", two, None, "cpu")
    transfer = launch.environment(tmp_path / "t", two, None, "transfer")
    npu = launch.environment(tmp_path / "n", two, tmp_path / "ops.json", "npu")
    assert cpu["CUDA_VISIBLE_DEVICES"] == "" and "RUNTIME_SHIM_DEVICE_COUNT" not in cpu
    assert "CUDA_VISIBLE_DEVICES" not in transfer and transfer["RUNTIME_SHIM_DEVICE_COUNT"] == "2"
    assert "RUNTIME_SHIM_OPCHECK_REPORT" not in transfer and npu["RUNTIME_SHIM_DEVICE_COUNT"] == "2"
    assert all("TORCH_TRANSFER_TO_NPU" not in env for env in (cpu, transfer, npu))


def test_reports_name_the_reference_and_the_failures(tmp_path):
    transfer_records = {0: RankRecord([Step(1, 0, 0, (0.5,), PARAMS)], "exit")}
    verdict = judge(SideResult(0, transfer_records), SideResult(0, transfer_records), None, False, TRANSFER)
    outcome = Outcome(
        verdict, Path("t.py"), Path("out/t.py"), _output(tmp_path, "cpu", 1, CUDA), _output(tmp_path, "npu"),
        {}, transfer_records, [], (), None, True, TRANSFER, _output(tmp_path, "transfer"), transfer_records,
        {"cpu": [Failure(CUDA, "t.py:3", ())]},
    )  # fmt: skip
    text = text_lines(outcome)
    assert "  original, CPU:              0 step(s), exit 1, 1.0 s" in text
    assert "  original, transfer_to_npu:  1 step(s), exit 0, 1.0 s" in text
    assert f"  the original on the CPU failed: {CUDA} (t.py:3)" in text
    assert "  note: reference: the original under transfer_to_npu on the simulated NPU, because" in "\n".join(
        text
    )
    document = json.loads(json_document(outcome))
    assert document["status"] == "identical"
    assert document["reference"] == {"kind": "transfer", "why": "the original needs CUDA on the CPU (x)"}
    assert document["transfer"]["steps"] == {"0": 1}
    assert document["failures"] == {"cpu": [{"exception": CUDA, "site": "t.py:3", "ranks": []}]}
