"""Multi-file fixtures: devices across the project's own modules (engine/project/project_devices.py,
engine/project/project_results.py, engine/project/project_index.py, engine/devices/project_calls.py).

tests/fixtures/projects/<case>/ is a small project converted as one input tree: each `X.py`
converts to `X.out.py` beside it (none: it must not change), and `findings.txt` holds every
file's findings (support checks left out). A case that changes a file has a must-not-change twin,
`<case>_twin`, in which no file changes. Every output converts to itself again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import findings_text

from ms_fmk_transplt.run import Options, convert_project

PROJECTS = Path(__file__).parent / "fixtures" / "projects"
OUT = ".out.py"


def _inputs(case: Path) -> list[Path]:
    return sorted(p for p in case.rglob("*.py") if not p.name.endswith(OUT))


def _convert(case: Path, inputs: dict[str, str], tmp: Path) -> tuple[dict[str, str], str]:
    root = tmp / case.name
    for rel, text in inputs.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    run = convert_project(Options(source=root, output=tmp / "out", use_cache=False))
    out = Path(run.output_root)
    texts = (
        (result.path, findings_text(result, checks=False))
        for result in sorted(run.files, key=lambda r: r.path)
    )
    report = "".join(f"== {path}\n{text}" for path, text in texts if text)
    return {rel: (out / rel).read_text() for rel in inputs}, report


@pytest.mark.parametrize("case", sorted(p for p in PROJECTS.iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_project_fixture(case: Path, tmp_path: Path, update_fixtures: bool) -> None:
    inputs = {str(p.relative_to(case)): p.read_text() for p in _inputs(case)}
    converted, report = _convert(case, inputs, tmp_path / "a")
    if update_fixtures:
        for rel, text in converted.items():
            expected = case / rel.replace(".py", OUT)
            if text != inputs[rel] or expected.exists():
                expected.write_text(text)
        (case / "findings.txt").write_text(report)
    for rel, text in converted.items():
        expected = case / rel.replace(".py", OUT)
        assert text == (expected.read_text() if expected.exists() else inputs[rel]), rel
    assert report == (case / "findings.txt").read_text()
    again, _ = _convert(case, converted, tmp_path / "b")
    assert again == converted, "converting the output again changed it"
    shutil.rmtree(tmp_path)


def test_every_changing_project_has_a_must_not_change_twin() -> None:
    for case in sorted(p for p in PROJECTS.iterdir() if p.is_dir()):
        if case.name.endswith("_twin"):
            assert not list(case.rglob("*" + OUT)), f"{case.name} must change nothing"
        else:
            twin = case.with_name(case.name + "_twin")
            assert list(case.rglob("*" + OUT)), f"{case.name} changes nothing: name it {twin.name}"
            assert twin.is_dir(), f"{case.name} needs a must-not-change twin {twin.name}"
