"""The single libcst transformer that applies every compiled rule in one traversal.

Matching reads `original_node` (names resolve the same however deep a rewrite nests);
rewrites build on `updated_node`, so `x.cuda(device=torch.device("cuda:0"))` gets both.
It traverses and asks helpers: what a qualified name becomes from its name hook (`Tables.lookup`,
which rewrites the chain through the `replace_name` service), what a name's use is from
engine/naming/name_uses.py, what a string literal is from engine/literals/roles.py,
support verdicts from engine/reporting/support.py, import statements from engine/importing/import_statements.py,
results from engine/conversion/call_results.py; the kinds' hooks (`engine/interface/hooks.py`), found in one registry
by node class and lookup key (`Tables.hooks`, engine/interface/hook_registry.py), do the rest, composed for
each node by engine/interface/hook_runs.py (names, attribute chains and calls here; any other node class
through engine/conversion/node_hooks.py; string literals through engine/literals/string_rewrites.py). Helpers get what
they use (the hooks' `Site`, the tables, the import plan), never this class. Findings wait in
`pending` (engine/reporting/site_reports.py).
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.conversion.call_results import ResultUses
from ms_fmk_transplt.engine.conversion.dispatch_rewrites import DispatchRewrites
from ms_fmk_transplt.engine.conversion.embedded_scripts import ShellScripts
from ms_fmk_transplt.engine.conversion.fused_patterns import FusedPatterns, FusedReplacements
from ms_fmk_transplt.engine.conversion.guards import GuardedStatements
from ms_fmk_transplt.engine.conversion.node_hooks import NodeHooks
from ms_fmk_transplt.engine.importing import ImportStatements, plan_function_imports, plan_imports
from ms_fmk_transplt.engine.interface import METHODS, STRINGS, VALUES, HookRuns, ResultUse, Tables, ValueHook
from ms_fmk_transplt.engine.literals import Environment, LiteralRewrites, LiteralRoles
from ms_fmk_transplt.engine.naming import (
    NameClaims,
    NameOwnership,
    NameUses,
    alias_table,
    assignment_aliases,
    iter_imports,
)
from ms_fmk_transplt.engine.reporting import SiteReports, SupportClassifier, converted_name
from ms_fmk_transplt.engine.syntax import CachedDispatch, NodeIndex, short_name, type_check_targets


class ModuleRewriter(SiteReports, NodeHooks, FusedReplacements):
    """Applies the tables to one module; read `pending`, `needs_torch_npu` and
    `import_statements.needed` after."""

    def __init__(self, tables: Tables, module: cst.Module) -> None:
        CachedDispatch.__init__(self)
        SiteReports.__init__(self)
        self.tables = tables
        imports = list(iter_imports(module, lines=True))
        # the look-ahead passes share one cheap walk (engine/syntax/node_index.py)
        nodes = NodeIndex(module)
        self.aliases = assignment_aliases(
            nodes.of(cst.Assign), alias_table(s for _, s in imports), tables.member_modules()
        )
        self.uses = NameUses(nodes)
        self.type_checks = type_check_targets(nodes)
        self._qualified: dict[cst.CSTNode, str | None] = {}
        name_claims = NameClaims(nodes)  # which bare names the file spells, for renamed imports
        self.imports = plan_imports(tables, module, imports, self.aliases, name_claims)
        spec = tables.device_spec
        self.environment = Environment(
            tables.hooks,
            frozenset(spec.env_calls),
            frozenset(spec.env_setters),
            self.qualify,
        )
        # what each string literal is (engine/literals/roles.py); the look-ahead passes share one cheap walk
        self.roles = LiteralRoles(spec, self.qualify, self.environment, tables.first_party)
        self.roles.scan(nodes, devices=bool(tables.hooks.keyed(STRINGS)))
        # shell text the module writes or runs, scanned after the traversal (engine/conversion/embedded_scripts.py)
        self.scripts = ShellScripts.of(nodes, tables, self.qualify)
        # value hooks (map_location) claim what they rewrite before the traversal: keys they keep,
        # values that are devices, the dicts they rebuild on the way out
        self._claimed: dict[cst.CSTNode, ValueHook] = {}
        for value_hook in tables.hooks.all(VALUES):
            claims = value_hook.claim(self, nodes)
            self.roles.claim(claims)
            self._claimed.update((n, value_hook) for n in claims.values)
        # support classification (engine/reporting/support.py): told what is invoked, asked about each use
        self.support = SupportClassifier(tables, self.qualify)
        # tensor methods are matched by name only in files that import torch themselves
        self._imports_torch = any(
            q == root or q.startswith(root + ".")
            for q in self.aliases.values()
            for root in ("torch", "torch_npu")
        )
        # who owns a short name in this file, for the rename-by-name hooks (engine/naming/ownership.py)
        self.names = NameOwnership(nodes, self.uses, *tables.by_short_name())
        # bound name -> (new name, rule); import alias -> (new name, name kept bound or None, why)
        function_renames, function_imports = plan_function_imports(
            tables, imports, self.names.bindings, name_claims
        )
        # every node's hooks, found and composed (engine/interface/hook_runs.py)
        self.hook_runs = HookRuns(
            self, tables, self.uses, self.names, function_renames, self.imports.renamed_names
        )
        # `cap = torch.cuda.get_device_capability()`, then `cap[0]`: engine/conversion/call_results.py
        self.results = ResultUses(tables.hooks, self.qualify, self)
        self.import_statements = ImportStatements(self, tables, self.imports, function_imports, self.aliases)
        self.guarded = GuardedStatements(nodes, self.qualify)  # guarded calls, `if` statements
        self.strings = LiteralRewrites(self, self.roles, self.environment, tables.hooks.all(STRINGS))
        self.dispatch = DispatchRewrites(
            self, self.roles, tables, nodes
        )  # code written for several devices: kept alternatives
        self.fused = FusedPatterns(self, tables, module)  # --opt-in affinity: hand-written fused operators

    def close(self) -> None:
        """Drop everything this rewriter holds (read the results first): its helpers hold it back."""
        self.__dict__.clear()

    # ---- name resolution -------------------------------------------------------------------
    def qualify(self, node: cst.CSTNode) -> str | None:
        """The qualified name an original Name/Attribute chain refers to, if imports tell."""
        key = node
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

    @property
    def imports_torch(self) -> bool:
        """The file imports torch itself (hooks.Site)."""
        return self._imports_torch

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        self.support.invoked(node.decorator)
        return True

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        self.support.enter_annotation()
        return True

    def leave_Annotation(self, original_node: cst.Annotation, updated_node: cst.Annotation) -> cst.Annotation:
        self.support.leave_annotation()
        return updated_node

    def visit_Call(self, node: cst.Call) -> bool:
        name = short_name(node.func)
        positional = [a for a in node.args if a.keyword is None]
        self.support.called(node)
        if name in self.tables.device_spec.attribute_name_calls and len(positional) > 1:
            self.name_by_string(node, positional[0].value, positional[1].value)
        return True

    # ---- results that break on the NPU: engine/conversion/call_results.py -------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> bool:
        self.results.assign(node)
        return True

    def visit_For(self, node: cst.For) -> bool:
        self.results.use(node.iter, node.iter, ResultUse.ITERATE)
        return True

    def visit_Expr(self, node: cst.Expr) -> bool:
        # a bare string statement (docstring) is prose
        return not isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        self.results.use(node, node.value, ResultUse.INDEX)
        return True

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        self.results.compare(node)
        return True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.results.use(node, node.value, ResultUse.ATTRIBUTE)
        return True

    # ---- string literals: devices, backends, environment variables ------------------------------
    def leave_SimpleString(
        self, original_node: cst.SimpleString, updated_node: cst.SimpleString
    ) -> cst.BaseExpression:
        return self.strings.simple(original_node, updated_node)

    def leave_FormattedString(
        self, original_node: cst.FormattedString, updated_node: cst.FormattedString
    ) -> cst.BaseExpression:
        return self.strings.formatted(original_node, updated_node)

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.BaseExpression:
        hook = self._claimed.get(original_node)
        return updated_node if hook is None else hook.rewrite_value(self, original_node, updated_node)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        for base in node.bases:
            self.support.invoked(base.value)
        return True

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    # ---- names, attribute chains and calls: the hooks composed by engine/interface/hook_runs.py ------------
    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if self.uses.is_load(original_node) and not self.uses.is_inner(original_node):
            qualified = self.aliases.get(original_node.value)
            if qualified is not None and qualified.startswith(("torch.", "torch_npu.")):
                match = self.tables.lookup(qualified)
                self.classify(original_node, converted_name(qualified, match), rewritten=match is not None)
        return self.hook_runs.name(original_node, updated_node)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if self.uses.is_inner(original_node):
            return updated_node
        name = self.qualify(original_node)
        match = self.tables.lookup(name) if name else None
        if name:
            self.classify(original_node, converted_name(name, match), rewritten=match is not None)
            self.import_statements.note_use(name)
        if match is None or match.hook is None:
            return self.hook_runs.attribute(original_node, updated_node)
        return match.hook.rewrite_reference(self, original_node, updated_node, match)

    def replace_name(
        self, original: cst.Attribute, updated: cst.Attribute, target: str
    ) -> cst.BaseExpression:
        """The chain written as dotted `target`, its import planned (hooks.Site)."""
        return self.import_statements.replace_chain(original, updated, target)

    # ---- imports: engine/importing/import_statements.py ----------------------------------------------------
    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        return self.import_statements.rewrite_import(original_node, updated_node)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        return self.import_statements.rewrite_import_from(original_node, updated_node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        updated_node = self.environment.rename_keywords(self, original_node, updated_node)
        func = original_node.func
        name = self.qualify(func)
        if name is None and self._imports_torch and isinstance(func, cst.Attribute):
            # classified as converted: x.cuda() is about to be x.npu()
            renamed = self.tables.hooks.one(METHODS, func.attr.value)
            new = renamed.new if renamed is not None else None
            method = self.support.tensor_method(func, self.names.own_method(func), new)
            if method is not None:
                self.classify(original_node, method, heuristic=True)
        resolved = name is not None and self.tables.lookup(name) is not None
        result = self.hook_runs.call(original_node, updated_node, name, resolved)
        return self.guarded.record(original_node, result)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        self.import_statements.enter_line()
        self.results.enter_statement(node)
        return True

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.SimpleStatementLine]:
        line = self.import_statements.leave_line(original_node, updated_node)
        return self.guarded.statement(line) if isinstance(line, cst.SimpleStatementLine) else line

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> bool:
        self.import_statements.enter_line()
        return True

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        return self.import_statements.leave_suite(updated_node)

    # ---- module: the torch_npu import (engine/importing/import_statements.py) ----------------------------
    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self.scripts is not None:
            self.scripts.report(self)
        return self.import_statements.finish_module(original_node, updated_node)
