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
must stay off on the CPU, as CUDA's own is there); a literal `False` stays as written, a literal
`True` becomes the condition. `min_torch`: the PyTorch release that has the
form; with an older `-v` the call is reported, not rewritten. The form names `torch`: a file that
does not bind it gets a report instead. `{callee}` is the called expression as written.

`positional_names`: the original's positional parameters in order; a positional argument whose
name is given is written as that keyword (`""` keeps it positional), so that a form with another
order (`torch.cuda.amp.autocast(True)` -> `torch.amp.autocast(<type>, enabled=True)`) or an
`and_keyword` finds it. `positional_only`: keywords the form takes positionally only
(`torch.cuda.memory_allocated(device=0)` -> `torch.accelerator.memory_allocated(0)`).
`device_argument`: the rule applies only where the original's device argument (`position`, or the
`keyword`) is a string literal matching `pattern`, or is absent when `absent` (the expression then
written in its place) is given: `torch.autocast("cuda")` but not `torch.autocast(device_type)`.

Code: `CallTemplate.rewrite_call`, a call hook (engine/interface/hooks.py) keyed by the qualified name
(`.*`: by the module, `Tables.call_hooks_for`) or, for `method`, by the call's short name.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import libcst as cst

from ms_fmk_transplt.data import torch_older
from ms_fmk_transplt.engine.interface import Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind

_FIELDS = {"args": "a", "member": "m", "receiver": "r", "index": "i", "rest": "", "callee": "c"}
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
            "positional_names": {"type": "array", "items": {"type": "string"}},
            "positional_only": {"type": "array", "items": {"type": "string"}},
            "device_argument": {
                "type": "object",
                "required": ["position", "keyword", "pattern"],
                "additionalProperties": False,
                "properties": {
                    "position": {"type": "integer", "minimum": 0},
                    "keyword": {"type": "string"},
                    "pattern": {"type": "string"},
                    "absent": {"type": "string", "format": "python-expression"},
                },
            },
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
        for name in [*entry.get("positional_names", []), *entry.get("positional_only", [])]:
            if name and (p := checks.identifier(name)):
                return [("positional_names", p)]
        device = entry.get("device_argument", {})
        if "pattern" in device and (p := checks.regex(device["pattern"])):
            return [("device_argument", p)]
        if "absent" in device and (p := checks.expression(device["absent"])):
            return [("device_argument", p)]
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
                tuple(p.get("positional_names", ())),
                tuple(p.get("positional_only", ())),
                _device_argument(p.get("device_argument")),
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


@dataclass(frozen=True)
class DeviceArgument:
    """Where the original names its device, which must be a literal matching `pattern`."""

    position: int
    keyword: str
    pattern: re.Pattern[str]
    absent: str  # written in the argument's place where the call gives none; "" : not applied then

    def find(self, args: Sequence[cst.Arg]) -> int | None:
        """The index of the device argument among `args`, if given."""
        for i, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == self.keyword:
                return i
        positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
        return positional[self.position] if len(positional) > self.position else None

    def applies(self, call: cst.Call) -> bool:
        """The call names its device by a matching literal (or not at all, where `absent` is given)."""
        if any(a.star for a in call.args):
            return False
        at = self.find(call.args)
        if at is None:
            return bool(self.absent)
        value = call.args[at].value
        text = value.evaluated_value if isinstance(value, cst.SimpleString) else None
        return isinstance(text, str) and bool(self.pattern.fullmatch(text))


def _device_argument(spec: dict[str, Any] | None) -> DeviceArgument | None:
    if spec is None:
        return None
    return DeviceArgument(
        spec["position"], spec["keyword"], re.compile(spec["pattern"]), spec.get("absent", "")
    )


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
    positional_names: tuple[str, ...] = ()
    positional_only: tuple[str, ...] = ()
    device_argument: DeviceArgument | None = None
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
        if self.device_argument is not None and not self.device_argument.applies(original):
            return updated  # a device of its own (`torch.autocast(device_type)`): portable already
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
        args = self.with_keywords(self.arranged(list(call.args)))
        fields = {"member": name.rsplit(".", 1)[-1], "receiver": "", "index": "", "rest": ""}
        fields["callee"] = _code(call.func)
        template = self.template
        if self.by_method and isinstance(call.func, cst.Attribute):
            fields["receiver"] = _code(call.func.value)
            index = _device_index(args)
            if index is not None and _is_none(args[index].value):
                args, index = args[:index] + args[index + 1 :], None  # .cuda(None): the current device
            if index is not None and self.template_index:
                template = self.template_index
                fields["index"] = _code(args[index].value)
                args = args[:index] + args[index + 1 :]
            fields["rest"] = "".join(f", {_arg_code(a)}" for a in args)
        fields["args"] = ", ".join(_arg_code(a) for a in args)
        form = template.format(**fields)
        return f"({form} if {self.guard} else {self.otherwise})" if self.guard else form

    def arranged(self, args: list[cst.Arg]) -> list[cst.Arg]:
        """The arguments as the form takes them: the device written where absent, positional
        arguments named (`positional_names`), keywords made positional (`positional_only`)."""
        device = self.device_argument
        if device is not None and device.absent and device.find(args) is None:
            args.insert(0, cst.Arg(cst.parse_expression(device.absent)))
        if self.positional_names:
            positional = 0
            for i, arg in enumerate(args):
                if arg.keyword is not None or arg.star:
                    continue
                name = self.positional_names[positional] if positional < len(self.positional_names) else ""
                positional += 1
                if name:
                    args[i] = arg.with_changes(keyword=cst.Name(name), equal=_tight())
        for keyword in reversed(self.positional_only):
            at = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == keyword), None)
            if at is not None:
                args.insert(0, args.pop(at).with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT))
        return args

    def with_keywords(self, args: list[cst.Arg]) -> list[cst.Arg]:
        """`and_keyword`: each condition ANDed into its keyword argument, which is added if absent."""
        for keyword, condition in self.and_keyword:
            at = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == keyword), None)
            if at is None:
                args.append(
                    cst.Arg(cst.parse_expression(condition), keyword=cst.Name(keyword), equal=_tight())
                )
            else:
                given = args[at].value
                if isinstance(given, cst.Name) and given.value == "False":
                    continue  # off everywhere already
                if isinstance(given, cst.Name) and given.value == "True":
                    args[at] = args[at].with_changes(value=cst.parse_expression(condition))
                    continue
                atom = isinstance(given, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or given.lpar
                code = _code(given) if atom else f"({_code(given)})"
                value = cst.parse_expression(f"{code} and {condition}")
                args[at] = args[at].with_changes(value=value)
        return args


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _tight() -> cst.AssignEqual:
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )


def _device_index(args: list[cst.Arg]) -> int | None:
    """Where the device index of `x.cuda(i)` / `x.cuda(device=i)` stands, if given (`None`, the
    current device, is no index)."""
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "device":
            return i
    positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
    return positional[0] if positional else None
