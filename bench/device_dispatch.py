#!/usr/bin/env python3
"""Code written for several devices: does the converter leave CUDA's alternatives beside an NPU one,
and convert the CUDA-only ones?

Reads ``bench/data/device_dispatch.jsonl`` (one line of a per-device dispatch per record:
repository, pinned commit, path, line, a digest of the line's stripped text, label; the code itself
is never committed), takes each file at its commit from the fetched snapshots in ``--mirrors``
(``DIR/<owner>+<name>/repo``, a bare git directory), converts it with the engine's per-file API and
prints:

- rewrites inside a branch that already has an NPU alternative: `keep` lines the output changed
  (target 0);
- duplicates created: list, tuple and set literals and dict keys of the output holding one string
  twice where the input's did not (target 0);
- CUDA-only sites converted: `convert` lines the output changed (target >= 98%); of the rest,
  those with an UNSUPPORTED finding on the line are counted apart;
- CUDA names that must stay rewritten: `stay` lines the output changed (target 0).

    .venv/bin/python bench/device_dispatch.py --mirrors /work/.mirror
    .venv/bin/python bench/device_dispatch.py --mirrors /work/.mirror --engine /path/to/other/worktree
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "device_dispatch.jsonl"
LABELS = {
    "keep": "a CUDA alternative of a dispatch that has an NPU alternative: must stay as written",
    "convert": "a CUDA use in a dispatch with no NPU alternative: the port needs it converted",
    # relabelled by hand from `convert`, each with its reason (bench/data/device_dispatch.md)
    "stay": "a CUDA name with no NPU alternative that must stay as written: a device test guarding"
    " CUDA-only code, the device a saved artifact names",
}


@dataclass(frozen=True)
class Site:
    """One labelled line of a per-device dispatch."""

    repo: str
    commit: str
    path: str
    line: int
    digest: str  # first 12 hex digits of the sha1 of the line's stripped text
    label: str

    @property
    def where(self) -> str:
        return f"{self.repo}:{self.path}:{self.line}"


def load(path: Path = DATA) -> list[Site]:
    """The labelled sites, checked for known labels."""
    sites = [Site(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    unknown = {s.label for s in sites} - set(LABELS)
    if unknown:
        raise SystemExit(f"{path}: unknown labels {sorted(unknown)} (valid: {sorted(LABELS)})")
    return sites


def read_blob(mirrors: Path, site: Site) -> str | None:
    git = mirrors / site.repo.replace("/", "+") / "repo"
    done = subprocess.run(
        ["git", f"--git-dir={git}", "show", f"{site.commit}:{site.path}"], capture_output=True, check=False
    )
    return done.stdout.decode("utf-8", errors="replace") if done.returncode == 0 else None


def changed_lines(old: str, new: str) -> set[int]:
    """The 1-based lines of `old` the output does not hold unchanged (a line inserted above is no change)."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    changed: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            changed.update(range(i1 + 1, i2 + 1))
    return changed


def duplicates(text: str) -> Counter[str]:
    """Literal sequences and dict literals holding one string twice, by the string."""
    found: Counter[str] = Counter()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return found
    for node in ast.walk(tree):
        items: list[Any] = []
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        values = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
        for value, count in Counter(values).items():
            if count > 1:
                found[value] += count - 1
    return found


def _engine(engine: str | None) -> tuple[Any, Any]:
    if engine:
        sys.path.insert(0, engine)
    from ms_fmk_transplt.engine.conversion import convert_source
    from ms_fmk_transplt.ruleset import compile_rules, load_rules

    return convert_source, compile_rules(load_rules())


def measure(sites: list[Site], mirrors: Path, engine: str | None = None) -> dict[str, Any]:
    """Convert every labelled file once; the figures and the mistakes."""
    convert, tables = _engine(engine)
    files: dict[tuple[str, str, str], list[Site]] = {}
    for site in sites:
        files.setdefault((site.repo, site.commit, site.path), []).append(site)
    rewritten: list[Site] = []
    stayed: list[Site] = []  # `stay` lines the output changed
    missed: list[Site] = []
    reported: list[Site] = []  # missed, but a finding on the line says what to do
    unreadable: list[str] = []
    created: Counter[str] = Counter()
    for group in files.values():
        text = read_blob(mirrors, group[0])
        lines = text.splitlines() if text is not None else []
        stale = [s for s in group if s.line > len(lines) or _digest(lines[s.line - 1]) != s.digest]
        if text is None or stale:
            unreadable.extend(s.where for s in (group if text is None else stale))
            continue
        result = convert(group[0].path, text.encode(), tables)
        new = result.output.decode() if result.output is not None else text
        changed = changed_lines(text, new)
        flagged = {f.start_line for f in result.findings if f.operation.value == "UNSUPPORTED"}
        created += duplicates(new) - duplicates(text)
        for site in group:
            if site.label == "keep" and site.line in changed:
                rewritten.append(site)
            elif site.label == "stay" and site.line in changed:
                stayed.append(site)
            elif site.label == "convert" and site.line not in changed:
                (reported if site.line in flagged else missed).append(site)
    convert_total = sum(1 for s in sites if s.label == "convert" and s.where not in unreadable)
    return {
        "sites": len(sites),
        "repos": len({s.repo for s in sites}),
        "keep": sum(1 for s in sites if s.label == "keep"),
        "convert": sum(1 for s in sites if s.label == "convert"),
        "rewritten": rewritten,
        "stay": sum(1 for s in sites if s.label == "stay"),
        "stayed": stayed,
        "duplicates": created,
        "converted": convert_total - len(missed) - len(reported),
        "reported": reported,
        "convert_total": convert_total,
        "missed": missed,
        "unreadable": unreadable,
    }


def _digest(line: str) -> str:
    return hashlib.sha1(line.strip().encode()).hexdigest()[:12]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="DIR/<owner>+<name>/repo snapshots")
    parser.add_argument("--engine", help="a checkout whose engine to measure (default: this one)")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    figures = measure(load(args.data), args.mirrors, args.engine)
    total = figures["convert_total"]
    print(
        f"{figures['sites']} labelled sites from {figures['repos']} repositories"
        f" ({figures['keep']} keep, {figures['convert']} convert, {figures['stay']} stay)"
    )
    print(f"rewrites inside a branch that already has an NPU alternative: {len(figures['rewritten'])}")
    print(f"duplicates created: {sum(figures['duplicates'].values())}")
    share = 100.0 * figures["converted"] / total if total else 0.0
    print(
        f"CUDA-only sites converted: {figures['converted']}/{total} ({share:.1f}%);"
        f" of the rest reported as unsupported: {len(figures['reported'])}"
    )
    print(f"CUDA names that must stay, rewritten: {len(figures['stayed'])}")
    for site in figures["stayed"]:
        print(f"  rewritten, had to stay: {site.where}")
    for site in figures["rewritten"]:
        print(f"  rewritten, had to stay: {site.where}")
    for value, count in figures["duplicates"].items():
        print(f"  duplicate created: {value!r} x{count}")
    for site in figures["reported"]:
        print(f"  reported, not converted: {site.where}")
    for site in figures["missed"]:
        print(f"  not converted, not reported: {site.where}")
    for where in figures["unreadable"]:
        print(f"  unreadable or moved: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
