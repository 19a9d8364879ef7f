"""Attribute patches that remember what they replaced, so tests can put torch back."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

_MISSING = object()


class PatchLog:
    """Every ``setattr`` made through it, in order, with the value it replaced."""

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        """``setattr(owner, name, value)``, remembering the previous value (or its absence)."""
        self._undo.append(
            (
                owner,
                name,
                owner.__dict__.get(name, _MISSING)
                if isinstance(owner, type)
                else getattr(owner, name, _MISSING),
            )
        )
        setattr(owner, name, value)

    def wrap(
        self, owner: Any, name: str, wrapper: Callable[[Callable[..., Any]], Callable[..., Any]]
    ) -> bool:
        """Replace ``owner.name`` by ``wrapper(owner.name)``; False (nothing done) if it is absent."""
        original = getattr(owner, name, None)
        if original is None:
            return False
        self.set(owner, name, wrapper(original))
        return True

    def restore(self) -> None:
        """Undo every patch, newest first."""
        while self._undo:
            owner, name, old = self._undo.pop()
            if old is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
            else:
                setattr(owner, name, old)


def mapping_arguments(
    mapper: Callable[[tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A wrapper factory: the wrapped callable sees its arguments passed through ``mapper``."""

    def wrapper(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def patched(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = mapper(args, kwargs)
            return fn(*args, **kwargs)

        patched._transfer_to_npu = True  # type: ignore[attr-defined]  # a marker on the function object
        return patched

    return wrapper
