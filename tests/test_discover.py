"""What the input walk takes: --exclude globs however their paths are spelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from ms_fmk_transplt.discover import TreeEntryKind, apply_excludes, discover, excluded


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
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.py").write_text("x = 1\n")
    (src / "b.py").write_text("x = 1\n")
    (tmp_path / "other").mkdir()
    return src


def _kept(src: Path, globs: tuple[str, ...], base: Path | None = None) -> tuple[list[str], list[str]]:
    warnings: list[str] = []
    entries = apply_excludes(discover(src), globs, src if base is None else base, warnings)
    return sorted(e.rel for e in entries if e.kind is TreeEntryKind.PYTHON), warnings


@pytest.mark.parametrize(
    "spelled",
    ["{src}/sub", "{src}/sub/", "{src}/sub/a.py", "{src}/s*", "{src}//sub/", "{src}/./sub", "{src}/sub/**",
     "{link}/sub", "{src}/../src/sub"],
)  # fmt: skip
def test_an_absolute_exclude_inside_the_input_matches(tmp_path: Path, spelled: str) -> None:
    src = _tree(tmp_path)
    (tmp_path / "link").symlink_to(src)
    glob = spelled.format(src=src, link=tmp_path / "link")
    assert _kept(src, (glob,)) == (["b.py"], [])
    assert _kept(tmp_path / "link", (glob,)) == (["b.py"], [])  # the input given through the link


def test_an_absolute_exclude_outside_the_input_matches_nothing_and_says_so(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    for glob in (str(tmp_path / "other"), str(tmp_path / "src2/sub"), "/sub", "/"):
        assert _kept(src, (glob,)) == (
            ["b.py", "sub/a.py"],
            [f"--exclude {glob}: outside {src}, matches nothing"],
        )
    assert _kept(src, (str(src),)) == (
        ["b.py", "sub/a.py"], [f"--exclude {src}: the input folder itself, excludes nothing"]
    )  # fmt: skip


def test_relative_excludes_are_taken_as_before(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    assert _kept(src, ("sub",)) == (["b.py"], [])
    # a relative glob that matches nothing excludes nothing, and is said
    assert _kept(src, ("other",)) == (["b.py", "sub/a.py"], [f"--exclude other: matches nothing in {src}"])


@pytest.mark.parametrize(
    ("glob", "hint"),
    [
        ("sbu/*", " (did you mean sub/*?)"),  # a misspelt folder
        ("./sbu/", " (did you mean sub?)"),
        ("sub/A.py", " (did you mean sub/a.py?)"),  # a misspelt file in a folder that exists
        ("bb.py", " (did you mean b.py?)"),
        ("zzz/*", ""),  # nothing close
        ("*_pb2.py", ""),  # nothing spelled out to correct
        ("**/vendr/**", ""),  # at no fixed depth
    ],
)
def test_an_exclude_that_matches_nothing_says_what_it_may_have_meant(
    tmp_path: Path, glob: str, hint: str
) -> None:
    src = _tree(tmp_path)
    assert _kept(src, (glob,)) == (
        ["b.py", "sub/a.py"],
        [f"--exclude {glob}: matches nothing in {src}{hint}"],
    )


def test_an_exclude_that_matches_is_not_said(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    assert _kept(src, ("sub/*", "*.py", "**/a.py")) == ([], [])


def test_an_absolute_name_matches_an_absolute_exclude_spelled_the_same() -> None:
    # analyse given files outside the current folder names them by their absolute path
    assert excluded("/abs/vendor/x.py", ("/abs/vendor",))
    assert excluded("/abs/vendor/x.py", ("/abs/vendor/*.py",))
    assert not excluded("abs/vendor/x.py", ("/abs/vendor",))
    assert not excluded("/abs/vendor2/x.py", ("/abs/vendor",))


def _out_tree(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    for folder in ("out", "a/out", "a/b"):
        (root / folder).mkdir(parents=True)
        (root / folder / "x.py").write_text("x = 1\n")
    return root


def _rels(root: Path, exclude: tuple[Path, ...]) -> set[str]:
    return {e.rel for e in discover(root, exclude=exclude)}


def test_an_excluded_folder_is_not_walked_however_it_is_named(tmp_path: Path, monkeypatch) -> None:
    root = _out_tree(tmp_path)
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
