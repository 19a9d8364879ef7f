"""`ms_fmk_transplt explain FILE[:LINE]`: each literal's role and evidence, each finding's rule."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ms_fmk_transplt.cli import app
from ms_fmk_transplt.explain import explain, literal_roles

SOURCE = b"""import torch

BACKENDS = {"cuda": "nccl", "cpu": "gloo"}
x = torch.zeros(2, device="cuda")
print("running on cuda", BACKENDS.get(x.device.type))
names = {"cuda": 1}
"""


def test_every_literal_gets_a_role_with_evidence(builtin_tables) -> None:
    rows = {(r.line, r.code): (r.role, r.why) for r in literal_roles(SOURCE, builtin_tables)}
    assert rows[(3, '"cuda"')] == ("device", "a key of BACKENDS, looked up by a device")
    assert rows[(4, '"cuda"')] == ("device", "device= takes a device")
    assert rows[(5, '"running on cuda"')] == ("prose", "an argument of the message print(...)")
    assert rows[(6, '"cuda"')] == ("data key", "a dict key")


def test_one_line_shows_its_literals_and_its_rewrites(builtin_tables) -> None:
    lines = explain("t.py", SOURCE, builtin_tables, line=6)
    assert lines == [
        "t.py: converted",
        "string literals (role: evidence):",
        '  6:10  "cuda"  data key: a dict key',
        "rewrites and reports (rule):",
        "  6:10  TP103 UNSUPPORTED (heuristic)  'cuda' kept as the user's text (a dict key);"
        " if it names a device, write 'npu'",
    ]


def test_cli(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_bytes(SOURCE)
    result = CliRunner().invoke(app, ["explain", f"{script}:4"])
    assert result.exit_code == 0, result.output
    assert '4:27  "cuda"  device: device= takes a device' in result.output
    assert "4:27  TP103 MODIFY  'cuda' -> 'npu'" in result.output
    assert script.read_bytes() == SOURCE  # read, never written
    missing = CliRunner().invoke(app, ["explain", str(tmp_path / "none.py")])
    assert missing.exit_code != 0 and "none.py: no such file" in missing.output


FLOW = b"""import torch
from torch import autocast

scope = autocast
with scope("cuda"):
    dst = torch.device("cpu")
device = "cu" "da"
opts = parse(["--device=cuda:0"])
assert opts["device"] == "cuda:0"
"""


def test_the_evidence_names_the_flow(builtin_tables) -> None:
    """An alias of a device-taking API, pieces that spell a device, an argument parsed back."""
    rows = {(r.line, r.code): (r.role, r.why) for r in literal_roles(FLOW, builtin_tables)}
    assert rows[(5, '"cuda"')] == ("device", "argument 1 of torch.autocast takes a device")
    assert rows[(7, '"cu"')] == (
        "code",
        "the first piece of 'cuda', spelled in pieces: reported, not rewritten",
    )
    assert rows[(9, '"cuda:0"')] == (
        "user text",
        "the value the file's argument '--device=cuda:0' gives, compared as parsed back",
    )


def test_cli_names_what_is_wrong_with_the_target(tmp_path: Path, monkeypatch) -> None:
    """One error line, exit 2: a line that is not a number, out of range, a folder, no such file."""
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_bytes(SOURCE)  # 6 lines
    Path("pkg").mkdir()
    cases = {
        "train.py:abc": "error: train.py:abc: the line 'abc' is not a number (FILE:LINE, LINE from 1)\n",
        "train.py:0": "error: train.py:0: line 0 is out of range (train.py has 6 lines)\n",
        "train.py:7": "error: train.py:7: line 7 is out of range (train.py has 6 lines)\n",
        "train.py:99999": "error: train.py:99999: line 99999 is out of range (train.py has 6 lines)\n",
        "pkg": "error: pkg: is a folder; explain takes one file: FILE or FILE:LINE\n",
        "pkg:3": "error: pkg: is a folder; explain takes one file: FILE or FILE:LINE\n",
        "none.py:3": "error: none.py: no such file\n",
    }
    for target, expected in cases.items():
        result = CliRunner().invoke(app, ["explain", target])
        assert (result.exit_code, result.stderr) == (2, expected), target
    # the twins: the first and the last line, and a file whose name holds colons, are explained
    Path("e:100:.py").write_bytes(SOURCE)
    for target, first in (
        ("train.py:1", "train.py: converted"),
        ("train.py:6", "train.py: converted"),
        ("e:100:.py", "e:100:.py: converted"),
        ("e:100:.py:4", "e:100:.py: converted"),
    ):
        result = CliRunner().invoke(app, ["explain", target])
        assert result.exit_code == 0 and result.stdout.splitlines()[0] == first, target
    assert '6:10  "cuda"' in CliRunner().invoke(app, ["explain", "train.py:6"]).stdout


def test_a_cuda_alternative_beside_the_npu_one_says_why_it_stays(builtin_tables) -> None:
    source = b"""import torch

def init(device_type):
    if device_type == "cuda":
        return 1
    elif device_type == "npu":
        return 2
"""
    lines = explain("t.py", source, builtin_tables, line=4)
    assert lines == [
        "t.py: unchanged",
        "string literals (role: evidence):",
        '  4:23  "cuda"  CUDA\'s alternative: compared with device_type; kept: another branch of its'
        ' dispatch has the NPU\'s "npu"',
        "rewrites and reports (rule):",
        "  4:8  TP103 CHECK  branch kept as written: the code already has an NPU alternative (line 6)",
    ]


def test_explain_says_each_finding_with_the_logs_word(tmp_path: Path) -> None:
    """INSERT / MODIFY for a change, the issue's status (UNSUPPORTED-DTYPE, PARTIAL, NO-EFFECT,
    UNSUPPORTED, NOT-VERIFIED) for an issue: the same word the log gives the same finding."""
    import re

    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(
        "import torch\nimport torch.nn.functional as F\nx = torch.randn(4, 4).cuda()\n"
        "y = torch.matmul(x.double(), x.double())\nz = F.gelu(x)\ntorch.backends.cudnn.benchmark = True\n"
        "torch.cuda.nvtx.range_push('a')\nw = torch.linalg.svd(x)\n"
    )
    done = CliRunner().invoke(app, ["-i", str(src), "-o", str(tmp_path / "out"), "-q"])
    assert done.exit_code == 0, done.output
    log = (tmp_path / "out" / "src_msft" / "msFmkTranspltlog.txt").read_text()
    logged = {
        (int(m[1]), m[2], m[4]): m[3]
        for m in re.finditer(r"^m\.py:(\d+) \[(\w+)\] ([A-Z-]+) (.*?)(?: \(heuristic\))?$", log, re.M)
    }
    explained = CliRunner().invoke(app, ["explain", str(src / "m.py")]).output
    said = {
        (int(m[1]), m[2], m[4]): m[3]
        for m in re.finditer(r"^  (\d+):\d+  (\w+) ([A-Z-]+)(?: \(heuristic\))?  (.*)$", explained, re.M)
    }
    assert said == logged
    assert set(said.values()) == {
        "INSERT",
        "MODIFY",
        "UNSUPPORTED-DTYPE",
        "PARTIAL",
        "NO-EFFECT",
        "UNSUPPORTED",
        "NOT-VERIFIED",
    }
