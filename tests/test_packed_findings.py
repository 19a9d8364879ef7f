"""A cached result's findings stay pickled until something reads them, and then are the findings."""

from __future__ import annotations

import pickle
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt import records
from ms_fmk_transplt.cache import CACHE_FILE, ResultCache
from ms_fmk_transplt.cli import app
from ms_fmk_transplt.records import FileResult, Finding, Operation, PackedFindings, Status
from ms_fmk_transplt.run import Options, convert_project

CODE = "import torch\nx = torch.zeros(2).cuda()\ny = torch.fft.fftshift(x)\n"


def _findings() -> tuple[Finding, ...]:
    return tuple(Finding("TP001", Operation.MODIFY, n, n, f"change {n}") for n in range(1, 4))


def _cache(tmp_path: Path) -> ResultCache:
    return ResultCache(tmp_path / "cache", b"rules", [])


def test_a_hit_holds_its_findings_packed_and_equal(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    result = FileResult("a.py", Status.CONVERTED, findings=_findings(), output=b"x\n", supported=2)
    cache.put(b"k" * 32, result)
    cache.flush()
    hit = cache.get(b"k" * 32, "a.py")
    assert hit is not None and isinstance(hit.findings, PackedFindings)
    assert len(hit.findings) == 3 and hit.findings._items is None  # counted without unpickling
    assert hit == result and result == hit and hash(hit) == hash(result)
    assert list(hit.findings) == list(result.findings) and hit.findings[1:] == result.findings[1:]
    assert pickle.loads(pickle.dumps(hit)).findings == result.findings
    assert type(pickle.loads(pickle.dumps(hit)).findings) is tuple  # stored or sent on as a tuple


def test_a_hit_without_findings_holds_the_empty_tuple(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.put(b"k" * 32, FileResult("a.py", Status.UNCHANGED))
    cache.flush()
    hit = cache.get(b"k" * 32, "a.py")
    assert hit is not None and hit.findings == ()


def test_damaged_packed_findings_are_a_miss(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.put(b"k" * 32, FileResult("a.py", Status.UNCHANGED, findings=_findings()))
    cache.flush()
    assert cache.db is not None
    value = pickle.loads(cache.db.execute("SELECT value FROM results").fetchone()[0])
    message = b"change 2"
    assert message in value[3]
    damaged = (*value[:3], value[3].replace(message, b"change 9"), value[4])
    cache.db.execute("UPDATE results SET value = ?", (pickle.dumps(damaged),))
    assert cache.get(b"k" * 32, "a.py") is None
    assert cache.get(b"k" * 32, "b.py") is None  # another file's entry is never its


def test_a_warm_quiet_run_unpickles_no_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(CODE)
    (source / "same.py").write_text("import torch\nz = torch.zeros(1)\n")
    unpickled: list[int] = []
    real = records.Finding.__setstate__

    def counting(self: Finding, state: tuple) -> None:
        unpickled.append(1)
        real(self, state)

    monkeypatch.setattr(records.Finding, "__setstate__", counting)

    def convert(*args: str) -> str:
        unpickled.clear()
        out = ["-o", str(tmp_path / "out"), "--force", "--cache-dir", str(tmp_path / "c"), *args]
        done = CliRunner().invoke(app, ["-i", str(source), *out])
        assert done.exit_code in (0, 4), done.output
        return (tmp_path / "out" / "src_msft" / "report.json").read_text()

    cold = convert("-q")
    assert convert("-q") == cold and not unpickled
    convert()  # the summary table reads them
    assert unpickled
    convert("-q", "--fail-on", "unsupported")  # so does a gate
    assert unpickled


def test_results_read_back_equal_the_fresh_ones_whatever_reads_them(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(CODE)
    (source / "notes.md").write_text("run with CUDA_VISIBLE_DEVICES=0 python train.py\n")
    options = Options(source, tmp_path / "out", cache_dir=tmp_path / "c", force=True, jobs=1)
    cold = convert_project(options)
    warm = convert_project(options)
    fresh = convert_project(Options(source, tmp_path / "out", use_cache=False, force=True, jobs=1))
    assert warm.files == cold.files == fresh.files
    assert [tuple(r.findings) for r in warm.files] == [tuple(r.findings) for r in fresh.files]
    with sqlite3.connect(tmp_path / "c" / CACHE_FILE) as db:
        assert db.execute("SELECT count(*) FROM results").fetchone()[0] >= 2
