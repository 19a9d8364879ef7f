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

Code: name tables `Tables.support` (`SupportLists`: apis, tensor_methods, aten_ops, advice); applied by engine/reporting/support.py.
"""

from collections.abc import Hashable

from ms_fmk_transplt.engine.interface import Rule, Tables
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
        from ms_fmk_transplt.engine.interface import SupportEntry
        from ms_fmk_transplt.records import Support

        release = data.release(tables.release)
        by_source = {rule.params["source"]: rule for rule in rules}
        lists = tables.support
        lists.rule = rules[0]
        lists.npu_members = frozenset(release["torch.npu"])
        lists.aten_ops = frozenset(release.get("aten_ops", ()))
        values_free: set[str] = set()
        for rule in rules:
            lists.advice.update(rule.params.get("advice", {}))
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
            lists.apis[name] = entry
            if name.startswith("torch.Tensor.") and name.count(".") == 2:
                lists.tensor_methods[name.rsplit(".", 1)[1]] = entry
        tables.add_trigger("torch", classify_only=True)
