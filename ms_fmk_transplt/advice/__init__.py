"""Performance advice (`--advice`): code that runs on the NPU, and a faster form of it there.

The catalogue is data (`data/advice.json`, derived by tools/derive_advice.py): per piece of
advice, the pattern, the replacement, when it applies, what it gains, and per release the fact
in the Ascend data that backs it; a release whose data does not back a replacement gets no
advice naming it. The patterns are found by structure (kernels.py: the operators torch_npu
fuses; training.py: optimizers, loader and DDP settings, anomaly detection, float64, host
synchronisation per step; settings.py: the compile mode, the task queue). The engine asks `Advisor.advise` for each file (engine/interface/tables.py);
the findings are ADVICE, never issues: they fail no gate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import libcst as cst

from ms_fmk_transplt.advice import kernels, settings, training
from ms_fmk_transplt.advice.walk import walk
from ms_fmk_transplt.engine.syntax import parse_module, positions
from ms_fmk_transplt.records import AdviceFact, Finding, Operation

__all__ = ["Advisor", "advisor", "catalogue"]

DETECTORS = (*kernels.DETECTORS, *training.DETECTORS, *settings.DETECTORS)
# What a file must spell for some detector to find something in it: one libcst parse of every
# file is most of --advice's cost (the conversion reads most files with CPython's ast alone).
_PLAIN = re.compile(
    rb"sqrt|silu|scaled_dot_product_attention|optim|DataLoader|DistributedDataParallel|anomaly|float64"
    rb"|double|(?:cat|stack|concat)\(\s*[(\[]\s*-|set_compile_mode|TASK_QUEUE_ENABLE|view_as_complex"
)
_SOFTMAX, _TRANSPOSED = re.compile(rb"softmax"), re.compile(rb"transpose|\.mT\b|\.T\b")
_SYNC, _STEP = re.compile(rb"\.(?:item|cpu)\(\)"), re.compile(rb"\.(?:backward|step)\(")


def worth_parsing(data: bytes) -> bool:
    """Some detector can find something in `data` (a necessary condition, checked on the text)."""
    return bool(
        _PLAIN.search(data)
        or (_SOFTMAX.search(data) and _TRANSPOSED.search(data))
        or (_SYNC.search(data) and _STEP.search(data))
    )


@cache
def catalogue() -> dict[str, Any]:
    """data/advice.json: every piece of advice and, per release, the fact backing it."""
    text = resources.files("ms_fmk_transplt.data").joinpath("advice.json").read_text(encoding="utf-8")
    return json.loads(text)


def advisor(release: str) -> Advisor:
    """The advice the data backs for `release`, ready to run on files."""
    facts, keys = [], []
    for entry in catalogue()["advice"]:
        source = entry["evidence"].get(release)
        if source is None:
            continue  # the release's data does not back this replacement
        facts.append(
            AdviceFact(
                entry["id"], entry["found"], entry["replacement"], entry["condition"], entry["gain"], source
            )
        )
        keys.append((entry["pattern"], entry.get("api", ""), entry["id"]))
    return Advisor(release, tuple(facts), tuple(keys))


@dataclass(frozen=True)
class Advisor:
    """The advice of one release; `advise` finds its patterns in a file (engine/interface/tables.py's Advisor)."""

    release: str
    facts: tuple[AdviceFact, ...]
    keys: tuple[tuple[str, str, str], ...]  # (pattern, api or "", advice id)

    def advise(self, data: bytes) -> tuple[Finding, ...]:
        """ADVICE findings for `data`, at their original positions; none for what libcst cannot read."""
        if not worth_parsing(data):
            return ()
        try:
            module = parse_module(data)
        except (cst.ParserSyntaxError, RecursionError):
            return ()  # the conversion says why; advice is only ever extra
        hits = list(self._hits(module))
        where = positions(module, [node for _, node, _ in hits])
        by_id = {fact.id: fact for fact in self.facts}
        findings: dict[tuple[str, int], Finding] = {}
        for advice_id, node, api in hits:
            (line, column), (end_line, _) = where[id(node)]
            fact = by_id[advice_id]
            findings.setdefault(
                (advice_id, line),
                Finding(
                    advice_id,
                    Operation.ADVICE,
                    line,
                    end_line,
                    f"{fact.found} -> {fact.replacement}",
                    column=column + 1,
                    api=api,
                    suggestion=f"{fact.replacement} when {fact.condition}",
                    source=fact.source,
                ),
            )
        return tuple(sorted(findings.values(), key=lambda f: (f.start_line, f.column, f.rule_id)))

    def _hits(self, module: cst.Module) -> Iterator[tuple[str, cst.CSTNode, str]]:
        """(advice id, node, api) for every pattern found that this release has advice for."""
        walked = walk(module)
        ids = {(pattern, api): advice_id for pattern, api, advice_id in self.keys}
        for detector in DETECTORS:
            for pattern, node, api in detector(walked):
                advice_id = ids.get((pattern, api)) or ids.get((pattern, ""))
                if advice_id is not None:
                    yield advice_id, node, api
