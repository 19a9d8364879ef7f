"""Sources CPython parses but libcst mistakes (engine/normalise.py): converted through a normalised
re-parse with every other byte kept, or failed with the precise reason."""

from __future__ import annotations

import ast

import pytest

from ms_fmk_transplt.engine.convert import convert_source
from ms_fmk_transplt.engine.normalise import normalise, odd_tail, restore, tail
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
