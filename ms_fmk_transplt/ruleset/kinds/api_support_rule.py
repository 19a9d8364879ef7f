"""ApiSupportRule: classify every torch API use against the selected release's support lists.

The lists ship as package data (tools/derive_converter_data.py) per PyTorch version; `-v`
selects one. A qualified name that resolves through the file's imports (`torch.X.Y`, `F.relu`,
`nn.Conv2d`, `torch.Tensor.mode` written out) is looked up exactly; a method call `x.name()` whose
receiver is not an import is matched by name against the `torch.Tensor.*` entries (heuristic).
Statuses: unsupported, partial (with the dtypes the docs list), supported (counted only), and
not-verified (called, absent from every list and without an NPU kernel for the ATen operator of
the same name: not the same as unsupported), and unsupported-dtype (a partial API whose call shows
a dtype the list leaves out). The rule whose `source` list gave the verdict reports it; the first
rule reports names no list holds. `advice` maps an API name, or a dotted prefix of names, to what
to do instead; it replaces the generic sentence for unsupported and not-verified uses and follows
the dtypes of partial ones. `values_free` names APIs that never compute on a tensor's values
(metadata such as `Tensor.size`, views, autograd bookkeeping, module containers, the data
pipeline): the lists mark many of them partial with the one dtype the docs tested (`fp32`), a
limit that cannot apply, so a partial verdict with dtypes counts them as supported.

Code: `ReleaseSupport.judge` (the lists: apis, tensor methods, torch.npu's members, ATen operators
with an NPU kernel, advice), a support hook (engine/interface/hooks.py's `SupportHook`) under "*" of
`SUPPORT`: engine/reporting/support.py and engine/conversion/fast_path.py tell it what a use's code shows (called, a
dtype) and count the supported uses or report its verdict.
"""

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from ms_fmk_transplt.engine.interface import ANY, SUPPORT, Classified, Rule, Tables, Tally
from ms_fmk_transplt.engine.reporting import aten_op, join_clauses
from ms_fmk_transplt.records import Support
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind
from ms_fmk_transplt.ruleset.schema import pointer

_STATUSES = {"unsupported", "partial", "supported"}


@kind(
    name="ApiSupportRule",
    support_list=True,
    schema={
        "required": ["source"],
        "properties": {
            "source": {"enum": ["api_support", "msfmktransplt_support"]},
            "prefix": {"type": "string"},
            "advice": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}},
            "values_free": {"type": "array", "items": {"type": "string"}},
        },
    },
    message="{old} is {status} on the NPU",
)
class ApiSupportRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        problems = [
            (pointer(("advice", name))[1:], problem)
            for name in entry.get("advice", {})
            if (problem := checks.dotted_name(name))
        ]
        problems += [
            (pointer(("values_free", index))[1:], problem)
            for index, name in enumerate(entry.get("values_free", []))
            if (problem := checks.dotted_name(name))
        ]
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"classify torch API uses by the release's {entry['source']} list"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["source"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        from ms_fmk_transplt import data

        release = data.release(tables.release)
        by_source = {rule.params["source"]: rule for rule in rules}
        apis: dict[str, SupportEntry] = {}
        tensor_methods: dict[str, SupportEntry] = {}
        advice: dict[str, str] = {}
        values_free: set[str] = set()
        for rule in rules:
            advice.update(rule.params.get("advice", {}))
            values_free.update(rule.params.get("values_free", ()))
        for name, (status, dtypes, source) in release["support"].items():
            owner = by_source.get(source)
            if owner is None or status not in _STATUSES:
                continue
            if not name.startswith(owner.params.get("prefix", "torch.")):
                continue
            if status == "partial" and dtypes and name in values_free:
                status, dtypes = "supported", ""  # a dtype limit on what reads no values
            entry = SupportEntry(owner, Support(status), dtypes)
            apis[name] = entry
            if name.startswith("torch.Tensor.") and name.count(".") == 2:
                tensor_methods[name.rsplit(".", 1)[1]] = entry
        hook = ReleaseSupport(
            rules[0],
            tables.release,
            apis,
            tensor_methods,
            frozenset(release["torch.npu"]),
            frozenset(release.get("aten_ops", ())),
            advice,
        )
        tables.hooks.put(SUPPORT, ANY, hook)
        tables.add_trigger("torch", classify_only=True)


_LISTS = {
    "api_support": "PyTorch {release} support list",
    "msfmktransplt_support": "msFmkTransplt's PyTorch {release} list",
}


@dataclass(frozen=True)
class SupportEntry:
    """How the selected release supports one API, and which rule's list said so."""

    rule: Rule
    support: Support
    dtypes: str = ""


@dataclass(frozen=True)
class ReleaseSupport:
    """The selected release's support lists, and the verdict they give on one API use."""

    rule: Rule  # reports the names absent from every list
    release: str
    apis: dict[str, SupportEntry] = field(default_factory=dict)  # qualified name -> entry
    tensor_methods: dict[str, SupportEntry] = field(default_factory=dict)  # method -> entry
    npu_members: frozenset[str] = frozenset()  # torch.npu's public names in the release
    aten_ops: frozenset[str] = frozenset()  # ATen operators with an NPU kernel in the release
    advice: dict[str, str] = field(default_factory=dict)  # API name or dotted prefix -> advice

    def lists_method(self, method: str) -> bool:
        return method in self.tensor_methods

    def judge(
        self, name: str, invoked: bool, dtype_shown: Callable[[str], str | None], rewritten: bool
    ) -> Classified | Tally:
        release = self.release
        entry = self.apis.get(name)
        if entry is None and name.startswith(("torch.npu.", "torch_npu.npu.")):
            member = name.split(".npu.", 1)[1]
            entry = self.apis.get("torch.cuda." + member)
            if entry is None and member.split(".", 1)[0] in self.npu_members:
                return Tally.SUPPORTED
        if entry is None:
            # an unlisted reference that is not invoked (a dtype such as torch.float32) is no API use
            if not invoked:
                return Tally.NO_USE
            if not name.startswith(("torch.", "torch_npu.")):
                return Tally.NO_USE
            if rewritten:
                return Tally.SUPPORTED
            op = aten_op(name)
            if op is not None and op in self.aten_ops:
                return Tally.BY_KERNEL
            # a composite op has no kernel of its own yet may run: the kernel's absence is a source
            # noted, not a verdict
            return Classified(
                self.rule,
                Support.NOT_VERIFIED,
                f"{name} is not verified on Ascend (absent from the PyTorch {release} support list)",
                self._advice(name) or "test it on the NPU",
                "",
                "no list entry" + (f"; aten::{op} has no NPU kernel of its own" if op else ""),
            )
        if entry.support is Support.SUPPORTED or (rewritten and entry.support is Support.UNSUPPORTED):
            # a rule's target is Ascend's own replacement (its CUDA->NPU mapping): the native list's
            # "no" for torch.nn.Module.npu speaks of stock PyTorch, which has no such method
            return Tally.SUPPORTED
        listed = _LISTS.get(entry.rule.params.get("source", ""), _LISTS["api_support"]).format(
            release=release
        )
        source = listed[0].upper() + listed[1:]
        if entry.support is Support.UNSUPPORTED:
            suggestion = self._advice(name) or "run it on the CPU (.cpu() in, .npu() out) or replace it"
            return Classified(
                entry.rule,
                entry.support,
                f"{name} is unsupported on Ascend ({listed})",
                suggestion,
                "",
                source,
            )
        shown = dtype_shown(entry.dtypes) if entry.dtypes else None
        if shown is not None:
            return Classified(
                entry.rule,
                Support.DTYPE,
                f"{name} is used with {shown}, which the {listed} does not give for it",
                f"use it with {entry.dtypes} only, or run this step on the CPU",
                entry.dtypes,
                f"{source}, dtype in the code",
            )
        if entry.dtypes:
            suggestion = join_clauses(f"use it with {entry.dtypes} only", self._advice(name))
        else:
            suggestion = self._advice(name) or (
                "the list gives no dtypes: check the Ascend API documentation for its limits"
            )
        return Classified(
            entry.rule,
            Support.PARTIAL,
            f"{name} is partially supported on Ascend ({listed})",
            suggestion,
            entry.dtypes,
            source,
        )

    def _advice(self, name: str) -> str:
        """The rules' advice for `name`: by the whole name, else by its longest dotted prefix."""
        advice = self.advice
        if not advice:
            return ""
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            text = advice.get(".".join(parts[:end]))
            if text is not None:
                return text.format(release=self.release)
        return ""
