"""Import planning and insertion (engine/importing/imports.py), asked by the transformer."""

from __future__ import annotations

import libcst as cst
import pytest

from ms_fmk_transplt.engine.importing import plan_imports
from ms_fmk_transplt.engine.importing.imports import ImportPlan, insert_module_import
from ms_fmk_transplt.engine.interface import IMPORTS
from ms_fmk_transplt.engine.naming import alias_table, iter_imports


def _plan(source: str, tables) -> tuple[cst.Module, ImportPlan]:
    module = cst.parse_module(source)
    imports = list(iter_imports(module, lines=True))
    return module, plan_imports(tables, module, imports, alias_table(s for _, s in imports))


def test_bindings_after_the_rewrites(builtin_tables) -> None:
    _, plan = _plan(
        "import torch\nimport torch.cuda as tc\nfrom torch.cuda import synchronize\nimport numpy as np\n",
        builtin_tables,
    )
    assert plan.binding("tc") == ("tc", "torch.npu")
    assert plan.binding("synchronize") == ("synchronize", "torch.npu.synchronize")
    assert plan.binding("np") == ("np", "numpy")
    assert plan.renamed_names == {}
    assert plan.imports_torch and not plan.has_torch_npu and not plan.entry_point


def test_anchor_torch_npu_and_entry_point(builtin_tables) -> None:
    module, plan = _plan(
        "import os\ntry:\n    import torch\nexcept ImportError:\n    torch = None\nimport torch_npu\n"
        "if __name__ == '__main__':\n    pass\n",
        builtin_tables,
    )
    assert plan.has_torch_npu and plan.entry_point
    assert plan.anchor_line is not None and plan.anchor_line.body[0].names[0].name.value == "torch"
    assert not any(s is plan.anchor_line for s in module.body)  # inside the try block


def test_needed_import_for_written_paths(builtin_tables) -> None:
    _, plan = _plan("import torch as th\nimport apex.optimizers\n", builtin_tables)
    assert plan.needed_import("torch.npu.synchronize") == "torch"  # `torch` itself is not bound
    assert plan.needed_import("apex.optimizers.FusedAdam") is None
    assert plan.needed_import("torch_npu.optim.NpuFusedAdamW") == "torch_npu"
    _, plain = _plan("import torch\n", builtin_tables)
    assert plain.needed_import("torch.npu.synchronize") is None
    assert plain.needed_import("mylib.npu_ops.gelu") == "mylib.npu_ops"


def _insert(source: str, tables, **needs) -> str:
    module, plan = _plan(source, tables)
    options = {"needs_module": True, "uses_needed_api": False, "name_needed": False} | needs
    result, _ = insert_module_import(
        tables.hooks.one(IMPORTS, "*"), plan, module, module, anchor_updated=plan.anchor_line, **options
    )
    return result.code


def test_insert_after_the_first_torch_import(builtin_tables) -> None:
    assert _insert('"""Doc."""\nimport os\nimport torch\nx = 1\n', builtin_tables) == (
        '"""Doc."""\nimport os\nimport torch\nimport torch_npu\nx = 1\n'
    )
    future = '"""Doc."""\nfrom __future__ import annotations\nx = 1\n'
    assert _insert(future, builtin_tables, name_needed=True) == (
        '"""Doc."""\nfrom __future__ import annotations\nimport torch_npu\nx = 1\n'
    )
    # the first torch import sits in a block: next to it
    assert _insert("def f():\n    import torch\n    return 1\n", builtin_tables) == (
        "def f():\n    import torch\n    import torch_npu\n    return 1\n"
    )


def test_no_insert_without_torch_or_need(builtin_tables) -> None:
    config = "dist_params = dict(backend='hccl')\n"
    assert _insert(config, builtin_tables) == config
    assert _insert("import torch\nx = 1\n", builtin_tables, needs_module=False) == "import torch\nx = 1\n"
    assert _insert("import torch\nimport torch_npu\n", builtin_tables) == "import torch\nimport torch_npu\n"
    entry = "import torch\nif __name__ == '__main__':\n    main()\n"
    assert "import torch_npu" in _insert(entry, builtin_tables, needs_module=False)


def test_function_import_plan_renames_or_keeps_the_name(tmp_path) -> None:
    from ms_fmk_transplt.engine.importing import plan_function_imports
    from ms_fmk_transplt.engine.naming import NameClaims
    from ms_fmk_transplt.engine.naming.bindings import collect_bindings
    from ms_fmk_transplt.ruleset import compile_rules, load_rules

    rules = tmp_path / "rules.json"
    rules.write_text('{"rules": {"FuncNameModifyRule": [{"old_name": "func", "new_name": "new_func"}]}}')
    tables = compile_rules(load_rules([rules]))

    def plan(source: str):
        module = cst.parse_module(source)
        imports = list(iter_imports(module, lines=True))
        renames, planned = plan_function_imports(
            tables, imports, collect_bindings(module), NameClaims(module)
        )
        return set(renames), sorted(planned.values(), key=str)

    assert plan("from lib import func\n") == ({"func"}, [("new_func", None, "")])
    assert plan("from lib import func as f\n") == (set(), [("new_func", "f", "")])
    assert plan("from lib import func\nfunc = wrap(func)\n") == (
        set(),
        [("new_func", "func", "this file also binds func itself")],
    )
    assert plan("from lib import func\n__all__ = ['func']\n")[1] == [
        ("new_func", "func", "__all__ exports func")
    ]
    assert plan("from lib import func\nfrom other import new_func\n")[1] == [
        ("new_func", "func", "new_func is already a name in this file")
    ]
    assert plan("from lib import other\n") == (set(), [])


_APEX = "from apex.normalization import FusedLayerNorm\n"


@pytest.mark.parametrize(
    "elsewhere",
    [
        "from mylib import *\nx = LayerNorm(3)\n",  # a star import's name, loaded
        "from mylib import LayerNorm\n",
        "class LayerNorm: ...\n",
        "def LayerNorm(): ...\n",
        "def f(LayerNorm): ...\n",
        "f = lambda LayerNorm: 0\n",
        "def f():\n    LayerNorm = 1\n",
        "for LayerNorm in (): ...\n",
        "with open('x') as LayerNorm: ...\n",
        "try: ...\nexcept Exception as LayerNorm: ...\n",
        "xs = [LayerNorm for LayerNorm in ()]\n",
        "def f():\n    global LayerNorm\n",
        "if (LayerNorm := 1): ...\n",
        "match 1:\n    case LayerNorm: ...\n",
        "print(LayerNorm)\n",  # loaded from somewhere the file does not say
        '__all__ = ["FusedLayerNorm"]\n',  # importers name the old one
    ],
)
def test_a_renamed_import_keeps_its_name_where_the_new_one_is_taken(builtin_tables, elsewhere) -> None:
    _, plan = _plan(_APEX + elsewhere, builtin_tables)
    assert plan.binding("FusedLayerNorm") == ("FusedLayerNorm", "torch.nn.LayerNorm")


@pytest.mark.parametrize(
    "elsewhere",
    [
        "",
        "import torch.nn as nn\nx = nn.LayerNorm(3)\n",  # an attribute's name
        "f(LayerNorm=True)\n",  # a keyword
        "x = 'LayerNorm'\n",  # a string
        "FusedLayerNorm = None\n",  # the old name's own fallback is renamed with it
        '__all__ = ["make"]\n',
    ],
)
def test_a_renamed_import_takes_the_new_name_where_it_is_free(builtin_tables, elsewhere) -> None:
    _, plan = _plan(_APEX + elsewhere, builtin_tables)
    assert plan.binding("FusedLayerNorm") == ("LayerNorm", "torch.nn.LayerNorm")
