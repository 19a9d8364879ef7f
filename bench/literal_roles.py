#!/usr/bin/env python3
"""Device-looking string literals in real code: does the converter rewrite the devices and keep the rest?

Reads the labelled set ``bench/data/literal_roles.jsonl`` (one literal per line: repository, pinned
commit, path, line, column, role, expected replacement; the code itself is never committed), takes
each file at its pinned commit from the fetched snapshots in ``--mirrors`` (the layout the ``fetch``
tool makes: ``DIR/<owner>+<name>/repo``, a bare git directory; ``DIR/<owner>+<name>`` as a git
directory or a checkout works too), converts it with the engine's per-file API (``convert_source``)
and decides for every labelled literal whether it was converted (and to what), kept with a finding
at its position, or kept silently. It prints precision and recall of "converted as a device", the
device literals kept without a report, a breakdown per role and per repository, and every mistake::

    .venv/bin/python bench/literal_roles.py --mirrors /tmp/mirrors
    .venv/bin/python bench/literal_roles.py --mirrors /tmp/mirrors --engine /path/to/other/worktree

Only ``convert_source``, ``compile_rules(load_rules())`` and the ``FileResult`` / ``Finding`` records
are used, so any revision of the engine can be measured (``--engine`` puts its folder first on the
import path).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import io
import json
import subprocess
import sys
import tokenize
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "literal_roles.jsonl"

# role -> what it means; CHANGED_ROLES always have a new text, KEPT_ROLES "keep", the rest either
ROLES = {
    "device": "a torch device or device type the port needs as 'npu' ('cuda', 'cuda:0', f'cuda:{i}')",
    "device_piece": "a piece that becomes a device when joined ('cuda:' + str(i))",
    "backend": "a torch.distributed backend name ('nccl')",
    "env_var": "an environment variable name (os.environ, getenv, subprocess env)",
    "tensor_type": "a legacy tensor type name ('torch.cuda.HalfTensor')",
    "api_name": "a dotted name of a torch.cuda API in a string (mock.patch targets, getattr names)",
    "accelerator": "a framework's accelerator name with no NPU meaning (Lightning 'cuda'): kept, must be reported",
    "alternative": "a device beside the NPU alternative of its dispatch, or in a list of supported types that gets"
    " 'npu' beside it: kept as written (engine/devices/dispatch_sites.py)",
    "prose": "messages, logging, docstrings, help= text, exception text, skip reasons",
    "option": "a command-line option, dest, config field or attribute name ('--cuda', 'use_cuda')",
    "data_key": "a key or label of data: metric names, dict keys, column names, test ids",
    "external": "a name from a non-torch API: ONNX Runtime providers, cupy, numba, build flags, packages",
    "user_text": "any other text of the user's: paths, file names, identifiers, module names",
}
DEVICE_ROLES = frozenset({"device", "device_piece"})
CHANGED_ROLES = DEVICE_ROLES | {"backend"}  # always rewritten; env_var and tensor_type: when Ascend has one
KEPT_ROLES = frozenset({"prose", "option", "data_key", "external", "user_text", "accelerator", "alternative"})
REPORT_ROLES = DEVICE_ROLES | {"accelerator"}  # kept without a finding, these break the port silently
FIELDS = ("repo", "commit", "path", "line", "column", "role", "expected", "digest", "why")
KEEP = "keep"


@dataclass(frozen=True)
class Label:
    """One labelled literal: where it is, what it is, and what the port needs it to become."""

    repo: str  # owner/name
    commit: str
    path: str
    line: int
    column: int  # 1-based, in characters, as Finding.column
    role: str
    expected: str  # the exact new literal source text, or "keep"
    digest: str  # first 12 hex digits of the sha1 of the literal's source text (checks the position)
    why: str = ""  # the evidence, in a few words

    @property
    def where(self) -> str:
        return f"{self.repo}:{self.path}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Literal:
    """One string literal token (an f-string counts as one) of a source file."""

    line: int
    column: int  # 1-based
    end_line: int
    text: str


@dataclass(frozen=True)
class Outcome:
    """What the converter did with one labelled literal."""

    kind: str  # converted | reported | silent | failed | missing
    new_text: str = ""  # for converted: the literal's text in the output
    detail: str = ""  # failed / missing: why; reported / silent: findings elsewhere on the line
    heuristic: bool = False  # converted or reported by a finding marked heuristic


def digest(text: str) -> str:
    """The short hash that ties a label to its literal's source text."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


Unit = tuple[str, int, int, int, bool]  # text, line, 1-based column, end line, is a string literal


def _units(text: str) -> list[Unit]:
    """Significant tokens as (text, line, 1-based column, end line, is_string); f-strings whole."""
    lines = text.splitlines(keepends=True)
    out: list[Unit] = []
    skip = {tokenize.ENCODING, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    skip |= {tokenize.ENDMARKER, tokenize.COMMENT}
    fstart = getattr(tokenize, "FSTRING_START", -1)
    fend = getattr(tokenize, "FSTRING_END", -2)
    depth, begin = 0, (0, 0)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == fstart:
            depth += 1
            if depth == 1:
                begin = tok.start
            continue
        if depth:
            if tok.type == fend:
                depth -= 1
                if depth == 0:
                    (l0, c0), (l1, c1) = begin, tok.end
                    piece = "".join(lines[l0 - 1 : l1])
                    end = len(piece) - len(lines[l1 - 1]) + c1
                    out.append((piece[c0:end], l0, c0 + 1, l1, True))
            continue
        if tok.type in skip:
            continue
        out.append((tok.string, tok.start[0], tok.start[1] + 1, tok.end[0], tok.type == tokenize.STRING))
    return out


def literals(text: str, needles: Sequence[str] = ("cuda", "nccl")) -> list[Literal]:
    """String literals whose source text contains a needle (any case), in file order."""
    found = []
    for piece, line, column, end_line, is_string in _units(text):
        if is_string and any(n in piece.lower() for n in needles):
            found.append(Literal(line, column, end_line, piece))
    return found


def _git_dir(mirrors: Path, repo: str) -> Path | None:
    base = mirrors / repo.replace("/", "+")
    for candidate in (base / "repo", base, base / ".git"):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def read_blob(mirrors: Path, repo: str, commit: str, path: str) -> bytes | str:
    """The file's bytes at the commit, or a one-line reason why they cannot be had."""
    git = _git_dir(mirrors, repo)
    if git is None:
        return f"no snapshot of {repo} under {mirrors} (fetch github:{repo})"
    done = subprocess.run(["git", f"--git-dir={git}", "show", f"{commit}:{path}"], capture_output=True)
    if done.returncode:
        return (
            f"{repo}@{commit[:10]}:{path} not readable: {done.stderr.decode(errors='replace').strip()[:200]}"
        )
    return done.stdout


def _kept_or_changed(
    old_lines: list[str], new_lines: list[str], old_units: list[Unit], new_units: list[Unit]
) -> dict[tuple[int, int], str]:
    """For each original string unit (line, column): its text in the output ("" when it is gone)."""
    changed: dict[tuple[int, int], str] = {}
    lines = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in lines.get_opcodes():
        if tag == "equal":
            continue
        # line ranges are 0-based half-open; units are 1-based lines
        olds = [u for u in old_units if i1 < u[1] <= i2 or (u[1] <= i1 and u[3] > i1)]
        news = [u for u in new_units if j1 < u[1] <= j2 or (u[1] <= j1 and u[3] > j1)]
        toks = difflib.SequenceMatcher(None, [u[0] for u in olds], [u[0] for u in news], autojunk=False)
        for op, a1, a2, b1, b2 in toks.get_opcodes():
            if op == "equal":
                continue
            for k in range(a1, a2):
                unit = olds[k]
                if not unit[4]:
                    continue
                if op == "replace" and a2 - a1 == b2 - b1:
                    changed[(unit[1], unit[2])] = news[b1 + k - a1][0]
                elif op == "replace":
                    changed[(unit[1], unit[2])] = " ".join(u[0] for u in news[b1:b2])
                else:
                    changed[(unit[1], unit[2])] = ""
    return changed


def judge(source: bytes, result: Any, labels: Iterable[Label]) -> list[Outcome]:
    """The outcome of each label (all in the file whose conversion `result` is, a FileResult)."""
    labels = list(labels)
    try:
        text = source.decode("utf-8-sig")
        old_units = _units(text)
    except (UnicodeDecodeError, tokenize.TokenError, SyntaxError) as exc:
        return [Outcome("missing", detail=f"source not tokenizable: {exc}") for _ in labels]
    by_position = {(u[1], u[2]): u[0] for u in old_units if u[4]}
    status = getattr(result.status, "value", str(result.status))
    changed: dict[tuple[int, int], str] = {}
    if result.output is not None:
        new_text = result.output.decode("utf-8-sig")
        changed = _kept_or_changed(
            text.splitlines(keepends=True), new_text.splitlines(keepends=True), old_units, _units(new_text)
        )
    findings = [f for f in result.findings if not getattr(f, "suppressed", False)]
    out = []
    for label in labels:
        here = (label.line, label.column)
        if here not in by_position or digest(by_position[here]) != label.digest:
            out.append(Outcome("missing", detail="no literal with that digest at that position"))
            continue
        if status in ("failed", "skipped"):
            out.append(Outcome("failed", detail=result.reason[:200]))
            continue
        at = [f for f in findings if f.start_line == label.line and f.column == label.column]
        near = [f for f in findings if f.start_line <= label.line <= f.end_line and f not in at]
        heuristic = any(f.heuristic for f in at)
        if here in changed and changed[here] != by_position[here]:
            out.append(Outcome("converted", changed[here], heuristic=heuristic))
        elif any(getattr(f.operation, "value", f.operation) != "MODIFY" for f in at):
            out.append(Outcome("reported", heuristic=heuristic))
        else:
            detail = "; ".join(f"{f.rule_id} col {f.column}" for f in near)
            out.append(Outcome("silent", detail=detail))
    return out


def load_labels(path: Path) -> list[Label]:
    """The labelled set; a malformed line raises ValueError naming the file and line."""
    labels: list[Label] = []
    seen: set[tuple[str, str, int, int]] = set()
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not JSON: {exc}") from None
        if not isinstance(row, dict) or set(row) != set(FIELDS):
            raise ValueError(f"{where}: fields must be exactly {', '.join(FIELDS)}")
        for name in FIELDS:
            want = int if name in ("line", "column") else str
            if not isinstance(row[name], want) or isinstance(row[name], bool):
                raise ValueError(f"{where}: {name} must be {want.__name__}")
        if row["role"] not in ROLES:
            raise ValueError(f"{where}: role {row['role']!r} is not one of {', '.join(ROLES)}")
        if row["line"] < 1 or row["column"] < 1:
            raise ValueError(f"{where}: line and column are 1-based")
        if len(row["commit"]) != 40 or len(row["digest"]) != 12 or row["repo"].count("/") != 1:
            raise ValueError(f"{where}: commit is 40 hex digits, digest 12, repo owner/name")
        kept = row["expected"] == KEEP
        if (row["role"] in CHANGED_ROLES and kept) or (row["role"] in KEPT_ROLES and not kept):
            raise ValueError(f"{where}: role {row['role']} with expected {row['expected']!r}")
        key = (row["repo"], row["path"], row["line"], row["column"])
        if key in seen:
            raise ValueError(f"{where}: duplicate of an earlier line ({row['path']}:{row['line']})")
        seen.add(key)
        labels.append(Label(**row))
    return labels


def _judge_file(
    mirrors: Path, key: tuple[str, str, str], group: list[Label], convert: Any, tables: Any
) -> list[Outcome]:
    repo, commit, path = key
    data = read_blob(mirrors, repo, commit, path)
    if isinstance(data, str):
        return [Outcome("missing", detail=data) for _ in group]
    return judge(data, convert(path, data, tables), group)


_ENGINE: tuple[Any, Any] = (None, None)  # a worker process's convert_source and compiled tables


def _load_engine(engine: str | None) -> tuple[Any, Any]:
    """The engine's per-file API and its built-in tables, from `engine` (a checkout) when given."""
    if engine and sys.path[:1] != [engine]:
        sys.path.insert(0, engine)
    from ms_fmk_transplt.engine.conversion import convert_source
    from ms_fmk_transplt.ruleset import compile_rules, load_rules

    return convert_source, compile_rules(load_rules())


def _start_worker(engine: str | None) -> None:
    global _ENGINE
    _ENGINE = _load_engine(engine)


def _judge_in_worker(mirrors: Path, key: tuple[str, str, str], group: list[Label]) -> list[Outcome]:
    return _judge_file(mirrors, key, group, *_ENGINE)


def measure(
    labels: Sequence[Label],
    mirrors: Path,
    convert: Any,
    tables: Any,
    jobs: int = 1,
    engine: str | None = None,
) -> list[tuple[Label, Outcome]]:
    """Convert each labelled file once and judge its labels, in the labels' order.

    With `jobs` > 1 the files are shared among worker processes that load the engine themselves
    (from `engine` when given); `convert` and `tables` are then not used.
    """
    files: dict[tuple[str, str, str], list[Label]] = {}
    for label in labels:
        files.setdefault((label.repo, label.commit, label.path), []).append(label)
    done: dict[Label, Outcome] = {}
    if jobs > 1:
        with ProcessPoolExecutor(jobs, initializer=_start_worker, initargs=(engine,)) as pool:
            futures = {
                key: pool.submit(_judge_in_worker, mirrors, key, group) for key, group in files.items()
            }
            for key, future in futures.items():
                done.update(zip(files[key], future.result()))
    else:
        for key, group in files.items():
            done.update(zip(group, _judge_file(mirrors, key, group, convert, tables)))
    return [(label, done[label]) for label in labels]


def is_correct(label: Label, outcome: Outcome) -> bool:
    """Whether the outcome is what the port needs: the expected text, or kept (and reported if a device)."""
    if label.role == "accelerator":
        return outcome.kind == "reported"
    if label.expected == KEEP:
        return outcome.kind in ("reported", "silent")
    if outcome.kind != "converted":
        return False
    if label.role == "backend":  # torch lower-cases backend names: 'HCCL' and 'hccl' are one
        return outcome.new_text.lower() == label.expected.lower()
    return outcome.new_text == label.expected


def _ratio(num: int, den: int) -> str:
    return f"{100.0 * num / den:.1f}% ({num}/{den})" if den else "n/a (0/0)"


def figures(rows: Sequence[tuple[Label, Outcome]]) -> dict[str, Any]:
    """Headline numbers: device precision / recall, all-rewrite precision / recall, silent devices."""
    rows = [(label, outcome) for label, outcome in rows if outcome.kind != "missing"]
    # a device conversion: a device literal converted, or any other literal wrongly made an npu one
    # (an API path rightly renamed to torch.npu.x is that role's rewrite, not a device's)
    device_converted = [
        (label, o)
        for label, o in rows
        if o.kind == "converted"
        and (label.role in DEVICE_ROLES or ("npu" in o.new_text.lower() and not is_correct(label, o)))
    ]
    device_ok = [
        (label, o) for label, o in device_converted if label.role in DEVICE_ROLES and is_correct(label, o)
    ]
    devices = [(label, o) for label, o in rows if label.role in DEVICE_ROLES]
    changed = [(label, o) for label, o in rows if o.kind == "converted"]
    changed_ok = [(label, o) for label, o in changed if is_correct(label, o)]
    wanted = [(label, o) for label, o in rows if label.expected != KEEP]
    return {
        "literals": len(rows),
        "repos": len({label.repo for label, _ in rows}),
        "device_precision": (len(device_ok), len(device_converted)),
        "device_recall": (len(device_ok), len(devices)),
        "rewrite_precision": (len(changed_ok), len(changed)),
        "rewrite_recall": (len(changed_ok), len(wanted)),
        "devices_kept_silently": sum(1 for _, o in devices if o.kind in ("silent", "failed")),
        "devices_kept_reported": sum(1 for _, o in devices if o.kind == "reported"),
        "accelerators_kept_silently": sum(
            1 for label, o in rows if label.role == "accelerator" and o.kind in ("silent", "failed")
        ),
        "correct": sum(1 for label, o in rows if is_correct(label, o)),
    }


def _table(title: str, groups: dict[str, list[tuple[Label, Outcome]]]) -> list[str]:
    out = [
        f"| {title} | literals | correct | converted | reported | silent | failed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in sorted(groups):
        kinds = Counter(o.kind for _, o in groups[name])
        right = sum(1 for label, o in groups[name] if is_correct(label, o))
        counts = " | ".join(str(kinds[k]) for k in ("converted", "reported", "silent", "failed"))
        out.append(f"| {name} | {len(groups[name])} | {right} | {counts} |")
    return out


def mistakes(rows: Sequence[tuple[Label, Outcome]]) -> list[str]:
    """One line per literal handled wrongly (and every device kept, even when reported)."""
    out = []
    for label, o in rows:
        if o.kind == "missing":
            out.append(f"{label.where}  MISSING  {o.detail}")
            continue
        if is_correct(label, o):
            continue
        what = {
            "converted": f"converted to {o.new_text}",
            "reported": "kept, reported",
            "silent": "kept SILENTLY" + (f" (findings on the line: {o.detail})" if o.detail else ""),
            "failed": f"file failed: {o.detail}",
        }[o.kind]
        want = "keep" if label.expected == KEEP else f"-> {label.expected}"
        why = f" [{label.why}]" if label.why else ""
        out.append(f"{label.repo}:{label.path}:{label.line}:{label.column}  {label.role} {want}{why}: {what}")
    return out


def report(rows: Sequence[tuple[Label, Outcome]]) -> str:
    """The printed report: headline figures, breakdowns and the mistakes."""
    f = figures(rows)
    lines = [
        f"labelled literals measured: {f['literals']} from {f['repos']} repositories "
        f"({sum(1 for _, o in rows if o.kind == 'missing')} missing)",
        f"converted as a device: precision {_ratio(*f['device_precision'])}, recall {_ratio(*f['device_recall'])}",
        f"every rewrite (devices, backends, env names, type names): precision {_ratio(*f['rewrite_precision'])}, "
        f"recall {_ratio(*f['rewrite_recall'])}",
        f"device literals kept without a report: {f['devices_kept_silently']} "
        f"(kept with a report: {f['devices_kept_reported']}); "
        f"accelerator names kept without a report: {f['accelerators_kept_silently']}",
        f"correct overall: {_ratio(f['correct'], f['literals'])}",
        "",
    ]
    present = [(label, o) for label, o in rows if o.kind != "missing"]
    by_role: dict[str, list[tuple[Label, Outcome]]] = {}
    by_repo: dict[str, list[tuple[Label, Outcome]]] = {}
    for label, o in present:
        by_role.setdefault(label.role, []).append((label, o))
        by_repo.setdefault(label.repo, []).append((label, o))
    lines += [*_table("role", by_role), "", *_table("repository", by_repo), ""]
    wrong = mistakes(rows)
    lines.append(f"mistakes ({len(wrong)}):")
    lines += [f"  {line}" for line in wrong] or ["  none"]
    return "\n".join(lines)


def _describe(convert: Any) -> str:
    """Where the measured engine lives, and its git revision when it is a checkout."""
    folder = Path(sys.modules[convert.__module__].__file__ or ".").resolve().parents[2]
    done = subprocess.run(["git", "-C", str(folder), "describe", "--always", "--dirty"], capture_output=True)
    return f"{folder}" + (f" at {done.stdout.decode().strip()}" if done.returncode == 0 else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure the importable engine on the labelled set; exit 1 when a label's file is missing."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mirrors", type=Path, required=True, help="folder of fetched snapshots (owner+name/repo)"
    )
    parser.add_argument(
        "--data", type=Path, default=DATA, help=f"labelled set (default {DATA.relative_to(ROOT)})"
    )
    parser.add_argument(
        "--engine", type=Path, help="a checkout whose ms_fmk_transplt to measure (default: installed)"
    )
    parser.add_argument("--repo", action="append", default=[], help="only these repositories (owner/name)")
    parser.add_argument("--role", action="append", default=[], help="only these roles")
    parser.add_argument("--json", action="store_true", help="print one JSON object per literal instead")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    args = parser.parse_args(argv)
    engine = str(args.engine.resolve()) if args.engine is not None else None
    try:
        labels = load_labels(args.data)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    labels = [
        x for x in labels if (not args.repo or x.repo in args.repo) and (not args.role or x.role in args.role)
    ]
    convert, tables = _load_engine(engine)
    print(f"engine: {_describe(convert)}", file=sys.stderr)
    rows = measure(labels, args.mirrors, convert, tables, jobs=args.jobs, engine=engine)
    if args.json:
        for label, o in rows:
            print(
                json.dumps({**label.__dict__, "outcome": o.kind, "new_text": o.new_text, "detail": o.detail})
            )
    else:
        print(report(rows))
    return 1 if any(o.kind == "missing" for _, o in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
