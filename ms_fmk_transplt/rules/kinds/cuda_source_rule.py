"""CudaSourceRule: report a call that builds CUDA sources (`.cu`, `.cuh` files named in its arguments).

`torch.utils.cpp_extension.load(name, sources=["k.cpp", "k.cu"])` compiles CUDA code that no NPU
runs, while the same call with C++ sources only builds a CPU extension and is left alone. The
call is matched by qualified name; any string literal among its arguments (nested in lists or
tuples too) ending in one of `suffixes` makes it an UNSUPPORTED finding.
"""

from ms_fmk_transplt.rules import checks
from ms_fmk_transplt.rules.registry import kind


@kind(
    name="CudaSourceRule",
    schema={
        "required": ["func_name"],
        "properties": {
            "func_name": {"type": "string"},
            "suffixes": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
    },
    message="{old} has no NPU counterpart",
)
class CudaSourceRule:
    @staticmethod
    def check(entry):
        return [("func_name", p)] if (p := checks.dotted_name(entry["func_name"])) else []

    @staticmethod
    def summary(entry):
        return f"report {entry['func_name']} calls that compile CUDA sources"

    @staticmethod
    def key(entry):
        return entry["func_name"]

    @staticmethod
    def compile(rules, tables):
        for rule in rules:
            suffixes = tuple(rule.params.get("suffixes", [".cu", ".cuh"]))
            tables.cuda_sources[rule.params["func_name"]] = (rule, suffixes)
            tables.add_trigger(rule.params["func_name"])
