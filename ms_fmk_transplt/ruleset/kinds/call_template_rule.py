"""CallTemplateRule: rewrite a call into an expression written from a template, `--target accelerator`'s
device-agnostic forms (`torch.cuda.synchronize()` -> `torch.accelerator.synchronize()`).

The call is matched by `name` (a qualified name resolved through imports; `torch.cuda.*` matches
every direct member no rule of its own names) or by `method` (`x.cuda(...)` by the method's name
alone, a heuristic: never a call whose receiver resolves to an imported module, nor one of a method
the file defines). The template's fields: `{args}` the call's arguments as written, `{member}` the
member a `.*` name matched, `{receiver}` a method call's receiver; a method call with a device
index (its first positional argument or `device=`) uses `template_index`, with `{index}` and
`{rest}` (the other arguments, each after ", ").

`guard` and `otherwise`: the form runs only where the guard holds, `(form if guard else
otherwise)`, for calls that mean nothing without an accelerator (and raise there). `and_keyword`
ANDs a condition into a keyword argument, adding it where absent (`enabled=` of a GradScaler that
must stay off on the CPU, as CUDA's own is there). `min_torch`: the PyTorch release that has the
form; with an older `-v` the call is reported, not rewritten. The form names `torch`: a file that
does not bind it gets a report instead.

Code: `CallTemplate.rewrite_call`, a call hook (engine/hooks.py) keyed by the qualified name
(`.*`: by the module, `Tables.call_hooks_for`) or, for `method`, by the call's short name.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from ms_fmk_transplt.data import torch_older
from ms_fmk_transplt.engine.hooks import Site
from ms_fmk_transplt.engine.rule import Rule
from ms_fmk_transplt.engine.tables import Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind

_FIELDS = {"args": "a", "member": "m", "receiver": "r", "index": "i", "rest": ""}
_VERSION = r"^[0-9]+\.[0-9]+(\.[0-9]+)?$"


@kind(
    name="CallTemplateRule",
    schema={
        "required": ["template"],
        "properties": {
            "name": {"type": "string"},
            "method": {"type": "string"},
            "template": {"type": "string"},
            "template_index": {"type": "string"},
            "guard": {"type": "string", "format": "python-expression"},
            "otherwise": {"type": "string", "format": "python-expression"},
            "and_keyword": {"type": "object", "additionalProperties": {"type": "string"}},
            "min_torch": {"type": "string", "pattern": _VERSION},
        },
    },
    message="{old} -> {new}",
)
class CallTemplateRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        if ("name" in entry) == ("method" in entry):
            return [("name", "give exactly one of name and method")]
        if "name" in entry and (p := checks.dotted_name(entry["name"].removesuffix(".*"))):
            return [("name", p)]
        if "method" in entry and (p := checks.identifier(entry["method"])):
            return [("method", p)]
        if ("guard" in entry) != ("otherwise" in entry):
            return [("guard", "give guard and otherwise together")]
        for key in ("template", "template_index"):
            if key in entry and (p := _template_problem(entry[key])):
                return [(key, p)]
        return checks.problems(
            {**entry, **entry.get("and_keyword", {})},
            guard=checks.expression,
            otherwise=checks.expression,
            **{k: checks.expression for k in entry.get("and_keyword", {})},
        )

    @staticmethod
    def summary(entry: Entry) -> str:
        old = entry.get("name") or f"x.{entry['method']}"
        return f"{old}(...) -> {entry['template']}"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry.get("name") or f".{entry['method']}"

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            hook = CallTemplate(
                rule,
                p["template"],
                p.get("template_index", ""),
                p.get("guard", ""),
                p.get("otherwise", ""),
                tuple(p.get("and_keyword", {}).items()),
                p.get("min_torch", ""),
                "method" in p,
            )
            key = p.get("name") or p["method"]
            tables.add_call_hook(key, hook, by_short_name="method" in p)
            tables.add_name_trigger(key.removesuffix(".*"))


def _template_problem(template: str) -> str | None:
    """A template must name only known fields and parse once they are filled in."""
    try:
        filled = template.replace("{rest}", "").format(**{k: v or "x" for k, v in _FIELDS.items()})
    except (KeyError, IndexError, ValueError) as exc:
        return f"unknown field or stray brace in the template ({exc}); fields: {', '.join(_FIELDS)}"
    return checks.expression(filled)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _arg_code(arg: cst.Arg) -> str:
    return _code(
        arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace(""))
    )


@dataclass(frozen=True)
class CallTemplate:
    """A call rewritten into the expression its template writes (a report where it cannot be)."""

    rule: Rule
    template: str
    template_index: str
    guard: str
    otherwise: str
    and_keyword: tuple[tuple[str, str], ...]
    min_torch: str
    by_method: bool
    order: ClassVar[int] = 100  # after every hook that keeps the call a call

    def rewrite_call(
        self, site: Site, original: cst.Call, updated: cst.Call, name: str | None
    ) -> cst.BaseExpression:
        """The call's portable form, or `updated` as it is (reported where the form is not written)."""
        func = original.func
        if self.by_method and (
            name is not None or not isinstance(func, cst.Attribute) or site.names.own_method(func)
        ):
            return updated
        old = _code(original.func) if not self.by_method else f".{self.rule.params['method']}(...)"
        if torch_older(site.release, self.min_torch):
            site.report_message(
                original,
                self.rule,
                Operation.UNSUPPORTED,
                f"{old} kept: its portable form needs PyTorch {self.min_torch}; -v {site.release} has no such API",
            )
            return updated
        if site.qualify(cst.Name("torch")) != "torch":
            site.report_message(
                original,
                self.rule,
                Operation.UNSUPPORTED,
                f"{old} kept: its portable form calls torch, which this file does not import as torch",
            )
            return updated
        new_code = self.render(updated, name or "")
        site.report(original, self.rule, Operation.MODIFY, heuristic=self.by_method, old=old, new=new_code)
        return cst.parse_expression(new_code)

    def render(self, call: cst.Call, name: str) -> str:
        """The template filled in from the (already rewritten) call."""
        args = self.with_keywords(list(call.args))
        fields = {"member": name.rsplit(".", 1)[-1], "receiver": "", "index": "", "rest": ""}
        template = self.template
        if self.by_method and isinstance(call.func, cst.Attribute):
            fields["receiver"] = _code(call.func.value)
            index = _device_index(args)
            if index is not None and self.template_index:
                template = self.template_index
                fields["index"] = _code(args[index].value)
                args = args[:index] + args[index + 1 :]
            fields["rest"] = "".join(f", {_arg_code(a)}" for a in args)
        fields["args"] = ", ".join(_arg_code(a) for a in args)
        form = template.format(**fields)
        return f"({form} if {self.guard} else {self.otherwise})" if self.guard else form

    def with_keywords(self, args: list[cst.Arg]) -> list[cst.Arg]:
        """`and_keyword`: each condition ANDed into its keyword argument, which is added if absent."""
        for keyword, condition in self.and_keyword:
            at = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == keyword), None)
            if at is None:
                tight = cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                )
                args.append(cst.Arg(cst.parse_expression(condition), keyword=cst.Name(keyword), equal=tight))
            else:
                given = args[at].value
                atom = isinstance(given, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or given.lpar
                code = _code(given) if atom else f"({_code(given)})"
                value = cst.parse_expression(f"{code} and {condition}")
                args[at] = args[at].with_changes(value=value)
        return args


def _device_index(args: list[cst.Arg]) -> int | None:
    """Where the device index of `x.cuda(i)` / `x.cuda(device=i)` stands, if given."""
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "device":
            return i
    positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
    return positional[0] if positional else None
