#!/usr/bin/env bash
# The converter's tests on the lowest libcst that pyproject.toml allows (the main venv has the
# newest of the range): a second small venv without torch, since the converter never imports it.
# Usage: bash tools/test_libcst_floor.sh   (CI runs it from .ci/run; ~1 min after the install)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
floor=$("$PYTHON" - <<'PY'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
spec = next(dep for dep in deps if dep.startswith("libcst"))
print(re.search(r">=\s*([0-9.]+)", spec).group(1))
PY
)
VENV=.venv-libcst-floor
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install -q "libcst==$floor" -e . "pytest>=8" "pytest-xdist>=3.6" "hypothesis>=6" "openpyxl>=3.1"
echo "converter tests on libcst $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("libcst"))')"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -n auto --dist loadfile \
    tests/test_fixtures.py tests/test_engine.py tests/test_positions.py tests/test_cli.py \
    tests/test_imports.py tests/test_node_index.py tests/test_bindings.py tests/test_normalise.py \
    tests/test_device_evidence.py tests/test_explain.py tests/test_kind_hooks.py tests/test_rule_files.py \
    tests/test_support.py tests/test_report_formats.py tests/test_rule_examples.py \
    tests/test_distributed_mode.py tests/test_traverse.py
