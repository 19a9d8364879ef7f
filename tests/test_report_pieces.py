"""Reports are written without copies of the whole file: the log and report.json as pieces around
their body, kept reports stored as they are and written to the cache at once, and a large tree's
results written to the cache in batches instead of held until the end of the run."""

from __future__ import annotations

import json
import pickle
import sqlite3
from pathlib import Path

import pytest

from ms_fmk_transplt import cache as cache_module
from ms_fmk_transplt import reports, run
from ms_fmk_transplt.cache import CACHE_FILE, ResultCache
from ms_fmk_transplt.records import FileResult, Finding, Operation, RunResult, Status


def _run() -> RunResult:
    findings = (
        Finding("TP001", Operation.MODIFY, 2, 2, "torch.cuda.synchronize -> torch.npu.synchronize"),
        Finding("TP002", Operation.UNSUPPORTED, 3, 4, "t\u00e9l\u00e9 \u2192 npu: no kernel"),
    )
    files = [FileResult(f"pkg/m{n}.py", Status.CONVERTED, findings=findings) for n in range(3)]
    files += [
        FileResult("notes.txt", Status.COPIED),
        FileResult("bad.py", Status.FAILED, reason="syntax error"),
    ]
    files = tuple(files)
    return RunResult("in", "out", files, rule_files=("mine.json",), seconds=1.5)


@pytest.mark.parametrize(
    ("whole", "body", "around"),
    [
        (reports.log_text, reports.log_body, reports.log_around),
        (reports.summary_json, reports.summary_body, reports.summary_around),
    ],
)
def test_the_pieces_are_the_report_and_hold_the_body_as_it_is(whole, body, around) -> None:
    result = _run()
    kept = body(result)
    pieces = around(result, kept)
    assert b"".join(pieces) == whole(result)
    # the body is in the pieces itself (or a view of it), not a copy of it
    assert any(piece is kept or (isinstance(piece, memoryview) and piece.obj is kept) for piece in pieces)
    assert b"".join(around(result, bytes(kept))) == whole(result)  # a body read back from the cache


def test_report_json_is_valid_with_no_file_and_with_unicode() -> None:
    empty = RunResult("in", "out", ())
    assert json.loads(reports.summary_json(empty))["files"] == []
    document = json.loads(reports.summary_json(_run()))
    assert document["files"][0]["findings"][1]["message"] == "t\u00e9l\u00e9 \u2192 npu: no kernel"
    assert document["totals"]["findings_unsupported"] == 3


def test_the_csv_and_log_are_utf8_text() -> None:
    result = _run()
    for content in (reports.change_list_csv(result), reports.log_text(result)):
        assert "t\u00e9l\u00e9 \u2192 npu" in bytes(content).decode("utf-8")
    assert (
        bytes(reports.change_list_csv(result)).splitlines()[0]
        == b"File,Start Line,End Line,Operation Type,Message,Rule"
    )


def _cache(tmp_path: Path) -> ResultCache:
    return ResultCache(tmp_path / "cache", b"rules", [])


def test_a_kept_report_is_read_back_as_it_was(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    content = bytearray(b"line\n" * 1000)
    cache.put_report("report.json", "/in", b"d" * 32, content)
    cache.flush()
    other = _cache(tmp_path)  # another run, while this one still has the file open
    assert other.get_report("report.json", "/in", b"d" * 32) == bytes(content)
    assert other.get_report("report.json", "/in", b"e" * 32) is None  # results changed: a miss
    assert other.get_report("report.json", "/elsewhere", b"d" * 32) is None
    assert other.get_report("change_list.csv", "/in", b"d" * 32) is None


def test_a_large_report_is_written_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "FLUSH_BYTES", 4000)
    cache = _cache(tmp_path)
    cache.put_report("change_list.csv", "/in", b"d" * 32, b"small\n")
    assert len(cache.pending) == 2  # a small one waits for the run's one transaction
    cache.put_report("report.json", "/in", b"d" * 32, bytearray(b"line\n" * 1000))
    assert cache.pending == []  # nothing of that size held until the cache is closed
    assert _cache(tmp_path).get_report("report.json", "/in", b"d" * 32) == b"line\n" * 1000


def test_a_truncated_or_unreadable_kept_report_is_a_miss(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.put_report("msFmkTranspltlog.txt", "/in", b"d" * 32, b"0123456789")
    cache.flush()
    db = sqlite3.connect(tmp_path / "cache" / CACHE_FILE)
    content_key = cache._content_key(cache.report_key("msFmkTranspltlog.txt", "/in"))
    db.execute("UPDATE results SET value = ? WHERE key = ?", (b"01234", content_key))
    db.commit()
    assert cache.get_report("msFmkTranspltlog.txt", "/in", b"d" * 32) is None
    head_key = cache.report_key("msFmkTranspltlog.txt", "/in")
    db.execute("UPDATE results SET value = ? WHERE key = ?", (b"not a pickle", head_key))
    db.commit()
    assert cache.get_report("msFmkTranspltlog.txt", "/in", b"d" * 32) is None


def test_a_report_kept_by_an_earlier_version_is_a_miss(tmp_path: Path) -> None:
    # the format before: the whole report pickled with its digest in one row
    cache = _cache(tmp_path)
    key = cache.report_key("report.json", "/in")
    assert cache.db is not None
    cache.db.execute("INSERT INTO results VALUES (?, ?)", (key, pickle.dumps(("report", b"d" * 32, b"{}"))))
    assert cache.get_report("report.json", "/in", b"d" * 32) is None


def test_results_are_written_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = _cache(tmp_path)
    finding = Finding("TP001", Operation.MODIFY, 1, 1, "x" * 200)
    cache.put(b"size", FileResult("m.py", Status.CONVERTED, findings=(finding,) * 5))
    monkeypatch.setattr(cache_module, "FLUSH_BYTES", cache.pending_bytes * 10)  # about ten a batch
    cache.flush()
    assert cache.db is not None
    cache.db.execute("DELETE FROM results")
    for n in range(45):
        cache.put(n.to_bytes(32, "big"), FileResult(f"m{n}.py", Status.CONVERTED, findings=(finding,) * 5))
    stored = cache.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert 0 < stored < 45 and len(cache.pending) == 45 - stored  # flushed on the way, the rest pending
    cache.flush()
    assert cache.db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 45
    assert all(cache.get(n.to_bytes(32, "big"), f"m{n}.py") is not None for n in range(45))


def test_a_run_writes_the_reports_it_would_join(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\ntorch.cuda.synchronize()\n")
    for cached in (False, True, True):  # no cache, cold, warm
        options = run.Options(project, tmp_path / "out", force=True, jobs=1, cache_dir=tmp_path / "cache")
        options.use_cache = cached
        result = run.convert_project(options)
        folder = run.output_folder(project, tmp_path / "out")
        assert (folder / "report.json").read_bytes() == reports.summary_json(result)
        assert (folder / run.LOG_NAME).read_bytes() == reports.log_text(result)
        assert (folder / "change_list.csv").read_bytes() == reports.change_list_csv(result)
