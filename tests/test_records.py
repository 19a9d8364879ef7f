"""The records keep memory small: findings share their repeated texts, through pickling too."""

from __future__ import annotations

import dataclasses
import pickle

from ms_fmk_transplt.records import FileResult, Finding, Operation, Status, Support


def _finding(line: int) -> Finding:
    message = "".join(["torch.quantile is partially supported", f" on Ascend ({2}.12.0 list)"])
    return Finding(
        "TP901", Operation.CHECK, line, line, message, api="torch.quantile", support=Support.PARTIAL
    )


def test_findings_share_equal_texts_when_made_and_when_unpickled() -> None:
    made = [_finding(n) for n in range(1, 4)]
    assert made[0].message is made[1].message  # built separately, held once
    result = FileResult("a.py", Status.UNCHANGED, findings=tuple(made))
    first, second = (pickle.loads(pickle.dumps(result)) for _ in range(2))
    assert first == result and second == result
    assert first.findings[0].message is second.findings[2].message is made[0].message
    assert first.findings[0].api is second.findings[1].api


def test_findings_have_no_instance_dict_and_replace_works() -> None:
    finding = _finding(7)
    assert not hasattr(finding, "__dict__")
    moved = dataclasses.replace(finding, start_line=8, suppressed=True)
    assert (moved.start_line, moved.suppressed, moved.message) == (8, True, finding.message)
    assert pickle.loads(pickle.dumps(moved)) == moved


def test_every_field_of_a_finding_comes_back_from_a_pickle_in_its_place() -> None:
    # __setstate__ names the fields one by one: a field added or moved must be named there too
    values = {
        "rule_id": "TP901",
        "operation": Operation.CHECK,
        "start_line": 3,
        "end_line": 4,
        "message": "a message",
        "heuristic": True,
        "noop": True,
        "column": 5,
        "api": "torch.quantile",
        "support": Support.PARTIAL,
        "dtypes": "float16",
        "suggestion": "a suggestion",
        "source": "a list",
        "suppressed": True,
        "fingerprint": "abc123",
    }
    assert [f.name for f in dataclasses.fields(Finding)] == list(values)
    back = pickle.loads(pickle.dumps(Finding(**values)))
    assert {name: getattr(back, name) for name in values} == values
