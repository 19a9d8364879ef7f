"""`ms_fmk_transplt verify`: prove a port on the user's own script.

The original runs on the CPU and the converted copy on the simulated NPU, with the same seed and
arguments; runtime_shim's step recorder (``runtime_shim/diagnostics/step_record.py``) writes the loss and a
digest of every parameter after each optimizer step in both runs, and the first step and
parameter where they part is reported, with the operator check's findings and the simulated
device's peak memory. The runs are subprocesses: this package never imports torch.

``launch.py`` builds and runs the two commands, ``records.py`` reads and compares the records,
``verdict.py`` turns them into a status and exit code, ``runtime_findings.py`` reads the converted
run's runtime findings, ``report.py`` renders text and JSON, and ``session.py`` drives one
verification.
"""

from __future__ import annotations

from ms_fmk_transplt.verify.session import Outcome, Request, VerifyError, verify
from ms_fmk_transplt.verify.verdict import EXIT_USAGE, VerifyStatus

__all__ = ["EXIT_USAGE", "Outcome", "Request", "VerifyError", "VerifyStatus", "verify"]
