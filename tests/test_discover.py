"""What the input walk takes: --exclude globs however their paths are spelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from ms_fmk_transplt.discover import discover, excluded


@pytest.mark.parametrize(
    "glob",
    ["mnist/main.py", "./mnist/main.py", "././mnist/main.py", "mnist//main.py", "mnist/./main.py",
     "mnist", "mnist/", "./mnist/", "./mnist/*", "**/main.py", "./**/main.py", "mnist/**", "./mnist/**/"],
)  # fmt: skip
def test_an_exclude_glob_matches_however_its_path_is_spelled(glob: str) -> None:
    assert excluded("mnist/main.py", (glob,))


@pytest.mark.parametrize("glob", ["./main.py", "mnist/", "./mnist/", "mnist/*.txt", "./", ""])
def test_an_exclude_glob_matches_nothing_else(glob: str) -> None:
    assert not excluded("mnist2/main.py", (glob,))


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    for folder in ("out", "a/out", "a/b"):
        (root / folder).mkdir(parents=True)
        (root / folder / "x.py").write_text("x = 1\n")
    return root


def _rels(root: Path, exclude: tuple[Path, ...]) -> set[str]:
    return {e.rel for e in discover(root, exclude=exclude)}


def test_an_excluded_folder_is_not_walked_however_it_is_named(tmp_path: Path, monkeypatch) -> None:
    root = _tree(tmp_path)
    everything = _rels(root, ())
    without = everything - {"out", "out/x.py"}
    (tmp_path / "link").symlink_to(root / "out")
    monkeypatch.chdir(root / "a")
    for spelled in (root / "out", tmp_path / "link", Path("../out"), Path("b/../../out/")):
        assert _rels(root, (spelled,)) == without, spelled
    # must not: a folder of the same name elsewhere, a path not made yet, a file
    assert _rels(root, (root / "a" / "out",)) == everything - {"a/out", "a/out/x.py"}
    assert _rels(root, (root / "missing",)) == everything
    assert _rels(root, (root / "out" / "x.py",)) == everything
    assert _rels(root, (tmp_path / "elsewhere",)) == everything
