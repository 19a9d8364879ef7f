"""engine/syntax/node_positions.py gives libcst's own syntactic ranges, for every node and for any subset."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from ms_fmk_transplt.engine.syntax import positions

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(ROOT.glob("sample_models/**/*.py")) + sorted(ROOT.glob("tests/fixtures/**/*.in.py"))
# compound statements, decorators, semicolons, parenthesised imports, comments, odd whitespace
EXTRA = """\
import os, sys  # two
from torch.cuda import (
    amp,
    nvtx as n,
)
@decorate(x.cuda())
class A(B, metaclass=M):
    def f(self, a: int = 1, *args, **kw) -> "A":
        try:
            x = 1; y = torch.zeros(2, device="cuda")
        except (ValueError, TypeError) as e:
            raise RuntimeError("cuda") from e
        else:
            pass
        finally:
            del x
        with torch.cuda.amp.autocast(), open(p) as fh:
            for i in range(3):
                while i:
                    i -= 1
                else:
                    continue
        return [t.cuda() for t in ts if t is not None] if a else {k: v for k, v in kw.items()}
if __name__ == "__main__":
    lambda q: q.cuda(); print(f"{torch.cuda.device_count()!r:>4}")
"""


CASES = [
    "import torch\n\n\n@decorate(torch.cuda.device_count())\n@other\nclass A:\n    x = torch.cuda.is_available()\n",
    "import torch; x = torch.cuda.is_available(); y = 1\nz = 'cuda'\n",
    "# header comment\n\nimport torch\nif True:\n    pass\n\n\n# a comment\nasync def f():\n    await g(\n        torch.cuda.synchronize(),\n    )\n",
    "import torch\n@torch.no_grad()\ndef f():\n    return torch.zeros(1).cuda()\n",
    # line ends other than LF, and a CR inside a literal: counted as libcst counts them
    "import torch\r\nif x:\r\n    y = torch.zeros(1).cuda()  # c\r\n\r\nz = 1\r\n",
    "import torch\rif x:\r    y = torch.zeros(1).cuda()\rz = 1\r",
    'import torch\ns = """a\rb\r\nc"""; t = torch.cuda.is_available()\nu = (1,\r\n 2)\n',
    "x = 1\ny = torch.cuda.is_available()",  # no trailing newline
]


def _modules() -> list[tuple[str, cst.Module]]:
    found = [(f"case{i}", cst.parse_module(case)) for i, case in enumerate([EXTRA, *CASES])]
    for path in SOURCES:
        try:
            found.append((str(path.relative_to(ROOT)), cst.parse_module(path.read_bytes())))
        except cst.ParserSyntaxError:
            continue  # fixtures of files libcst cannot read
    return found


class _Nodes(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


@pytest.mark.parametrize(
    ("name", "module"), _modules(), ids=lambda value: value if isinstance(value, str) else ""
)
def test_ranges_equal_libcsts_for_every_node_and_for_subsets(name: str, module: cst.Module) -> None:
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    collector = _Nodes()
    module.visit(collector)
    # libcst 1.5 gives no position to a few whitespace nodes (of `match` statements); compare the
    # nodes libcst places, and only whitespace may be unplaced
    unplaced = [node for node in collector.nodes if node is not module and node not in expected]
    assert all(isinstance(node, cst.BaseParenthesizableWhitespace) for node in unplaced), unplaced
    nodes = [node for node in collector.nodes if node is not module and node in expected]

    def want(node: cst.CSTNode) -> tuple[tuple[int, int], tuple[int, int]]:
        where = expected[node]
        return (where.start.line, where.start.column), (where.end.line, where.end.column)

    assert positions(module, nodes) == {id(node): want(node) for node in nodes}
    # a few nodes alone: a compound statement's range still ends where its body does
    for stride, offset in ((5, 0), (5, 3), (23, 11)):
        subset = nodes[offset::stride]
        assert positions(module, subset) == {id(node): want(node) for node in subset}
