"""Robustness sweep of the distributed mode: every Python file under ROOT as a main script.

    python tools/distributed_sweep.py ROOT

Each file is distributed (`distribute_source`); the output must compile and, distributed again,
must not change. Prints one line per problem and a summary; exit 1 when there is a problem.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import libcst

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ms_fmk_transplt.distributed import distribute_source


def main() -> int:
    """Sweep ROOT; see the module docstring."""
    root = Path(sys.argv[1])
    files = changed = problems = 0
    rules: Counter[str] = Counter()
    for path in sorted(root.rglob("*.py")):
        try:
            source = path.read_text(encoding="utf-8")
            result = distribute_source(source, path.name)
        except (UnicodeDecodeError, libcst.ParserSyntaxError):
            continue  # not a script the mode can read: the CLI says so in one line
        except Exception as exc:  # a crash is what this sweep looks for
            problems += 1
            print(f"{path}: {type(exc).__name__}: {exc}")
            continue
        files += 1
        rules.update(f.rule_id for f in result.findings)
        if result.output is None:
            continue
        changed += 1
        try:
            compile(result.output, str(path), "exec")
        except SyntaxError as exc:
            problems += 1
            print(f"{path}: the output does not compile: {exc}")
            continue
        if distribute_source(result.output, path.name).output is not None:
            problems += 1
            print(f"{path}: distributing the output again changes it")
    print(f"{files} files, {changed} rewritten, {problems} problems; findings: {dict(sorted(rules.items()))}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
