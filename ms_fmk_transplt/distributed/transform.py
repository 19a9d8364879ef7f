"""`distribute_source`: one single-device training script -> the same script for torchrun.

The plan is made from the survey (survey.py), then applied by one transformer keyed by the
original nodes. What the mode cannot do safely is a CHECK finding with what to do; positions
refer to the input source. The written code is in CUDA terms (snippets.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ms_fmk_transplt.distributed import snippets
from ms_fmk_transplt.distributed.apply import Apply, Plan
from ms_fmk_transplt.distributed.loader_args import LoaderArgs
from ms_fmk_transplt.distributed.map_location import rank_map_location
from ms_fmk_transplt.distributed.policy import Policy, policy
from ms_fmk_transplt.distributed.shared_temp import MKDTEMP, mkdtemp_sources
from ms_fmk_transplt.distributed.survey import Loader, Survey, survey
from ms_fmk_transplt.distributed.target import check_target
from ms_fmk_transplt.records import Finding, Operation

INSERT, MODIFY, DELETE, CHECK = Operation.INSERT, Operation.MODIFY, Operation.DELETE, Operation.CHECK


@dataclass(frozen=True)
class Distributed:
    """The distributed script (None when nothing changed) and the findings about the input."""

    output: str | None
    findings: tuple[Finding, ...]


def distribute_source(source: str, main: str = "main.py", model: str | None = None) -> Distributed:
    """Rewrite `source` (the script `main`) for torchrun; `model` names the variable to wrap in DDP
    (TargetModelError when the script assigns no such variable)."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    rules = policy()
    found = survey(wrapper, rules)
    check_target(found, model)
    planner = _Planner(found, rules, wrapper.resolve(PositionProvider), main)
    plan = planner.plan(model)
    findings = tuple(sorted(plan.findings, key=lambda f: (f.start_line, f.rule_id)))
    if not any(f.operation is not CHECK for f in findings):
        return Distributed(None, findings)
    module = wrapper.module.visit(Apply(plan))
    context = CodemodContext()
    for name in ("os", "torch", "torch.distributed"):
        AddImportsVisitor.add_needed_import(context, name)
    module = AddImportsVisitor(context).transform_module(module)
    return Distributed(module.code, findings)


class _Planner:
    """Turns a survey into a plan."""

    def __init__(
        self, found: Survey, rules: Policy, positions: Mapping[cst.CSTNode, CodeRange], main: str
    ) -> None:
        self.found, self.rules, self.positions, self.main = found, rules, positions, main
        self.plan_ = Plan()
        self.names = snippets.Names.avoiding(found.bound)
        self.shared_helper: str | None = None

    def lines(self, node: cst.CSTNode) -> tuple[int, int]:
        where = self.positions[node]
        return where.start.line, where.end.line

    def report(self, rule_id: str, operation: Operation, node: cst.CSTNode | None, **fields: str) -> None:
        lines = self.lines(node) if node is not None else (1, 1)
        self.plan_.findings.append(self.rules.finding(rule_id, operation, lines, **fields))

    def plan(self, model: str | None) -> Plan:
        found, plan = self.found, self.plan_
        if found.distributed:
            call, what = found.distributed[0]
            self.report("DS108", CHECK, call, main=self.main, what=what)
            return plan
        if found.setup_anchor is None:
            self.report("DS111", CHECK, None, main=self.main)
            return plan
        plan.after.setdefault(id(found.setup_anchor), []).extend(snippets.setup(self.names))
        self.report("DS001", INSERT, found.setup_anchor, backend="hccl under torchrun")
        self._loaders()
        self._model(model)
        self._rank_zero()
        self._finish()
        for call in found.seeds:
            self.report("DS106", CHECK, call)
        for call, name in found.batch_norms:
            self.report("DS112", CHECK, call, name=name)
        for call, name in found.temporary:
            self.report("DS113", CHECK, call, name=name)
        for node in found.iterable_classes:
            self.report("DS103", CHECK, node, name=node.name.value)
        return plan

    def _loaders(self) -> None:
        found = self.found
        sharded = [pair for pair in map(self._shard, found.loaders) if pair is not None]
        for call in found.unassigned_loaders:
            self.report("DS102", CHECK, call, loader="(not assigned to a name)", what="place")
        if not found.loaders and not found.unassigned_loaders:
            self.report("DS107", CHECK, found.setup_anchor, main=self.main)
        for loader, sampler in sharded:
            loops = [loop for scope, loop in found.epoch_loops if scope is loader.scope]
            if not loops:
                self.report("DS109", CHECK, loader.statement, sampler=sampler)
                continue
            loop = loops[0]
            epoch = loop.target.value  # type: ignore[attr-defined]  # an epoch loop's target is a Name (survey.py)
            self.plan_.loop_prefix.setdefault(id(loop), []).extend(
                snippets.statements(snippets.SET_EPOCH, sampler=sampler, epoch=epoch)
            )
            self.report("DS003", INSERT, loop.target, sampler=sampler, epoch=epoch)

    def _shard(self, loader: Loader) -> tuple[Loader, str] | None:
        """Plan the sampler of one loader; the loader and its sampler's name, or None."""
        if any(word in loader.name.lower() for word in self.rules.eval_loader_words):
            self.report("DS104", CHECK, loader.statement, loader=loader.name)
            return None
        args = LoaderArgs.read(loader.call, self.rules.loader_positional)
        if args is None:
            self.report("DS102", CHECK, loader.call, loader=loader.name, what="arguments (more than one **)")
            return None
        for own in ("sampler", "batch_sampler"):
            if own in args.given:
                self.report("DS102", CHECK, loader.call, loader=loader.name, what=own)
                return None
        dataset = args.given.get("dataset")
        if dataset is None:
            return None
        name = dataset.value if isinstance(dataset, cst.Name) else None
        iterable = {c.name.value for c in self.found.iterable_classes}
        callee = (self.found.assigned_call.get(name, "") if name else "") or (
            (cst.Module([]).code_for_node(dataset.func)) if isinstance(dataset, cst.Call) else ""
        )
        if callee.split(".")[-1] in iterable:
            self.report("DS102", CHECK, loader.call, loader=loader.name, what="IterableDataset")
            return None
        base = loader.name[: -len("_loader")] if loader.name.endswith("_loader") else loader.name
        sampler = self._fresh(f"{base}_sampler")
        before: list[cst.BaseStatement] = []
        if not isinstance(dataset, (cst.Name, cst.Attribute)):  # computed inline: name it once
            hoisted = self._fresh(f"{base}_dataset")
            before.append(
                cst.SimpleStatementLine(
                    [cst.Assign([cst.AssignTarget(cst.Name(hoisted))], dataset)],
                    leading_lines=loader.statement.leading_lines,
                )
            )
            dataset = cst.Name(hoisted)
        shuffle, drop_last = args.value("shuffle"), args.value("drop_last")
        code = cst.Module([]).code_for_node
        line = snippets.statements(
            snippets.SAMPLER,
            sampler=sampler,
            dataset=code(dataset),
            shuffle=code(shuffle),
            drop_last=code(drop_last),
        )[0]
        if not before:
            line = line.with_changes(leading_lines=loader.statement.leading_lines)
        self.plan_.before.setdefault(id(loader.statement), []).extend([*before, line])
        self.plan_.calls[id(loader.call)] = args.rewritten(sampler, dataset)
        self.report(
            "DS002",
            INSERT,
            loader.statement,
            loader=loader.name,
            sampler=sampler,
            shuffle=code(shuffle),
            drop_last=code(drop_last),
        )
        batch = args.given.get("batch_size")
        if batch is None and args.star is not None:
            batch = snippets.expression(f'{code(snippets.atom(args.star))}.get("batch_size", 1)')
        self.report("DS105", CHECK, loader.call, batch=code(batch) if batch is not None else "1")
        return loader, sampler

    def _fresh(self, name: str) -> str:
        while name in self.found.bound:
            name = f"{name}_"
        self.found.bound.add(name)
        return name

    def _model(self, model: str | None) -> None:
        found = self.found
        for call, statement in found.data_parallel:
            if statement is not None:  # `net = DataParallel(net)`: the line goes
                self.plan_.delete.add(id(statement))
                self.report("DS005", DELETE, statement)
            else:
                self.plan_.calls[id(call)] = call.args[0].value
                self.report("DS005", MODIFY, call)
        if model is None:
            candidates = [*found.optimizer_models, "model"]
            model = next((m for m in candidates if m in found.assigned), None)
            if model is None:
                self.report("DS101", CHECK, found.setup_anchor)
                return
        anchor = self._model_anchor(model)  # assigned: check_target and the choice above see to it
        if anchor is None:
            self.report("DS101", CHECK, found.setup_anchor)
            return
        after = " and amp.initialize" if found.amp_initialize else ""
        self.plan_.after.setdefault(id(anchor), []).extend(
            snippets.statements(snippets.DDP, model=model, local_rank=self.names.local_rank)
        )
        self.report("DS004", INSERT, anchor, model=model, after=after)
        for attribute in found.attributes:
            name = attribute.value
            if isinstance(name, cst.Name) and name.value == model:
                member = attribute.attr.value
                if member not in self.rules.ddp_members:
                    self.plan_.unwrap.add(id(name))
                    self.report("DS007", MODIFY, attribute, model=model, member=member)
        for call in found.saves:
            if call.args and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == model:
                self.plan_.unwrap.add(id(call.args[0].value))
                self.report("DS010", MODIFY, call, model=model)

    def _model_anchor(self, model: str) -> cst.BaseStatement | None:
        """The statement after which `model` is complete (assigned, on its device, amp-initialised):
        the last such statement before the first use, among the siblings of its first assignment
        (climbing out of if/try/with blocks, never out of a loop, a function or the main guard)."""
        found = self.found
        first = found.assigned_at[model][0]
        level = len(first) - 1
        while level > 0 and isinstance(first[level - 1], (cst.If, cst.Try, cst.With)):
            if first[level - 1] is found.main_guard:
                break
            level -= 1
        prefix = first[:level]

        def sibling(path: tuple[cst.BaseStatement, ...]) -> cst.BaseStatement | None:
            if len(path) > level and all(a is b for a, b in zip(path[:level], prefix)):
                return path[level]
            return None

        events = [*found.assigned_at[model], *found.moves.get(model, []), *found.amp_initialize]
        event_ids = {id(s) for s in map(sibling, events) if s is not None}
        use_ids = {id(s) for s in map(sibling, found.uses.get(model, [])) if s is not None}
        parent = prefix[-1] if prefix else None
        block = _children(parent) if parent is not None else self.found.scopes[0].statements
        anchor = None
        for statement in block:
            if id(statement) in use_ids and anchor is not None and id(statement) not in event_ids:
                break
            if id(statement) in event_ids:
                anchor = statement
        return anchor

    def _rank_zero(self) -> None:
        rank = self.names.rank
        self.plan_.rank = rank
        for node, what in self.found.guarded:
            self.plan_.guard.add(id(node))
            self.report("DS006", MODIFY, node, what=what)
        first_save = min((self.lines(c)[0] for c in self.found.save_lines), default=None)
        seen: set[int] = set()
        for path, call in self.found.loads:
            if first_save is None or self.lines(call)[0] <= first_save:
                continue
            # every rank loads what rank 0 saved: onto its own device, not the one rank 0 saved from
            value = rank_map_location(call, self.names.local_rank)
            if value is not None:
                self.plan_.map_location[id(call)] = value
                self.report("DS012", MODIFY, call)
            depth = len(path) - 1
            while depth > 0 and isinstance(path[depth - 1], cst.With):
                depth -= 1
            anchor = path[depth]
            if id(anchor) in seen:
                continue
            seen.add(id(anchor))
            self.plan_.before.setdefault(id(anchor), []).extend(snippets.statements(snippets.BARRIER))
            self.report("DS009", INSERT, call, what="torch.load")
            self._share_folders(path, call)

    def _share_folders(self, path: tuple[cst.BaseStatement, ...], load: cst.Call) -> None:
        """The per-rank temporary folders a loaded file may be in, made on rank 0 for every rank."""
        for made in mkdtemp_sources(self.found, path, load):
            if id(made) in self.plan_.calls:
                continue
            if self.shared_helper is None:
                self.shared_helper = self._fresh("msft_on_rank_zero")
                anchor = self.found.setup_anchor
                assert anchor is not None  # plan() stops before the rank-0 pass without one
                self.plan_.after.setdefault(id(anchor), []).extend(snippets.shared(self.shared_helper))
            self.plan_.calls[id(made)] = snippets.on_rank_zero(self.shared_helper, made)
            self.report("DS011", MODIFY, made, name=MKDTEMP)

    def _finish(self) -> None:
        self.plan_.append.extend(snippets.statements(snippets.DESTROY))
        self.plan_.main_guard = id(self.found.main_guard) if self.found.main_guard is not None else 0
        node = self.found.main_guard or self.found.scopes[0].statements[-1]
        self.report("DS008", INSERT, node)


def _children(statement: cst.BaseStatement) -> list[cst.BaseStatement]:
    """The statements directly inside a compound statement (if and else branches, try's parts)."""
    out: list[cst.BaseStatement] = []
    for suite_owner in (statement, getattr(statement, "orelse", None), getattr(statement, "finalbody", None)):
        body = getattr(suite_owner, "body", None)
        if isinstance(body, cst.IndentedBlock):
            out.extend(body.body)
        elif isinstance(body, cst.BaseSuite) and not isinstance(body, cst.SimpleStatementSuite):
            out.extend(body.body)  # type: ignore[arg-type]  # BaseSuite.body is typed for one-line suites too
        if isinstance(suite_owner, cst.If) and suite_owner is not statement:
            out.extend(_children(suite_owner))
    for handler in getattr(statement, "handlers", ()):
        out.extend(handler.body.body)
    return out
