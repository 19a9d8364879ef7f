"""ApiSupportRule: classify every torch API use against the selected release's support lists.

The lists ship as package data (tools/derive_converter_data.py) per PyTorch version; `-v`
selects one. A qualified name that resolves through the file's imports (`torch.X.Y`, `F.relu`,
`nn.Conv2d`, `torch.Tensor.mode` written out) is looked up exactly; a method call `x.name()` whose
receiver is not an import is matched by name against the `torch.Tensor.*` entries (heuristic).
Statuses: unsupported, partial (with the dtypes the docs list), supported (counted only), and
not-verified (called, but absent from every list: not the same as unsupported). The rule whose
`source` list gave the verdict reports it; the first rule reports names no list holds.

Code: name tables `Tables.support`, `Tables.tensor_methods`; applied by engine/transformer.py `classify`.
"""

from ms_fmk_transplt.rules.registry import kind

_STATUSES = {"unsupported", "partial", "supported"}


@kind(
    name="ApiSupportRule",
    schema={
        "required": ["source"],
        "properties": {
            "source": {"enum": ["api_support", "msfmktransplt_support"]},
            "prefix": {"type": "string"},
        },
    },
    message="{old} is {status} on the NPU",
)
class ApiSupportRule:
    @staticmethod
    def summary(entry):
        return f"classify torch API uses by the release's {entry['source']} list"

    @staticmethod
    def key(entry):
        return entry["source"]

    @staticmethod
    def compile(rules, tables):
        from ms_fmk_transplt import data
        from ms_fmk_transplt.engine.tables import SupportEntry
        from ms_fmk_transplt.model import Support

        release = data.release(tables.release)
        by_source = {rule.params["source"]: rule for rule in rules}
        tables.support_rule = rules[0]
        tables.npu_members = frozenset(release["torch.npu"])
        for name, (status, dtypes, source) in release["support"].items():
            rule = by_source.get(source)
            if rule is None or status not in _STATUSES:
                continue
            if not name.startswith(rule.params.get("prefix", "torch.")):
                continue
            entry = SupportEntry(rule, Support(status), dtypes)
            tables.support[name] = entry
            if name.startswith("torch.Tensor.") and name.count(".") == 2:
                tables.tensor_methods[name.rsplit(".", 1)[1]] = entry
        tables.add_trigger("torch")
