"""The distributed mode inside an ordinary conversion run.

The main script is rewritten first (in CUDA terms) into a temporary file that stands in for it,
so the ordinary conversion then converts the new code too; its findings are mapped back to the
original lines and joined by the mode's own. The launcher is added to the output folder.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path

import libcst as cst

from ms_fmk_transplt.discover import TreeEntry
from ms_fmk_transplt.distributed.launchers import launcher
from ms_fmk_transplt.distributed.lines import line_map, map_line
from ms_fmk_transplt.distributed.target import TargetModelError
from ms_fmk_transplt.distributed.transform import Distributed, distribute_source
from ms_fmk_transplt.records import FileResult, Finding, Status

SUFFIX = "_msft_multi"
LAUNCHER = "run_distributed_npu.sh"


class MainScriptError(Exception):
    """The main script cannot be found or read; str() is the one-line message."""


class DistributedStage:
    """What `ms_fmk_transplt distributed` adds to a conversion of `source` (a file or a folder)."""

    suffix = SUFFIX

    def __init__(self, source: Path, main: Path | None, model: str | None) -> None:
        self.main_rel, main_path = _main(source, main)
        try:
            self.original = main_path.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise MainScriptError(f"cannot read the main script {main_path}: {exc}") from None
        try:
            self.result: Distributed = distribute_source(self.original, self.main_rel, model)
        except cst.ParserSyntaxError as exc:
            raise MainScriptError(
                f"{main_path}: cannot be parsed: line {exc.raw_line}: {exc.message}"
            ) from None
        except TargetModelError as exc:
            found = (
                f"models found: {', '.join(exc.candidates)}" if exc.candidates else "no model variable found"
            )
            raise MainScriptError(
                f"-t {exc.name}: {self.main_rel} assigns no variable {exc.name} ({found})"
            ) from None
        self.main_path = main_path
        self.folder: Path | None = None

    def inputs(self, entries: list[TreeEntry]) -> list[TreeEntry]:
        """The entries with the main script replaced by its distributed version."""
        output = self.result.output
        if output is None:
            return entries
        if any(e.rel == self.main_rel and e.excluded for e in entries):  # --exclude wins: left alone
            self.result = Distributed(None, ())
            return entries
        self.folder = Path(tempfile.mkdtemp(prefix="msft_multi_"))
        stand_in = self.folder / Path(self.main_rel).name
        stand_in.write_bytes(output.encode())
        shutil.copystat(self.main_path, stand_in)
        return [
            dataclasses.replace(e, path=stand_in) if e.rel == self.main_rel and not e.excluded else e
            for e in entries
        ]

    def results(self, results: list[FileResult]) -> list[FileResult]:
        """The main script's result: conversion findings on original lines, plus the mode's findings."""
        out = []
        for result in results:
            if result.path == self.main_rel:
                result = self._main_result(result)
            out.append(result)
        return out

    def _main_result(self, result: FileResult) -> FileResult:
        findings: list[Finding] = list(self.result.findings)
        if self.result.output is not None:
            mapping = line_map(self.original, self.result.output)
            for f in result.findings:
                start, end = map_line(mapping, f.start_line), map_line(mapping, f.end_line)
                findings.append(dataclasses.replace(f, start_line=start, end_line=max(start, end)))
        else:
            findings.extend(result.findings)
        findings.sort(key=lambda f: (f.start_line, f.rule_id))
        status = (
            Status.CONVERTED
            if self.result.output is not None and result.status is Status.UNCHANGED
            else result.status
        )
        return dataclasses.replace(result, findings=tuple(findings), status=status)

    def files(self) -> list[tuple[str, bytes, bool]]:
        """Files to add to the output folder: (name, content, executable)."""
        return [(LAUNCHER, launcher(self.main_rel), True)]

    def close(self) -> None:
        """Remove the temporary stand-in."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def _main(source: Path, main: Path | None) -> tuple[str, Path]:
    """The main script as named in the project (POSIX, relative to `source`) and its path."""
    if source.is_file():
        if main is not None and main.name != source.name and main.resolve() != source.resolve():
            raise MainScriptError(
                f"-m {main}: the input is the file {source}; give -m {source.name} or leave -m out"
            )
        return source.name, source
    if main is None:
        raise MainScriptError("give the main script of the project with -m MAIN")
    candidates = [main, source / main] if not main.is_absolute() else [main]
    for candidate in candidates:
        if candidate.is_file():
            try:
                rel = candidate.resolve().relative_to(source.resolve())
            except ValueError:
                continue
            if candidate.suffix != ".py":
                raise MainScriptError(f"-m {main}: not a Python script")
            return rel.as_posix(), candidate
    raise MainScriptError(f"-m {main}: no such script inside {source}")
