"""EnvVarRule: rename an environment variable where the code reads or writes it.

Matches the literal name in `os.environ[...]`, `os.environ.get/setdefault/pop(...)`, `os.getenv`,
`os.putenv`, `os.unsetenv` and `... in os.environ`. The same holds for environments built for
child processes: a name bound to `os.environ.copy()`, `dict(os.environ, ...)`,
`copy.copy(os.environ)` or `{**os.environ, ...}`, the keys of such a dict literal and of an
`env={...}` argument, and keyword names in `os.environ.update(NAME=...)` and
`dict(os.environ, NAME=...)`. `name` ending in `*` matches a prefix. With `new_name` null or
absent the variable is reported as UNSUPPORTED with the rule's `suggestion`.
"""

from ms_fmk_transplt.rules import checks
from ms_fmk_transplt.rules.registry import kind


@kind(
    name="EnvVarRule",
    schema={
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "new_name": {"type": ["string", "null"]}},
    },
    message="environment variable {old} -> {new}",
)
class EnvVarRule:
    @staticmethod
    def check(entry):
        name = entry["name"].rstrip("*")
        problems = []
        if not name or checks.identifier(name + ("X" if entry["name"].endswith("*") else "")):
            problems.append(
                ("name", f"{entry['name']!r} is not an environment variable name (letters, digits, _)")
            )
        new = entry.get("new_name")
        if new is not None and (entry["name"].endswith("*") or checks.identifier(new)):
            problems.append(
                ("new_name", "a prefix rule can only report; new_name must be a plain variable name")
            )
        return problems

    @staticmethod
    def summary(entry):
        new = entry.get("new_name")
        return (
            f"environment variable {entry['name']} -> {new}"
            if new
            else f"report environment variable {entry['name']}"
        )

    @staticmethod
    def key(entry):
        return entry["name"]

    @staticmethod
    def compile(rules, tables):
        for rule in rules:
            name = rule.params["name"]
            entry = tables.rename(rule, rule.params.get("new_name"), rule.params.get("suggestion", ""))
            if name.endswith("*"):
                tables.env_prefixes[name[:-1]] = entry
            else:
                tables.env_vars[name] = entry
            tables.add_trigger(name.rstrip("*"))
