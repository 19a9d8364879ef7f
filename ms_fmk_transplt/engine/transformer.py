"""The single libcst transformer that applies every compiled rule in one traversal.

Matching reads `original_node` (names resolve the same however deep a rewrite nests);
rewrites build on `updated_node`, so `x.cuda(device=torch.device("cuda:0"))` gets both.
It applies the name tables itself (renames, module members, method / function / attribute
renames, support classification) and calls the kinds' hooks (`engine/hooks.py`) for the rest,
keeping the traversal, name resolution, the prose / device / environment contexts, import
planning and the order in which several hooks meet on one node.
"""

from __future__ import annotations

import re
from typing import Any

import libcst as cst

from ms_fmk_transplt.engine.bindings import Bindings, assigned_attributes, collect_bindings, own_methods
from ms_fmk_transplt.engine.environment import Environment
from ms_fmk_transplt.engine.hooks import CallHook, ResultUse, ValueHook
from ms_fmk_transplt.engine.import_statements import ImportStatements
from ms_fmk_transplt.engine.imports import (
    insert_module_import,
    plan_function_imports,
    plan_imports,
)
from ms_fmk_transplt.engine.messages import join_clauses
from ms_fmk_transplt.engine.names import (
    alias_table,
    assignment_aliases,
    build_dotted,
    chain_root,
    iter_imports,
    set_segments,
)
from ms_fmk_transplt.engine.pending import Pending
from ms_fmk_transplt.engine.results import ResultUses
from ms_fmk_transplt.engine.roles import LiteralRoles, Role
from ms_fmk_transplt.engine.rule import Rule
from ms_fmk_transplt.engine.support import SupportClassifier, converted_name
from ms_fmk_transplt.engine.tables import Match, Tables
from ms_fmk_transplt.engine.walk import NodeIndex
from ms_fmk_transplt.records import Operation, Support

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class Converter(cst.CSTTransformer):
    """Applies the tables to one module; read `pending`, `needs_torch_npu` and `imports_needed` after."""

    def __init__(self, tables: Tables, module: cst.Module) -> None:
        super().__init__()
        self.t = tables
        imports = list(iter_imports(module, lines=True))
        # the look-ahead passes share one cheap walk (engine/walk.py)
        nodes = NodeIndex(module)
        self.aliases = assignment_aliases(
            nodes.of(cst.Assign), alias_table(s for _, s in imports), tables.modules
        )
        self.pending: list[Pending] = []
        self.needs_torch_npu = False
        self.uses_needed_api = (
            False  # e.g. torch.accelerator, which finds the NPU only after import torch_npu
        )
        self.imports_needed: set[str] = set()
        self._inner: set[int] = set()
        self._not_loads: set[int] = set()
        self._qualified: dict[int, str | None] = {}
        self._extra_lines: list[cst.BaseSmallStatement] = []
        self._anchor_updated: cst.SimpleStatementLine | None = None
        self.imports = plan_imports(tables, module, imports, self.aliases)
        self.renamed_names = self.imports.renamed_names
        spec = tables.device_spec
        self.environment = Environment(
            tables.env_hooks,
            tables.env_prefix_hooks,
            frozenset(spec.env_calls),
            frozenset(spec.env_setters),
            self.qualify,
        )
        # what each string literal is (engine/roles.py); the look-ahead passes share one cheap walk
        self.roles = LiteralRoles(spec, self.qualify, self.environment)
        self.roles.scan(nodes, devices=bool(tables.string_hooks))
        # value hooks (map_location) claim what they rewrite before the traversal: keys they keep,
        # values that are devices, the dicts they rebuild on the way out
        self._claimed: dict[int, ValueHook] = {}
        for value_hook in tables.value_hooks:
            claims = value_hook.claim(self, nodes)
            self.roles.claim(claims)
            self._claimed.update((id(n), value_hook) for n in claims.values)
        # `self.is_cuda = ...`: an attribute the file assigns is the user's, never Tensor.is_cuda
        # (object as code, attribute)
        self.assigned_attributes = assigned_attributes(nodes) if tables.attributes else set()
        # support classification (engine/support.py): told what is invoked, asked about each use
        self.support = SupportClassifier(tables, self.qualify)
        # tensor methods are matched by name only in files that import torch themselves
        self._imports_torch = any(
            q == root or q.startswith(root + ".")
            for q in self.aliases.values()
            for root in ("torch", "torch_npu")
        )
        # user rules renaming a bare function name: the import that binds it, then its uses
        self.bindings = collect_bindings(nodes) if tables.functions else Bindings()
        # method name -> the classes of this file that define it: `self.cuda()` there is the user's
        self.own_methods = own_methods(nodes) if tables.methods else {}
        self._call_funcs: set[int] = set()
        self._kept_functions: set[str] = set()
        # `cap = torch.cuda.get_device_capability()`: name -> (hook, qualified name of the call)
        # `cap = torch.cuda.get_device_capability()`, then `cap[0]`: engine/results.py
        self.results = ResultUses(tables.result_hooks, self.qualify, self)
        # bound name -> new name; id(import alias) -> (new name, name kept bound or None, why kept)
        self.function_renames, self._function_imports = plan_function_imports(tables, imports, self.bindings)
        self.import_statements = ImportStatements(self)

    # ---- name resolution -------------------------------------------------------------------
    def qualify(self, node: cst.CSTNode) -> str | None:
        """The qualified name an original Name/Attribute chain refers to, if imports tell."""
        key = id(node)
        if key in self._qualified:
            return self._qualified[key]
        result: str | None = None
        if isinstance(node, cst.Name):
            result = self.aliases.get(node.value)
        elif isinstance(node, cst.Attribute):
            base = self.qualify(node.value)
            result = f"{base}.{node.attr.value}" if base else None
        self._qualified[key] = result
        return result

    def _binding(self, name: str) -> tuple[str, str | None]:
        return self.imports.binding(name)

    # ---- findings ----------------------------------------------------------------------------
    def report(
        self, node: cst.CSTNode, rule: Rule, operation: Operation, heuristic: bool = False, **fields: Any
    ) -> None:
        """Record a finding at `node` (an original node) rendered from the rule's template."""
        fields.setdefault("release", self.t.release)
        self.pending.append(Pending(node, rule, operation, rule.render(**fields), heuristic))
        if operation is not Operation.UNSUPPORTED and rule.needs_torch_npu:
            self.needs_torch_npu = True

    def report_unsupported(
        self, node: cst.CSTNode, rule: Rule, what: str, suggestion: str = "", api: str = ""
    ) -> None:
        """An UNSUPPORTED finding: `what` cannot run on the NPU as written; `suggestion` says what to do."""
        noop = bool(rule.params.get("noop"))
        text = f"{what} has no effect on the NPU" if noop else f"{what} has no NPU counterpart"
        suggestion = suggestion.format(release=self.t.release) if suggestion else ""
        self.pending.append(
            Pending(
                node,
                rule,
                Operation.UNSUPPORTED,
                join_clauses(text, suggestion),
                noop=noop,
                api=api or (what if _DOTTED.fullmatch(what) else ""),
                support=Support.NO_EFFECT if noop else Support.UNSUPPORTED,
                suggestion=suggestion,
            )
        )

    def report_message(
        self,
        node: cst.CSTNode,
        rule: Rule,
        operation: Operation,
        message: str,
        heuristic: bool = False,
        api: str = "",
        support: Support | None = None,
    ) -> None:
        """A finding at `node` (an original node) with a message the caller wrote."""
        self.pending.append(Pending(node, rule, operation, message, heuristic, api=api, support=support))

    @property
    def release(self) -> str:
        """The Ascend release converted for (hooks.Site)."""
        return self.t.release

    @property
    def imports_torch(self) -> bool:
        """The file imports torch itself (hooks.Site)."""
        return self._imports_torch

    # ---- support classification (engine/support.py) -------------------------------------------
    def classify(
        self, node: cst.CSTNode, name: str | None, heuristic: bool = False, rewritten: bool = False
    ) -> None:
        """Ask the classifier about one use of API `name` (None: reported by a rule, nothing to ask)."""
        verdict = self.support.classify(node, name, rewritten) if name else None
        if verdict is None:
            return
        self.pending.append(
            Pending(
                node,
                verdict.rule,
                Operation.CHECK if verdict.support in _CHECKS else Operation.UNSUPPORTED,
                join_clauses(verdict.message, verdict.suggestion),
                heuristic=heuristic,
                api=name or "",
                support=verdict.support,
                dtypes=verdict.dtypes,
                suggestion=verdict.suggestion,
                source=verdict.source,
            )
        )

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        self.support.invoked(node.decorator)
        return True

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        self.support.enter_annotation()
        return True

    def leave_Annotation(self, original_node: cst.Annotation, updated_node: cst.Annotation) -> cst.Annotation:
        self.support.leave_annotation()
        return updated_node

    def _report_match(self, node: cst.CSTNode, match: Match) -> None:
        if match.new is None:
            self.report_unsupported(node, match.rule, match.prefix, match.suggestion)
        else:
            self.report(node, match.rule, Operation.MODIFY, old=match.prefix, new=match.new)

    # ---- bookkeeping visits ------------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self._not_loads.add(id(node.attr))
        if isinstance(node.value, (cst.Name, cst.Attribute)):
            self._inner.add(id(node.value))
        return True

    def visit_Arg(self, node: cst.Arg) -> bool:
        if node.keyword is not None:
            self._not_loads.add(id(node.keyword))
        return True

    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        name = (
            func.attr.value
            if isinstance(func, cst.Attribute)
            else func.value
            if isinstance(func, cst.Name)
            else ""
        )
        positional = [a for a in node.args if a.keyword is None]
        self._call_funcs.add(id(func))
        self.support.called(node)
        if name in self.t.device_spec.attribute_name_calls and len(positional) > 1:
            self._attribute_by_name(node, positional[0].value, positional[1].value)
        return True

    # ---- results that break on the NPU: engine/results.py -------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> bool:
        self.results.assign(node)
        return True

    def visit_For(self, node: cst.For) -> bool:
        self.results.use(node.iter, node.iter, ResultUse.ITERATE)
        return True

    def visit_Expr(self, node: cst.Expr) -> bool:
        # a bare string statement (docstring) is prose
        return not isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))

    def _attribute_by_name(self, call: cst.Call, owner: cst.BaseExpression, attr: cst.BaseExpression) -> None:
        """`getattr(torch, "cuda")`: the name a rule rewrites, spelled as a string, is reported."""
        base = self.qualify(owner)
        if base is None or not isinstance(attr, cst.SimpleString):
            return
        value = attr.evaluated_value
        if not isinstance(value, str):
            return
        match = self.t.lookup(f"{base}.{value}")
        if match is None or match.prefix != f"{base}.{value}":
            return
        target = f"the string {value!r} (write {match.new.rsplit('.', 1)[-1]!r})" if match.new else ""
        self.pending.append(
            Pending(
                call,
                match.rule,
                Operation.UNSUPPORTED,
                f"{match.prefix} looked up by name is not converted; change {target or 'it by hand'}",
            )
        )

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        self.results.use(node, node.value, ResultUse.INDEX)
        return True

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        self.results.compare(node)
        return True

    # ---- string literals: devices, backends, environment variables ------------------------------
    def leave_SimpleString(
        self, original_node: cst.SimpleString, updated_node: cst.SimpleString
    ) -> cst.BaseExpression:
        role = self.roles.of(original_node).role
        keyed = role is Role.DATA_KEY
        if role in _LEFT_ALONE:
            return updated_node
        if keyed and not self.t.keyed_strings:
            return self._kept(original_node, updated_node)
        try:
            value = original_node.evaluated_value
        except Exception:  # an escape libcst cannot evaluate: leave it alone
            return updated_node
        if not isinstance(value, str):
            return updated_node
        if role is Role.ENV_NAME:
            hook = self.environment.hook(value)
            return (
                updated_node
                if hook is None
                else hook.rewrite_env_string(self, original_node, updated_node, value)
            )
        for string_hook in self.t.string_hooks:
            if keyed and not string_hook.in_keys:
                continue
            result = string_hook.rewrite_string(self, original_node, updated_node, value)
            if result is not None:
                return result
        return self._kept(original_node, updated_node) if keyed else updated_node

    def _kept(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString:
        """A dict key or subscript kept as the user's: a device-looking one in a torch file is still reported."""
        if self._imports_torch and self.t.string_hooks:
            value = original.evaluated_value
            if isinstance(value, str):
                for hook in self.t.string_hooks:
                    if hook.report_kept(self, original, value, self.roles.of(original).why):
                        break
        return updated

    def leave_FormattedString(
        self, original_node: cst.FormattedString, updated_node: cst.FormattedString
    ) -> cst.BaseExpression:
        if self.roles.of(original_node).role in _LEFT_ALONE or not updated_node.parts:
            return updated_node
        template = "".join(
            p.value if isinstance(p, cst.FormattedStringText) else "{}" for p in original_node.parts
        )
        for hook in self.t.string_hooks:
            result = hook.rewrite_fstring(self, original_node, updated_node, template)
            if result is not None:
                return result
        return updated_node

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.BaseExpression:
        hook = self._claimed.get(id(original_node))
        return updated_node if hook is None else hook.rewrite_value(self, original_node, updated_node)

    def visit_Param(self, node: cst.Param) -> bool:
        self._not_loads.add(id(node.name))
        return True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._not_loads.add(id(node.name))
        return True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._not_loads.add(id(node.name))
        for base in node.bases:
            self.support.invoked(base.value)
        return True

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    # ---- names and attribute chains -----------------------------------------------------------
    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        key = id(original_node)
        if key not in self._not_loads and key not in self._inner:
            qualified = self.aliases.get(original_node.value)
            if qualified is not None and qualified.startswith(("torch.", "torch_npu.")):
                match = self.t.lookup(qualified)
                self.classify(original_node, converted_name(qualified, match), rewritten=match is not None)
        function = self.function_renames.get(original_node.value)
        if function is not None and id(original_node) not in self._not_loads:
            new_name, rule = function
            self.report(original_node, rule, Operation.MODIFY, old=original_node.value, new=new_name)
            return updated_node.with_changes(value=new_name)
        if self.t.functions and id(original_node) not in self._not_loads | self._call_funcs:
            # un-called and bound nowhere in the file (a star import): renamed as its calls are
            value = original_node.value
            entry = self.t.functions.get(value)
            if (
                entry is not None
                and entry.new is not None
                and value not in self.bindings.bound
                and value not in self.bindings.imported
            ):
                self.report(
                    original_node, entry.rule, Operation.MODIFY, heuristic=True, old=value, new=entry.new
                )
                return updated_node.with_changes(value=entry.new)
        new = self.renamed_names.get(original_node.value)
        if new is None or key in self._not_loads:
            return updated_node
        return updated_node.with_changes(value=new)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if id(original_node) in self._inner:
            return updated_node
        name = self.qualify(original_node)
        match = self.t.lookup(name) if name else None
        if name:
            self.classify(original_node, converted_name(name, match), rewritten=match is not None)
        if name and self.t.needs_module and not self.uses_needed_api:
            self.uses_needed_api = any(name == n or name.startswith(n + ".") for n in self.t.needs_module)
        if match is None and self.t.functions and id(original_node) not in self._call_funcs:
            function = self.t.functions.get(original_node.attr.value)
            root = original_node.value
            while isinstance(root, cst.Attribute):
                root = root.value
            # `lib.func` passed around un-called, on a module the file imports: the same rename as calls
            if (
                function is not None
                and function.new is not None
                and isinstance(root, cst.Name)
                and root.value in self.bindings.imported
                and root.value not in self.bindings.bound
            ):
                self.report(
                    original_node,
                    function.rule,
                    Operation.MODIFY,
                    old=original_node.attr.value,
                    new=function.new,
                )
                return updated_node.with_changes(attr=updated_node.attr.with_changes(value=function.new))
        if match is None:
            entry = self.t.attributes.get(original_node.attr.value)
            if entry is None or entry.new is None:
                return updated_node
            attr = original_node.attr.value
            if (_code(original_node.value), attr) in self.assigned_attributes:
                return updated_node
            if any(a == attr for _, a in self.assigned_attributes):
                self.pending.append(
                    Pending(
                        original_node,
                        entry.rule,
                        Operation.UNSUPPORTED,
                        f".{attr} kept: this file also assigns its own .{attr}; if this one is a tensor's,"
                        f" write .{entry.new}",
                        heuristic=True,
                    )
                )
                return updated_node
            self.report(
                original_node,
                entry.rule,
                Operation.MODIFY,
                heuristic=True,
                old=original_node.attr.value,
                new=entry.new,
            )
            return updated_node.with_changes(attr=updated_node.attr.with_changes(value=entry.new))
        self._report_match(original_node, match)
        assert name is not None  # a match implies a dotted name
        target = match.new if match.new is not None else match.prefix
        new_full = target + name[len(match.prefix) :]
        _, root_target = self._binding(chain_root(original_node).value)
        if root_target and (new_full == root_target or new_full.startswith(root_target + ".")):
            segments = new_full[len(root_target) + 1 :].split(".") if new_full != root_target else []
            return set_segments(updated_node, segments)
        self._need_import_for(new_full)
        return build_dotted(new_full)

    def _need_import_for(self, target: str) -> None:
        """Make the first name of a freshly written dotted path resolve (torch.npu needs only torch)."""
        needed = self.imports.needed_import(target)
        if needed is not None:
            self.imports_needed.add(needed)

    # ---- imports: engine/import_statements.py ----------------------------------------------------
    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        return self.import_statements.rewrite_import(original_node, updated_node)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        return self.import_statements.rewrite_import_from(original_node, updated_node)

    # ---- calls ------------------------------------------------------------------------------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        updated_node = self.environment.rename_keywords(self, original_node, updated_node)
        func = original_node.func
        name = self.qualify(func)
        resolved = name is not None and self.t.lookup(name) is not None
        result = updated_node
        if name is None and self._imports_torch and isinstance(func, cst.Attribute):
            # classified as converted: x.cuda() is about to be x.npu()
            method = func.attr.value
            own = self._own_method(func)  # self.cuda() where the class defines cuda: the user's
            renamed = self.t.methods.get(method)
            if renamed is not None and renamed.new is not None and not own:
                method = renamed.new
            if method in self.t.tensor_methods and not own and not isinstance(func.value, _LITERALS):
                self.classify(original_node, f"torch.Tensor.{method}", heuristic=True)
        if isinstance(func, cst.Attribute) and not resolved and isinstance(updated_node.func, cst.Attribute):
            entry = self.t.methods.get(func.attr.value)
            if entry is not None and entry.new is not None and self._own_method(func):
                self._keep_function(original_node, entry, func.attr.value)
            elif entry is not None and entry.new is not None:
                self.report(
                    original_node,
                    entry.rule,
                    Operation.MODIFY,
                    heuristic=True,
                    old=func.attr.value,
                    new=entry.new,
                )
                result = updated_node.with_changes(
                    func=updated_node.func.with_changes(
                        attr=updated_node.func.attr.with_changes(value=entry.new)
                    )
                )
        elif (
            isinstance(func, cst.Name)
            and name is None
            and isinstance(updated_node.func, cst.Name)
            and func.value not in self.bindings.imported  # the import's rename covers it
        ):
            entry = self.t.functions.get(func.value)
            if entry is not None and entry.new is not None and func.value in self.bindings.bound:
                self._keep_function(original_node, entry, func.value)
            elif entry is not None and entry.new is not None:
                self.report(
                    original_node, entry.rule, Operation.MODIFY, heuristic=True, old=func.value, new=entry.new
                )
                result = updated_node.with_changes(func=updated_node.func.with_changes(value=entry.new))
        hooks = self.t.call_hooks.get(name) if name else None
        if self.t.method_call_hooks:
            short = (
                func.attr.value
                if isinstance(func, cst.Attribute)
                else func.value
                if isinstance(func, cst.Name)
                else ""
            )
            by_short = self.t.method_call_hooks.get(short)
            if by_short:
                hooks = _compose(hooks, by_short)
        if hooks:
            for hook in hooks:
                result = hook.rewrite_call(self, original_node, result, name)
        return result

    def _own_method(self, func: cst.Attribute) -> bool:
        """`self.cuda()` in a file whose class defines `cuda`, `Wrapper().cuda()` of such a class."""
        owners = self.own_methods.get(func.attr.value)
        if not owners:
            return False
        receiver = func.value
        if isinstance(receiver, cst.Name):
            return receiver.value in ("self", "cls")
        return (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Name)
            and receiver.func.value in owners
        )

    def _keep_function(self, node: cst.CSTNode, entry: Any, name: str) -> None:
        """A call of a name the file defines itself: it is not the library's function, say so once."""
        if name in self._kept_functions:
            return
        self._kept_functions.add(name)
        self.pending.append(
            Pending(
                node,
                entry.rule,
                Operation.UNSUPPORTED,
                f"{name} kept: this file defines its own {name}; where a call means the library's,"
                f" write {entry.new}",
                heuristic=True,
            )
        )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        self._extra_lines = []
        self.results.enter_statement(node)
        return True

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.SimpleStatementLine]:
        if original_node is self.imports.anchor_line:
            self._anchor_updated = updated_node
        if not self._extra_lines:
            return updated_node
        lines = [cst.SimpleStatementLine(body=[statement]) for statement in self._extra_lines]
        self._extra_lines = []
        return cst.FlattenSentinel([updated_node, *lines])

    # ---- module: the torch_npu import ---------------------------------------------------------
    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        rule = self.t.import_insert
        if rule is None:
            return updated_node
        module_name = rule.params["module"]
        # a rewrite that spelled out `torch_npu.x.y` needs the bare name, not just any import of it
        name_needed = module_name in self.imports_needed and self.aliases.get(module_name) != module_name
        self.imports_needed.discard(module_name)
        result, insertion = insert_module_import(
            rule,
            self.imports,
            original_node,
            updated_node,
            needs_module=self.needs_torch_npu,
            uses_needed_api=self.uses_needed_api,
            name_needed=name_needed,
            anchor_updated=self._anchor_updated,
        )
        if insertion is not None:
            self.pending.append(
                Pending(
                    insertion.anchor,
                    rule,
                    Operation.INSERT,
                    insertion.message,
                    line_offset=1,
                )
            )
        return result


_LEFT_ALONE = (Role.PROSE, Role.CLAIMED)  # never rewritten by a string rule
_CHECKS = (Support.PARTIAL, Support.NOT_VERIFIED, Support.DTYPE)  # nothing changed; --strict ignores them

# receivers that are never tensors: "a,b".split(",") is str.split
_LITERALS = (
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.Integer,
    cst.Float,
    cst.List,
    cst.Dict,
    cst.Tuple,
    cst.Set,
    cst.ListComp,
    cst.DictComp,
    cst.SetComp,
)


def _compose(by_name: list[CallHook] | None, by_short: list[CallHook]) -> list[CallHook] | None:
    """The call hooks of a call: by its qualified name, and by its short name those of a class the
    qualified name has none of; in ascending `order`, then by name before by short name."""
    classes = {type(hook) for hook in by_name} if by_name else set()
    extra = [hook for hook in by_short if type(hook) not in classes]
    if not extra:
        return by_name
    return sorted([*(by_name or ()), *extra], key=lambda hook: hook.order)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
