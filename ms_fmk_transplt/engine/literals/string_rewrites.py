"""String literals rewritten by the role the literal pass gave them (engine/literals/roles.py).

Prose and literals a value hook claimed are never touched; an environment variable's name goes to
its environment hook; a device, backend or other code string to the string hooks in order, the
first that answers winning (engine/interface/hook_runs.py's `first_answer`); a dict key or subscript only to hooks that apply to keys, and one
kept in a torch file that looks like a device is still reported. A code literal or key spelling a
variable an environment rule covers, where no environment is seen to take it, is kept and
reported by that rule.
"""

from __future__ import annotations

import re

import libcst as cst

from ms_fmk_transplt.engine.interface import Site, StringHook, first_answer
from ms_fmk_transplt.engine.literals.environment import Environment
from ms_fmk_transplt.engine.literals.roles import LiteralRoles, Role

LEFT_ALONE = (Role.PROSE, Role.CLAIMED)  # never rewritten by a string rule
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+")  # NCCL_ALGO, CUDA_VISIBLE_DEVICES


class LiteralRewrites:
    """The string-literal half of the traversal of one module; `site` is what the hooks are handed."""

    def __init__(
        self,
        site: Site,
        roles: LiteralRoles,
        environment: Environment,
        hooks: list[StringHook],
    ) -> None:
        """`hooks`: the string hooks, in the order they are tried."""
        self.site = site
        self.roles = roles
        self.environment = environment
        self.hooks = hooks
        self.key_hooks = [hook for hook in hooks if hook.in_keys]
        self.keyed = bool(self.key_hooks)  # some hook also applies to dict keys

    def simple(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.BaseExpression:
        """A plain or implicitly concatenated piece: `"cuda:0"`, `'NCCL_DEBUG'`."""
        site = self.site
        role = self.roles.of(original).role
        keyed = role is Role.DATA_KEY
        if role in LEFT_ALONE:
            return updated
        if keyed and not self.keyed:
            return self._kept(original, updated)
        try:
            value = original.evaluated_value
        except Exception:  # an escape libcst cannot evaluate: leave it alone
            return updated
        if not isinstance(value, str):
            return updated
        if role is Role.ENV_NAME:
            hook = self.environment.hook(value)
            return updated if hook is None else hook.rewrite_env_string(site, original, updated, value)
        result = first_answer(
            self._for(keyed), lambda hook: hook.rewrite_string(site, original, updated, value)
        )
        if result is not None:
            return result
        if keyed:
            return self._kept(original, updated)
        if role is Role.CODE:
            self._env_name_kept(original, value)
        return updated

    def _env_name_kept(self, original: cst.SimpleString, value: str) -> None:
        """A literal spelling a variable an environment rule covers, in code where no environment
        is seen to take it: reported (it may reach os.environ through the project's own helper)."""
        if _ENV_NAME.fullmatch(value):
            hook = self.environment.hook(value)
            if hook is not None:
                hook.report_kept(self.site, original, value)

    def _kept(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString:
        """A dict key or subscript kept as the user's: a device-looking one in a torch file is still
        reported, and so is one spelling an environment variable's name."""
        site = self.site
        value = original.evaluated_value
        if not isinstance(value, str):
            return updated
        self._env_name_kept(original, value)
        if site.imports_torch:
            why = self.roles.of(original).why
            first_answer(self.hooks, lambda hook: hook.report_kept(site, original, value, why) or None)
        return updated

    def formatted(self, original: cst.FormattedString, updated: cst.FormattedString) -> cst.BaseExpression:
        """An f-string: the hooks see its template with `{}` for each replacement field; a dict key
        or subscript (`generators[f"cuda:{i}"]`) only hooks that apply to keys, like a plain literal."""
        site = self.site
        role = self.roles.of(original)
        if role.role in LEFT_ALONE or not updated.parts:
            return updated
        keyed = role.role is Role.DATA_KEY
        template = "".join(
            p.value if isinstance(p, cst.FormattedStringText) else "{}" for p in original.parts
        )
        result = first_answer(
            self._for(keyed), lambda hook: hook.rewrite_fstring(site, original, updated, template)
        )
        if result is not None:
            return result
        if keyed and site.imports_torch:
            first_answer(
                self.hooks, lambda hook: hook.report_kept(site, original, template, role.why) or None
            )
        return updated

    def _for(self, keyed: bool) -> list[StringHook]:
        """The hooks tried on a literal, in order: on a dict key or subscript, those for keys."""
        return self.key_hooks if keyed else self.hooks
