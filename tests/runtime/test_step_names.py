"""The names verify's recorder gives an optimizer's parameters (runtime_shim/diagnostics/step_record.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import torch

from runtime_shim.diagnostics.step_record import ParameterNames


def _names(params):
    return ParameterNames().step_names(params)


def test_parameters_of_roots_made_apart_are_named_with_their_owner():
    encoder, rnn, decoder = torch.nn.Embedding(10, 6), torch.nn.LSTM(6, 6), torch.nn.Linear(6, 10)
    params = [*encoder.parameters(), *rnn.parameters(), *decoder.parameters()]
    names = _names(params)
    assert names == [
        "Embedding:weight",
        "LSTM:weight_ih_l0",
        "LSTM:weight_hh_l0",
        "LSTM:bias_ih_l0",
        "LSTM:bias_hh_l0",
        "Linear:weight",
        "Linear:bias",
    ]


def test_two_roots_of_one_class_are_numbered_in_the_optimizers_order():
    first, second = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    names = _names([*second.parameters(), *first.parameters()])
    assert names == ["Linear:weight", "Linear:bias", "Linear#1:weight", "Linear#1:bias"]


def test_must_not_change_one_root_keeps_the_plain_dotted_names():
    model = torch.nn.Sequential(torch.nn.Embedding(10, 6), torch.nn.Linear(6, 10))
    assert _names(list(model.parameters())) == ["0.weight", "1.weight", "1.bias"]
    loose = torch.nn.Parameter(torch.zeros(1))
    assert _names([*model.parameters(), loose]) == ["0.weight", "1.weight", "1.bias", None]


def test_the_recorder_notes_the_dtype_of_every_enabled_autocast(tmp_path):
    """Each step record lists the dtypes of the enabled autocasts entered so far (verify's tolerance
    reads them); a disabled autocast adds nothing (must-not-change twin)."""
    code = (
        "import torch\n"
        "from runtime_shim.diagnostics import step_record\n"
        f"step_record.install({str(tmp_path)!r})\n"
        "model = torch.nn.Linear(2, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for enabled in (False, True):\n"
        "    with torch.autocast('cpu', dtype=torch.bfloat16, enabled=enabled):\n"
        "        loss = model(torch.ones(1, 2)).float().sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    (path,) = tmp_path.glob("rank0.pid*.jsonl")
    steps = [json.loads(line) for line in path.read_text().splitlines() if '"step"' in line]
    assert [step["autocast"] for step in steps] == [[], ["bfloat16"]]
