"""Rule-file JSON: decoding it strictly, the schema's validator and its messages, in JSON's words.

jsonschema speaks Python (`None is not of type 'string'`) and takes 1.0 for an integer; a rule
file is JSON, so its values are quoted as JSON spells them (null, true, "text") and an integer is
written without a fraction. Python's json module accepts NaN and keeps the last of two equal
keys; neither is JSON a rule file may rely on. Keys the schema does not name are found here too,
to be warned about. jsonschema itself is imported only when a document is validated (~40 ms of
start-up on an idle machine): the rule kinds use this module's spelling helpers at every run.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.suggest import closest, did_you_mean

if TYPE_CHECKING:
    import jsonschema


def spell(value: Any, limit: int = 60) -> str:
    """`value` as JSON writes it (null, true, "text"), shortened past `limit` characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def pointer(parts: Any) -> str:
    """The JSON pointer of a path of keys and indices (`/rules/ArgsModifyRule/0`)."""
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


class _Object(dict[str, Any]):
    """A decoded JSON object that had a key twice (`duplicate`: the first such key)."""

    duplicate: str


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    twice = next((key for i, key in enumerate(keys) if key in keys[:i]), None)
    if twice is None:
        return dict(pairs)
    result = _Object(pairs)
    result.duplicate = twice
    return result


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def decode(text: str) -> Any:
    """The JSON document in `text`; json.JSONDecodeError for bad syntax, ValueError for NaN and
    Infinity (Python reads them, JSON has no such values)."""
    return json.loads(text, object_pairs_hook=_object, parse_constant=_constant)


def duplicate_key(document: Any, path: tuple[Any, ...] = ()) -> str | None:
    """`POINTER: key "k" given twice` for the first object of a `decode`d document with a repeated key."""
    if isinstance(document, _Object):
        return f"{pointer(path)}: key {spell(document.duplicate)} given twice (JSON keeps only the last)"
    items = (
        document.items()
        if isinstance(document, dict)
        else enumerate(document)
        if isinstance(document, list)
        else ()
    )
    for key, value in items:
        if found := duplicate_key(value, (*path, key)):
            return found
    return None


def _is_integer(checker: Any, instance: Any) -> bool:
    # JSON Schema counts 1.0 as an integer and Python counts True as one: a rule file means neither
    return isinstance(instance, int) and not isinstance(instance, bool)


@functools.cache
def _validator_class() -> Any:
    import jsonschema

    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
    )


def validation_errors(schema: dict[str, Any], document: Any) -> list[jsonschema.ValidationError]:
    """What is wrong with `document` against `schema` (JSON Schema 2020-12, integers as JSON's),
    the outermost first, then by JSON location: the first is the one to name."""
    return sorted(
        _validator_class()(schema).iter_errors(document),
        key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))),
    )


_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def _type_message(instance: Any, expected: str | list[str]) -> str:
    names = [expected] if isinstance(expected, str) else list(expected)
    message = f"{spell(instance)} is not {' or '.join(_TYPES.get(n, n) for n in names)}"
    if "integer" in names and isinstance(instance, float) and instance.is_integer():
        message += f" (write {int(instance)})"
    return message


def _non_empty(what: str, limit: int, unit: str) -> str:
    return f"{what} should not be empty" if limit == 1 else f"{what} has fewer than {limit} {unit}"


def error_location(error: jsonschema.ValidationError) -> str:
    """The JSON pointer an error is about: an unknown key is named itself, not its object."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        path.append(_extra_keys(error)[0])
    return pointer(path)


def _extra_keys(error: jsonschema.ValidationError) -> list[str]:
    known = set(error.schema.get("properties", {}))
    return sorted(k for k in error.instance if k not in known)


def error_message(error: jsonschema.ValidationError, kinds: list[str]) -> str:
    """One line saying what is wrong with the value at `error_location(error)`."""
    value, limit = error.instance, error.validator_value
    if "propertyNames" in error.absolute_schema_path:
        hint = did_you_mean(str(value), kinds)
        return f"unknown rule kind {spell(value)}{hint}; valid kinds: {', '.join(kinds)}"
    if error.validator == "type":
        return _type_message(value, limit)
    if error.validator == "required":
        missing = next(k for k in limit if isinstance(value, dict) and k not in value)
        known = set(error.schema.get("properties", {}))
        typo = closest(missing, [k for k in value if k not in known]) if isinstance(value, dict) else None
        return f"{spell(missing)} is required" + (f" (is {spell(typo)} a misspelling of it?)" if typo else "")
    if error.validator == "minimum":
        return f"{spell(value)} is less than the minimum of {limit}"
    if error.validator == "enum":
        hint = did_you_mean(str(value), [str(v) for v in limit]) if isinstance(value, str) else ""
        return f"{spell(value)} is not one of {', '.join(spell(v) for v in limit)}{hint}"
    if error.validator == "pattern":
        return f"{spell(value)} does not match the pattern {limit}"
    if error.validator == "minLength":
        return _non_empty(spell(value), limit, "characters")
    if error.validator == "minItems":
        return _non_empty(spell(value), limit, "items")
    if error.validator == "minProperties":
        return _non_empty(spell(value), limit, "keys")
    if error.validator == "additionalProperties":
        properties = sorted(error.schema.get("properties", {}))
        hint = did_you_mean(_extra_keys(error)[0], properties) if isinstance(value, dict) else ""
        return f"unknown key{hint} (valid: {', '.join(properties)})"
    return error.message  # a keyword no rule schema uses yet


def unknown_keys(document: Any, schema: dict[str, Any], path: tuple[Any, ...] = ()) -> Iterator[str]:
    """Warnings for keys the schema neither names nor otherwise allows, at any depth, in document order.

    An object schema with `additionalProperties` or `propertyNames` decides its keys itself (a
    schema error, not a warning); `document` is valid against `schema`."""
    if isinstance(document, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        open_object = "additionalProperties" not in schema and "propertyNames" not in schema
        for key, value in document.items():
            if key in properties:
                yield from unknown_keys(value, properties[key], (*path, key))
            elif isinstance(extra, dict):
                yield from unknown_keys(value, extra, (*path, key))
            elif open_object and properties:
                hint = did_you_mean(str(key), properties)
                yield f"{pointer((*path, key))}: unknown key ignored{hint} (valid: {', '.join(sorted(properties))})"
    elif isinstance(document, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(document):
            yield from unknown_keys(item, schema["items"], (*path, index))
