"""Jupyter notebooks: code cells converted as one module, magics and everything else kept."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ms_fmk_transplt.cli import app
from ms_fmk_transplt.engine.conversion import convert_source
from ms_fmk_transplt.records import Status


def _cell(source: str | list[str], kind: str = "code", **extra) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell |= {"execution_count": None, "outputs": []}
    return cell | extra


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _notebook(cells: list[dict], language: str = "python") -> dict:
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _jupyter(notebook: dict) -> bytes:
    """Jupyter's own layout: indent 1, sorted keys, non-ASCII as is, a final newline."""
    return (json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _sources(data: bytes) -> list[str]:
    cells = json.loads(data)["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]


CELLS = [
    _cell(_lines("# Training on the GPU\nRuns on cuda."), kind="markdown"),
    _cell(_lines("%matplotlib inline\nimport torch\n!nvidia-smi\n")),
    _cell(
        _lines(
            'device = "cuda"\nif torch.cuda.is_available():\n    !echo on cuda\n    x = torch.ones(2).cuda()\ntorch.cuda?\n'
        )
    ),
    _cell(_lines("%%bash\nCUDA_VISIBLE_DEVICES=0 python train.py --device cuda\n")),
    _cell(_lines("%%time\ny = torch.zeros(3, device=device)\n")),
    _cell(_lines("def broken(:\n    torch.cuda.synchronize()\n")),  # CPython rejects it: kept as written
    _cell(
        _lines('label = ("on %s"\n         % device)\nz = torch.ones(1).cuda()')
    ),  # `% device` continues a line
    _cell("torch.cuda.synchronize()\n"),  # a source given as one string
    _cell(
        _lines("print(x)\n"),
        outputs=[{"name": "stdout", "output_type": "stream", "text": ["tensor on cuda\n"]}],
    ),
]


def test_code_cells_convert_as_one_module_and_the_rest_is_kept(builtin_tables) -> None:
    data = _jupyter(_notebook(CELLS))
    result = convert_source("train.ipynb", data, builtin_tables)
    assert result.status is Status.CONVERTED, result.reason
    assert result.output is not None
    assert _sources(result.output) == [
        "# Training on the GPU\nRuns on cuda.",
        "%matplotlib inline\nimport torch\nimport torch_npu\n!nvidia-smi\n",
        'device = "npu"\nif torch.npu.is_available():\n    !echo on cuda\n    x = torch.ones(2).npu()\ntorch.cuda?\n',
        "%%bash\nCUDA_VISIBLE_DEVICES=0 python train.py --device cuda\n",
        "%%time\ny = torch.zeros(3, device=device)\n",
        "def broken(:\n    torch.cuda.synchronize()\n",
        'label = ("on %s"\n         % device)\nz = torch.ones(1).npu()',
        "torch.npu.synchronize()\n",
        "print(x)\n",
    ]
    before, after = json.loads(data), json.loads(result.output)
    for old, new in zip(before["cells"], after["cells"], strict=True):
        assert {k: v for k, v in old.items() if k != "source"} == {
            k: v for k, v in new.items() if k != "source"
        }
        assert type(old["source"]) is type(new["source"])  # a list stays a list, a string a string
    # the JSON's own lines are kept: only source lines differ, one inserted
    old_lines, new_lines = data.decode().splitlines(), result.output.decode().splitlines()
    assert len(new_lines) == len(old_lines) + 1
    changed = set(new_lines) - set(old_lines)
    assert all(line.lstrip().startswith('"') for line in changed)


def test_findings_name_the_file_line_and_the_cell(builtin_tables) -> None:
    data = _jupyter(_notebook(CELLS))
    result = convert_source("train.ipynb", data, builtin_tables)
    text = data.decode().splitlines()
    cuda_call = next(f for f in result.findings if "torch.cuda.is_available" in f.message)
    assert cuda_call.message.endswith("(cell 3, line 2)")
    assert "torch.cuda.is_available()" in text[cuda_call.start_line - 1]  # the notebook file's own line
    insert = next(f for f in result.findings if f.rule_id == "TP001")
    assert insert.message.endswith("(cell 2, line 2)")
    # nothing is reported from the hidden lines or the cell kept as written
    assert not any("(cell 4," in f.message or "(cell 6," in f.message for f in result.findings)


def test_another_layout_is_kept_line_for_line(builtin_tables) -> None:
    notebook = _notebook([_cell(_lines("import torch\nx = torch.ones(1).cuda()\nprint('é')\n"))])
    notebook["metadata"]["colab"] = {"name": "demo"}  # key order kept, not sorted
    text = json.dumps(notebook, indent=2, ensure_ascii=True)
    text = text.replace("\\u00e9", "\\u00E9")  # an editor's spelling of an escape, not Python's
    result = convert_source("demo.ipynb", text.encode(), builtin_tables)
    assert result.output is not None
    out = result.output.decode()
    assert "\\u00E9" in out and not out.endswith("\n")
    old_lines, new_lines = text.splitlines(), out.splitlines()
    assert [line for line in new_lines if line not in old_lines] == [
        '        "import torch_npu\\n",',
        '        "x = torch.ones(1).npu()\\n",',
    ]


def test_a_one_line_notebook_is_written_in_jupyters_layout(builtin_tables) -> None:
    notebook = _notebook([_cell(["import torch\n", "torch.cuda.synchronize()"])])
    result = convert_source("one.ipynb", json.dumps(notebook).encode(), builtin_tables)
    assert result.output is not None
    assert result.output.startswith(b'{\n "cells": [')
    assert _sources(result.output) == ["import torch\nimport torch_npu\ntorch.npu.synchronize()"]


def test_what_is_not_a_python_notebook(builtin_tables) -> None:
    r_notebook = _notebook([_cell(_lines('x <- "cuda"\n'))], language="R")
    r_notebook["metadata"]["language_info"] = {"name": "R"}
    assert convert_source("a.ipynb", _jupyter(r_notebook), builtin_tables).status is Status.UNCHANGED
    python3 = _notebook([_cell(_lines("import torch\ntorch.cuda.synchronize()\n"))], language="python3")
    assert convert_source("p.ipynb", _jupyter(python3), builtin_tables).status is Status.CONVERTED
    bare = {"cells": [_cell(_lines("import torch\ntorch.cuda.synchronize()\n"))]}  # no metadata at all
    assert convert_source("q.ipynb", _jupyter(bare), builtin_tables).status is Status.CONVERTED
    plain = _notebook([_cell(_lines("import numpy as np\n"))])
    assert convert_source("b.ipynb", _jupyter(plain), builtin_tables).status is Status.UNCHANGED
    broken = convert_source("c.ipynb", b'{"cells": [\n', builtin_tables)
    assert broken.status is Status.FAILED and broken.reason.startswith("notebook is not JSON:")
    assert "at line 2" in broken.reason
    empty = convert_source("d.ipynb", b"", builtin_tables)
    assert empty.status is Status.FAILED and empty.reason == "notebook is an empty file (not JSON)"
    no_cells = convert_source("e.ipynb", b'{"worksheets": []}', builtin_tables)
    assert no_cells.status is Status.FAILED and "'cells'" in no_cells.reason


def test_the_cli_converts_notebooks_beside_scripts(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    notebook = _jupyter(_notebook([_cell(_lines("import torch\ny = torch.ones(1).cuda()\n"))]))
    (project / "explore.ipynb").write_bytes(notebook)
    outcome = CliRunner().invoke(app, ["-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache"])
    assert outcome.exit_code == 0, outcome.output
    converted = tmp_path / "out" / "proj_msft"
    assert _sources((converted / "explore.ipynb").read_bytes()) == [
        "import torch\nimport torch_npu\ny = torch.ones(1).npu()\n"
    ]
    log = (converted / "msFmkTranspltlog.txt").read_text()
    assert "explore.ipynb:" in log and "(cell 1, line 2)" in log
    assert (project / "explore.ipynb").read_bytes() == notebook  # the input is never modified


def test_explain_gives_a_notebooks_literals_and_findings_at_its_file_lines(builtin_tables) -> None:
    from ms_fmk_transplt.explain import explain

    data = _jupyter(
        _notebook(
            [
                _cell("# Training", kind="markdown"),
                _cell(_lines('import torch\nnames = {"cuda": 1}\n')),
                _cell(_lines('%matplotlib inline\nx = torch.zeros(2, device="cuda")\n')),
            ]
        )
    )
    text = data.decode().splitlines()
    device_line = next(n for n, line in enumerate(text, 1) if 'device=\\"cuda\\"' in line)
    lines = explain("nb.ipynb", data, builtin_tables)
    assert lines[0] == "nb.ipynb: converted"
    assert f'  {device_line}:27  "cuda"  device: device= takes a device (cell 3, line 2)' in lines
    assert any('"cuda"  data key: a dict key (cell 2, line 2)' in line for line in lines)
    assert not any('"cells"' in line or "markdown" in line for line in lines)  # not the JSON's strings
    one = explain("nb.ipynb", data, builtin_tables, line=device_line)
    assert [line for line in one if line.startswith("  ")] == [
        f'  {device_line}:27  "cuda"  device: device= takes a device (cell 3, line 2)',
        f"  {device_line}:27  TP103 MODIFY  'cuda' -> 'npu' (cell 3, line 2)",
    ]


def test_explain_finds_no_python_in_an_r_notebook(builtin_tables) -> None:
    from ms_fmk_transplt.explain import explain

    data = _jupyter(_notebook([_cell(_lines('x <- "cuda"\n'))], language="R"))
    assert explain("r.ipynb", data, builtin_tables) == [
        "r.ipynb: unchanged",
        "no string literals here",
        "no rewrite or report here",
    ]
