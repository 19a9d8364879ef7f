"""Speed features that must never change a result: lean start-up, the result cache, parallelism."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ms_fmk_transplt import pipeline
from ms_fmk_transplt import run as run_module
from ms_fmk_transplt.cache import CACHE_FILE, rule_set_key
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.run import LOG_NAME, Options, convert_project

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import sys
from ms_fmk_transplt import cli
sys.argv = ["ms_fmk_transplt", "-i", sys.argv[1], "-o", sys.argv[2], "-q"]
cli.end_process = sys.exit  # main ends the process at once; the modules are read after it
try:
    cli.main()
except SystemExit:
    pass
print(" ".join(sorted(m for m in ("numpy", "rich.progress", "rich.table", "openpyxl") if sys.modules.get(m))))
"""


@pytest.mark.slow
def test_quiet_run_loads_no_numpy_openpyxl_bar_or_table(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(source), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert done.stdout.split() == []  # the xlsx report is written by reports/spreadsheet.py
    assert (tmp_path / "out" / "src_msft" / "unsupported_op.xlsx").stat().st_size > 0


_SCHEMA_PROBE = """
import sys
from ms_fmk_transplt import cli
sys.argv = ["ms_fmk_transplt", *sys.argv[1:]]
cli.end_process = sys.exit
try:
    cli.main()
except SystemExit as exc:
    print(exc.code, "jsonschema" in sys.modules)
"""


@pytest.mark.slow
def test_the_schema_is_loaded_for_user_rule_files_only(tmp_path: Path) -> None:
    """The shipped rules are checked against the schema by the tests (test_rule_files.py), so a run
    on them alone never imports jsonschema; a user's rule file is checked with it."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("import torch\nx = torch.zeros(2).cuda()\nname1(1)\n")
    rules = tmp_path / "rules.json"
    rules.write_text('{"rules": {"ArgsModifyRule": [{"func_name": "name1", "arg_idx": 0, "arg_new": "a"}]}}')
    told = []
    command = [sys.executable, "-c", _SCHEMA_PROBE, "-i", str(source), "-o", str(tmp_path / "out")]
    for extra in ([], ["-r", str(rules)]):
        done = subprocess.run(
            [*command, "-q", "--no-cache", "--force", *extra],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        told.append(done.stdout.split())
    assert told == [["0", "False"], ["0", "True"]]


def _outputs(root: Path) -> dict[str, object]:
    """Every output file's bytes; the xlsx by cell values (its zip stamps the time of writing)."""
    import openpyxl

    seen: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.suffix == ".xlsx":
            book = openpyxl.load_workbook(path)
            seen[rel] = [[list(row) for row in sheet.iter_rows(values_only=True)] for sheet in book]
        elif path.name == LOG_NAME:  # all but the run's own duration
            seen[rel] = [line for line in path.read_bytes().splitlines() if not line.startswith(b"seconds:")]
        elif path.is_file():
            seen[rel] = path.read_bytes()
    return seen


def _tree(root: Path) -> Path:
    source = root / "proj"
    shutil.copytree(ROOT / "sample_models", source)
    (source / "broken.py").write_text("def f(:\n")
    (source / "notes.txt").write_text("not python\n")
    return source


def _convert(source: Path, out: Path, **options: object) -> RunResult:
    """Every run writes the same output folder, so the reports name the same paths."""
    del out
    output = source.parent / "out"
    return convert_project(Options(source=source, output=output, force=True, **options))  # type: ignore[arg-type]


def test_cache_never_changes_a_result(tmp_path: Path) -> None:
    source, cache = _tree(tmp_path), tmp_path / "cache"
    reference = _outputs(Path(_convert(source, tmp_path / "none", use_cache=False).output_root))
    cold = _convert(source, tmp_path / "cold", cache_dir=cache)
    assert (cache / CACHE_FILE).is_file()
    assert _outputs(Path(cold.output_root)) == reference
    warm = _convert(source, tmp_path / "warm", cache_dir=cache)
    assert _outputs(Path(warm.output_root)) == reference
    assert warm.files == cold.files


def test_a_file_edited_while_it_converts_is_cached_under_the_bytes_converted(
    tmp_path: Path, monkeypatch
) -> None:
    # the run reads a file for its cache key, then converts it; if the user saves it in between,
    # the result is the saved version's and must be stored under that version's key, not the one read
    source, cache = _tree(tmp_path), tmp_path / "cache"
    edited = next(p for p in sorted(source.rglob("*.py")) if b"cuda" in p.read_bytes())
    first = edited.read_bytes()
    rel = edited.relative_to(source).as_posix()
    real = pipeline._convert_path

    def saved_meanwhile(name: str, path: str, tables):
        if name == rel and edited.read_bytes() == first:
            edited.write_bytes(first.replace(b"cuda", b"cpu"))
        return real(name, path, tables)

    monkeypatch.setattr(pipeline, "_convert_path", saved_meanwhile)
    _convert(source, tmp_path / "cold", cache_dir=cache, jobs=1)
    monkeypatch.setattr(pipeline, "_convert_path", real)
    edited.write_bytes(first)  # the first version again: its result was never stored
    again = _outputs(Path(_convert(source, tmp_path / "again", cache_dir=cache, jobs=1).output_root))
    assert again == _outputs(Path(_convert(source, tmp_path / "fresh", use_cache=False).output_root))
    # must not change: the saved version's result was stored under its own bytes, and is reused
    edited.write_bytes(first.replace(b"cuda", b"cpu"))
    converted: list[str] = []
    monkeypatch.setattr(pipeline, "_convert_path", lambda *a: converted.append(a[0]) or real(*a))
    _convert(source, tmp_path / "saved", cache_dir=cache, jobs=1)
    assert rel not in converted


def test_cache_hit_skips_conversion_and_edit_converts_only_that_file(tmp_path: Path, monkeypatch) -> None:
    source, cache = _tree(tmp_path), tmp_path / "cache"
    _convert(source, tmp_path / "cold", cache_dir=cache)
    converted: list[str] = []
    real = pipeline._convert_path

    def spy(rel: str, path: str, tables):
        converted.append(rel)
        return real(rel, path, tables)

    monkeypatch.setattr(pipeline, "_convert_path", spy)
    _convert(source, tmp_path / "warm", cache_dir=cache, jobs=1)
    assert converted == []
    edited = next(source.rglob("*.py"))
    edited.write_text(edited.read_text() + "\nimport torch\ny = torch.ones(1).cuda()\n")
    again = _outputs(Path(_convert(source, tmp_path / "edited", cache_dir=cache, jobs=1).output_root))
    assert converted == [edited.relative_to(source).as_posix()]
    assert again == _outputs(Path(_convert(source, tmp_path / "fresh", use_cache=False).output_root))


@pytest.mark.parametrize("content", [b"this is not a database, just text\n" * 20, b"sqlite"])
def test_corrupt_cache_file_is_ignored_with_a_warning(tmp_path: Path, content: bytes) -> None:
    source, cache = _tree(tmp_path), tmp_path / "cache"
    cache.mkdir()
    (cache / CACHE_FILE).write_bytes(content)
    result = _convert(source, tmp_path, cache_dir=cache)
    run = _outputs(Path(result.output_root))
    assert [w for w in result.warnings if "result cache" in w] == [
        f"result cache {cache / CACHE_FILE} ignored: file is not a database"
    ]
    assert (cache / CACHE_FILE).read_bytes() == content  # never rewritten
    assert run == _outputs(Path(_convert(source, tmp_path / "none", use_cache=False).output_root))


def test_foreign_sqlite_file_is_ignored_with_a_warning(tmp_path: Path) -> None:
    source, cache = _tree(tmp_path), tmp_path / "cache"
    cache.mkdir()
    with sqlite3.connect(cache / CACHE_FILE) as db:
        db.execute("CREATE TABLE results (name TEXT)")
    before = (cache / CACHE_FILE).read_bytes()
    assert _convert(source, tmp_path, cache_dir=cache).warnings == (
        f"result cache {cache / CACHE_FILE} ignored: not an ms_fmk_transplt result cache",
    )
    assert (cache / CACHE_FILE).read_bytes() == before


def test_no_cache_writes_no_cache_file(tmp_path: Path) -> None:
    source, cache = _tree(tmp_path), tmp_path / "cache"
    _convert(source, tmp_path / "out", cache_dir=cache, use_cache=False)
    assert not cache.exists()


def test_rule_file_edit_changes_the_key(tmp_path: Path) -> None:
    rules = tmp_path / "r.json"
    rules.write_text("[]")
    first = rule_set_key([rules], "2.1.0", ())
    rules.write_text("[ ]")
    assert rule_set_key([rules], "2.1.0", ()) != first
    assert rule_set_key([rules], "2.7.1", ()) != rule_set_key([rules], "2.1.0", ())
    assert rule_set_key([rules], "2.1.0", ("x",)) != rule_set_key([rules], "2.1.0", ())


def test_one_job_and_many_jobs_write_the_same_bytes(tmp_path: Path) -> None:
    source = _tree(tmp_path)
    serial = _outputs(Path(_convert(source, tmp_path, jobs=1, use_cache=False).output_root))
    parallel = _outputs(Path(_convert(source, tmp_path, jobs=2, use_cache=False).output_root))
    assert serial == parallel
    assert sum(1 for rel in serial if rel.endswith(".py")) > 5


def test_chunks_cover_every_file_once_largest_first() -> None:
    files = [(f"f{i}.py", f"/x/f{i}.py", size) for i, size in enumerate([5, 900, 40, 40, 3000, 1])]
    chunks = pipeline._chunks(files, jobs=2)
    flat = [rel for chunk in chunks for rel, _ in chunk]
    assert sorted(flat) == sorted(rel for rel, _, _ in files)
    assert flat[0] == "f4.py" and len(chunks) > 1


def test_renamed_report_warning_comes_back_in_the_result(tmp_path: Path) -> None:
    source = _tree(tmp_path)
    (source / "report.json").write_text("{}")
    assert _convert(source, tmp_path, use_cache=False).warnings == (
        "input has a file named report.json; report written as report.msft.json",
    )


def test_a_seen_rule_set_is_neither_validated_nor_compiled_again(tmp_path: Path, monkeypatch) -> None:
    source, cache = _tree(tmp_path), tmp_path / "cache"
    rules = tmp_path / "rules.json"
    rules.write_text(
        '{"rules": {"FuncNameModifyRule": [{"id": "U001", "old_name": "old_f", "new_name": "new_f", '
        '"surprise": 1}]}}'
    )
    cold = _convert(source, tmp_path / "cold", cache_dir=cache, rule_files=(rules,))
    assert any("surprise" in w for w in cold.warnings)

    def refuse(*args, **kwargs):
        raise AssertionError("rules loaded or compiled again on a warm run")

    import ms_fmk_transplt.ruleset as rules_package  # run.py imports these when it needs them

    monkeypatch.setattr(rules_package, "load_rules", refuse)
    monkeypatch.setattr(rules_package, "compile_rules", refuse)
    warm = _convert(source, tmp_path / "warm", cache_dir=cache, rule_files=(rules,))
    assert warm.files == cold.files and warm.rules == cold.rules
    assert warm.warnings == cold.warnings  # the unknown-key warning is not lost on a warm run
    rules.write_text(rules.read_text().replace("new_f", "newer_f"))  # an edited rule file is a new rule set
    with pytest.raises(AssertionError, match="compiled again"):
        _convert(source, tmp_path / "edited", cache_dir=cache, rule_files=(rules,))


def test_xlsx_is_reused_while_the_results_are_unchanged(tmp_path: Path, monkeypatch) -> None:
    source, cache = _tree(tmp_path), tmp_path / "cache"
    written: list[int] = []
    real = run_module.REPORTS["unsupported_op.xlsx"]

    def spy(run: RunResult) -> bytes:
        written.append(len(run.files))
        return real(run)

    monkeypatch.setitem(run_module.REPORTS, "unsupported_op.xlsx", spy)
    _convert(source, tmp_path / "cold", cache_dir=cache)
    warm = _outputs(Path(_convert(source, tmp_path / "warm", cache_dir=cache).output_root))
    assert len(written) == 1  # the warm run wrote the kept bytes
    edited = next(p for p in sorted(source.rglob("*.py")) if p.name != "broken.py")
    edited.write_text(edited.read_text() + "\nimport torch\ny = torch.ones(1).cuda()\n")
    again = _outputs(Path(_convert(source, tmp_path / "edited", cache_dir=cache).output_root))
    assert len(written) == 2  # a changed result writes the report anew
    assert again["unsupported_op.xlsx"] != warm["unsupported_op.xlsx"]
    assert again == _outputs(Path(_convert(source, tmp_path / "fresh", use_cache=False).output_root))


@pytest.mark.slow
def test_a_fully_cached_run_imports_neither_libcst_nor_the_rules(tmp_path: Path) -> None:
    """Every file in the cache: no table is unpickled, so no engine, no libcst, no jsonschema, and
    no worker is started, so no multiprocessing."""
    source, cache = _tree(tmp_path), tmp_path / "cache"
    (source / "run.sh").write_text("nvidia-smi\nexport CUDA_VISIBLE_DEVICES=0\n")  # a text-scanned file
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ms_fmk_transplt.run import Options, convert_project\n"
        f"run = convert_project(Options(source=Path({str(source)!r}), output=Path({str(tmp_path / 'out')!r}),"
        f" force=True, cache_dir=Path({str(cache)!r})))\n"
        "lazy = ('libcst', 'jsonschema', 'ms_fmk_transplt.engine.interface.tables', 'multiprocessing')\n"
        "print(sorted(m for m in lazy if m in sys.modules))\n"
        "print(sum(len(f.findings) for f in run.files))\n"
    )
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert cold.stdout.splitlines()[0] != "[]"  # the cold run compiled and converted
    assert warm.stdout.splitlines() == ["[]", cold.stdout.splitlines()[1]]


def test_a_quiet_run_lists_issues_only_when_something_shows_or_judges_them(
    tmp_path: Path, monkeypatch
) -> None:
    from click.testing import CliRunner

    from ms_fmk_transplt import analysis
    from ms_fmk_transplt.cli import EXIT_GATE, app

    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("import torch\nx = torch.zeros(2).cuda()\ny = torch.fft.fftshift(x)\n")
    listed: list[int] = []
    real = analysis.issues

    def counting(run: RunResult) -> list:
        listed.append(1)
        return real(run)

    monkeypatch.setattr(analysis, "issues", counting)

    def convert(*args: str) -> int:
        listed.clear()
        command = [
            "-i",
            str(source),
            "-o",
            str(tmp_path / "out"),
            "--force",
            "--cache-dir",
            str(tmp_path / "c"),
        ]
        return CliRunner().invoke(app, [*command, *args]).exit_code

    convert("-q")  # the reports' writers list them too: from here on, the reports are kept
    assert convert("-q") == 0 and not listed  # nothing reads them
    # each of these reads them, and must see them
    assert convert("-q", "--fail-on", "unsupported") == EXIT_GATE and listed
    assert convert("-q", "--report-format", "json", "--report", str(tmp_path / "r.json")) == 0 and listed
    assert json.loads((tmp_path / "r.json").read_text())["issues"]
    assert convert("-q", "--write-baseline", str(tmp_path / "b.json")) == 0 and listed
    assert convert() == 0 and listed  # the summary table
