"""A `from` import whose names go to different modules (engine/importing/import_split.py).

The output must parse, bind the same names as the names imported one by one would, and keep
every comment of the statement.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections import Counter

import pytest
from helpers import convert_text
from hypothesis import given, settings
from hypothesis import strategies as st

# names of each module: some move (to one module or to several), some stay
POOLS = {
    "torch": ["cuda", "optim", "nn", "autograd"],
    "torch.cuda": ["nvtx", "Stream", "synchronize", "OutOfMemoryError", "Event"],
    "torch.cuda.memory": ["_record_memory_history", "memory_allocated", "_snapshot", "memory_reserved"],
}


def _comments(text: str) -> Counter[str]:
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return Counter(t.string for t in tokens if t.type == tokenize.COMMENT)


def _bindings(text: str) -> set[tuple[str, str, str | None]]:
    return {
        (node.module or "", alias.name, alias.asname)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


FORMS = {  # a statement on a line of its own, before another on its line, as a one-line try body
    "line": "{}",
    "semicolon": "{}; y = 1",
    "try": "try: {}\n{indent}except ImportError: pass",
}


def _one_by_one(
    module: str, names: list[tuple[str, str | None]], form: str, tables
) -> set[tuple[str, str, str | None]]:
    """What importing each name in a statement of its own binds (in the same form)."""
    text = "".join(
        FORMS[form].format(f"from {module} import {n}{f' as {a}' if a else ''}", indent="") + "\n"
        for n, a in names
    )
    return _bindings(convert_text(text, tables)[0])


@st.composite
def _statements(draw):
    module = draw(st.sampled_from(sorted(POOLS)))
    chosen = draw(st.lists(st.sampled_from(POOLS[module]), min_size=1, max_size=4, unique=True))
    names = [(n, draw(st.sampled_from([None, f"{n}_x"]))) for n in chosen]
    parens = draw(st.booleans())
    indent = draw(st.sampled_from(["", "    "]))
    head = f"{indent}from {module} import "
    texts = [f"{n} as {a}" if a else n for n, a in names]
    if not parens:
        sep = draw(st.sampled_from([", ", ",", ", \\\n" + indent + "    "]))
        statement = f"from {module} import " + sep.join(texts)
        form = draw(st.sampled_from(sorted(FORMS)))
        body = (
            indent
            + FORMS[form].format(statement, indent=indent)
            + draw(st.sampled_from(["", "  # c"]))
            + "\n"
        )
    else:
        form = "line"
        parts = [
            head + "(" + draw(st.sampled_from(["", "  # opening"])) + "\n"
            if draw(st.booleans())
            else head + "("
        ]
        for i, text in enumerate(texts):
            last = i == len(texts) - 1
            own = draw(st.sampled_from(["", f"# about {text}"]))
            if own and parts[-1].endswith("\n"):
                parts.append(f"{indent}    {own}\n")
            lead = f"{indent}    " if parts[-1].endswith("\n") else ("" if parts[-1].endswith("(") else " ")
            comma = "," if not last or draw(st.booleans()) else ""
            newline = draw(st.booleans())
            comment = draw(st.sampled_from(["", f"  # on {text}"])) if newline else ""
            parts.append(lead + text + comma + comment + ("\n" if newline else ""))
        parts.append((indent if parts[-1].endswith("\n") else "") + ")\n")
        body = "".join(parts)
    source = ("if True:\n" if indent else "") + body + "x = 1\n"
    return source, module, names, form


@settings(max_examples=300, deadline=None)
@given(_statements())
def test_split_imports_parse_bind_the_same_names_and_keep_every_comment(builtin_tables, case):
    source, module, names, form = case
    ast.parse(source)  # the generator writes valid Python
    converted, _ = convert_text(source, builtin_tables)
    assert _bindings(converted) == _one_by_one(module, names, form, builtin_tables), converted
    assert _comments(converted) == _comments(source), converted


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "from torch import (\n    cuda,  # device\n    optim,  # optimisers\n)\n",
            "from torch import (\n    optim,  # optimisers\n)\nfrom torch import npu  # device\n",
            id="first-name-moves",
        ),
        pytest.param(
            "from torch import (\n    optim,\n    cuda  # device\n)\n",
            "from torch import (\n    optim\n)\nfrom torch import npu  # device\n",
            id="last-name-without-comma-moves",
        ),
        pytest.param(
            "from torch import (\n    optim,\n    # about cuda\n    cuda,  # device\n)\n",
            "from torch import (\n    optim,\n    # about cuda\n)\nfrom torch import npu  # device\n",
            id="own-line-comment-stays",
        ),
        pytest.param(
            "from torch import (cuda as gpu,  # short\n                   nn)\n",
            "from torch import (nn)\nfrom torch import npu as gpu  # short\n",
            id="hanging-indent",
        ),
        pytest.param(
            "from torch.cuda import (\n    nvtx,\n    Stream,  # s\n    Event,  # e\n)\n",
            "from torch.cuda import (\n    nvtx,\n)\nfrom torch.npu import (\n    Stream,  # s\n    Event,  # e\n)\n",
            id="moved-names-keep-one-comment-each",
        ),
        pytest.param(
            "from torch.cuda import (  # tools\n    OutOfMemoryError,\n    Stream,\n)\n",
            "from torch import (  # tools\n    OutOfMemoryError,\n)\nfrom torch.npu import Stream\n",
            id="no-name-stays-first-module-keeps-layout",
        ),
        pytest.param(
            "from torch import cuda, \\\n    autograd\n",
            "from torch import autograd\nfrom torch import npu\n",
            id="backslash",
        ),
        pytest.param(
            "from torch import optim, cuda  # both\n",
            "from torch import optim  # both\nfrom torch import npu\n",
            id="one-line",
        ),
        pytest.param(
            "from torch.cuda import nvtx, Stream; s = Stream()  # s\n",
            "from torch.cuda import nvtx; from torch.npu import Stream; s = Stream()  # s\n",
            id="before-another-statement-on-the-line",
        ),
        pytest.param(
            "x = 1; from torch.cuda import nvtx, Stream;  # s\n",
            "x = 1; from torch.cuda import nvtx; from torch.npu import Stream;  # s\n",
            id="a-last-semicolon-stays-last",
        ),
        pytest.param(
            "try: from torch.cuda import nvtx, Stream  # s\nexcept ImportError: pass\n",
            "try: from torch.cuda import nvtx; from torch.npu import Stream  # s\nexcept ImportError: pass\n",
            id="one-line-try-body",
        ),
        pytest.param(
            "if x: from torch import (cuda,  # dev\n    optim)\n",
            "if x: from torch import (optim); from torch import npu as cuda  # dev\n",
            id="one-line-body-keeps-the-moved-names-comment",
        ),
    ],
)
def test_split_layouts(builtin_tables, source, expected):
    converted, _ = convert_text(source, builtin_tables)
    assert converted.replace("import torch_npu\n", "") == expected
