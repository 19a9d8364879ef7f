"""ApiSupportRule: report PyTorch APIs that the selected Ascend release lists as unsupported.

The lists ship as package data (tools/derive_converter_data.py) per PyTorch version; `-v`
selects one. Only names that resolve through the file's imports are checked (`torch.X.Y`), not
methods of classes (`torch.optim.Adam.step`, `torch.Tensor.mode`), whose receiver type is unknown. An API absent from the list is not verified,
which is not the same as unsupported, so it is not reported.
"""

from ms_fmk_transplt.rules.registry import kind


def _class_member(name: str) -> bool:
    """`torch.optim.Adam.step`: reached through instances (`opt.step()`), never resolvable statically."""
    parts = name.split(".")
    return len(parts) > 2 and parts[-2][:1].isupper()


@kind(
    name="ApiSupportRule",
    schema={
        "required": ["source"],
        "properties": {
            "source": {"enum": ["api_support", "msfmktransplt_support"]},
            "prefix": {"type": "string"},
        },
    },
    message="{old} is not supported on the NPU",
)
class ApiSupportRule:
    @staticmethod
    def summary(entry):
        return f"report APIs that the release's {entry['source']} list marks unsupported"

    @staticmethod
    def key(entry):
        return entry["source"]

    @staticmethod
    def compile(rules, tables):
        from ms_fmk_transplt import data

        release = data.release(tables.release)
        for rule in rules:
            prefix = rule.params.get("prefix", "torch.")
            suggestion = rule.params.get("suggestion", "")
            listed = release[rule.params["source"]]
            supported = sorted(name for name, support in listed.items() if support != "no")
            for name, support in listed.items():
                if support != "no" or not name.startswith(prefix) or _class_member(name):
                    continue
                # a class listed as unsupported may still have supported members: never report those
                if any(other.startswith(name + ".") for other in supported):
                    continue
                tables.renames.setdefault(name, tables.rename(rule, None, suggestion))
                tables.add_trigger(name)
