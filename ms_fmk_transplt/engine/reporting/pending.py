"""A finding waiting for its position (engine/syntax/node_positions.py computes positions only for these)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.interface import Rule
from ms_fmk_transplt.records import Operation, Support


@dataclass
class Pending:
    """A finding waiting for its position, which is computed only if the file has any."""

    node: cst.CSTNode
    rule: Rule
    operation: Operation
    message: str
    heuristic: bool = False
    line_offset: int = 0
    within: int = 0  # the finding is on this line of the node, counted from its first (0)
    noop: bool = False
    api: str = ""  # the API the finding is about, when there is one
    support: Support | None = None
    dtypes: str = ""
    suggestion: str = ""  # what to do instead
    source: str = ""  # what decided the support status
    related: cst.CSTNode | None = None  # another node the message names by line: `{line}` in it
