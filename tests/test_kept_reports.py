"""The xlsx is kept in the result cache and reused while the results it was written from are the
same, and written again when they change."""

from __future__ import annotations

from pathlib import Path

import pytest

from ms_fmk_transplt import run
from ms_fmk_transplt.records import Status


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


def test_a_kept_xlsx_names_the_output_folder_of_the_run_that_reuses_it(
    tmp_path: Path, writes: list[int]
) -> None:
    import io

    import openpyxl

    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    cache = tmp_path / "cache"

    def reports_in(content: bytes) -> str:
        sheet = openpyxl.load_workbook(io.BytesIO(content))["Summary"]
        return next(row[1] for row in sheet.iter_rows(values_only=True) if row[0] == "reports in")

    for out in ("out", "elsewhere"):  # a warm run into another folder names that folder
        assert reports_in(_convert(project, tmp_path / out, cache)) == str(
            run.output_folder(project, tmp_path / out)
        )
    assert len(writes) == 2
    _convert(project, tmp_path / "out", cache)  # must not change: the same folder again reuses its xlsx
    assert len(writes) == 2


def _reports(source: Path, out: Path, cache: Path | None) -> dict[str, str]:
    options = run.Options(source, out, force=True, jobs=1)
    if cache is None:
        options.use_cache = False
    else:
        options.cache_dir = cache
    run.convert_project(options)
    folder = run.output_folder(source, out)
    return {name: (folder / name).read_text() for name in (run.LOG_NAME, "report.json", "change_list.csv")}


def _without_time(log: str) -> str:
    return "\n".join(line for line in log.splitlines() if not line.startswith("seconds: "))


def test_kept_log_json_and_csv_are_the_reports_written_afresh(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\ntorch.cuda.synchronize()\n")
    (project / "util.py").write_text("import torch\ny = torch.zeros(1, dtype=torch.float64).npu()\n")
    cache = tmp_path / "cache"
    _reports(project, tmp_path / "a", cache)
    warm = _reports(project, tmp_path / "b", cache)  # kept parts, another output folder
    fresh = _reports(project, tmp_path / "b", None)
    assert str(tmp_path / "b") in warm[run.LOG_NAME] and str(tmp_path / "a") not in warm[run.LOG_NAME]
    assert _without_time(warm[run.LOG_NAME]) == _without_time(fresh[run.LOG_NAME])
    assert warm["report.json"] == fresh["report.json"]
    assert warm["change_list.csv"] == fresh["change_list.csv"]
    # a changed finding is in the next run's reports
    (project / "util.py").write_text("import torch\ny = torch.zeros(1).cuda()\nz = torch.cuda.Stream()\n")
    changed = _reports(project, tmp_path / "b", cache)
    fresh = _reports(project, tmp_path / "b", None)
    assert _without_time(changed[run.LOG_NAME]) == _without_time(fresh[run.LOG_NAME])
    assert changed["report.json"] == fresh["report.json"] != warm["report.json"]
    assert changed["change_list.csv"] == fresh["change_list.csv"] != warm["change_list.csv"]


def test_the_results_digest_reads_every_field_a_report_may_show() -> None:
    # _results_digest names FileResult's fields one by one (Finding's come from __getstate__):
    # a new field must be added there, or kept reports would miss a change in it.
    from dataclasses import fields

    from ms_fmk_transplt.records import FileResult

    names = {f.name for f in fields(FileResult)}
    assert names == {
        "path",
        "status",
        "findings",
        "reason",
        "detail",
        "output",  # the converted bytes: no report shows them
        "supported",
        "supported_by_kernel",
    }


def test_equal_results_from_the_cache_and_fresh_have_one_digest(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    cache = tmp_path / "cache"
    options = run.Options(project, tmp_path / "out", cache_dir=cache, force=True, jobs=1)
    first = run.convert_project(options)
    second = run.convert_project(options)  # every result read back from the cache
    assert run._results_digest(first) == run._results_digest(second)
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda(0)\n")
    assert run._results_digest(run.convert_project(options)) != run._results_digest(first)


def test_a_warm_run_finds_its_digest_by_the_results_keys(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (project / "util.py").write_text("import torch\ny = torch.zeros(1)\n")
    (project / "notes.txt").write_text("notes\n")
    cache = tmp_path / "cache"
    digests: list[int] = []
    real = run._results_digest

    def counting(result: run.RunResult, keyed=None) -> bytes:
        digests.append(keyed is None)
        return real(result, keyed)

    monkeypatch.setattr(run, "_results_digest", counting)
    _convert(project, tmp_path / "out", cache)
    assert digests == [False, True]  # the cold run: the key digest, then the values' digest
    digests.clear()
    _convert(project, tmp_path / "out", cache)
    assert digests == [False]  # warm: the values' digest is read back
    digests.clear()
    (project / "util.py").write_text("import torch\ny = torch.zeros(1)\n\n")  # a new key, same findings
    _convert(project, tmp_path / "out", cache)
    assert digests == [False, True]


def _keyed_run(tmp_path: Path) -> tuple[run.RunResult, dict]:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    result = run.convert_project(run.Options(project, tmp_path / "out", use_cache=False, jobs=1))
    keyed = {f.path: (f.findings, bytes(32)) for f in result.files}
    return result, keyed


def test_the_key_digest_stands_for_the_findings_only_while_they_are_the_noted_ones(tmp_path: Path) -> None:
    from dataclasses import replace

    result, keyed = _keyed_run(tmp_path)
    by_key = run._results_digest(result, keyed)
    assert by_key != run._results_digest(result)  # a key, not the findings' values
    assert run._results_digest(result, {**keyed, "train.py": (keyed["train.py"][0], b"\1" * 32)}) != by_key
    assert result.files[0].findings
    # findings amended after the cache (as a stage may), even to equal ones: read by value
    for findings in ((), tuple(list(result.files[0].findings))):
        amended = replace(result, files=(replace(result.files[0], findings=findings),))
        assert run._results_digest(amended, keyed) == run._results_digest(amended) != by_key
    # what the key does not stand for is read by value: status, reason, counts
    skipped = replace(result, files=tuple(replace(f, status=Status.SKIPPED) for f in result.files))
    assert run._results_digest(skipped, keyed) != by_key


def test_a_warm_run_counts_no_totals(tmp_path: Path, monkeypatch) -> None:
    # the totals read every finding; the log's and report.json's are in their kept bodies
    from ms_fmk_transplt.reports import text, xlsx

    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    counted: list[str] = []
    real = text.totals

    def counting(module: str):
        def totals(result: run.RunResult) -> dict[str, int]:
            counted.append(module)
            return real(result)

        return totals

    monkeypatch.setattr(text, "totals", counting("text"))
    monkeypatch.setattr(xlsx, "totals", counting("xlsx"))
    cold = _reports(project, tmp_path / "a", tmp_path / "cache")
    assert counted
    counted.clear()
    _reports(project, tmp_path / "a", tmp_path / "cache")
    assert not counted
    warm = _reports(project, tmp_path / "b", tmp_path / "cache")
    assert counted == ["xlsx"]  # it names its folder: written again for a new one, the others not
    assert warm["report.json"] == cold["report.json"].replace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert '"files_converted": 1' in warm["report.json"]
