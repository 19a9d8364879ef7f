"""ResultUseRule: report uses of a call's result that break because the NPU API returns None.

`torch.cuda.get_device_capability()` gives `(8, 0)` on a GPU; torch_npu's counterpart returns
None, so the rename alone turns working code into a TypeError (or, for `==`, a silently false
test). Reported where the result is unpacked (`major, minor = f()`), indexed (`f()[0]`),
compared (`f() >= (8, 0)`), iterated, or bound to a name that the file later uses so; printing
it or passing it on is left alone. Nothing is rewritten: the right replacement depends on what
the check guards, which the `suggestion` spells out.
"""

from ms_fmk_transplt.rules import checks
from ms_fmk_transplt.rules.registry import kind


@kind(
    name="ResultUseRule",
    schema={
        "required": ["name", "returns", "suggestion"],
        "properties": {
            "name": {"type": "string"},
            "returns": {"type": "string"},
            "suggestion": {"type": "string"},
        },
    },
    message="{old} returns {returns} on the NPU: {use}; {suggestion}",
)
class ResultUseRule:
    @staticmethod
    def check(entry):
        return [("name", p)] if (p := checks.dotted_name(entry["name"])) else []

    @staticmethod
    def summary(entry):
        return f"uses of {entry['name']}() that break because it returns {entry['returns']} on the NPU (reported)"

    @staticmethod
    def key(entry):
        return entry["name"]

    @staticmethod
    def compile(rules, tables):
        for rule in rules:
            tables.result_uses[rule.params["name"]] = rule
            tables.add_trigger(rule.params["name"])
