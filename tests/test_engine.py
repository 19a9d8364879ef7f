"""Engine behaviour on real-world bytes: encodings, line endings, bad input, parallel runs."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ms_fmk_transplt.discover import discover
from ms_fmk_transplt.engine.conversion import convert_source
from ms_fmk_transplt.pipeline import map_files
from ms_fmk_transplt.records import Status

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    "data,reason",
    [
        (b"x = 1\x00\n", "contains a NUL byte at offset 5 (binary data, not Python source)"),
        (b"x = '\xff'\n", "bytes do not decode as utf-8: byte 0xff at line 1"),
        (b"# -*- coding: klingon -*-\nx = 1\n", "unknown source encoding 'klingon' declared at line 1"),
        (
            b"#!/usr/bin/env python\n# coding: ascii\nx = 'caf\xc3\xa9'\n",
            "bytes do not decode as ascii declared at line 2: byte 0xc3 at line 3",
        ),
        (b"import torch\ndef f(:\n    torch.cuda.synchronize()\n", "syntax error at line 2: invalid syntax"),
        (
            b"import torch\nprint 'on', torch.cuda.device_count()\n",
            "syntax error at line 2: Missing parentheses in call to 'print'. Did you mean print(...)? "
            "(looks like Python 2 code; convert it to Python 3 first)",
        ),
        (
            b"try:\n    import torch\nexcept ImportError, e:\n    pass\n",
            "syntax error at line 3: multiple exception types must be parenthesized "
            "(looks like Python 2 code; convert it to Python 3 first)",
        ),
    ],
)
def test_bad_input_is_reported_and_not_converted(data: bytes, reason: str, builtin_tables) -> None:
    result = convert_source("bad.py", data, builtin_tables)
    assert result.status is Status.FAILED
    assert result.reason == reason
    assert result.output is None


@pytest.mark.parametrize("whole", [False, True], ids=["rewritten-statements", "whole-module"])
def test_output_that_would_not_parse_is_not_written(whole: bool, builtin_tables, monkeypatch) -> None:
    """A converter defect that prints invalid Python fails the file instead of writing it."""
    import ms_fmk_transplt.engine.conversion.convert as convert_module
    from ms_fmk_transplt.engine.syntax import module_bytes
    from ms_fmk_transplt.engine.syntax.splice import Printed

    def defective(original, new, text):
        printed = module_bytes(original, new, text)
        broken = printed.data.replace(b"torch.npu.synchronize()", b"torch.npu.synchronize(")
        return Printed(
            broken, None if whole else [p.replace("synchronize()", "synchronize(") for p in printed.fresh]
        )

    monkeypatch.setattr(convert_module, "module_bytes", defective)
    result = convert_source(
        "d.py", b"import torch\n\ndef f():\n    torch.cuda.synchronize()\n", builtin_tables
    )
    assert result.status is Status.FAILED and result.output is None
    where = "at line 5" if whole else "in the rewritten statement 'def f():'"
    assert result.reason.startswith(f"the converted file would not parse (syntax error {where}: ")
    assert result.reason.endswith("so it was not written: a converter defect, please report it")


def test_output_check_parses_only_what_was_printed_afresh() -> None:
    from ms_fmk_transplt.engine.conversion.convert import unparsable_output

    assert unparsable_output(b"x = (\n", ["y = 1\n"]) is None  # kept text is the input's, which parsed
    assert unparsable_output(b"", ["# lead\nfrom a import b,\n    c\n"]) == (
        "syntax error in the rewritten statement 'from a import b,': trailing comma not allowed without"
        " surrounding parentheses"
    )
    assert unparsable_output(b"x = 1\n", None) is None
    # compile() rejects these, CPython's parser (which judged the input) takes them
    assert unparsable_output(b"", ["await ready()\n", "yield 1\n", "nonlocal x\n"]) is None


def test_declared_encoding_round_trips(builtin_tables) -> None:
    source = "# -*- coding: latin-1 -*-\nimport torch\n# café\nx = torch.cuda.is_available()  # naïve\n"
    result = convert_source("l1.py", source.encode("latin-1"), builtin_tables)
    assert result.status is Status.CONVERTED
    assert result.output == source.replace("torch.cuda", "torch.npu").replace(
        "import torch\n", "import torch\nimport torch_npu\n"
    ).encode("latin-1")


def test_crlf_and_bom_preserved(builtin_tables) -> None:
    data = b"\xef\xbb\xbfimport torch\r\n\r\nx = y.cuda()\r\n"
    result = convert_source("w.py", data, builtin_tables)
    assert result.output == b"\xef\xbb\xbfimport torch\r\nimport torch_npu\r\n\r\nx = y.npu()\r\n"


def test_bytes_outside_changes_preserved(builtin_tables) -> None:
    source = (
        "import torch\n\n\n#   odd   comment\t\nx  =  torch.cuda.is_available( )   # trailing\n"
        "y = '''cuda\n   string'''\nz = (1,\n     2)\t\n"
    )
    result = convert_source("f.py", source.encode(), builtin_tables)
    expected = source.replace("torch.cuda.is_available", "torch.npu.is_available").replace(
        "import torch\n", "import torch\nimport torch_npu\n", 1
    )
    assert result.output.decode() == expected


def _explode_inside_the_engine(monkeypatch) -> None:
    from ms_fmk_transplt.engine.conversion import ModuleRewriter

    def leave_Call(self, original, updated):
        return _deeper(updated)

    def _deeper(node):
        raise ValueError("boom")

    monkeypatch.setattr(ModuleRewriter, "leave_Call", leave_Call)


def test_internal_error_fails_the_file_and_keeps_the_whole_traceback(builtin_tables, monkeypatch) -> None:
    _explode_inside_the_engine(monkeypatch)
    result = convert_source("h.py", b"import torch\nf(torch.cuda)\n", builtin_tables)
    assert result.status is Status.FAILED
    assert result.reason.startswith("internal error ValueError: boom (at ")
    assert "\n" not in result.reason
    # every frame from the engine's entry down to the raise, not only the last one
    assert result.detail.startswith("Traceback (most recent call last):")
    assert "in leave_Call" in result.detail and "in _deeper" in result.detail
    assert result.detail.endswith("ValueError: boom")


def test_the_log_holds_the_whole_traceback(tmp_path, monkeypatch) -> None:
    from ms_fmk_transplt.run import LOG_NAME, Options, convert_project

    source = tmp_path / "proj"
    source.mkdir()
    (source / "train.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    _explode_inside_the_engine(monkeypatch)
    run = convert_project(Options(source=source, output=tmp_path / "out", jobs=1, use_cache=False))
    log = (Path(run.output_root) / LOG_NAME).read_text()
    failed = log.split("== failed files (copied unchanged) ==")[1]
    assert "train.py: internal error ValueError: boom" in failed
    assert "    Traceback (most recent call last):" in failed and "in _deeper" in failed


def test_prefilter_gives_the_same_result(builtin_tables) -> None:
    """Skipping files without trigger words must change nothing: compare against no prefilter."""
    unfiltered = copy.copy(builtin_tables)
    unfiltered.triggers = {("",)}  # the empty string is in every file
    for case in sorted(FIXTURES.rglob("*.py")):
        data = case.read_bytes()
        assert convert_source(case.name, data, builtin_tables) == convert_source(case.name, data, unfiltered)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "import torch\n",
                "import torch.cuda as tc\n",
                "from torch import cuda\n",
                "x = torch.cuda.is_available()\n",
                "y = tc.device_count()\n",
                "m = m.cuda()\n",
                "cuda.synchronize()\n",
                "z = a.is_cuda\n",
                "# cuda comment\n",
                "s = 'cuda'\n",
                "def f(cuda):\n    return cuda\n",
                "from torch.cuda.amp import GradScaler\n",
                "torch.cuda.nvtx.range_push('x')\n",
                "if True:\n    import torch\n",
                "\n",
            ]
        ),
        max_size=8,
    )
)
def test_conversion_is_idempotent_and_stable(builtin_tables, lines) -> None:
    source = "".join(lines)
    first = convert_source("p.py", source.encode(), builtin_tables)
    assert first.status in (Status.CONVERTED, Status.UNCHANGED), first.reason
    text = first.output if first.output is not None else source.encode()
    compile(text, "p.py", "exec")
    second = convert_source("p.py", text, builtin_tables)
    assert second.output is None


def test_serial_equals_parallel(tmp_path: Path, builtin_tables) -> None:
    for i, case in enumerate(sorted(FIXTURES.rglob("*.in.py"))):
        (tmp_path / f"m{i:02d}.py").write_bytes(case.read_bytes())
    (tmp_path / "broken.py").write_bytes(b"def (:\n")
    entries = discover(tmp_path)
    serial = map_files(entries, builtin_tables, jobs=1)
    parallel = map_files(entries, builtin_tables, jobs=2)
    assert serial == parallel
    assert any(r.status is Status.CONVERTED for r in serial)


def test_no_cyclic_collection_while_a_file_converts(tmp_path: Path, builtin_tables, monkeypatch) -> None:
    import gc

    from ms_fmk_transplt.engine.conversion import convert

    seen = []

    def watched(path: str, data: bytes, tables: object) -> object:
        seen.append(gc.isenabled())
        if path == "bad.py":
            raise ValueError("a conversion that raises still restores the collector")
        return convert_source(path, data, tables)

    monkeypatch.setattr(convert, "convert_source", watched)
    (tmp_path / "a.py").write_bytes(b"import torch\nx = torch.ones(1).cuda()\n")
    (tmp_path / "bad.py").write_bytes(b"x = 1\n")
    assert gc.isenabled()
    results = map_files(discover(tmp_path / "a.py"), builtin_tables, jobs=1)
    assert seen == [False] and gc.isenabled() and results[0].status is Status.CONVERTED
    with pytest.raises(ValueError):
        map_files(discover(tmp_path / "bad.py"), builtin_tables, jobs=1)
    assert gc.isenabled()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400) | st.text(max_size=400).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_arbitrary_bytes_never_crash(builtin_tables, data: bytes) -> None:
    result = convert_source("fuzz.py", data, builtin_tables)
    assert result.status in (Status.CONVERTED, Status.UNCHANGED, Status.FAILED)
    assert not result.reason.startswith("internal error"), result.reason
    if result.output is not None:
        compile(result.output, "fuzz.py", "exec")


@pytest.mark.parametrize(
    "path",
    sorted(FIXTURES.rglob("*.in.py")) + sorted((FIXTURES.parent.parent / "sample_models").rglob("*.py")),
    ids=str,
)
def test_an_unedited_module_prints_back_as_its_input(path: Path, builtin_tables) -> None:
    """convert.py skips printing a module the transform did not edit: that must be exact."""
    import libcst as cst

    from ms_fmk_transplt.engine.conversion import ModuleRewriter
    from ms_fmk_transplt.engine.conversion.convert import edited

    data = path.read_bytes()
    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError:
        pytest.skip("libcst cannot read this fixture")
    if module.bytes != data:
        pytest.skip("libcst prints this file back otherwise: the engine converts it normalised")
    converter = ModuleRewriter(builtin_tables, module)
    printed = module.visit(converter).bytes
    if not edited(converter):
        assert printed == data


def test_a_converted_files_tree_is_freed_when_the_file_is_done_not_by_the_cycle_collector(builtin_tables):
    # the rewriter and its helpers refer to each other and index the tree: closed after use, none
    # of the file's libcst nodes is left for the cyclic collector (it had them all before)
    import gc

    import libcst as cst

    sample = Path(__file__).resolve().parent.parent / "sample_models" / "imagenet_resnet" / "main.py"
    data = sample.read_bytes()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = convert_source("main.py", data, builtin_tables)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, cst.CSTNode)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert result.status is Status.CONVERTED
    assert left == []
