"""One home per rule kind: its module holds schema, checks, compile and the code that rewrites.

A kind either defines the hook entries the engine calls (`engine/interface/hooks.py`) or compiles into the
engine's name tables and says, in its docstring's `Code:` paragraph, where the engine applies it.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ms_fmk_transplt.engine.interface import Tables, hooks
from ms_fmk_transplt.ruleset import compile_rules, load_rules
from ms_fmk_transplt.ruleset.reference import user_doc
from ms_fmk_transplt.ruleset.registry import all_kinds

PACKAGE = Path(__file__).resolve().parent.parent / "ms_fmk_transplt"
USER_RULES = [
    Path(__file__).resolve().parent / "fixtures" / "user_rules" / case / "rules.json"
    for case in ("args_modify", "module_name", "func_name_bare")
]
PROTOCOLS = (
    hooks.NameHook,
    hooks.ImportHook,
    hooks.MethodHook,
    hooks.AttributeHook,
    hooks.FunctionHook,
    hooks.CallHook,
    hooks.StringHook,
    hooks.EnvHook,
    hooks.ResultHook,
    hooks.TextHook,
    hooks.ValueHook,
    hooks.PatternHook,
    hooks.SupportHook,
)


def _module(kind_name: str) -> ModuleType:
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", kind_name).lower()
    return importlib.import_module(f"ms_fmk_transplt.ruleset.kinds.{name}")


def _code_paragraph(module: ModuleType) -> str:
    paragraphs = [p for p in (module.__doc__ or "").split("\n\n") if p.startswith("Code: ")]
    assert len(paragraphs) == 1, f"{module.__name__}: its docstring needs one `Code:` paragraph"
    return paragraphs[0].strip()


def _methods(protocol: type) -> set[str]:
    return {name for name, value in vars(protocol).items() if callable(value) and not name.startswith("_")}


def _hook_classes(module: ModuleType) -> dict[str, tuple[type, type]]:
    """Classes defined in `module` that implement a hook protocol: name -> (class, protocol)."""
    found = {}
    for name, cls in vars(module).items():
        if inspect.isclass(cls) and cls.__module__ == module.__name__:
            for protocol in PROTOCOLS:
                if _methods(protocol) <= set(dir(cls)):
                    found[name] = (cls, protocol)
    return found


def _hook_entries(tables: Tables) -> list[Any]:
    """Every entry of the hook registry (`Tables.hooks`)."""
    return list(tables.hooks.every())


@pytest.fixture(scope="module")
def every_kind_tables() -> Tables:
    """The built-in rules with the fixtures' user rules, every opt-in taken: every kind has at
    least one rule, and every rule its hooks."""
    rules = load_rules(USER_RULES) + load_rules(target="accelerator")  # no rule twice: ids differ
    assert {rule.kind for rule in rules} == set(all_kinds())
    return compile_rules(
        rules, opt_ins={rule.params["opt_in"] for rule in rules if rule.params.get("opt_in")}
    )


@pytest.mark.parametrize("kind_name", sorted(all_kinds()))
def test_kind_module_says_where_its_code_is(kind_name: str) -> None:
    """A hook kind names its hook class, defined beside its schema; a name-table kind names, in one
    line, the engine files that apply it, and defines no hook class."""
    module = _module(kind_name)
    raw = _code_paragraph(module)
    code = " ".join(raw.split())
    classes = _hook_classes(module)
    if "applied by engine/" in code:
        assert classes == {}, f"{kind_name} defines hook classes but says the engine applies it"
        assert "\n" not in raw, f"{kind_name}: say in one line where the engine applies it"
        files = re.findall(r"engine/[\w/]+\.py", code)
        assert files, f"{kind_name}: say which engine file applies it"
        assert all((PACKAGE / f).is_file() for f in files), files
    else:
        named = re.match(r"Code: `(\w+)\.", code)
        assert named and named.group(1) in classes, f"{kind_name}: `Code:` must name its hook class first"
        assert "engine/interface/hooks.py" in code


def test_every_hook_entry_comes_from_its_rules_kind_module(every_kind_tables: Tables) -> None:
    entries = _hook_entries(every_kind_tables)
    assert entries
    for entry in entries:
        cls = type(entry)
        assert cls.__module__ == _module(entry.rule.kind).__name__, (cls, entry.rule.kind)
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
    # entries travel to worker processes and into the cache by pickle
    assert pickle.loads(pickle.dumps(entries)) == entries


def test_hook_kinds_are_exactly_the_kinds_with_hook_classes(every_kind_tables: Tables) -> None:
    with_entries = {entry.rule.kind for entry in _hook_entries(every_kind_tables)}
    with_classes = {name for name in all_kinds() if _hook_classes(_module(name))}
    assert with_entries == with_classes


def test_user_docs_leave_out_the_code_paragraph() -> None:
    module = _module("ArgsModifyRule")
    assert "Code:" in (module.__doc__ or "")
    assert "Code:" not in user_doc(module.__doc__ or "")


KIND_SPECIFIC = (
    "args_by_name",
    "args_by_method",
    "keyword_defaults",
    "keywords.get",
    "cuda_sources",
    "result_uses",
    "env_vars",
    "env_prefixes",
    "text_scans",
    "self.t.strings",
    "ArgRewrite",
    "StringRewrite",
    "KeywordRename",
    "_rewrite_args",
    "_find_arg",
    "_rename_keywords",
    "_rewrite_env(",
    "arg_new",
    "new_keyword",
    '"returns"',
    '"in_keys"',
    '"device_context"',
    '"suffixes"',
)


@pytest.mark.parametrize(
    "path", ["engine/conversion/transformer.py", "engine/interface/tables.py", "engine/conversion/convert.py"]
)
def test_engine_holds_no_kind_specific_code(path: str) -> None:
    text = (PACKAGE / path).read_text(encoding="utf-8")
    assert [name for name in KIND_SPECIFIC if name in text] == []


def test_registry_is_complete_after_a_kind_module_was_imported_alone() -> None:
    """Unpickling cached rule tables imports their hooks' kind modules first; the registry must
    still hold every kind afterwards (it once held only those, and rejected the built-in rules)."""
    import subprocess
    import sys

    code = (
        "import ms_fmk_transplt.ruleset.kinds.env_var_rule\n"
        "from ms_fmk_transplt.ruleset.registry import all_kinds\n"
        "print(len(all_kinds()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    from ms_fmk_transplt.ruleset.registry import all_kinds

    assert int(done.stdout) == len(all_kinds()) > 1
