"""Load and validate rule files before any source is touched.

Every error is one line naming the file, the JSON location (a JSON pointer) and the problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from ms_fmk_transplt.engine.interface import Example, Rule
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Kind, all_kinds
from ms_fmk_transplt.ruleset.schema import (
    decode,
    duplicate_key,
    error_location,
    error_message,
    pointer,
    unknown_keys,
    validation_errors,
)
from ms_fmk_transplt.targets import DEFAULT_TARGET, TARGETS

COMMON = {
    "id": {"type": "string", "pattern": "^[A-Z]{1,4}[0-9]{3}$"},
    "summary": {"type": "string"},
    "message": {"type": "string"},
    "suggestion": {"type": "string"},
    "needs_torch_npu": {"type": "boolean"},
    "opt_in": {"type": "string", "pattern": "^[a-z][a-z0-9_-]*$"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "examples": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["before"],
            "properties": {
                "before": {"type": "string"},
                "after": {"type": "string"},
                "release": {"type": "string"},
                "file": {"type": "string"},
                "opt_in": {"type": "string"},
            },
            "additionalProperties": False,
        },
    },
}


class RuleFileError(Exception):
    """A rule file that cannot be used; str() is the one-line message for the user."""


def _file_schema() -> dict[str, Any]:
    kinds = all_kinds()
    return {
        "type": "object",
        "required": ["rules"],
        "properties": {
            "rules": {
                "type": "object",
                "propertyNames": {"enum": sorted(kinds)},
                "properties": {
                    name: {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": kind.schema.get("required", []),
                            "properties": {**COMMON, **kind.schema.get("properties", {})},
                        },
                    }
                    for name, kind in kinds.items()
                },
            },
            "defaults": {"type": "object", "properties": {"needs_torch_npu": {"type": "boolean"}}},
            # the --target values whose runs use the file's rules (built-in files; default: npu)
            "targets": {"type": "array", "items": {"enum": list(TARGETS)}, "minItems": 1},
        },
    }


def parse_rule_document(
    document: Any,
    origin: str,
    *,
    builtin: bool,
    first_user_id: int = 1,
    warnings: list[str] | None = None,
    validate: bool = True,
) -> list[Rule]:
    """Validate a decoded rule document and turn it into rules; raises RuleFileError.

    `validate=False` leaves out the schema and the examples' syntax (see load_builtin_rules);
    each kind's own checks, ids and duplicates are checked either way."""
    if validate:
        schema = _file_schema()
        errors = validation_errors(schema, document)
        if errors:
            error = errors[0]
            raise RuleFileError(
                f"{origin}: {error_location(error)}: {error_message(error, sorted(all_kinds()))}"
            )
        if warnings is not None:
            warnings.extend(f"{origin}: {warning}" for warning in unknown_keys(document, schema))
    kinds = all_kinds()
    defaults = document.get("defaults", {})
    rules: list[Rule] = []
    seen: dict[tuple[str, Any], str] = {}
    next_id = first_user_id
    for kind_name, entries in document["rules"].items():
        kind = kinds[kind_name]
        for index, entry in enumerate(entries):
            where = pointer(["rules", kind_name, index])
            for key, problem in kind.check(entry):
                raise RuleFileError(f"{origin}: {where}/{key}: {problem}")
            if warnings is not None and not builtin:
                warnings.extend(
                    f"{origin}: {where}/{key}: {w}" for key, w in _expression_warnings(kind, entry)
                )
            for i, example in enumerate(entry.get("examples", []) if validate else ()):
                if "file" not in example and (
                    not _compiles(example["before"]) or not _compiles(example.get("after", example["before"]))
                ):
                    raise RuleFileError(f"{origin}: {where}/examples/{i}: example is not valid Python")
            dup_key = (kind_name, kind.key(entry))
            if dup_key in seen:
                raise RuleFileError(f"{origin}: {where}: duplicate of the rule at {seen[dup_key]}")
            seen[dup_key] = where
            if builtin and "id" not in entry:
                raise RuleFileError(f"{origin}: {where}: built-in rules need an id")
            if "id" in entry:
                rule_id = entry["id"]
            else:
                rule_id = f"U{next_id:03d}"
                next_id += 1
            params = {
                k: v
                for k, v in entry.items()
                if k in kind.schema.get("properties", {}) or k in ("suggestion", "opt_in")
            }
            rules.append(
                Rule(
                    id=rule_id,
                    kind=kind_name,
                    params=params,
                    summary=entry.get("summary") or kind.summary(entry),
                    message=entry.get("message") or kind.message,
                    origin=f"{origin}:{where}",
                    examples=tuple(
                        Example(
                            e["before"],
                            e.get("after", e["before"]),
                            e.get("release"),
                            e.get("file"),
                            e.get("opt_in"),
                        )
                        for e in entry.get("examples", [])
                    ),
                    needs_torch_npu=entry.get(
                        "needs_torch_npu", defaults.get("needs_torch_npu", _mentions_npu(kind_name, entry))
                    ),
                    user=not builtin,
                    tags=tuple(entry.get("tags", [])),
                    support_list=kind.support_list,
                    target=document.get("targets", [DEFAULT_TARGET])[0],
                )
            )
    return _unique_ids(rules)


_NPU_WORDS = re.compile(r"\btorch[._]npu\b|['\"]npu\b|\bhccl\b")
_REPLACEMENT_KEYS = ("new_name", "arg_new", "new_method", "new_attribute", "new_module")


def _mentions_npu(kind_name: str, entry: dict[str, Any]) -> bool:
    """A rule whose replacement talks about the NPU needs torch_npu imported, unless it says otherwise."""
    return kind_name != "ImportInsertRule" and any(
        _NPU_WORDS.search(str(entry.get(k, ""))) for k in _REPLACEMENT_KEYS
    )


def _unique_ids(rules: list[Rule]) -> list[Rule]:
    ids: dict[str, str] = {}
    for rule in rules:
        if rule.id in ids:
            raise RuleFileError(f"{rule.origin}: duplicate rule id {rule.id} (also at {ids[rule.id]})")
        ids[rule.id] = rule.origin
    return rules


def _expression_warnings(kind: Kind, entry: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Source-text values (schema format `python-expression`) that look like forgotten quotes."""
    for key, sub in kind.schema.get("properties", {}).items():
        if sub.get("format") == "python-expression" and isinstance(entry.get(key), str):
            warning = checks.bare_name(entry[key])
            if warning is not None:
                yield key, warning


def _compiles(code: str) -> bool:
    try:
        compile(code, "<example>", "exec")
    except SyntaxError:
        return False
    return True


def load_rule_file(
    path: str | Path, *, first_user_id: int = 1, warnings: list[str] | None = None
) -> list[Rule]:
    """Read one user rule file (the porting guide's format); raises RuleFileError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # an editor's BOM is not part of the JSON
    except FileNotFoundError:
        raise RuleFileError(f"{path}: rule file not found") from None
    except IsADirectoryError:
        raise RuleFileError(f"{path}: is a directory, not a rule file") from None
    except UnicodeDecodeError as exc:
        raise RuleFileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise RuleFileError(f"{path}: cannot read rule file ({exc.strerror})") from None
    try:
        document = decode(text)
    except json.JSONDecodeError as exc:
        raise RuleFileError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except ValueError as exc:
        raise RuleFileError(f"{path}: invalid JSON: {exc}") from None
    if twice := duplicate_key(document):
        raise RuleFileError(f"{path}: {twice}")
    return parse_rule_document(
        document, str(path), builtin=False, first_user_id=first_user_id, warnings=warnings
    )


def load_builtin_rules(*, validate: bool = False, target: str | None = DEFAULT_TARGET) -> list[Rule]:
    """The built-in rules of `target` (every target's with None), from the JSON files shipped in
    ms_fmk_transplt.builtin_rules; a file serves the targets its `targets` key names, else npu.

    The shipped files are checked against the schema, and their examples compiled, by the test
    suite (`validate=True`, tests/test_rule_files.py), not again on every run: that cost the
    import of jsonschema and the validation, ~0.1 s of a run's start-up on an idle machine."""
    rules: list[Rule] = []
    package = resources.files("ms_fmk_transplt.builtin_rules")
    for entry in sorted(package.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            document = json.loads(entry.read_text(encoding="utf-8"))
            if target is not None and target not in document.get("targets", [DEFAULT_TARGET]):
                continue
            rules.extend(
                parse_rule_document(document, f"builtin/{entry.name}", builtin=True, validate=validate)
            )
    return _unique_ids(rules)


def load_rules(
    user_files: Iterable[str | Path] = (),
    *,
    builtin: bool = True,
    warnings: list[str] | None = None,
    target: str = DEFAULT_TARGET,
) -> list[Rule]:
    """Built-in rules of `target` then user rules, all validated; user rules override built-in ones."""
    if target not in TARGETS:
        raise RuleFileError(f"unknown target {target!r}; valid: {', '.join(TARGETS)}")
    rules = load_builtin_rules(target=target) if builtin else []
    built_in = len(rules)
    seen: dict[tuple[str, Any], str] = {}
    kinds = all_kinds()
    next_id = 1
    given: dict[Path, str | Path] = {}
    for path in user_files:
        resolved = Path(path).resolve()
        if resolved in given:  # one file named twice (perhaps spelled two ways) is one set of rules
            if warnings is not None:
                warnings.append(
                    f"{path}: rule file given more than once (first as {given[resolved]}); loaded once"
                )
            continue
        given[resolved] = path
        loaded = load_rule_file(path, first_user_id=next_id, warnings=warnings)
        next_id += sum(1 for r in loaded if r.id.startswith("U"))
        for rule in loaded:
            key = (rule.kind, kinds[rule.kind].key(rule.params))
            if key in seen:
                raise RuleFileError(f"{rule.origin}: duplicate of the rule at {seen[key]}")
            seen[key] = rule.origin
        rules.extend(loaded)
    # a user rule overrides the built-in rule of its kind with the same key, in every kind alike
    # (before, a kind whose hooks add up applied both, and one whose first pattern wins, the built-in)
    if not seen:  # no user rule: nothing to override
        return rules
    kept = [r for r in rules[:built_in] if (r.kind, kinds[r.kind].key(r.params)) not in seen]
    return kept + rules[built_in:]
