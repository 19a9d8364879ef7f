"""Devices across the project's own modules (engine/project/project_devices.py).

A `"cuda"` handed to the project's own helper in another module is a device when the helper hands
that parameter on to a device API (directly, through an attribute of `self`, a dataclass field, or
another helper of another module); twins: a parameter that is only printed, and the project's own
enum of labels, stay as written.
"""

from __future__ import annotations

from pathlib import Path

from ms_fmk_transplt.engine.project import ProjectLayout
from ms_fmk_transplt.run import Options, convert_project

HELPERS = """\
import torch
from dataclasses import dataclass
from enum import Enum

from pkg.moves import place


def move(batch, target):
    return batch.to(target)


def forward(batch, where):
    return place(batch, where)  # handed on to a helper of a third module


def describe(kind):
    print(f"running on {kind}")


class Runner:
    def __init__(self, model, where):
        self.model = model
        self.where = where

    def run(self, x):
        return self.model(x.to(self.where))


@dataclass
class Config:
    accel: str = "cpu"
    title: str = "run"

    @property
    def torch_device(self):
        return torch.device(self.accel)


class TimerType(Enum):
    CUDA = "cuda"
    CPU = "cpu"
"""

MOVES = """\
def place(tensor, device_spec):
    return tensor.to(device=device_spec)
"""

TRAIN = """\
import torch
from pkg.helpers import Config, Runner, TimerType, describe, forward, move
from pkg import helpers


def main():
    x = torch.ones(2)
    y = move(x, "cuda")
    z = helpers.move(x, target="cuda")
    r = Runner(torch.nn.Linear(2, 2), "cuda")
    cfg = Config(accel="cuda", title="cuda")
    w = forward(x, "cuda")
    describe("cuda")
    timer = TimerType("cuda")
    return y, z, r, cfg, w, timer
"""


def _convert(tmp_path: Path, helpers: str = HELPERS) -> tuple[dict[str, str], dict[int, list[str]]]:
    root = tmp_path / "proj"
    files = {"pkg/__init__.py": "", "pkg/helpers.py": helpers, "pkg/moves.py": MOVES, "train.py": TRAIN}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    run = convert_project(Options(source=root, output=tmp_path / "out", use_cache=False))
    out = Path(run.output_root)
    train = next(f for f in run.files if f.path == "train.py")
    unsupported: dict[int, list[str]] = {}
    for finding in train.findings:
        if finding.operation.value == "UNSUPPORTED":
            unsupported.setdefault(finding.start_line, []).append(finding.message)
    return {rel: (out / rel).read_text() for rel in files}, unsupported


def test_a_device_handed_to_a_helper_of_another_module_converts(tmp_path: Path) -> None:
    out, unsupported = _convert(tmp_path)
    train = out["train.py"]
    assert '    y = move(x, "npu")\n' in train  # a parameter the helper hands to .to()
    assert '    z = helpers.move(x, target="npu")\n' in train  # by keyword, through the module
    assert '    r = Runner(torch.nn.Linear(2, 2), "npu")\n' in train  # stored on self, used later
    assert '    cfg = Config(accel="npu", title="cuda")\n' in train  # a field a property makes a device
    assert '    w = forward(x, "npu")\n' in train  # handed on to a helper of a third module
    assert 8 not in unsupported and 12 not in unsupported


def test_twin_a_label_handed_to_a_helper_stays(tmp_path: Path) -> None:
    out, unsupported = _convert(tmp_path)
    train = out["train.py"]
    assert '    describe("cuda")\n' in train  # only printed: kept, reported for a look
    assert 13 in unsupported
    # the project's enum of timer kinds: a label, kept and not reported
    assert '    timer = TimerType("cuda")\n' in train
    assert 14 not in unsupported
    assert '    CUDA = "cuda"\n' in out["pkg/helpers.py"]


def test_twin_a_helper_that_no_longer_reaches_a_device_keeps_it(tmp_path: Path) -> None:
    printed = HELPERS.replace("    return batch.to(target)\n", "    print(batch, target)\n")
    out, unsupported = _convert(tmp_path, printed)
    assert '    y = move(x, "cuda")\n' in out["train.py"]
    assert 8 in unsupported


def _layout(helpers: str) -> ProjectLayout:
    files = {"pkg/__init__.py": "", "pkg/helpers.py": helpers, "pkg/moves.py": MOVES, "train.py": TRAIN}
    return ProjectLayout.of(files).reading((rel, text.encode()) for rel, text in files.items())


def test_what_the_imported_helpers_hand_on_is_part_of_an_importers_cache_key() -> None:
    printed = HELPERS.replace("    return batch.to(target)\n", "    print(batch, target)\n")
    assert _layout(HELPERS).key_part("train.py") == _layout(HELPERS).key_part("train.py")
    assert _layout(HELPERS).key_part("train.py") != _layout(printed).key_part("train.py")
    # moves.py imports no module of the project: an edit of helpers.py leaves its key alone
    assert _layout(HELPERS).key_part("pkg/moves.py") == _layout(printed).key_part("pkg/moves.py")


def test_a_cached_run_after_editing_a_helper_converts_its_importer_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    root = tmp_path / "proj"
    files = {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/moves.py": MOVES, "train.py": TRAIN}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    first = convert_project(Options(source=root, output=tmp_path / "a", cache_dir=cache))
    assert '    y = move(x, "npu")\n' in (Path(first.output_root) / "train.py").read_text()
    (root / "pkg/helpers.py").write_text(
        HELPERS.replace("    return batch.to(target)\n", "    print(batch, target)\n")
    )
    again = convert_project(Options(source=root, output=tmp_path / "b", cache_dir=cache))
    assert '    y = move(x, "cuda")\n' in (Path(again.output_root) / "train.py").read_text()


RELATIVE = """\
import torch
from .helpers import move
from . import moves


def run(x):
    return move(x, "cuda"), moves.place(x, "cuda")
"""


def test_helpers_reached_by_relative_imports(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    files = {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/moves.py": MOVES, "pkg/run.py": RELATIVE}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    run = convert_project(Options(source=root, output=tmp_path / "out", use_cache=False))
    assert (
        '    return move(x, "npu"), moves.place(x, "npu")\n'
        in (Path(run.output_root) / "pkg/run.py").read_text()
    )
    # a relative import is a dependency of the importer's result too
    layout = ProjectLayout.of(files).reading((rel, text.encode()) for rel, text in files.items())
    edited = {**files, "pkg/moves.py": MOVES.replace("tensor.to(device=device_spec)", "tensor")}
    other = ProjectLayout.of(edited).reading((rel, text.encode()) for rel, text in edited.items())
    assert layout.key_part("pkg/run.py") != other.key_part("pkg/run.py")


def test_a_cached_run_reads_each_modules_signatures_from_the_cache(tmp_path: Path) -> None:
    from ms_fmk_transplt.cache import ResultCache
    from ms_fmk_transplt.discover import discover, project_layout

    root = tmp_path / "proj"
    files = {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/moves.py": MOVES, "train.py": TRAIN}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    cache = ResultCache(tmp_path / "cache", b"rules", [])
    first = project_layout(discover(root), cache)
    cache.flush()
    stored = cache.get_signatures("pkg/helpers.py", HELPERS.encode())
    assert stored is not None and "move" in stored.signatures
    again = project_layout(discover(root), cache)
    assert again.signatures == first.signatures and again.key_part("train.py") == first.key_part("train.py")


def test_an_import_inside_a_method_is_a_dependency_too() -> None:
    lazy = "class Trainer:\n    def fit(self, x):\n        from pkg.helpers import move\n\n        return move(x, 'cuda')\n"
    printed = HELPERS.replace("    return batch.to(target)\n", "    print(batch, target)\n")
    layouts = []
    for helpers in (HELPERS, printed):
        files = {"pkg/__init__.py": "", "pkg/helpers.py": helpers, "pkg/moves.py": MOVES, "lazy.py": lazy}
        layouts.append(ProjectLayout.of(files).reading((rel, text.encode()) for rel, text in files.items()))
    assert layouts[0].key_part("lazy.py") != layouts[1].key_part("lazy.py")


PICK = """\
import torch


def pick():
    return "cuda"
"""

USER = """\
import torch
from pkg.helpers import pick


def main(x):
    return x.to(pick())
"""


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _keys(files: dict[str, str]) -> dict[str, bytes]:
    layout = ProjectLayout.of(files).reading((rel, text.encode()) for rel, text in files.items())
    return {rel: layout.key_part(rel) for rel in files}


def test_what_importers_do_with_a_helpers_results_is_part_of_its_cache_key() -> None:
    files = {"pkg/__init__.py": "", "pkg/helpers.py": PICK, "pkg/moves.py": MOVES, "train.py": USER}
    before = _keys(files)
    printed = _keys({**files, "train.py": USER.replace("x.to(pick())", "print(pick())")})
    assert before["pkg/helpers.py"] != printed["pkg/helpers.py"]  # the answer may change: converted again
    assert before["pkg/moves.py"] == printed["pkg/moves.py"]  # no other file
    # an edit of train.py that leaves its use of pick() alone leaves helpers.py's key alone
    unrelated = _keys({**files, "train.py": USER + "\n\nSTEPS = 10\n"})
    assert before["pkg/helpers.py"] == unrelated["pkg/helpers.py"]


def test_a_cached_run_after_editing_an_importer_converts_the_helper_again(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/helpers.py": PICK, "train.py": USER}
    root = _project(tmp_path, files)
    cache = tmp_path / "cache"
    first = convert_project(Options(source=root, output=tmp_path / "a", cache_dir=cache))
    assert '    return "npu"\n' in (Path(first.output_root) / "pkg/helpers.py").read_text()
    (root / "train.py").write_text(USER.replace("x.to(pick())", "print(pick())"))
    again = convert_project(Options(source=root, output=tmp_path / "b", cache_dir=cache))
    assert '    return "cuda"\n' in (Path(again.output_root) / "pkg/helpers.py").read_text()


MID = """\
from pkg.helpers import pick


def outer(fast):
    return pick() if fast else "cpu"
"""

OUTER_USER = """\
import torch
from pkg.mid import outer


def main(x):
    return x.to(outer(True))
"""


def test_what_two_levels_of_importers_do_with_a_helpers_result_is_part_of_its_cache_key() -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/helpers.py": PICK,
        "pkg/mid.py": MID.replace(' if fast else "cpu"', ""),
        "pkg/moves.py": MOVES,
        "train.py": OUTER_USER,
    }
    before = _keys(files)
    printed = _keys({**files, "train.py": OUTER_USER.replace("x.to(outer(True))", "print(outer(True))")})
    assert before["pkg/helpers.py"] != printed["pkg/helpers.py"]  # the answer may change: converted again
    # no other file: mid.py hands pick()'s result back and holds no literal of its own
    assert all(before[rel] == printed[rel] for rel in files if rel != "pkg/helpers.py")
    unrelated = _keys({**files, "train.py": OUTER_USER + "\n\nSTEPS = 10\n"})
    assert before["pkg/helpers.py"] == unrelated["pkg/helpers.py"]
    # mid.py's own literal ("cpu") is judged by what train.py does with outer(): its key follows
    with_literal = {**files, "pkg/mid.py": MID}
    edited = {**with_literal, "train.py": OUTER_USER.replace("x.to(outer(True))", "print(outer(True))")}
    assert _keys(with_literal)["pkg/mid.py"] != _keys(edited)["pkg/mid.py"]


def test_a_cached_run_after_editing_the_second_importer_converts_the_helper_again(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/helpers.py": PICK, "pkg/mid.py": MID, "train.py": OUTER_USER}
    root = _project(tmp_path, files)
    cache = tmp_path / "cache"
    first = convert_project(Options(source=root, output=tmp_path / "a", cache_dir=cache))
    assert '    return "npu"\n' in (Path(first.output_root) / "pkg/helpers.py").read_text()
    (root / "train.py").write_text(OUTER_USER.replace("x.to(outer(True))", "print(outer(True))"))
    again = convert_project(Options(source=root, output=tmp_path / "b", cache_dir=cache))
    assert '    return "cuda"\n' in (Path(again.output_root) / "pkg/helpers.py").read_text()
    (root / "train.py").write_text(OUTER_USER)
    back = convert_project(Options(source=root, output=tmp_path / "c", cache_dir=cache))
    assert '    return "npu"\n' in (Path(back.output_root) / "pkg/helpers.py").read_text()


BACKEND = 'def backend():\n    return "cuda"\n'
BACKEND_USER = "import torch\nfrom pkg.helpers import backend\n\n\ndef main(x):\n    return x.to(backend())\n"
COMPARING = (
    'import torch\nfrom pkg.helpers import backend\n\n\ndef on_gpu():\n    return backend() == "cuda"\n'
)


def test_what_the_project_makes_of_a_compared_result_is_part_of_the_comparing_files_cache_key() -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/helpers.py": BACKEND,
        "pkg/moves.py": MOVES,
        "train.py": BACKEND_USER,
        "report.py": COMPARING,
    }
    before = _keys(files)
    printed = _keys({**files, "train.py": BACKEND_USER.replace("x.to(backend())", "print(backend())")})
    assert before["report.py"] != printed["report.py"]  # a device no more: its "cuda" is a label now
    assert before["pkg/moves.py"] == printed["pkg/moves.py"]
    unrelated = _keys({**files, "train.py": BACKEND_USER + "\n\nSTEPS = 10\n"})
    assert before["report.py"] == unrelated["report.py"]


def test_a_cached_run_after_a_compared_result_stops_being_a_device_keeps_the_literal(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/helpers.py": BACKEND,
        "train.py": BACKEND_USER,
        "report.py": COMPARING,
    }
    root = _project(tmp_path, files)
    cache = tmp_path / "cache"
    first = convert_project(Options(source=root, output=tmp_path / "a", cache_dir=cache))
    assert 'backend() == "npu"' in (Path(first.output_root) / "report.py").read_text()
    (root / "train.py").write_text(BACKEND_USER.replace("x.to(backend())", "print(backend())"))
    again = convert_project(Options(source=root, output=tmp_path / "b", cache_dir=cache))
    assert 'backend() == "cuda"' in (Path(again.output_root) / "report.py").read_text()
    report = next(f for f in again.files if f.path == "report.py")
    assert not [f for f in report.findings if f.operation.value == "UNSUPPORTED"]  # a label: not reported


def test_a_helper_re_exported_by_a_package_is_part_of_an_importers_cache_key() -> None:
    files = {
        "pkg/__init__.py": "from .tools import *\n",
        "pkg/tools.py": "def place(batch, where):\n    return batch.to(where)\n",
        "train.py": "import torch\nfrom pkg import place\n\n\ndef main(x):\n    return place(x, 'cuda')\n",
    }
    printed = {**files, "pkg/tools.py": "def place(batch, where):\n    print(batch, where)\n"}
    assert _keys(files)["train.py"] != _keys(printed)["train.py"]


def test_import_closures_digest_every_module_reached_through_cycles() -> None:
    from ms_fmk_transplt.engine.project.first_party import _closures

    edges = {"a": {"b"}, "b": {"a", "e"}, "c": {"a"}, "d": set(), "e": set()}
    facts = {"a": b"1", "b": b"2", "c": b"3", "d": b"4", "e": b"5"}
    before = _closures(edges, facts.__getitem__)
    after = _closures(edges, {**facts, "e": b"changed"}.__getitem__)
    assert before["a"] == before["b"] != before["c"]  # one cycle, one digest
    assert all(before[m] != after[m] for m in "abce")  # e is reached from each of them
    assert before["d"] == after["d"]
