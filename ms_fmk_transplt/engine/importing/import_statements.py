"""Import statements rewritten: `import torch.cuda as tc`, `from torch.cuda import x`, star imports.

The transformer hands each import statement here after its traversal; names are renamed by the
same tables as their uses (engine/interface/tables.py), a `from` import whose names move to different
modules is split into one statement per module, and a star import of a module the rules cover
is renamed or reported, never silent. Planning which imports to add is engine/importing/imports.py.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import libcst as cst

from ms_fmk_transplt.engine.importing.import_split import (
    comments_after,
    import_line,
    name_indent,
    without_names,
)
from ms_fmk_transplt.engine.importing.imports import ImportPlan, imports_device_module, insert_module_import
from ms_fmk_transplt.engine.interface import ANY, FUNCTIONS, IMPORTS, QUALIFIED, Match, Rule, Tables
from ms_fmk_transplt.engine.naming import build_dotted, chain_root, dotted, set_segments
from ms_fmk_transplt.engine.reporting import Pending
from ms_fmk_transplt.records import Operation

# import alias -> (name to import, name kept bound or None, why it is kept): engine/importing/imports.py
FunctionImports = dict[cst.ImportAlias, tuple[str, str | None, str]]


class Reports(Protocol):
    """Where the import rewrites' findings go (engine/reporting/site_reports.py's `SiteReports`)."""

    pending: list[Pending]
    needs_torch_npu: bool  # some rewrite of the file needs the inserted import

    def report_match(self, node: cst.CSTNode, match: Match) -> None: ...

    def report_unsupported(
        self, node: cst.CSTNode, rule: Rule, what: str, suggestion: str = "", api: str = ""
    ) -> None: ...


def _asname(alias: cst.ImportAlias) -> str | None:
    """The `as` name of an import alias, when it is a plain name."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None


_Line = TypeVar("_Line", cst.SimpleStatementLine, cst.SimpleStatementSuite)


class ImportStatements:
    """The import-statement rewrites of one module; read `needed` after the traversal."""

    def __init__(
        self,
        reports: Reports,
        tables: Tables,
        plan: ImportPlan,
        function_imports: FunctionImports,
        aliases: dict[str, str],
    ) -> None:
        """`plan`: the file's imports as the rewrites leave them; `aliases`: bound name -> qualified."""
        self.reports = reports
        self.tables = tables
        self.plan = plan
        self.function_imports = function_imports
        self.aliases = aliases
        self.insert = tables.hooks.one(IMPORTS, ANY)  # the import the rewrites need, if any rule adds one
        self.needed: set[str] = set()  # modules a freshly written dotted path needs imported
        self.uses_needed_api = False  # torch.accelerator finds the NPU only after import torch_npu
        self.anchor_updated: cst.SimpleStatementLine | None = None  # the anchor line, as rewritten
        # lines rewritten to import torch.npu, in a file that imports torch_npu itself (maybe too late)
        self.device_imports: list[tuple[cst.SimpleStatementLine, cst.SimpleStatementLine]] = []
        # the statements split off each import of the current line, written right after it
        self.split_off: list[tuple[cst.ImportFrom, list[cst.SimpleStatementLine]]] = []

    def enter_line(self) -> None:
        self.split_off = []

    def leave_line(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.SimpleStatementLine]:
        """The line, and the imports split off it: on lines of their own after a line holding one
        statement, else right after their import on the line. A line made to import torch.npu is
        noted where the file imports torch_npu itself."""
        if original is self.plan.anchor_line:
            self.anchor_updated = updated
        if self.plan.has_torch_npu and imports_device_module(updated) and not imports_device_module(original):
            self.device_imports.append((original, updated))
        if not self.split_off:
            return updated
        if len(updated.body) == 1:
            lines = [line for _, group in self.split_off for line in group]
            self.split_off = []
            return cst.FlattenSentinel([updated, *lines])
        return self._spliced(updated)

    def leave_suite(self, updated: cst.SimpleStatementSuite) -> cst.SimpleStatementSuite:
        """`try: from torch import cuda, optim`: the split-off imports join the one-line body."""
        return self._spliced(updated) if self.split_off else updated

    def _spliced(self, updated: _Line) -> _Line:
        """Each split-off import right after its import, joined by `;`; their comments end the line."""
        after = {id(node): group for node, group in self.split_off}
        self.split_off = []
        smalls: list[cst.BaseSmallStatement] = []
        notes = [updated.trailing_whitespace.comment]
        for small in updated.body:
            smalls.append(small)
            for line in after.get(id(small), []):
                smalls.append(line.body[0])
                notes.append(line.trailing_whitespace.comment)
        joined = cst.Semicolon(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(" ")
        )
        last = updated.body[-1]  # its `;`, if any, ends the line still
        body = [
            small
            if isinstance(small.semicolon, cst.Semicolon) and small is not last
            else small.with_changes(semicolon=joined)
            for small in smalls[:-1]
        ] + [smalls[-1].with_changes(semicolon=last.semicolon)]
        trailing = updated.trailing_whitespace
        texts = [note.value for note in notes if note is not None]
        if len(texts) > (trailing.comment is not None):
            trailing = trailing.with_changes(
                whitespace=trailing.whitespace if trailing.comment else cst.SimpleWhitespace("  "),
                comment=cst.Comment("  ".join(texts)),
            )
        return updated.with_changes(body=body, trailing_whitespace=trailing)

    def rewrite_import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        """`import torch.cuda.amp as amp` with its module renamed (or reported)."""
        names = []
        changed = False
        for alias in updated_node.names:
            full = dotted(alias.name)
            match = self.tables.lookup(full) if full else None
            if match is None or full is None:
                names.append(alias)
                continue
            self.reports.report_match(original_node, match)
            if match.new is None:
                names.append(alias)
                continue
            names.append(alias.with_changes(name=build_dotted(match.new + full[len(match.prefix) :])))
            changed = True
        return updated_node.with_changes(names=names) if changed else updated_node

    def rewrite_import_from(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom:
        """`from torch.cuda import x`: renamed names, moved ones split into lines of their own."""
        if self.function_imports and not isinstance(original_node.names, cst.ImportStar):
            updated_node = self._rename_function_imports(original_node, updated_node)
        module = dotted(updated_node.module) if not updated_node.relative else None
        if module is None:
            return updated_node
        if isinstance(updated_node.names, cst.ImportStar):
            return self._star_import(original_node, updated_node, module)
        names = list(updated_node.names)
        keep = [True] * len(names)
        moved: dict[str, list[tuple[int, cst.ImportAlias]]] = {}
        for i, alias in enumerate(names):
            name = dotted(alias.name)
            full = f"{module}.{name}"
            match = self.tables.lookup(full)
            if match is None or not name:
                continue
            self.reports.report_match(original_node, match)
            if match.new is None:
                continue
            new_full = match.new + full[len(match.prefix) :]
            parent, _, last = new_full.rpartition(".")
            bound = _asname(alias) or name
            new_bound, _ = self.plan.binding(bound)
            new_alias = alias.with_changes(name=cst.Name(last))
            if new_bound != last:
                new_alias = new_alias.with_changes(asname=cst.AsName(name=cst.Name(new_bound)))
            elif _asname(alias) == last:
                new_alias = new_alias.with_changes(asname=None)
            names[i] = new_alias
            keep[i] = False
            moved.setdefault(parent, []).append((i, new_alias))
        if not moved:
            return updated_node
        comments = comments_after(updated_node, names)
        indent = name_indent(updated_node)
        module_node = updated_node.module
        if not any(keep):  # the first module's names stay in the statement, in its layout
            parent = next(iter(moved))
            module_node = build_dotted(parent)
            for i, _ in moved.pop(parent):
                keep[i] = True
        first = without_names(updated_node.with_changes(module=module_node), names, keep)
        if moved:
            self.split_off.append(
                (
                    first,
                    [
                        import_line(
                            build_dotted(parent),
                            [a for _, a in group],
                            [comments[i] for i, _ in group],
                            indent,
                        )
                        for parent, group in moved.items()
                    ],
                )
            )
        return first

    def _rename_function_imports(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        assert not isinstance(original.names, cst.ImportStar) and not isinstance(
            updated.names, cst.ImportStar
        )
        names = list(updated.names)
        for i, alias in enumerate(original.names):
            plan = self.function_imports.get(alias)
            if plan is None:
                continue
            new, keep, reason = plan
            entry = self.tables.hooks.one(FUNCTIONS, dotted(alias.name) or "")
            assert entry is not None  # planned only for a name a function hook renames
            message = entry.rule.render(old=dotted(alias.name), new=new, release=self.tables.release)
            if reason:
                message += f" (imported as {keep}: {reason})"
            self.reports.pending.append(Pending(original, entry.rule, Operation.MODIFY, message))
            changed = names[i].with_changes(name=cst.Name(new))
            if keep is not None and _asname(alias) is None:
                changed = changed.with_changes(asname=cst.AsName(name=cst.Name(keep)))
            elif keep is None:  # `import func as func`: the binding itself is renamed
                changed = changed.with_changes(asname=None)
            names[i] = changed
        return updated.with_changes(names=names)

    def _star_import(self, original: cst.ImportFrom, updated: cst.ImportFrom, module: str) -> cst.ImportFrom:
        """`from torch.cuda.amp import *`: the module's counterpart, or a report; never silence."""
        match = self.tables.lookup(module)
        if match is not None and match.prefix == module:
            self.reports.report_match(original, match)
            if match.new is None:
                return updated
            self.need_import_for(match.new)
            return updated.with_changes(module=build_dotted(match.new))
        if match is not None:  # a member of a module the rules cover: `from torch.cuda.nvtx import *`
            self.reports.report_unsupported(original, match.rule, f"from {module} import *", match.suggestion)
            return updated
        keyed = self.tables.hooks.keyed(QUALIFIED)
        # names the star binds: members one level below the module (torch.nn.Module.cuda is not one)
        covered = sorted(
            name
            for name, hooks in keyed.items()
            if name.rpartition(".")[0] == module and any(hook.rewrites for hook in hooks)
        )
        if covered:
            # the rule of the name's rename, else of its module's members
            rule = sorted(keyed[covered[0]], key=lambda hook: hook.members)[0].rule
            self.reports.pending.append(
                Pending(
                    original,
                    rule,
                    Operation.UNSUPPORTED,
                    f"from {module} import * binds names the converter cannot see ({', '.join(covered[:3])}"
                    f"{', ...' if len(covered) > 3 else ''} need rewriting); import them by name",
                )
            )
        return updated

    def note_use(self, name: str) -> None:
        """A use of qualified `name`: does it need the inserted import by itself (the hook says)?"""
        if self.insert is not None and not self.uses_needed_api:
            self.uses_needed_api = self.insert.needed_by(name)

    def replace_chain(
        self, original: cst.Attribute, updated: cst.Attribute, target: str
    ) -> cst.BaseExpression:
        """An attribute chain written as dotted `target`: under the name its root is bound to after
        the rewrites when `target` lies under that name's target, else spelled out whole, with the
        import of its first name planned."""
        _, root_target = self.plan.binding(chain_root(original).value)
        if root_target and (target == root_target or target.startswith(root_target + ".")):
            segments = target[len(root_target) + 1 :].split(".") if target != root_target else []
            return set_segments(updated, segments)
        self.need_import_for(target)
        return build_dotted(target)

    def need_import_for(self, target: str) -> None:
        """Make the first name of a freshly written dotted path resolve (torch.npu needs only torch)."""
        needed = self.plan.needed_import(target)
        if needed is not None:
            self.needed.add(needed)

    def finish_module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        """The module with `import torch_npu` added where the file's rewrites or APIs need it."""
        insert = self.insert
        if insert is None:
            return updated_node
        module_name = insert.module
        # a rewrite that spelled out `torch_npu.x.y` needs the bare name, not just any import of it
        name_needed = module_name in self.needed and self.aliases.get(module_name) != module_name
        self.needed.discard(module_name)
        result, insertion = insert_module_import(
            insert,
            self.plan,
            original_node,
            updated_node,
            needs_module=self.reports.needs_torch_npu,
            uses_needed_api=self.uses_needed_api,
            name_needed=name_needed,
            anchor_updated=self.anchor_updated,
            device_imports=self.device_imports,
        )
        if insertion is not None:
            self.reports.pending.append(
                Pending(
                    insertion.anchor,
                    insert.rule,
                    Operation.INSERT,
                    insertion.message,
                    line_offset=insertion.line_offset,
                )
            )
        return result
