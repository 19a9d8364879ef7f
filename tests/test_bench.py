"""The benchmark scripts' helpers: corpus preparation without the network, the phase profile."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_scale  # noqa: E402  (bench/ holds scripts, not a package)
import profile_phases  # noqa: E402

from ms_fmk_transplt.run import REPORTS  # noqa: E402


def test_corpus_names_and_pins() -> None:
    assert sorted(bench_scale.PREPARE) == ["generated", "timm", "transformers"]
    assert bench_scale.PINNED["timm"][:2] == ("timm", "0.6.12")
    assert bench_scale.PINNED["transformers"] == ("transformers", "4.46.3", "src/transformers")
    assert bench_scale.corpus_label("transformers", 3) == "transformers-4.46.3"
    assert bench_scale.corpus_label("generated", 3) == "generated x3"


def test_generated_tree_is_copies_of_both_pinned_packages(tmp_path: Path) -> None:
    for folder, name in (("timm-0.6.12", "a.py"), ("transformers-4.46.3", "b.py")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text("import torch\n")
        (tmp_path / folder / ".complete").write_text("ok\n")  # prepared: no download
    tree = bench_scale.prepare_generated(tmp_path, 2)
    found = sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file())
    assert found == [
        ".complete",
        "copy_000/timm-0.6.12/a.py",
        "copy_000/transformers-4.46.3/b.py",
        "copy_001/timm-0.6.12/a.py",
        "copy_001/transformers-4.46.3/b.py",
    ]
    assert bench_scale.count(tree) == (4, 4)


def test_phase_profile_of_sample_models_mirrors_the_engine() -> None:
    result = profile_phases.profile(ROOT / "sample_models", "2.1.0", check=True)  # check: same results
    assert list(result.conversion) == list(profile_phases.PHASES)
    assert list(result.reports) == list(REPORTS)
    assert result.files == sum(result.statuses.values()) > 0
    lines = profile_phases.table(result, None).splitlines()
    assert lines[:2] == ["| part | phase | CPU s | share |", "|---|---|---:|---:|"]
    phases = [line.split(" | ")[1] for line in lines[2:] if line.startswith("| convert |")]
    assert phases == [*profile_phases.PHASES, "total"]
