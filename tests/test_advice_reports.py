"""`--advice` in every report, read back: the workbook's Advice sheet, report.json, the log, the
JSON issues report's `advice` list and SARIF `note` results (schema-checked); none of it without
the flag, and advice is never an issue (it fails no gate)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import openpyxl

from ms_fmk_transplt import analysis
from ms_fmk_transplt.reports.findings import FORMATS, issues_sarif
from ms_fmk_transplt.reports.xlsx import ADVICE_HEADER
from ms_fmk_transplt.run import LOG_NAME, Options, analyse_project, convert_project

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0-rtm.5.json").read_text())
MODEL = """\
import torch
import torch.nn.functional as F


def rms_norm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight  # 6


def train(model, loader):
    opt = torch.optim.AdamW(model.parameters())  # 10
    for x in loader:
        loss = model(x.cuda())
        loss.backward()
        opt.step()
        print(loss.item())  # 15
"""
EXPECTED = [("model.py", 6, "AF101"), ("model.py", 10, "AF201"), ("model.py", 15, "AF306")]


def _project(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    (source / "model.py").write_text(MODEL)
    return source


def test_convert_with_advice_fills_every_report(tmp_path: Path) -> None:
    run = convert_project(
        Options(source=_project(tmp_path), output=tmp_path / "out", advice=True, use_cache=False)
    )
    assert [(p, f.start_line, f.rule_id) for p, f in analysis.advice(run)] == EXPECTED
    assert not any(issue.finding.rule_id.startswith("AF") for issue in analysis.issues(run))
    assert all(not f.rule_id.startswith("AF") for _, f in analysis.notes(run))
    out = Path(run.output_root)
    # the conversion itself is as without advice: x.cuda() rewritten, nothing else
    assert "x.npu()" in (out / "model.py").read_text()

    sheet = openpyxl.load_workbook(out / "unsupported_op.xlsx")["Advice"]
    rows = list(sheet.values)
    assert list(rows[0]) == ADVICE_HEADER
    assert [(r[0], r[1], r[7]) for r in rows[1:]] == EXPECTED
    rms = rows[1]
    assert rms[3] == "torch_npu.npu_rms_norm" and "float16, bfloat16 or float32" in rms[4]
    assert rms[5] and "npu_custom_ops_torch2.12.0_torchnpu26.1.0.txt lists npu_rms_norm" in rms[6]

    summary = json.loads((out / "report.json").read_text())
    operations = [
        (f["start_line"], f["rule"]) for f in summary["files"][0]["findings"] if f["operation"] == "ADVICE"
    ]
    assert operations == [(line, rule) for _, line, rule in EXPECTED]
    log = (out / LOG_NAME).read_text()
    section = log.split("== advice (a faster form on the NPU) ==\n", 1)[1]
    assert "model.py:10 [AF201] ADVICE torch.optim.AdamW -> torch_npu.optim.NpuFusedAdamW" in section

    document = json.loads(FORMATS["json"](run, analysis.issues(run)))
    assert [(a["file"], a["line"], a["rule"]) for a in document["advice"]] == EXPECTED
    assert document["advice"][1]["replacement"] == "torch_npu.optim.NpuFusedAdamW"
    assert {a["rule"] for a in document["advice"]}.isdisjoint(i["rule"] for i in document["issues"])


def test_sarif_holds_advice_as_notes_only_at_note_level(tmp_path: Path) -> None:
    run = analyse_project(
        Options(source=_project(tmp_path), output=tmp_path, advice=True, use_cache=False),
        [tmp_path / "src"],
        None,
    )
    found = analysis.issues(run)
    sarif = json.loads(issues_sarif(run, found, "note"))
    jsonschema.validate(sarif, SCHEMA, cls=jsonschema.Draft4Validator)
    advice = [r for r in sarif["runs"][0]["results"] if r["ruleId"].startswith("AF")]
    assert [(r["level"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in advice] == [
        ("note", 6),
        ("note", 10),
        ("note", 15),
    ]
    assert "when every parameter on the NPU" in advice[1]["message"]["text"]
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["AF201"]["defaultConfiguration"]["level"] == "note"
    for level in ("warning", "error"):
        kept = json.loads(issues_sarif(run, found, level))["runs"][0]["results"]
        assert not any(r["ruleId"].startswith("AF") for r in kept)


def test_without_advice_no_report_has_any(tmp_path: Path) -> None:
    source = _project(tmp_path)
    run = convert_project(Options(source=source, output=tmp_path / "out", use_cache=False))
    assert analysis.advice(run) == [] and run.advice == ()
    workbook = openpyxl.load_workbook(Path(run.output_root) / "unsupported_op.xlsx")
    assert "Advice" not in workbook.sheetnames
    assert "advice" not in json.loads(FORMATS["json"](run, analysis.issues(run)))


def test_the_result_cache_keeps_advice_apart(tmp_path: Path) -> None:
    source = _project(tmp_path)
    cache = tmp_path / "cache"

    def run(advice: bool) -> int:
        options = Options(source=source, output=tmp_path, advice=advice, cache_dir=cache)
        return len(analysis.advice(analyse_project(options, [source], None)))

    assert (run(False), run(True), run(False), run(True)) == (0, 3, 0, 3)


def test_advice_a_rewrite_of_the_run_followed_is_not_given_again(tmp_path: Path) -> None:
    source = _project(tmp_path)
    options = Options(source=source, output=tmp_path, advice=True, opt_ins=("affinity",), use_cache=False)
    run = analyse_project(options, [source], None)
    # AdamW became NpuFusedAdamW (TP951): its advice is gone, the others stay
    assert [(line, rule) for _, line, rule in EXPECTED if rule != "AF201"] == [
        (f.start_line, f.rule_id) for _, f in analysis.advice(run)
    ]
    assert any(f.rule_id == "TP951" for r in run.files for f in r.findings)
