"""MapLocationRule: checkpoints saved on CUDA must load on the NPU, and so must those the port saves.

`torch.save` tags every storage with the device it lived on (`cuda:0`); `torch.load` restores it
there unless `map_location` sends it elsewhere, and on a machine without CUDA (an NPU machine)
a `cuda` tag fails to load ("Attempting to deserialize object on a CUDA device"). What
`map_location` holds is of two sorts, and they are converted differently:

- **destinations** (where the storages go): a string, a `torch.device`, the values of a dict,
  what a function returns (`storage.cuda(i)`). They become NPU devices: `"cuda:0"` -> `"npu:0"`,
  `{...: "cuda:%d" % rank}` -> `{...: "npu:%d" % rank}`, `storage.cuda(i)` -> `storage.npu(i)`.
- **sources** (where the storages were saved): the keys of a dict, and the strings a function
  compares its location argument with. The checkpoints a port starts from were saved on CUDA,
  so a key `"cuda:0"` is kept, and the NPU spelling is added beside it with the same value, so
  that checkpoints saved by the ported program (tagged `npu:0`) load too:
  `{"cuda:0": "cuda:1"}` -> `{"cuda:0": "npu:1", "npu:0": "npu:1"}`, `{"cuda:0": "cpu"}` ->
  `{"cuda:0": "cpu", "npu:0": "cpu"}`. A location test inside a function (`loc.startswith("cuda")`)
  is kept and reported: NPU-saved storages come with `npu` tags.

The calls are matched by qualified name with the position of `map_location` among their
positional arguments (`calls`); a `map_location=` keyword counts in any call (Lightning's
`load_from_checkpoint`, a runner's `load_checkpoint`): the name means the same everywhere. A
dict bound to a name that such a call receives (`map_location = {"cuda:%d" % 0: "cuda:%d" %
rank}`, as in the DDP tutorial) is treated where it is written, matched by the name alone (a
heuristic). A call listed in `report_missing` that passes no `map_location` is reported with the
fix: it restores a CUDA-saved checkpoint onto CUDA, which the NPU machine lacks. It is not added
automatically: whether the data should land on the NPU (`map_location="npu"`) or stay on the
host (`"cpu"`) is the program's choice, and either one silently moves CPU-saved objects too.

With `new_form` (`--target accelerator`), an expression naming the device type where the program
runs, the key added is an f-string led by it (`{"cuda:0": ...}` -> `{"cuda:0": ..., f"{<type>}:0":
...}`): checkpoints the portable program saves on any accelerator load too.

Code: `MapLocation.claim` / `rewrite_value`, a value hook (engine/interface/hooks.py): it claims the
`map_location` arguments and dicts before the traversal, keeps the key literals from the string
rules (the device string rule converts the destinations) and adds the NPU keys on the way up.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from ms_fmk_transplt.engine.devices import literals
from ms_fmk_transplt.engine.interface import ANY, VALUES, Claims, Rule, Site, Tables
from ms_fmk_transplt.engine.syntax import NodeIndex
from ms_fmk_transplt.records import Operation, Support
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind
from ms_fmk_transplt.ruleset.schema import pointer, spell


@kind(
    name="MapLocationRule",
    schema={
        "required": ["calls", "pattern", "old", "new", "suggestion"],
        "properties": {
            "calls": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": {"type": ["integer", "null"], "minimum": 0},
            },
            "keyword": {"type": "string"},
            "report_missing": {"type": "array", "items": {"type": "string"}},
            "pattern": {"type": "string"},
            "old": {"type": "string"},
            "new": {"type": "string"},
            "new_form": {"type": "string", "format": "python-expression"},
            "suggestion": {"type": "string"},
        },
    },
    message="map_location key {old} kept (where the checkpoint was saved); {new} added with the same destination",
)
class MapLocationRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        problems = []
        for name in entry["calls"]:
            if p := checks.dotted_name(name):
                problems.append((pointer(("calls", name))[1:], p))
        for i, name in enumerate(entry.get("report_missing", ())):
            if name not in entry["calls"]:
                problems.append((f"report_missing/{i}", f"{spell(name)} is not one of the calls"))
        if p := checks.identifier(entry.get("keyword", "map_location")):
            problems.append(("keyword", p))
        if p := checks.regex(entry["pattern"]):
            problems.append(("pattern", p))
        elif not re.fullmatch(entry["pattern"], entry["old"]) or not entry["new"]:
            problems.append(
                ("old", f"the pattern must match {spell(entry['old'])} itself; new must not be empty")
            )
        if any(ch in entry["new"] for ch in "'\"\\\n"):
            problems.append(("new", "quotes, backslashes and newlines are not allowed in the replacement"))
        if "new_form" in entry and (p := checks.expression(entry["new_form"])):
            problems.append(("new_form", p))
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        keyword = entry.get("keyword", "map_location")
        return (
            f"{keyword}= of {len(entry['calls'])} checkpoint loaders: destinations {entry['old']!r} ->"
            f" {entry['new']!r}, dict keys (where saved) kept with the {entry['new']!r} key added"
        )

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return tuple(sorted(entry["calls"]))

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            tables.hooks.add(
                VALUES,
                ANY,
                MapLocation(
                    rule,
                    tuple(p["calls"].items()),
                    p.get("keyword", "map_location"),
                    frozenset(p.get("report_missing", ())),
                    re.compile(p["pattern"]),
                    p["old"],
                    p["new"],
                    p.get("new_form", ""),
                ),
            )
            tables.add_name_trigger(*p["calls"])


_HIDDEN = -2  # the argument may be inside *args / **kwargs


@dataclass(frozen=True)
class MapLocation:
    """Claims `map_location` arguments: destinations are left to the device strings, keys kept."""

    rule: Rule
    calls: tuple[tuple[str, int | None], ...]  # qualified name, position of map_location
    keyword: str
    report_missing: frozenset[str]
    pattern: Any  # compiled regex: a source spelling, `cuda:0`
    old: str
    new: str
    new_form: str = ""  # an expression of the device type: the key added is an f-string led by it

    def claim(self, site: Site, nodes: NodeIndex) -> Claims:
        """The map_location arguments of the module's calls, and the dicts and functions they name."""
        claims = Claims(why="a map_location key: the device a checkpoint was saved on, kept")
        positions = dict(self.calls)
        names: set[str] = set()  # variables and functions passed as map_location
        for call in nodes.of(cst.Call):
            name = site.qualify(call.func)
            if name is None or name not in positions:  # any other loader's map_location= (Lightning's...)
                given = next((a for a in call.args if a.keyword and a.keyword.value == self.keyword), None)
                if given is not None:
                    self._claim_value(site, given.value, claims, names, bound=False)
                continue
            arg = self._find(call, positions[name])
            if arg is None and name in self.report_missing:
                short = _code(call.func)
                # it runs; whether it loads depends on where the file was saved: a check, not a blocker
                site.report_message(
                    call,
                    self.rule,
                    Operation.CHECK,
                    f"{short}(...) without {self.keyword}: a checkpoint saved on CUDA fails to load on the"
                    f" NPU; {self.rule.params['suggestion']}",
                    api=name,
                    support=Support.PARTIAL,
                )
            if not isinstance(arg, cst.Arg):
                continue
            if arg.keyword is None:
                claims.device_args.append(arg)
            self._claim_value(site, arg.value, claims, names, bound=False)
        if names:
            for assign in nodes.of(cst.Assign):
                if any(isinstance(t.target, cst.Name) and t.target.value in names for t in assign.targets):
                    self._claim_value(site, assign.value, claims, set(), bound=True)
            for bound in nodes.of_any(cst.AnnAssign, cst.Param):  # `map_location: dict = {...}`, defaults
                target = bound.target if isinstance(bound, cst.AnnAssign) else bound.name
                value = bound.value if isinstance(bound, cst.AnnAssign) else bound.default
                if isinstance(target, cst.Name) and target.value in names and value is not None:
                    self._claim_value(site, value, claims, set(), bound=True)
            for function in nodes.of(cst.FunctionDef):
                if function.name.value in names:
                    self._claim_tests(site, function.params, function.body, claims)
        return claims

    def _find(self, call: cst.Call, position: int | None) -> cst.Arg | int | None:
        """The map_location argument; None when absent, _HIDDEN when *args or **kwargs may hold it."""
        index = 0
        hidden = False
        for arg in call.args:
            if arg.keyword is not None:
                if arg.keyword.value == self.keyword:
                    return arg
            elif arg.star:
                hidden = True
            elif not hidden:
                if index == position:
                    return arg
                index += 1
        return _HIDDEN if hidden else None

    def _claim_value(
        self, site: Site, value: cst.BaseExpression, claims: Claims, names: set[str], bound: bool
    ) -> None:
        if isinstance(value, cst.Dict):
            claims.values.append(value)
            for element in value.elements:
                if isinstance(element, cst.DictElement):
                    claims.kept.extend(literals(element.key))
                    if bound:  # a dict written away from the call: its values are still destinations
                        claims.devices.extend(literals(element.value))
        elif isinstance(value, cst.IfExp):
            self._claim_value(site, value.body, claims, names, bound)
            self._claim_value(site, value.orelse, claims, names, bound)
        elif isinstance(value, cst.Name):
            names.add(value.value)
        elif isinstance(value, cst.Lambda):
            self._claim_tests(site, value.params, value.body, claims)

    def _claim_tests(self, site: Site, params: cst.Parameters, body: cst.CSTNode, claims: Claims) -> None:
        """`lambda storage, loc: ... loc.startswith("cuda") ...`: the strings tested are sources."""
        if len(params.params) < 2:
            return
        location = params.params[1].name.value
        inner = NodeIndex(body)
        tested: list[cst.BaseExpression] = []
        for comparison in inner.of(cst.Comparison):
            operands = [comparison.left, *(c.comparator for c in comparison.comparisons)]
            if any(_is_name(o, location) for o in operands):
                tested += [o for o in operands if not _is_name(o, location)]
        for call in inner.of(cst.Call):
            if isinstance(call.func, cst.Attribute) and _is_name(call.func.value, location):
                tested += [a.value for a in call.args]
        for value in tested:
            for literal in literals(value):
                claims.kept.append(literal)
                text = _text(literal)
                if text is not None and self._is_source(literal, text):
                    site.report_message(
                        literal,
                        self.rule,
                        Operation.CHECK,
                        f"{text!r} kept: the {self.keyword} function tests where a storage was saved;"
                        f" checkpoints saved on {'another accelerator say its type' if self.new_form else 'the NPU say'}"
                        f" {self.new + text[len(self.old) :]!r}, test both",
                        api=self.keyword,
                        support=Support.PARTIAL,
                    )

    def _is_source(self, literal: cst.BaseExpression, text: str) -> bool:
        return bool(self.pattern.fullmatch(text)) or text == self.old + ":"

    def _npu_key(self, key: cst.BaseExpression) -> cst.BaseExpression | None:
        """The key spelled for the NPU (`"cuda:%d" % i` -> `"npu:%d" % i`), or None if it is no CUDA key."""
        first = next(iter(literals(key)), None)
        if isinstance(first, cst.SimpleString):
            text = _text(first)
            if text is None or not self._is_source(first, text):
                return None
            if text == self.old + ":" and not isinstance(key, cst.BinaryOperation):
                return None
            value = first.value
            start = len(first.prefix) + len(first.quote)
            if self.new_form:
                if len(first.quote) != 1 or "b" in first.prefix.lower():
                    return None
                rest = text[len(self.old) :].replace("{", "{{").replace("}", "}}")
                new: cst.BaseExpression = cst.parse_expression(
                    f"f{first.quote}{{{self._form(first.quote)}}}{rest}{first.quote}"
                )
            else:
                new = first.with_changes(value=value[:start] + self.new + value[start + len(self.old) :])
        elif isinstance(first, cst.FormattedString):
            template = "".join(
                p.value if isinstance(p, cst.FormattedStringText) else "{}" for p in first.parts
            )
            head = first.parts[0] if first.parts else None
            if not (self.pattern.fullmatch(template) and isinstance(head, cst.FormattedStringText)):
                return None
            if not head.value.startswith(self.old):
                return None
            if self.new_form:
                form = cst.FormattedStringExpression(cst.parse_expression(self._form(first.end)))
                tail = head.with_changes(value=head.value[len(self.old) :])
                new = first.with_changes(parts=[form, *([tail] if tail.value else []), *first.parts[1:]])
            else:
                new_head = head.with_changes(value=self.new + head.value[len(self.old) :])
                new = first.with_changes(parts=[new_head, *first.parts[1:]])
        else:
            return None
        return new if first is key else key.deep_replace(first, new)

    def _form(self, quote: str) -> str:
        """`new_form` with its string quotes other than the f-string's own `quote`."""
        return self.new_form.replace('"', "'") if '"' in quote else self.new_form.replace("'", '"')

    def rewrite_value(self, site: Site, original: cst.Dict, updated: cst.Dict) -> cst.BaseExpression:
        """The dict with an NPU key beside each CUDA key that lacks one, mapped to the same value."""
        keys = {_code(e.key) for e in original.elements if isinstance(e, cst.DictElement)}
        elements: list[cst.BaseDictElement] = []
        added = False
        last = len(original.elements) - 1
        for i, (before, after) in enumerate(zip(original.elements, updated.elements, strict=True)):
            if not isinstance(before, cst.DictElement) or not isinstance(after, cst.DictElement):
                elements.append(after)
                continue
            npu_key = self._npu_key(before.key)
            if npu_key is None or _code(npu_key) in keys:
                elements.append(after)
                continue
            keys.add(_code(npu_key))
            site.report(before, self.rule, Operation.MODIFY, old=_code(before.key), new=_code(npu_key))
            added = True
            separator = after.comma
            if i == last or not isinstance(separator, cst.Comma):  # no comma, or a trailing one
                previous = updated.elements[i - 1].comma if i else None
                separator = (
                    previous
                    if isinstance(previous, cst.Comma)
                    else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
            extra = after.with_changes(key=npu_key, value=after.value.deep_clone(), comma=after.comma)
            elements += [after.with_changes(comma=separator), extra]
        return updated.with_changes(elements=elements) if added else updated


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _text(literal: cst.BaseExpression) -> str | None:
    if isinstance(literal, cst.SimpleString):
        value = literal.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
