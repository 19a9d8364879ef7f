"""A project's own modules are never a third-party library's (engine/project/first_party.py).

Each case builds a small project tree, analyses it as a run does and reads the findings back;
every case that drops a report has a twin that keeps it (the same file without the project's
module beside it: today's behaviour).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ms_fmk_transplt.engine.project import ProjectLayout
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.run import Options, analyse_project, convert_project

TRAIN = (
    "import torch\n"
    "import mamba_ssm\n"
    "from mamba_ssm.modules.mamba_simple import Mamba\n"
    "from mamba_ssm.ops.selective_scan_interface import selective_scan_fn\n"
    "model = Mamba(16).cuda()\n"
)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _rows(
    root: Path, tmp_path: Path, source: Path | None = None, cache: bool = False
) -> dict[str, list[str]]:
    """rule id and line of each UNSUPPORTED finding, by file."""
    source = source or root
    options = Options(source=source, output=tmp_path / "out", use_cache=cache, cache_dir=tmp_path / "cache")
    run = analyse_project(options, [source], None)
    return {
        f.path: [f"{x.rule_id}:{x.start_line}" for x in f.findings if x.operation is Operation.UNSUPPORTED]
        for f in run.files
    }


def test_a_project_named_like_a_cuda_library_is_its_own(tmp_path: Path) -> None:
    root = _tree(
        tmp_path / "proj",
        {
            "train.py": TRAIN,
            "mamba_ssm/__init__.py": "",
            "mamba_ssm/modules/__init__.py": "",
            "mamba_ssm/modules/mamba_simple.py": "from mamba_ssm.ops import x\nclass Mamba: pass\n",
            "mamba_ssm/ops/__init__.py": "",
            "mamba_ssm/ops/selective_scan_interface.py": "import selective_scan_cuda\n",
        },
    )
    rows = _rows(root, tmp_path)
    assert rows["train.py"] == []
    assert rows["mamba_ssm/modules/mamba_simple.py"] == []
    # the project's compiled CUDA extension is no module of its tree: still reported
    assert rows["mamba_ssm/ops/selective_scan_interface.py"] == ["TP546:1"]


def test_twin_without_the_package_the_library_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj", {"train.py": TRAIN})
    assert _rows(root, tmp_path)["train.py"] == ["TP544:2", "TP544:3", "TP544:4"]


def test_src_layout_and_a_script_in_a_subfolder(tmp_path: Path) -> None:
    root = _tree(
        tmp_path / "proj",
        {
            "scripts/train.py": TRAIN,
            "src/mamba_ssm/__init__.py": "",
            "src/mamba_ssm/modules/mamba_simple.py": "class Mamba: pass\n",
        },
    )
    assert _rows(root, tmp_path)["scripts/train.py"] == []


def test_input_a_subfolder_of_the_project_keeps_todays_reports(tmp_path: Path) -> None:
    root = _tree(
        tmp_path / "proj",
        {"scripts/train.py": TRAIN, "mamba_ssm/__init__.py": "", "mamba_ssm/modules/mamba_simple.py": ""},
    )
    rows = _rows(root, tmp_path, source=root / "scripts")
    assert rows["train.py"] == ["TP544:2", "TP544:3", "TP544:4"]


DEPLOY = "from triton.deployment_toolkit.core import load_model\nimport triton.deployment_toolkit.args as a\n"
KERNEL = (
    "import torch\nimport triton\nimport triton.language as tl\n\n\n"
    "@triton.jit\ndef kernel(x_ptr):\n    tl.load(x_ptr)\n"
)


def test_a_namespace_folder_named_like_a_library_beside_the_library(tmp_path: Path) -> None:
    """A `triton/` folder without __init__.py (Triton Inference Server scripts): its own modules
    are the project's, while `import triton`, `triton.language` and `triton.jit`, which it does
    not hold, are OpenAI Triton's, in the same run."""
    root = _tree(
        tmp_path / "proj",
        {
            "triton/run_inference.py": DEPLOY,
            "triton/deployment_toolkit/core.py": "def load_model(): pass\n",
            "triton/deployment_toolkit/args.py": "",
            "models/kernels.py": KERNEL,
        },
    )
    rows = _rows(root, tmp_path)
    assert rows["triton/run_inference.py"] == []
    assert rows["models/kernels.py"] == ["TP532:2", "TP532:3", "TP532:6", "TP532:8"]


def test_twin_kernels_alone_are_reported_as_today(tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj", {"models/kernels.py": KERNEL, "deploy.py": DEPLOY})
    rows = _rows(root, tmp_path)
    assert rows["models/kernels.py"] == ["TP532:2", "TP532:3", "TP532:6", "TP532:8"]
    assert rows["deploy.py"] == ["TP532:1", "TP532:2"]


def test_a_module_named_like_a_compiled_extension_is_the_projects(tmp_path: Path) -> None:
    root = _tree(
        tmp_path / "proj",
        {"train.py": "import torch\nimport box_cuda\nimport nms_cuda\n", "box_cuda.py": "import torch\n"},
    )
    assert _rows(root, tmp_path)["train.py"] == ["TP546:3"]


def test_converted_output_keeps_the_projects_imports(tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj", {"train.py": TRAIN, "mamba_ssm/__init__.py": ""})
    run = convert_project(Options(source=root, output=tmp_path / "out", use_cache=False))
    out = (Path(run.output_root) / "train.py").read_text()
    assert "from mamba_ssm.modules.mamba_simple import Mamba\n" in out
    assert "model = Mamba(16).npu()\n" in out


def test_the_cached_result_follows_the_tree(tmp_path: Path) -> None:
    """The same file's result depends on the tree around it: the cache keys it by the tree."""
    root = _tree(tmp_path / "proj", {"train.py": TRAIN, "mamba_ssm/__init__.py": ""})
    assert _rows(root, tmp_path, cache=True)["train.py"] == []
    (root / "mamba_ssm/__init__.py").unlink()
    (root / "mamba_ssm").rmdir()
    assert _rows(root, tmp_path, cache=True)["train.py"] == ["TP544:2", "TP544:3", "TP544:4"]


@pytest.mark.parametrize(
    ("importer", "name", "owned"),
    [
        ("train.py", "pkg.sub.f", True),  # a regular package: all below it
        ("train.py", "pkg", True),
        ("train.py", "mod.anything", True),  # a module: its members
        ("tools/x.py", "pkg.sub", True),  # the input root is a root of every file
        ("tools/x.py", "helper", True),  # the file's own folder
        ("train.py", "helper", False),  # ... and no other's
        ("train.py", "ns.a.b", True),  # a namespace folder: while segments reach the tree
        ("train.py", "ns", False),  # a bare namespace folder: the installed package wins
        ("train.py", "ns.a", True),
        ("train.py", "ns.language", False),  # not in it: an installed library's
        ("train.py", "ns.a.missing", False),
        ("train.py", "lib.thing", True),  # src/ layout
        ("train.py", "torch.cuda", False),
        ("pkg/sub.py", "torch.cuda", False),  # pkg/torch.py: a package's folder is no root
        ("tools/x.py", "torch.cuda", True),  # tools/torch.py beside a script shadows torch
    ],
)
def test_what_a_file_owns(importer: str, name: str, owned: bool) -> None:
    layout = ProjectLayout.of(
        [
            "train.py",
            "pkg/__init__.py",
            "pkg/sub.py",
            "pkg/torch.py",
            "mod.py",
            "tools/x.py",
            "tools/helper.py",
            "tools/torch.py",
            "ns/a/b.py",
            "src/lib/__init__.py",
            "notes.ipynb",
        ]
    )
    assert layout.seen_from(importer).owns(name) is owned


def test_a_packages_module_named_torch_does_not_shadow_torch(tmp_path: Path) -> None:
    """mamba_ssm/utils/torch.py beside mamba_ssm/utils/generation.py: the package's folder is not
    on sys.path, so `import torch` there is torch, and torch.cuda is converted."""
    root = _tree(
        tmp_path / "proj",
        {
            "mamba_ssm/__init__.py": "",
            "mamba_ssm/utils/__init__.py": "",
            "mamba_ssm/utils/torch.py": "def custom_fwd(f): return f\n",
            "mamba_ssm/utils/generation.py": "import torch\ntorch.cuda.synchronize()\n",
        },
    )
    run = convert_project(Options(source=root, output=tmp_path / "out", use_cache=False))
    out = (Path(run.output_root) / "mamba_ssm/utils/generation.py").read_text()
    assert "torch.npu.synchronize()" in out


def test_explain_sees_the_tree_of_the_current_folder(tmp_path: Path, monkeypatch) -> None:
    """`explain FILE` judges imports as a run of the current folder does; its twin, the same
    file alone in its folder, keeps the report."""
    from ms_fmk_transplt.explain import explain_target

    root = _tree(tmp_path / "proj", {"train.py": TRAIN, "mamba_ssm/__init__.py": ""})
    alone = _tree(tmp_path / "alone", {"train.py": TRAIN})
    monkeypatch.chdir(root)
    assert not [line for line in explain_target("train.py") if "TP544" in line]
    monkeypatch.chdir(tmp_path)
    assert [line for line in explain_target(str(alone / "train.py")) if "TP544" in line]


@pytest.mark.parametrize("path", ["/abs/proj/train.py", "../other/train.py", "train.py", "./a/b.py"])
def test_every_way_a_run_names_a_file_ends(path: str) -> None:
    """analyse of several inputs names files outside the current folder by absolute path."""
    layout = ProjectLayout.of(["/abs/proj/mamba_ssm/__init__.py", "/abs/proj/train.py"])
    view = layout.seen_from(path)
    assert view.owns("mamba_ssm.x") is (path == "/abs/proj/train.py")


def test_the_input_root_is_a_root_even_as_a_package() -> None:
    layout = ProjectLayout.of(["__init__.py", "train.py", "mamba_ssm/__init__.py"])
    assert layout.seen_from("train.py").owns("mamba_ssm.modules")
