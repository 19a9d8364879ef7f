"""Sources CPython parses but libcst mistakes (engine/conversion/normalise.py): converted through a normalised
re-parse with every other byte kept, or failed with the precise reason."""

from __future__ import annotations

import ast

import pytest

from ms_fmk_transplt.engine.conversion import convert_source
from ms_fmk_transplt.engine.conversion.normalise import normalise, odd_tail, restore, tail
from ms_fmk_transplt.records import Status


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_form_feed_indentation_converts_with_line_endings_kept(builtin_tables, ending: str) -> None:
    lines = [
        "import torch",
        "if x:",
        "    if y:",
        "        a = 1",
        "  \f# note",
        "\f    b = torch.cuda.is_available()",
    ]
    source = ending.join(lines) + ending
    result = convert_source("t.py", source.encode(), builtin_tables)
    assert result.status is Status.CONVERTED, result.reason
    assert (
        result.output
        == source.replace("torch.cuda", "torch.npu")
        .replace("import torch" + ending, f"import torch{ending}import torch_npu{ending}", 1)
        .encode()
    )


def test_backslash_line_that_libcst_would_move_into_the_block(builtin_tables) -> None:
    source = b"import torch\nif ok:\n    a = 1\n\\\nb = torch.cuda.device_count()\n"
    result = convert_source("t.py", source, builtin_tables)
    assert result.status is Status.CONVERTED, result.reason
    assert result.output == source.replace(b"torch.cuda", b"torch.npu").replace(
        b"import torch\n", b"import torch\nimport torch_npu\n", 1
    )
    assert ast.dump(ast.parse(result.output)).count("If(") == 1
    assert [f.start_line for f in result.findings if f.rule_id == "TP101"] == [5]


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        (b"import torch\nfor i in y:\n    \\\nz = 1 + \\\n \\\n3\nw = torch.cuda.is_available()\n", "(3, 5)"),
    ],
)
def test_backslash_forms_libcst_cannot_take_are_reported_with_their_lines(
    builtin_tables, source, lines
) -> None:
    ast.parse(source)
    result = convert_source("t.py", source, builtin_tables)
    assert result.status is Status.FAILED and result.output is None
    assert f"lines holding only a backslash continuation {lines}" in result.reason
    assert result.reason.endswith("(libcst; CPython parses it)")


def test_normalise_keeps_string_contents_and_restore_inverts_it() -> None:
    source = b'x = """\n\f  text\n    \\\n"""\nif x:\n\f    y = 1\n'
    normalised = normalise(source)
    assert normalised is not None
    assert b'"""\n\f  text\n    \\\n"""' in normalised.data  # inside the string: untouched
    assert normalised.data.endswith(b"if x:\n    y = 1\n")
    assert restore(normalised, normalised.data) == source


def test_nothing_to_normalise() -> None:
    assert normalise(b"import torch\nif x:\n    y = 1\n") is None


def test_indented_lines_after_the_last_code_line_are_the_tail() -> None:
    lines = b"def f():\n    return 1\n  # a\n # b\n\x0c\n   \n# c\n".splitlines(keepends=True)
    assert sorted(tail(lines)) == [2, 3, 4, 5]
    assert odd_tail(b"".join(lines))
    assert not odd_tail(b"def f():\n    return 1\n# a\n\n")


def test_final_backslash_line_converts_once_the_tail_is_normalised(builtin_tables) -> None:
    """A lone backslash before the last blank line: the blank line it leaves is the file's tail."""
    source = (
        b"import torch\n        \x0cif x:\n  \n\x0c    x = torch.cuda.is_available()\n\x0cfor i in y:\n    \\\n"
        b"y = 'cuda:0'\n \\\n\n"
    )
    result = convert_source("t.py", source, builtin_tables)
    assert result.status is Status.CONVERTED
    assert result.output == source.replace(b"import torch\n", b"import torch\nimport torch_npu\n").replace(
        b"cuda", b"npu"
    )


def test_mixed_tabs_and_spaces_are_expanded_to_cpython_columns_and_restored() -> None:
    source = b'def f():\n    x = """\n\tkept\n"""\n    if x:\n\t    y = 1\n\t    if y:\n \t    \tz = 2\n    w = 3\n'
    normalised = normalise(source)
    assert normalised is not None
    assert normalised.data == (
        b'def f():\n    x = """\n\tkept\n"""\n    if x:\n            y = 1\n            if y:\n                z = 2\n    w = 3\n'
    )
    assert ast.dump(ast.parse(normalised.data)) == ast.dump(ast.parse(source))
    assert restore(normalised, normalised.data) == source


def test_tabs_alone_or_spaces_alone_are_not_normalised() -> None:
    assert normalise(b"def f():\n\tif x:\n\t\ty = 1\n") is None
    assert normalise(b'def f():\n    s = """\n\tin a string\n"""\n') is None


def test_a_line_the_conversion_adds_is_indented_like_the_nearest_line_indented_alike() -> None:
    source = b"import torch\ndef f():\n\t    a = 1\n\t    b = 2\n    \n\t\t\n"
    normalised = normalise(source)
    assert normalised is not None
    output = normalised.data.replace(b"import torch\n", b"import torch\nimport torch_npu\n").replace(
        b"    b = 2\n", b"    b = 2\n            c = 3\n"
    )
    # the added top-level line stays at column 0, though the blank tail lines were tab-indented
    assert restore(normalised, output) == (
        b"import torch\nimport torch_npu\ndef f():\n\t    a = 1\n\t    b = 2\n\t    c = 3\n    \n\t\t\n"
    )


def test_a_last_line_of_spaces_without_newline_is_given_back() -> None:
    source = b"if x:\n\ty = 1\n\n    "
    normalised = normalise(source)
    assert normalised is not None and normalised.data == b"if x:\n\ty = 1\n\n"
    assert restore(normalised, normalised.data) == source
    assert restore(normalised, normalised.data.rstrip(b"\n")) is None  # the output must end its last line


def test_mixed_indentation_libcst_rejects_is_named_when_conversion_fails() -> None:
    from ms_fmk_transplt.engine.conversion.normalise import libcst_limit

    source = b"class A:\n    def f(self):\n\t    return 1\n"
    assert libcst_limit(source) == (
        "indentation mixing tabs and spaces that libcst's tokenizer cannot read as CPython does"
    )


@pytest.mark.parametrize(
    ("line", "column"),
    [
        pytest.param("\t    return torch.cuda.is_available()", 13, id="mixed-tabs"),
        pytest.param("  \f        return torch.cuda.is_available()", 19, id="form-feed"),
    ],
)
def test_findings_on_normalised_lines_have_the_original_columns(
    builtin_tables, line: str, column: int
) -> None:
    source = f"import torch\nclass A:\n    def f(self):\n{line}\n"
    result = convert_source("t.py", source.encode(), builtin_tables)
    assert result.status is Status.CONVERTED, result.reason
    (finding,) = [f for f in result.findings if f.rule_id == "TP101"]
    assert (finding.start_line, finding.column) == (4, column)
    assert line[column - 1 :].startswith("torch.cuda")
