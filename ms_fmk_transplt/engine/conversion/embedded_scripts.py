"""Shell scripts and commands written inside Python: the launch-script scans read them too.

A launcher that writes a job script (`script = "#!/bin/bash\\nNGPU=$(nvidia-smi -L | wc -l)..."`)
or runs a command (`os.system("nvidia-smi")`, `subprocess.run(["nvidia-smi", "-L"])`) carries
CUDA-only shell text that the text scans (TextScanRule) report in a copied `.sh` file. Here the
same scans read, line by line, the string literals of a Python module that are shell text:

- a literal that starts with a shell shebang (`#!/bin/bash`, `#!/usr/bin/env sh`);
- the command of `os.system`, `os.popen` and `subprocess`'s run functions: a string, or a list
  of strings joined by spaces.

An f-string counts by its literal parts (each placeholder reads as `{}`). Each line a scan
matches is one finding on that line of the literal. Only scans of `*.sh` files apply.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.devices import code_of
from ms_fmk_transplt.engine.interface import Tables, TextHook
from ms_fmk_transplt.engine.reporting import SiteReports
from ms_fmk_transplt.engine.syntax import NodeIndex
from ms_fmk_transplt.records import Operation, Support

SHELL_FILE = "embedded.sh"  # the name the scans are chosen by
COMMAND_CALLS = frozenset(
    {
        "os.system",
        "os.popen",
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
    }
)
# what a file must hold for a shell literal to be there at all (the cheap test before the scans)
MARKERS = (b"#!", b"os.system", b"os.popen", b"subprocess")
_SHEBANG = re.compile(r"#!\s*\S*(sh|bash|zsh|dash|ksh)\b")

Literal = cst.SimpleString | cst.ConcatenatedString | cst.FormattedString


def could_hold(data: bytes, scans: list[TextHook]) -> bool:
    """Whether `data` may hold shell text that one of `scans` reports (False proves it does not)."""
    if not scans or not any(marker in data for marker in MARKERS):
        return False
    text = data.decode("utf-8", errors="replace")
    return any(scan.matches_anywhere(text) for scan in scans)


def text_of(node: cst.BaseExpression) -> str | None:
    """The text a string literal spells (an f-string's placeholders as `{}`); None for bytes or
    anything else."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = text_of(node.left), text_of(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, cst.FormattedString):
        return "".join(
            part.value if isinstance(part, cst.FormattedStringText) else "{}" for part in node.parts
        )
    return None


def shell_literals(
    nodes: NodeIndex, qualify: Callable[[cst.CSTNode], str | None]
) -> Iterator[tuple[cst.BaseExpression, str]]:
    """Each literal (or command list) of the module that is shell text, with that text, once."""
    seen: set[int] = set()
    for call in nodes.of(cst.Call):
        if qualify(call.func) not in COMMAND_CALLS or not call.args or call.args[0].keyword is not None:
            continue
        command = call.args[0].value
        if isinstance(command, (cst.List, cst.Tuple)):
            words = [text_of(e.value) for e in command.elements if isinstance(e, cst.Element)]
            if words and all(w is not None for w in words):
                seen.add(id(command))
                yield command, " ".join(w for w in words if w is not None)
        elif (text := text_of(command)) is not None:
            seen.add(id(command))
            yield command, text
    for joined in nodes.of(cst.ConcatenatedString):  # its parts are read as one literal
        seen.update((id(joined.left), id(joined.right)))
    for literal in nodes.of_any(cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
        if id(literal) in seen or "#!" not in _head(literal):
            continue
        text = text_of(literal)
        if text is not None and _SHEBANG.match(text.lstrip()):
            yield literal, text


def _head(node: cst.BaseExpression) -> str:
    """The source of a literal's first part: a shebang, when there is one, is in it."""
    while isinstance(node, cst.ConcatenatedString):
        node = node.left
    if isinstance(node, cst.SimpleString):
        return node.value
    if isinstance(node, cst.FormattedString) and node.parts:
        first = node.parts[0]
        return first.value if isinstance(first, cst.FormattedStringText) else ""
    return ""


def script_lines(text: str) -> Iterator[tuple[int, str]]:
    """(0-based line within the literal, line) for each line of the shell text."""
    yield from enumerate(text.splitlines())


@dataclass
class ShellScripts:
    """A module's shell text and the scans that read it."""

    literals: list[tuple[cst.BaseExpression, str]]
    scans: list[TextHook]

    @classmethod
    def of(
        cls, nodes: NodeIndex, tables: Tables, qualify: Callable[[cst.CSTNode], str | None]
    ) -> ShellScripts | None:
        """The module's shell text that some scan may report; None when there is none."""
        scans = tables.text_hooks_for(SHELL_FILE)
        if not scans:
            return None
        literals = [
            (literal, text)
            for literal, text in shell_literals(nodes, qualify)
            if any(scan.matches_anywhere(text) for scan in scans)
        ]
        return cls(literals, scans) if literals else None

    def report(self, site: SiteReports) -> None:
        """Each line a scan reports, as an UNSUPPORTED finding on that line (on the literal's first
        line when its lines are not the source's: escaped newlines). A literal a rule rewrote
        (`CUDA_VISIBLE_DEVICES=0 python ...` in a command) is the rule's, not reported again."""
        rewritten = {id(item.node) for item in site.pending if item.operation is Operation.MODIFY}
        for literal, text in self.literals:
            if id(literal) in rewritten:
                continue
            same_lines = code_of(literal).count("\n") == text.count("\n")
            for offset, line in script_lines(text):
                for scan in self.scans:
                    found = scan.scan_line(offset + 1, line)
                    if found is not None:
                        site.report_message(
                            literal,
                            scan.rule,
                            Operation.UNSUPPORTED,
                            found.message,
                            support=Support.UNSUPPORTED,
                            within=offset if same_lines else 0,
                            suggestion=found.suggestion,
                        )
