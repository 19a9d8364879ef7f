"""The maps say what is true: every file or folder a package map names in backticks exists.

A map is a README that tells where each part lives (ms_fmk_transplt/, runtime_shim/,
sample_models/; bench/README.md is left out: it names files of the corpora it measures). A name
resolves against the map's own folder, then the repository root; a bare name (`walk.py`, `lib/`)
also against each folder named before it on the same line (`advice/`, `inhouse_ctr/train.py`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPS = ["ms_fmk_transplt/README.md", "runtime_shim/README.md", "sample_models/README.md"]
# a backticked token that looks like a path: a folder (ends in "/") or a name with a file suffix
PATH_TOKEN = re.compile(r"`([A-Za-z0-9_.\-/]+(?:/|\.(?:py|json|jsonl|md|sh|cpp|toml|txt|csv|xlsx)))`")
# outputs of a run, named as what the user gets, not as files of the repository
OUTPUTS = {"msFmkTranspltlog.txt", "unsupported_op.xlsx", "change_list.csv", "report.json"}
# files of torch_npu that the runtime mirrors, named as the source of a behaviour
UPSTREAM = {"torch_npu/contrib/transfer_to_npu.py", "apis_config.json"}


def named_paths(text: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line number, token, the folders named before it on that line) for each path token."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        folders: list[str] = []
        for token in PATH_TOKEN.findall(line):
            found.append((number, token, tuple(folders)))
            folder = token if token.endswith("/") else token.rpartition("/")[0]
            if folder and folder not in folders:
                folders.append(folder)
    return found


def resolves(token: str, map_dir: Path, folders: tuple[str, ...]) -> bool:
    bases = [map_dir, ROOT]
    if "/" not in token.rstrip("/"):
        bases += [base / folder for folder in folders for base in (map_dir, ROOT)]
    return any((base / token).exists() for base in bases)


def test_the_walk_takes_the_folder_named_before_a_bare_file_name() -> None:
    line = "| x | `advice/`: `walk.py` (one walk), `engine/conversion/convert.py`; `bench/` |"
    assert named_paths(line) == [
        (1, "advice/", ()),
        (1, "walk.py", ("advice/",)),
        (1, "engine/conversion/convert.py", ("advice/",)),
        (1, "bench/", ("advice/", "engine/conversion")),
    ]
    assert resolves("walk.py", ROOT / "ms_fmk_transplt", ("advice/",))
    assert not resolves("walk.py", ROOT / "ms_fmk_transplt", ())
    assert named_paths("`rich` and `cli` are words, `a b.py` is prose") == []


@pytest.mark.parametrize("map_path", MAPS)
def test_every_path_a_map_names_exists(map_path: str) -> None:
    path = ROOT / map_path
    missing = [
        f"{map_path}:{number}: `{token}`"
        for number, token, folder in named_paths(path.read_text(encoding="utf-8"))
        if token not in OUTPUTS | UPSTREAM and not resolves(token, path.parent, folder)
    ]
    assert not missing, "named in a map but not in the repository:\n" + "\n".join(missing)


def test_every_test_file_the_scripts_run_exists() -> None:
    """`.ci/run` and the tools' shell scripts name test files by path: a renamed test file must be
    renamed there too (pytest given a missing file runs nothing and CI fails late)."""
    scripts = [ROOT / ".ci" / "run", *sorted((ROOT / "tools").glob("*.sh"))]
    named = {
        (script.name, token)
        for script in scripts
        for token in re.findall(r"\btests/[\w/]+\.py\b", script.read_text(encoding="utf-8"))
    }
    assert named, "no script names a test file: the pattern is stale"
    assert [f"{name}: {token}" for name, token in sorted(named) if not (ROOT / token).is_file()] == []
