"""A kind of rule is one module: one defined outside the package converts code with no engine change.

The throwaway kinds below live in a temporary package; each registers itself with `@kind` and
compiles its entries into hooks of the registry (engine/interface/hook_registry.py): a generic node hook
keyed by node class and qualified name, which the transformer's generic dispatch runs, and a
rename-like name hook keyed by the qualified name it covers, which the engine's name resolution
asks (`Tables.lookup`) for every use, `from` import and `import` of the name, and a
support-list-like hook, which the engine asks about every torch API use (on libcst's tree and on
the ast fast path alike) and whose verdict it reports or counts.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import pytest

from ms_fmk_transplt.engine.conversion import convert_source
from ms_fmk_transplt.engine.interface import HookRegistry, Tables, hooks, keys_of
from ms_fmk_transplt.records import Operation, Status
from ms_fmk_transplt.ruleset import registry
from ms_fmk_transplt.ruleset.compile import compile_rules
from ms_fmk_transplt.ruleset.loader import load_rules

KIND = '''
"""ConstantRule: a read of a library's constant becomes its value on the NPU (a test's kind)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.interface.hooks import Site, node_slot
from ms_fmk_transplt.engine.interface.rule import Rule
from ms_fmk_transplt.engine.interface.tables import Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset.registry import kind


@kind(
    name="ConstantRule",
    schema={
        "required": ["name", "value"],
        "properties": {"name": {"type": "string"}, "value": {"type": "integer"}},
    },
    message="{old} -> {new}",
)
class ConstantRule:
    @staticmethod
    def check(entry):
        return []

    @staticmethod
    def summary(entry):
        return f"{entry['name']} reads as {entry['value']}"

    @staticmethod
    def key(entry):
        return entry["name"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            tables.hooks.add(node_slot(cst.Attribute), rule.params["name"], Constant(rule, rule.params["value"]))
            tables.add_trigger(rule.params["name"])


@dataclass(frozen=True)
class Constant:
    rule: Rule
    value: int

    def rewrite(self, site: Site, original, updated, key: str):
        site.report(original, self.rule, Operation.MODIFY, old=key, new=self.value)
        return cst.Integer(str(self.value))
'''


RENAME_KIND = '''
"""MovedApiRule: a library's API moved to another module, everything under it with it (a test's kind)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ms_fmk_transplt.engine.interface.hooks import QUALIFIED, Match, Site
from ms_fmk_transplt.engine.interface.rule import Rule
from ms_fmk_transplt.engine.interface.tables import Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset.registry import kind


@kind(
    name="MovedApiRule",
    schema={
        "required": ["old", "new"],
        "properties": {"old": {"type": "string"}, "new": {"type": "string"}},
    },
    message="{old} moved to {new}",
)
class MovedApiRule:
    @staticmethod
    def check(entry):
        return []

    @staticmethod
    def summary(entry):
        return f"{entry['old']} moved to {entry['new']}"

    @staticmethod
    def key(entry):
        return entry["old"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            tables.hooks.add(QUALIFIED, rule.params["old"], Moved(rule, rule.params["new"]))
            tables.add_name_trigger(rule.params["old"])


@dataclass(frozen=True)
class Moved:
    rule: Rule
    new: str
    members: ClassVar[bool] = False
    rewrites: ClassVar[bool] = True

    def resolve(self, name, prefix, rest):
        return Match(self.rule, name, prefix, self.new, hook=self)

    def rewrite_reference(self, site: Site, original, updated, match):
        site.report(original, self.rule, Operation.MODIFY, old=match.prefix, new=self.new)
        return site.replace_name(original, updated, match.target)
'''


SUPPORT_KIND = '''
"""BannedApiRule: the APIs a site's own list bans, each with its reason (a test's kind)."""

from __future__ import annotations

from dataclasses import dataclass

from ms_fmk_transplt.engine.interface.hook_registry import ANY
from ms_fmk_transplt.engine.interface.hooks import SUPPORT, Classified, Tally
from ms_fmk_transplt.engine.interface.rule import Rule
from ms_fmk_transplt.engine.interface.tables import Tables
from ms_fmk_transplt.records import Support
from ms_fmk_transplt.ruleset.registry import kind


@kind(
    name="BannedApiRule",
    schema={
        "required": ["banned"],
        "properties": {"banned": {"type": "object", "additionalProperties": {"type": "string"}}},
    },
    message="{old} is banned",
)
class BannedApiRule:
    @staticmethod
    def check(entry):
        return []

    @staticmethod
    def summary(entry):
        return f"ban {len(entry['banned'])} APIs"

    @staticmethod
    def key(entry):
        return "BannedApiRule"

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        rule = rules[-1]
        tables.hooks.put(SUPPORT, ANY, Banned(rule, tuple(rule.params["banned"].items())))
        tables.add_trigger("torch", classify_only=True)


@dataclass(frozen=True)
class Banned:
    rule: Rule
    banned: tuple[tuple[str, str], ...]

    def judge(self, name, invoked, dtype_shown, rewritten):
        reason = dict(self.banned).get(name)
        if reason is None:
            return Tally.SUPPORTED if invoked else Tally.NO_USE
        return Classified(self.rule, Support.UNSUPPORTED, f"{name} is banned here", reason, "", "site list")

    def lists_method(self, method):
        return False
'''


def _throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, text: str) -> Iterator[None]:
    """A kind module imported from a temporary package, registered only for one test."""
    package = tmp_path / "throwaway_kinds"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / f"{module}.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_KINDS", dict(registry.all_kinds()))
    importlib.import_module(f"throwaway_kinds.{module}")
    yield
    for name in (f"throwaway_kinds.{module}", "throwaway_kinds"):
        sys.modules.pop(name, None)


@pytest.fixture
def throwaway_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The generic-node kind, registered only for this test."""
    yield from _throwaway(tmp_path, monkeypatch, "constant_rule", KIND)


@pytest.fixture
def throwaway_rename_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The rename-like kind, keyed by qualified name, registered only for this test."""
    yield from _throwaway(tmp_path, monkeypatch, "moved_api_rule", RENAME_KIND)


def test_a_kind_outside_the_package_converts(throwaway_kind: None, tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text('{"rules": {"ConstantRule": [{"name": "mylib.WORLD_SIZE", "value": 1}]}}')
    tables = compile_rules(load_rules([rules], builtin=False))
    source = b"import mylib\n\nshards = mylib.WORLD_SIZE * 2  # per device\nother = mylib.RANK\n"
    result = convert_source("train.py", source, tables)
    assert result.status is Status.CONVERTED
    assert result.output == b"import mylib\n\nshards = 1 * 2  # per device\nother = mylib.RANK\n"
    findings = result.findings
    assert isinstance(findings, tuple)
    assert [(f.start_line, f.operation, f.message) for f in findings] == [
        (3, Operation.MODIFY, "mylib.WORLD_SIZE -> 1")
    ]


def test_the_kind_leaves_other_names(throwaway_kind: None, tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text('{"rules": {"ConstantRule": [{"name": "mylib.WORLD_SIZE", "value": 1}]}}')
    tables = compile_rules(load_rules([rules], builtin=False))
    source = b"import otherlib\n\nshards = otherlib.WORLD_SIZE * 2\n"
    result = convert_source("train.py", source, tables)
    assert result.output in (None, source)
    assert not result.findings


def test_a_throwaway_kind_is_not_asked_for_fixtures(throwaway_kind: None) -> None:
    """tests/fixtures/kinds/ holds the shipped kinds' folders; a kind outside the package needs none."""
    from test_kind_fixtures import _shipped_kinds

    assert "ConstantRule" in registry.all_kinds()
    assert "ConstantRule" not in _shipped_kinds() and "FuncNameModifyRule" in _shipped_kinds()


@dataclass(frozen=True)
class _Hook:
    name: str
    order: int = 0


def test_registry_orders_and_replaces() -> None:
    registry = HookRegistry()
    calls = hooks.CALLS
    registry.add(calls, "torch.x", _Hook("late", order=2))
    registry.add(calls, "torch.x", _Hook("first", order=1))
    registry.add(calls, "torch.x", _Hook("second", order=1))
    assert [h.name for h in registry.at(calls, "torch.x") or []] == ["first", "second", "late"]
    registry.put(hooks.METHODS, "cuda", _Hook("old"))  # a stand-in hook
    registry.put(hooks.METHODS, "cuda", _Hook("new"))  # a stand-in hook
    assert registry.one(hooks.METHODS, "cuda") == _Hook("new")
    assert registry.at(hooks.METHODS, "npu") is None and registry.one(hooks.STRINGS, "*") is None
    assert registry.generic == set()
    registry.add(hooks.node_slot(cst.Integer), "*", _Hook("any"))
    assert registry.generic == {cst.Integer}


def test_keys_of_a_node_most_specific_first() -> None:
    call = cst.parse_expression("tc.synchronize()")
    assert isinstance(call, cst.Call)
    qualify = {"tc": "torch.cuda"}.get

    def resolve(node: cst.CSTNode) -> str | None:
        if isinstance(node, cst.Name):
            return qualify(node.value)
        if isinstance(node, cst.Attribute):
            base = resolve(node.value)
            return f"{base}.{node.attr.value}" if base else None
        return None

    assert keys_of(call, resolve) == ["torch.cuda.synchronize", "torch.cuda.*", ".synchronize", "*"]
    assert keys_of(cst.Integer("1"), resolve) == ["*"]


def _moved_tables(tmp_path: Path) -> Tables:
    rules = tmp_path / "rules.json"
    rules.write_text('{"rules": {"MovedApiRule": [{"old": "mylib.legacy", "new": "newlib.modern"}]}}')
    return compile_rules(load_rules([rules], builtin=False))


def test_a_rename_like_kind_outside_the_package_converts(throwaway_rename_kind: None, tmp_path: Path) -> None:
    tables = _moved_tables(tmp_path)
    source = b"import mylib\n\ny = mylib.legacy.run(1)  # moved\nz = mylib.other\n"
    result = convert_source("train.py", source, tables)
    assert result.status is Status.CONVERTED
    # the name under the covered prefix moves with it, and its new module is imported
    assert result.output == (
        b"import mylib\nimport newlib.modern\n\ny = newlib.modern.run(1)  # moved\nz = mylib.other\n"
    )
    assert [(f.start_line, f.operation, f.message) for f in result.findings] == [
        (3, Operation.MODIFY, "mylib.legacy moved to newlib.modern")
    ]


def test_the_rename_like_kind_renames_imports_by_the_same_hook(
    throwaway_rename_kind: None, tmp_path: Path
) -> None:
    tables = _moved_tables(tmp_path)
    source = b"from mylib import legacy\nimport mylib.legacy as ml\n\nlegacy.run(ml.step)\n"
    result = convert_source("train.py", source, tables)
    assert result.output == (
        b"from newlib import modern\nimport newlib.modern as ml\n\nmodern.run(ml.step)\n"
    )
    # each import, and each use the hook rewrote (`legacy.run`, `ml.step`)
    moved = (Operation.MODIFY, "mylib.legacy moved to newlib.modern")
    assert [(f.start_line, f.operation, f.message) for f in result.findings] == [
        (1, *moved),
        (2, *moved),
        (4, *moved),
        (4, *moved),
    ]
    untouched = b"import otherlib\n\ny = otherlib.legacy.run(1)\n"
    assert convert_source("train.py", untouched, tables).output in (None, untouched)


@pytest.fixture
def throwaway_support_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The support-list-like kind, registered only for this test."""
    yield from _throwaway(tmp_path, monkeypatch, "banned_api_rule", SUPPORT_KIND)


@pytest.mark.parametrize("fast", [True, False])
def test_a_support_list_like_kind_outside_the_package_classifies(
    throwaway_support_kind: None, tmp_path: Path, fast: bool
) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(
        '{"rules": {"BannedApiRule": [{"banned": {"torch.linalg.lstsq": "solve it on the host"}}]}}'
    )
    tables = compile_rules(load_rules([rules], builtin=False))
    source = b"import torch\n\nx = torch.linalg.lstsq(a, b)  # banned\ny = torch.relu(x)\n"
    result = convert_source("train.py", source, tables, fast=fast)
    assert result.output in (None, source)
    assert [(f.start_line, f.operation, f.message, f.api) for f in result.findings] == [
        (
            3,
            Operation.UNSUPPORTED,
            "torch.linalg.lstsq is banned here; solve it on the host",
            "torch.linalg.lstsq",
        )
    ]
    assert result.supported == 1  # torch.relu, counted by the engine from the hook's tally
