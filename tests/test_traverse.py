"""engine/syntax/traverse.py: the copy-on-write pass gives libcst's `module.visit` result, and keeps
unchanged nodes as the original objects."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ms_fmk_transplt.engine.conversion import convert, convert_source
from ms_fmk_transplt.engine.importing import imports
from ms_fmk_transplt.engine.syntax import parsing, traverse

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLES = Path(__file__).parent.parent / "sample_models"
CASES = sorted(FIXTURES.rglob("*.py")) + sorted(SAMPLES.rglob("*.py"))


def _libcst_visit(module: cst.Module, transformer: cst.CSTTransformer) -> cst.Module:
    return module.visit(transformer)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_every_fixture_and_sample_converts_as_with_libcsts_visit(
    builtin_tables, monkeypatch, case: Path
) -> None:
    data = case.read_bytes()
    ours = convert_source(case.name, data, builtin_tables, fast=False)
    monkeypatch.setattr(convert, "transform", _libcst_visit)
    monkeypatch.setattr(imports, "transform", _libcst_visit)
    assert ours == convert_source(case.name, data, builtin_tables, fast=False)


class _Recorder(cst.CSTTransformer):
    """Records every callback; changes what the test asks it to change."""

    def __init__(self, edits: dict[str, object] | None = None) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []
        self.edits = edits or {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.calls.append(("visit", type(node).__name__))
        return super().on_visit(node)

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def]
        self.calls.append(("leave", type(original_node).__name__))
        result = super().on_leave(original_node, updated_node)
        if isinstance(original_node, cst.Name) and original_node.value in self.edits:
            edit = self.edits[original_node.value]
            return edit(updated_node) if callable(edit) else edit
        if isinstance(original_node, cst.SimpleStatementLine):
            code = cst.Module([]).code_for_node(original_node).strip()
            if code in self.edits:
                edit = self.edits[code]
                return edit(updated_node) if callable(edit) else edit
        return result


def _formatting_free(calls: list[tuple[str, str]]) -> list[tuple[str, str]]:
    names = {cls.__name__ for cls in traverse._FORMATTING}
    return [call for call in calls if call[1] not in names]


SOURCE = """\
import torch  # comment
x = torch.cuda.is_available()
def f(a, b=1, *, c: int = 2) -> None:
    '''doc'''
    y = a if b else c  # trailing
    del y
    pass
print(f"{x!r:>{10}}", sep="")
"""


@pytest.mark.parametrize(
    "edits",
    [
        {},
        {"torch": cst.Name("torch_npu")},
        {"del y": cst.RemovalSentinel.REMOVE},  # a statement removed from a body
        {"pass": cst.RemovalSentinel.REMOVE, "del y": cst.RemovalSentinel.REMOVE},
        {"x = torch.cuda.is_available()": lambda node: cst.FlattenSentinel([node, node])},
        {"del y": lambda node: node.with_changes(body=[])},  # emptied: dropped from the body
    ],
    ids=["none", "rename", "remove", "remove-two", "flatten", "emptied"],
)
def test_callbacks_and_result_match_libcst(edits: dict[str, object]) -> None:
    module = cst.parse_module(SOURCE)
    theirs, ours = _Recorder(edits), _Recorder(edits)
    expected = module.visit(theirs)
    got = traverse.transform(module, ours)
    assert got.code == expected.code
    assert got.deep_equals(expected)
    assert _formatting_free(ours.calls) == _formatting_free(theirs.calls)


def test_unchanged_nodes_are_the_original_objects() -> None:
    module = cst.parse_module(SOURCE)
    got = traverse.transform(module, _Recorder({"torch": cst.Name("torch_npu")}))
    assert got is not module
    assert got.body[0] is not module.body[0] and got.body[1] is not module.body[1]  # both name torch
    assert got.body[2] is module.body[2] and got.body[3] is module.body[3]
    assert traverse.transform(module, _Recorder()) is module


def test_a_transformer_with_formatting_callbacks_sees_every_formatting_node() -> None:
    class Comments(cst.CSTTransformer):
        def leave_Comment(self, original_node: cst.Comment, updated_node: cst.Comment) -> cst.Comment:
            return updated_node.with_changes(value=updated_node.value.upper())

    assert not traverse.skips_formatting(Comments())
    module = cst.parse_module(SOURCE)
    assert traverse.transform(module, Comments()).code == module.visit(Comments()).code
    assert "# COMMENT" in traverse.transform(module, Comments()).code


def test_removing_a_required_child_fails_as_in_libcst() -> None:
    module = cst.parse_module("a.b\n")

    class DropName(cst.CSTTransformer):
        def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.RemovalSentinel:
            return cst.RemovalSentinel.REMOVE

    with pytest.raises(TypeError):
        module.visit(DropName())
    with pytest.raises(TypeError, match="cannot be removed"):
        traverse.transform(module, DropName())


def test_removing_an_optional_child_leaves_its_default() -> None:
    module = cst.parse_module("def f(a: int = 1) -> int: ...\n")

    class DropAnnotations(cst.CSTTransformer):
        def leave_Annotation(
            self, original_node: cst.Annotation, updated_node: cst.Annotation
        ) -> cst.RemovalSentinel:
            return cst.RemovalSentinel.REMOVE

    assert traverse.transform(module, DropAnnotations()).code == module.visit(DropAnnotations()).code


_PIECES = st.sampled_from(
    [
        "x = torch.cuda.current_device()\n",
        "if a:\n    b = 1  # c\nelse:\n    pass\n",
        "class C(B):\n    @dec\n    def m(self, *a, **k):\n        return [i for i in a if i]\n",
        "with torch.cuda.device(0) as d, open(f) as g:\n    yield d\n",
        "async def h():\n    await x\n    async for i in y:\n        ...\n",
        "s = f'{a!r}{b:{c}}' 'x' r'\\d'\n",
        "try:\n    import torch\nexcept ImportError:\n    torch = None\nfinally:\n    del q\n",
        "lam = lambda a, /, b=2, *c, d, **e: (a, b)\n",
        "match p:\n    case [1, *r] if r:\n        pass\n    case {'k': v, **kw}:\n        pass\n",
        "t: tuple[int, ...] = (1,)\n",
        "global g; nonlocal_ = 1; assert g, 'm'\n",
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=6), st.sampled_from(["torch", "x", "a", "i", "self"]))
def test_generated_modules_match_libcst(pieces: list[str], name: str) -> None:
    module = cst.parse_module("".join(pieces))
    edits = {name: lambda node: node.with_changes(value=node.value + "_npu")}
    theirs, ours = _Recorder(edits), _Recorder(edits)
    assert traverse.transform(module, ours).code == module.visit(theirs).code
    assert _formatting_free(ours.calls) == _formatting_free(theirs.calls)


@pytest.mark.parametrize("case", CASES[::7], ids=lambda p: p.name)
def test_the_unvalidated_parse_gives_libcsts_tree(case: Path) -> None:
    data = case.read_bytes()
    try:
        expected = cst.parse_module(data)
    except cst.ParserSyntaxError:
        with pytest.raises(cst.ParserSyntaxError):
            parsing.parse_module(data)
        return
    assert parsing.parse_module(data).deep_equals(expected)


def test_nodes_are_validated_again_after_a_parse() -> None:
    parsing.parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with pytest.raises(cst.ParserSyntaxError):
        parsing.parse_module("x = = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("still not a name")


@pytest.mark.parametrize("enabled", [True, False])
def test_the_parse_leaves_the_collector_as_it_found_it(enabled: bool) -> None:
    import gc

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        parsing.parse_module("x = 1\n")
        assert gc.isenabled() is enabled
        with pytest.raises(cst.ParserSyntaxError):
            parsing.parse_module("x = = 1\n")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
