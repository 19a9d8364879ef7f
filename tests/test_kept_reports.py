"""The xlsx is kept in the result cache and reused while the results it was written from are the
same, and written again when they change."""

from __future__ import annotations

from pathlib import Path

import pytest

from ms_fmk_transplt import run


@pytest.fixture
def writes(monkeypatch) -> list[int]:
    calls: list[int] = []
    writer = run.REPORTS["unsupported_op.xlsx"]

    def counting(result: run.RunResult) -> bytes:
        calls.append(len(result.files))
        return writer(result)

    monkeypatch.setitem(run.REPORTS, "unsupported_op.xlsx", counting)
    return calls


def _convert(source: Path, out: Path, cache: Path) -> bytes:
    run.convert_project(run.Options(source, out, cache_dir=cache, force=True, jobs=1))
    return (run.output_folder(source, out) / "unsupported_op.xlsx").read_bytes()


def test_the_xlsx_is_reused_until_a_finding_changes(tmp_path: Path, writes: list[int]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (project / "util.py").write_text("import torch\ny = torch.zeros(1)\n")
    cache = tmp_path / "cache"
    first = _convert(project, tmp_path / "out", cache)
    assert _convert(project, tmp_path / "out", cache) == first
    assert len(writes) == 1  # the second run reused it
    (project / "util.py").write_text("import torch\ny = torch.zeros(1)\n\n")  # same findings
    _convert(project, tmp_path / "out", cache)
    assert len(writes) == 1
    (project / "util.py").write_text("import torch\ny = torch.zeros(1).cuda()\n")
    changed = _convert(project, tmp_path / "out", cache)
    assert len(writes) == 2 and changed != first
