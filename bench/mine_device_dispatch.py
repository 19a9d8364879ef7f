"""Find device-dispatch sites in git mirrors and label them from the code alone (bench/device_dispatch.py).

A site is one line of a dispatch that selects per device: a branch of an if/elif chain or of a
conditional expression whose test names a device type, or an entry of a dict keyed by device
types. The label is a fact of the code, read with CPython's `ast` and a word test, never with the
converter: `keep` where another alternative of the same dispatch names the NPU (the line is a
CUDA alternative), `convert` where no alternative of the dispatch names the NPU and the line is
in the branch a CUDA test selects and uses a CUDA API (`torch.cuda.`, `.cuda(`, `"cuda"`), and
is not inside another alternative of a dispatch that names the NPU. Lines naming a Lightning
accelerator are left out (bench/literal_roles.py labels those).

    python bench/mine_device_dispatch.py --mirrors /work/.mirror --per-repo 12 > bench/data/device_dispatch.jsonl
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

NPU = re.compile(r"(?<![a-z])(npu|ascend)(?![a-z])", re.IGNORECASE)
CUDA = re.compile(r"(?<![a-z])cuda(?![a-z])", re.IGNORECASE)
CUDA_USE = re.compile(r"torch\.cuda\.\w|\.cuda\(|[\"']cuda(:\d)?[\"']")
ACCELERATOR = re.compile(r"accelerator")  # Lightning's accelerator names: bench/literal_roles.py covers them
SKIP = re.compile(r"(^|/)(tests?|docs?|examples?)/|_test\.py$|test_\w+\.py$")


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={mirror}", *args], capture_output=True, text=True, check=False
    ).stdout


Branches = list[tuple[ast.expr | None, list[ast.stmt]]]


def _chain(head: ast.If) -> Branches:
    """An if/elif chain as (test, body) pairs, the `else` with test None."""
    chain: Branches = []
    link: ast.stmt = head
    while isinstance(link, ast.If):
        chain.append((link.test, link.body))
        if len(link.orelse) == 1 and isinstance(link.orelse[0], ast.If):
            link = link.orelse[0]
        else:
            if link.orelse:
                chain.append((None, link.orelse))
            break
    return chain


def _dispatches(tree: ast.AST) -> Iterator[Branches]:
    """Each run of `if` statements that follow one another in a block, as the branches of its chains."""
    elifs = {
        id(node.orelse[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)
    }
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            run: list[ast.If] = []
            for statement in [*block, None]:
                if isinstance(statement, ast.If) and id(statement) not in elifs:
                    run.append(statement)
                    continue
                if run:
                    yield [branch for head in run for branch in _chain(head)]
                run = []


def _code_only(text: str) -> list[str]:
    """The lines of `text` with comments and prose strings (those holding a space) blanked."""
    lines = text.splitlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return lines
    for token in reversed(tokens):
        prose = token.type == tokenize.STRING and any(c.isspace() for c in token.string)
        if (token.type == tokenize.COMMENT or prose) and token.start[0] == token.end[0]:
            row, (start, end) = token.start[0] - 1, (token.start[1], token.end[1])
            lines[row] = lines[row][:start] + " " * (end - start) + lines[row][end:]
    return lines


def sites(text: str) -> Iterator[tuple[int, str]]:
    """(line, label) of the dispatch sites of one module."""
    tree = ast.parse(text)
    lines = text.splitlines()

    def segment(node: ast.AST) -> str:
        # ast.get_source_segment splits the whole text on every call: quadratic on large files
        first, last = getattr(node, "lineno", 0), getattr(node, "end_lineno", None) or 0
        if not first:
            return ""
        if first == last:
            piece = lines[first - 1].encode()[node.col_offset : node.end_col_offset]  # type: ignore[attr-defined]
            return piece.decode(errors="replace")  # ast's columns count UTF-8 bytes
        return "\n".join(lines[first - 1 : last])

    chains = list(_dispatches(tree))
    code = _code_only(text)
    beside_npu: set[int] = set()  # lines of the other branches of a chain that has an NPU branch
    for chain in chains:
        tests = [segment(test) if test is not None else "" for test, _ in chain]
        if any(NPU.search(t) for t in tests):
            for (test, body), words in zip(chain, tests, strict=True):
                if not NPU.search(words):
                    start = test.lineno if test is not None else body[0].lineno
                    beside_npu.update(range(start, (body[-1].end_lineno or body[-1].lineno) + 1))
    for chain in chains:
        tests = [segment(test) if test is not None else "" for test, _ in chain]
        has_npu = any(NPU.search(t) for t in tests)
        for (test, body), words in zip(chain, tests, strict=True):
            if test is None or not CUDA.search(words) or NPU.search(words):
                continue
            first, last = body[0].lineno, body[-1].end_lineno or body[-1].lineno
            span = [test.lineno, *range(first, last + 1)]
            for number in dict.fromkeys(span):
                line = code[number - 1]
                if (
                    CUDA_USE.search(line)
                    and not line.lstrip().startswith("#")
                    and not ACCELERATOR.search(line)
                ):
                    yield number, "keep" if has_npu or number in beside_npu else "convert"
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if "npu" in keys:
                for key in node.keys:
                    if isinstance(key, ast.Constant) and key.value == "cuda":
                        yield key.lineno, "keep"
        elif (
            isinstance(node, ast.IfExp)
            and NPU.search(segment(node.test))
            and CUDA_USE.search(segment(node.orelse))
        ):
            yield node.orelse.lineno, "keep"


def _candidates(mirror: Path) -> list[str]:
    """Files that use CUDA, those that also name the NPU first (the `keep` sites are the rarer)."""

    def grep(*patterns: str, every: bool = False) -> list[str]:
        args = [a for p in patterns for a in ("-e", p)]
        out = _git(
            mirror, "grep", "-l", "-I", "-E", *(["--all-match"] if every else []), *args, "HEAD", "--", "*.py"
        )
        return [line.partition(":")[2] for line in out.splitlines()]

    tests = r"is_available|version\.(cuda|hip)|[=!]= *[\"']cuda|\.type *[=!]=|startswith\([\"']cuda"
    cuda = [p for p in grep("cuda", tests, every=True) if not SKIP.search(p)]
    npu = set(grep(r"(\b|_)npu\b|_npu_|ascend"))
    return sorted(cuda, key=lambda p: (p not in npu, p))


def mine(mirror: Path, repo: str, per_repo: int) -> Iterator[dict[str, object]]:
    """Up to `per_repo` sites of each label from one mirror."""
    taken = {"keep": 0, "convert": 0}
    commit = _git(mirror, "rev-parse", "HEAD").strip()
    for path in _candidates(mirror):
        text = _git(mirror, "show", f"HEAD:{path}")
        try:
            found = sorted(set(sites(text)))
        except (SyntaxError, ValueError):
            continue
        for number, label in found:
            if taken[label] >= per_repo:
                continue
            taken[label] += 1
            code = text.splitlines()[number - 1].strip()
            yield {
                "repo": repo,
                "commit": commit,
                "path": path,
                "line": number,
                "digest": hashlib.sha1(code.encode()).hexdigest()[:12],
                "label": label,
            }
        if all(n >= per_repo for n in taken.values()):
            return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--per-repo", type=int, default=12)
    args = parser.parse_args()
    for folder in sorted(args.mirrors.iterdir()):
        mirror = folder / "repo"
        if mirror.is_dir():
            for record in mine(mirror, folder.name.replace("+", "/", 1), args.per_repo):
                print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
