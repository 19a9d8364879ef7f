"""Where a file names an environment variable, found before the rewrite.

A literal is a variable's name where the code reads or writes the process environment with it:
`os.environ[...]`, its `get` / `setdefault` / `pop`, `os.getenv` and the other calls listed in
the rule data (`env_calls`), `... in os.environ`, the keys of a dict built for a child process
(`{**os.environ, ...}`, `env={...}`, `os.environ.update({...})`), test fixtures that set it
(`monkeypatch.setenv`, `mock.patch.dict(os.environ, {...})`), and names bound to the environment
or a copy of it (`env = os.environ.copy()`); a literal compared with, or tested as a prefix of, a
loop variable over the environment's names (`for k in os.environ: if "NCCL" in k`) names one too
(a backend rule must not touch it). Keyword names count in `os.environ.update(NAME=...)`,
`dict(os.environ, NAME=...)` and `mock.patch.dict(os.environ, NAME=...)`. A key or index that is
the keys of a dict literal the file binds to a name it passes as `env=` (a helper building a
child's environment).

The hooks (ruleset/kinds/env_var_rule.py) rewrite; this module only says where.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ms_fmk_transplt.engine.devices import choices
from ms_fmk_transplt.engine.interface import ENV_NAMES, ENV_PREFIXES, EnvHook, HookRegistry, Site
from ms_fmk_transplt.engine.syntax import NodeIndex

# evidence, by how the name was found
_CALL = "an argument of {name}"
_ENVIRON = "a key of the process environment"


class Environment:
    """The environment-variable names of one module, with why each is one."""

    def __init__(
        self,
        hooks: HookRegistry,
        calls: frozenset[str],
        setters: frozenset[str],
        qualify: Callable[[cst.CSTNode], str | None],
    ) -> None:
        self.hooks = hooks  # by the variable's name (ENV_NAMES) or a prefix of it (ENV_PREFIXES)
        self.calls = calls  # qualified names whose first argument is a variable's name
        self.setters = setters  # method names of test fixtures: monkeypatch.setenv
        self.qualify = qualify
        self.names: set[str] = set()  # variables bound to os.environ or a copy of it
        self.found: dict[int, str] = {}  # id(literal) -> evidence
        self.keyword_calls: dict[int, str] = {}  # id(call) -> evidence: NAME= keywords are names
        self.dict_names: set[str] = set()  # variables holding a child's environment: env=env
        self.key_names: set[str] = set()  # variables holding a variable's name: os.environ[key]
        self.name_vars: set[str] = set()  # loop variables over the environment's names: for k in os.environ

    def hook(self, name: str) -> EnvHook | None:
        """The hook for an environment variable's name: by the whole name, else by a prefix."""
        hook = self.hooks.one(ENV_NAMES, name)
        if hook is None:
            prefixes = self.hooks.keyed(ENV_PREFIXES).items()
            hook = next((hooks[-1] for prefix, hooks in prefixes if hooks and name.startswith(prefix)), None)
        return hook

    def is_environ(self, expr: cst.BaseExpression) -> bool:
        """os.environ, or a name the file binds to it or a copy of it (env = os.environ.copy())."""
        if isinstance(expr, cst.Name) and expr.value in self.names:
            return True
        return self.qualify(expr) == "os.environ"

    def environ_copy(self, value: cst.BaseExpression) -> bool:
        """os.environ, os.environ.copy(), dict(os.environ, ...), copy.copy(os.environ), {**os.environ, ...}."""
        if isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute) and func.attr.value == "copy" and self.is_environ(func.value):
                return True
            copies = self.qualify(func) in ("copy.copy", "copy.deepcopy") or (
                isinstance(func, cst.Name) and func.value == "dict"
            )
            first = value.args[0] if value.args else None
            return copies and first is not None and first.keyword is None and self.is_environ(first.value)
        if isinstance(value, cst.Dict):
            return any(
                isinstance(e, cst.StarredDictElement) and self.is_environ(e.value) for e in value.elements
            )
        return self.is_environ(value)

    # ---- the module-wide pass ------------------------------------------------------------------
    def scan(self, nodes: NodeIndex) -> None:
        """Find every name binding to the environment, then every literal naming a variable."""
        assigns = nodes.of(cst.Assign)
        while True:  # `env = os.environ.copy(); child = dict(env)`: until nothing new is bound
            before = len(self.names)
            for node in assigns:
                if self.environ_copy(node.value):
                    self.names.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
            if len(self.names) == before:
                break
        for loop in nodes.of_any(cst.For, cst.CompFor):  # for k in os.environ: the names, one by one
            self._iterate(loop.target, loop.iter)
        for call in nodes.of(cst.Call):
            self._call(call)
        for built in nodes.of(cst.Dict):
            if any(
                isinstance(e, cst.StarredDictElement) and self.is_environ(e.value) for e in built.elements
            ):
                self._dict(built, "a key of a child's environment ({**os.environ, ...})")
        for subscript in nodes.of(cst.Subscript):
            if not self.is_environ(subscript.value):
                continue
            for element in subscript.slice:
                if isinstance(element.slice, cst.Index):
                    self._found(element.slice.value, _ENVIRON)
        for comparison in nodes.of(cst.Comparison):
            for target in comparison.comparisons:
                if isinstance(target.operator, (cst.In, cst.NotIn)) and self.is_environ(target.comparator):
                    self.found[id(comparison.left)] = "tested with `in os.environ`"
            parts = [comparison.left, *(t.comparator for t in comparison.comparisons)]
            named = next((p for p in parts if isinstance(p, cst.Name) and p.value in self.name_vars), None)
            if named is not None:  # if "NCCL" in k: a test of the variable's name, not a backend
                for part in parts:
                    if isinstance(part, cst.SimpleString):
                        self.found[id(part)] = f"compared with {named.value}, an environment variable's name"
        # env = {"CUDA_VISIBLE_DEVICES": "0"}; subprocess.run(cmd, env=env): a child's environment
        # key, value = "NCCL_DEBUG", "INFO"; os.environ[key] = value: a variable's name
        for assign in assigns:
            for assign_target in assign.targets:
                self._bind(assign_target.target, assign.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
            if len(target.elements) == len(value.elements):
                for t, v in zip(target.elements, value.elements):
                    self._bind(t.value, v.value)
        elif isinstance(target, cst.Name) and target.value in self.dict_names and isinstance(value, cst.Dict):
            self._dict(value, f"a key of {target.value}, passed on as an environment")
        elif isinstance(target, cst.Name) and target.value in self.key_names:
            # NAME = "ZE_AFFINITY_MASK" if xpu else "CUDA_VISIBLE_DEVICES"; env[NAME] = "1,2"
            for choice in choices(value):
                if isinstance(choice, cst.SimpleString):
                    self.found[id(choice)] = (
                        f"bound to {target.value}, used as an environment variable's name"
                    )

    def _iterate(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for k in os.environ`, `for k in env.keys()`, `for k, v in env.items()`: k is a name."""
        method = ""
        if (  # sorted(os.environ), list(env.keys())
            isinstance(iterable, cst.Call)
            and isinstance(iterable.func, cst.Name)
            and iterable.func.value in ("sorted", "list", "tuple", "set")
            and len(iterable.args) == 1
        ):
            iterable = iterable.args[0].value
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute):
            method, iterable = iterable.func.attr.value, iterable.func.value
        if method not in ("", "keys", "items") or not self.is_environ(iterable):
            return
        if method == "items" and isinstance(target, cst.Tuple) and target.elements:
            target = target.elements[0].value
        if isinstance(target, cst.Name):
            self.name_vars.add(target.value)

    def _found(self, node: cst.BaseExpression, why: str) -> None:
        if isinstance(node, cst.Name):
            self.key_names.add(node.value)
        else:
            self.found[id(node)] = why

    def _dict(self, node: cst.Dict, why: str) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.found[id(element.key)] = why

    def _call(self, node: cst.Call) -> None:
        func = node.func
        positional = [a for a in node.args if a.keyword is None]
        qualified = self.qualify(func)
        if qualified in self.calls and positional:
            self._found(positional[0].value, _CALL.format(name=qualified))
        if isinstance(func, cst.Attribute) and self.is_environ(func.value):
            method = func.attr.value
            if method in ("get", "setdefault", "pop", "__contains__") and positional:
                self._found(positional[0].value, _CALL.format(name=f"os.environ.{method}"))
            elif method == "update":  # env.update({"CUDA_VISIBLE_DEVICES": ...}) or update(CUDA_...=...)
                if positional and isinstance(positional[0].value, cst.Dict):
                    self._dict(positional[0].value, "a key given to os.environ.update")
                self.keyword_calls[id(node)] = "a keyword of os.environ.update"
        elif isinstance(func, cst.Name) and func.value == "dict" and positional:
            if self.is_environ(positional[0].value):
                self.keyword_calls[id(node)] = "a keyword of dict(os.environ, ...)"
        elif (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("startswith", "endswith")
            and isinstance(func.value, cst.Name)
            and func.value.value in self.name_vars
            and positional
        ):  # k.startswith("NCCL_") over the environment's names
            pieces = positional[0].value
            for piece in pieces.elements if isinstance(pieces, cst.Tuple) else [positional[0]]:
                if isinstance(piece.value, cst.SimpleString):
                    self.found[id(piece.value)] = (
                        f"tested against {func.value.value}, an environment variable's name"
                    )
        elif isinstance(func, cst.Attribute) and func.attr.value in self.setters and positional:
            self._found(positional[0].value, _CALL.format(name=func.attr.value))
        elif isinstance(func, cst.Attribute) and func.attr.value == "dict" and positional:
            # mock.patch.dict(os.environ, {...}) / patch.dict("os.environ", ...)
            target = positional[0].value
            named = isinstance(target, cst.SimpleString) and target.evaluated_value == "os.environ"
            if named or self.is_environ(target):
                if len(positional) > 1 and isinstance(positional[1].value, cst.Dict):
                    self._dict(positional[1].value, "a key given to patch.dict(os.environ, ...)")
                elif len(positional) > 1 and isinstance(positional[1].value, cst.Name):
                    self.dict_names.add(positional[1].value.value)
                self.keyword_calls[id(node)] = "a keyword of patch.dict(os.environ, ...)"
        for arg in node.args:  # subprocess.run(..., env={...}): the child's whole environment
            if arg.keyword is not None and arg.keyword.value == "env" and isinstance(arg.value, cst.Dict):
                self._dict(arg.value, "a key of env= (a child's environment)")
            elif arg.keyword is not None and arg.keyword.value == "env" and isinstance(arg.value, cst.Name):
                self.dict_names.add(arg.value.value)

    # ---- the rewrite -----------------------------------------------------------------------------
    def rename_keywords(self, site: Site, original: cst.Call, updated: cst.Call) -> cst.Call:
        """`os.environ.update(CUDA_VISIBLE_DEVICES="0")`, `dict(os.environ, CUDA_...=...)`: the keyword is the name."""
        if id(original) not in self.keyword_calls:
            return updated
        args = list(updated.args)
        for i, arg in enumerate(original.args):
            if arg.keyword is None:
                continue
            hook = self.hook(arg.keyword.value)
            if hook is not None:
                args[i] = hook.rewrite_env_keyword(site, arg, args[i], arg.keyword.value)
        return updated.with_changes(args=args)
