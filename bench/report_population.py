#!/usr/bin/env python3
"""The Unsupported sheet and the CI gate on real repositories: is every row a real problem, and
does every CUDA-only line get a finding?

Reads the labelled set ``bench/data/report_population.jsonl`` (facts only, no code): the
repositories and the commit each is pinned at; every row of their Unsupported sheet, labelled
``real`` (with the problem it belongs to, so rows of one problem can be counted) or
``false_alarm``; and every line of their Python files that still speaks CUDA with no finding on
it, labelled ``harmless`` (prose, an option's name, a label) or ``cuda_only`` (a use that needs a
finding: a miss). Each repository is taken at its commit from the fetched snapshots in
``--mirrors`` (``DIR/<owner>+<name>/repo``, the layout of the ``fetch`` tool), converted with the
command line into a temporary folder, and compared with the labels::

    .venv/bin/python bench/report_population.py --mirrors /work/.mirror
    .venv/bin/python bench/report_population.py --mirrors /work/.mirror --unlabelled  # to label

It prints, per repository and in total: the rows, the share that are real problems (target
>= 95%), the rows per real problem (target <= 2), and the CUDA-only lines with no finding
(target 0); then every false alarm, miss and unlabelled item. ``--engine DIR`` runs another
checkout's converter (its folder first on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "report_population.jsonl"
# what a line must say to speak CUDA: the device, its libraries and tools (case-insensitive)
CUDA_WORDS = re.compile(
    r"cuda|nccl|cudnn|nvidia|nvcc|\bapex\b|triton|cupy|\bnvml\b|bitsandbytes|\bbnb\.|flash_attn|xformers|load_in_8bit",
    re.I,
)
ROW_LABELS = ("real", "false_alarm")
LINE_LABELS = ("harmless", "cuda_only")
# what a copy of a repository needs for its conversion: its code, notebooks and launch files
KEPT = re.compile(r"\.(py|ipynb|sh|bash|ya?ml|cfg|toml|ini)$|(^|/)(Makefile|Dockerfile)$")


def digest(text: str) -> str:
    """First 12 hex digits of the sha1 of a line's stripped text: checks a label's position."""
    return hashlib.sha1(text.strip().encode()).hexdigest()[:12]


@dataclass
class Repo:
    name: str
    commit: str
    rows: dict[tuple, dict] = field(default_factory=dict)  # (path, rule, api, line) -> label
    lines: dict[tuple, dict] = field(default_factory=dict)  # (path, line) -> label


def load(path: Path) -> dict[str, Repo]:
    repos: dict[str, Repo] = {}
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if not text.strip():
            continue
        item = json.loads(text)
        kind = item["kind"]
        if kind == "repo":
            repos[item["repo"]] = Repo(item["repo"], item["commit"])
            continue
        repo = repos[item["repo"]]
        if kind == "row":
            assert item["label"] in ROW_LABELS, f"{path}:{number}: label {item['label']!r}"
            repo.rows[(item["path"], item["rule"], item["api"], item["line"])] = item
        elif kind == "line":
            assert item["label"] in LINE_LABELS, f"{path}:{number}: label {item['label']!r}"
            repo.lines[(item["path"], item["line"])] = item
        else:
            raise SystemExit(f"{path}:{number}: unknown kind {kind!r}")
    return repos


def git_dir(mirrors: Path, repo: str) -> Path:
    base = mirrors / repo.replace("/", "+")
    return base / "repo" if (base / "repo").exists() else base


def materialise(mirrors: Path, repo: Repo, into: Path) -> None:
    """The repository's code at its commit (a snapshot may lack large data blobs: those are skipped)."""
    git = ["git", "--git-dir", str(git_dir(mirrors, repo.name))]
    names = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", repo.commit], capture_output=True, text=True
    )
    if names.returncode:
        raise SystemExit(f"{repo.name}: {names.stderr.strip()} (fetch it into {mirrors})")
    for name in names.stdout.splitlines():
        if not KEPT.search(name):
            continue
        blob = subprocess.run([*git, "show", f"{repo.commit}:{name}"], capture_output=True)
        if blob.returncode == 0:
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.stdout)


def convert(tree: Path, out: Path, engine: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": str(engine)}
    command = [sys.executable, "-m", "ms_fmk_transplt", "-i", str(tree), "-o", str(out), "-q", "--no-cache"]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 2, 3):
        raise SystemExit(f"conversion of {tree} failed ({done.returncode}): {done.stderr[-2000:]}")
    return out / f"{tree.name}_msft"


def sheet_rows(result: Path) -> list[tuple]:
    """(path, rule, api, first line, uses, message) of each row of the Unsupported sheet."""
    from openpyxl import load_workbook

    book = load_workbook(result / "unsupported_op.xlsx", read_only=True)
    rows = book["Unsupported"].iter_rows(values_only=True)
    header = list(next(rows))
    at = {name: header.index(name) for name in ("File", "Line", "API", "Rule", "Message", "Uses")}
    found = []
    for row in rows:
        if row[at["File"]] is None:
            continue
        found.append(
            (
                row[at["File"]],
                row[at["Rule"]],
                row[at["API"]] or "",
                row[at["Line"]],
                row[at["Uses"]],
                row[at["Message"]],
            )
        )
    return found


def reported_lines(result: Path) -> dict[str, set[int]]:
    """The lines each file has any finding on (report.json)."""
    document = json.loads((result / "report.json").read_text())
    lines: dict[str, set[int]] = defaultdict(set)
    for entry in document["files"]:
        for finding in entry["findings"]:
            lines[entry["path"]].update(range(finding["start_line"], finding["end_line"] + 1))
    return lines


def cuda_lines(tree: Path) -> list[tuple[str, int, str]]:
    """(path, line, text) of each line of the tree's Python files that speaks CUDA and is code
    (a line that is only a comment is left out)."""
    found = []
    for path in sorted(tree.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if CUDA_WORDS.search(line) and not line.lstrip().startswith("#"):
                found.append((path.relative_to(tree).as_posix(), number, line))
    return found


@dataclass
class Tally:
    rows: int = 0
    real: int = 0
    false_alarms: list[str] = field(default_factory=list)
    problems: set[str] = field(default_factory=set)
    unlabelled: list[str] = field(default_factory=list)
    lines: int = 0  # CUDA lines with no finding, labelled
    misses: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # labels the run no longer meets


def measure(repo: Repo, mirrors: Path, engine: Path, tally: Tally) -> None:
    with tempfile.TemporaryDirectory() as temp:
        tree = Path(temp) / repo.name.split("/")[1]
        materialise(mirrors, repo, tree)
        result = convert(tree, Path(temp) / "out", engine)
        seen_rows = set()
        for path, rule, api, line, uses, message in sheet_rows(result):
            key = (path, rule, api, line)
            seen_rows.add(key)
            tally.rows += 1
            label = repo.rows.get(key)
            where = f"{repo.name}:{path}:{line} {rule} {api} (x{uses})"
            if label is None:
                tally.unlabelled.append(
                    json.dumps({"kind": "row", "repo": repo.name, "path": path, "rule": rule, "api": api,
                                "line": line, "label": "?", "problem": "", "why": "", "message": message[:160]})
                )  # fmt: skip
            elif label["label"] == "real":
                tally.real += 1
                tally.problems.add(f"{repo.name}:{label['problem']}")
            else:
                tally.false_alarms.append(f"{where}: {label['why']}")
        tally.stale += [
            f"{repo.name}:{k[0]}:{k[3]} {k[1]} {k[2]}: row gone" for k in repo.rows if k not in seen_rows
        ]
        reported = reported_lines(result)
        for path, number, text in cuda_lines(tree):
            if number in reported.get(path, ()):
                continue
            label = repo.lines.get((path, number))
            if label is None or label["digest"] != digest(text):
                tally.unlabelled.append(
                    json.dumps({"kind": "line", "repo": repo.name, "path": path, "line": number,
                                "digest": digest(text), "label": "?", "why": "", "code": text.strip()[:160]})
                )  # fmt: skip
                continue
            tally.lines += 1
            if label["label"] == "cuda_only":
                tally.misses.append(f"{repo.name}:{path}:{number}: {label['why']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mirrors", type=Path, required=True, help="the fetched snapshots (DIR/<owner>+<name>/repo)"
    )
    parser.add_argument("--engine", type=Path, default=ROOT, help="the checkout whose converter runs")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--unlabelled", action="store_true", help="print the unlabelled rows and lines as JSON"
    )
    parser.add_argument("--repo", action="append", help="only this repository (owner/name), repeatable")
    args = parser.parse_args(argv)
    repos = load(args.data)
    total = Tally()
    print(f"{'repository':42} {'rows':>5} {'real':>5} {'problems':>8} {'rows/problem':>12} {'misses':>6}")
    for repo in repos.values():
        if args.repo and repo.name not in args.repo:
            continue
        tally = Tally()
        measure(repo, args.mirrors, args.engine.resolve(), tally)
        per = f"{tally.real / len(tally.problems):.2f}" if tally.problems else "-"
        print(
            f"{repo.name:42} {tally.rows:5} {tally.real:5} {len(tally.problems):8} {per:>12} {len(tally.misses):6}"
        )
        for name in ("rows", "real", "lines"):
            setattr(total, name, getattr(total, name) + getattr(tally, name))
        for name in ("false_alarms", "unlabelled", "misses", "stale"):
            getattr(total, name).extend(getattr(tally, name))
        total.problems |= tally.problems
    labelled = total.real + len(total.false_alarms)
    share = total.real / labelled if labelled else 1.0
    per = total.real / len(total.problems) if total.problems else 0.0
    print(
        f"\nUNSUPPORTED rows {total.rows}: real {total.real}, false alarms {len(total.false_alarms)}, "
        f"unlabelled {total.rows - labelled}; real share {share:.1%} (target >= 95%)"
    )
    print(f"real problems {len(total.problems)}: {per:.2f} rows per problem (target <= 2)")
    print(
        f"CUDA lines with no finding, labelled: {total.lines}; CUDA-only among them (misses): {len(total.misses)} (target 0)"
    )
    for title, items in (
        ("false alarms", total.false_alarms),
        ("misses", total.misses),
        ("stale labels", total.stale),
    ):
        if items:
            print(f"\n{title}:")
            print("\n".join(f"  {item}" for item in items))
    if total.unlabelled:
        print(
            f"\nunlabelled: {len(total.unlabelled)}"
            + ("" if args.unlabelled else " (--unlabelled prints them)")
        )
        if args.unlabelled:
            print("\n".join(total.unlabelled))
    return 0


if __name__ == "__main__":
    sys.exit(main())
