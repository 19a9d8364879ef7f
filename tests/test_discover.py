"""What the input walk takes: --exclude globs however their paths are spelled."""

from __future__ import annotations

import pytest

from ms_fmk_transplt.discover import excluded


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
