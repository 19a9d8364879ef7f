"""A light import-alias table, built from import statements only.

It stands in for libcst's QualifiedNameProvider, which costs several times the parse. It is
flow-insensitive: a name is resolved wherever it is used in the file, and a name imported with
two different meanings is not resolved at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal, overload

import libcst as cst

from ms_fmk_transplt.engine.syntax import child_nodes

_BLOCKS = (
    cst.BaseSuite,
    cst.BaseCompoundStatement,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)
_NESTED = (cst.BaseStatement, *_BLOCKS)


def dotted(node: cst.CSTNode | None) -> str | None:
    """`a.b.c` for a Name/Attribute chain, None for anything else."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


@overload
def iter_imports(
    module: cst.Module, lines: Literal[False] = False
) -> Iterator[cst.Import | cst.ImportFrom]: ...


@overload
def iter_imports(
    module: cst.Module, lines: Literal[True]
) -> Iterator[tuple[cst.SimpleStatementLine, cst.Import | cst.ImportFrom]]: ...


def iter_imports(module: cst.Module, lines: bool = False) -> Iterator[Any]:
    """Every Import / ImportFrom in the module in source order, at any depth, visiting statements
    only; with `lines`, (line, import) pairs, the line being the SimpleStatementLine holding it."""
    stack: list[cst.CSTNode] = list(reversed(module.body))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    yield (node, small) if lines else small
        elif isinstance(node, _BLOCKS):
            stack.extend(reversed([c for c in child_nodes(node) if isinstance(c, _NESTED)]))


def import_bindings(node: cst.Import | cst.ImportFrom) -> list[tuple[str, str, cst.ImportAlias]]:
    """(bound name, qualified name, alias) for each name an import statement binds."""
    out: list[tuple[str, str, cst.ImportAlias]] = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                out.append((alias.asname.name.value, full, alias))
            else:
                root = full.split(".", 1)[0]
                out.append((root, root, alias))
        return out
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return out
    base = dotted(node.module)
    if base is None:
        return out
    for alias in node.names:
        name = dotted(alias.name)
        if name is None:
            continue
        bound = (
            alias.asname.name.value
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
            else name
        )
        out.append((bound, f"{base}.{name}", alias))
    return out


def alias_table(imports: Iterable[cst.Import | cst.ImportFrom]) -> dict[str, str]:
    """Bound name -> qualified name for every unambiguous import among `imports`."""
    table: dict[str, str] = {}
    ambiguous: set[str] = set()
    for statement in imports:
        for bound, qualified, _ in import_bindings(statement):
            previous = table.get(bound)
            if previous is not None and previous != qualified:
                ambiguous.add(bound)
            table[bound] = qualified
    for name in ambiguous:
        del table[name]
    return table


def build_dotted(name: str, root: cst.Name | None = None) -> cst.Name | cst.Attribute:
    """An expression for dotted `name`; `root` replaces its first segment when given."""
    parts = name.split(".")
    node: cst.Name | cst.Attribute = root if root is not None else cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


def assignment_aliases(
    assigns: Iterable[cst.Assign], aliases: dict[str, str], modules: Iterable[str] = ()
) -> dict[str, str]:
    """The alias table after the file's own assignments (any scope, in no order).

    `T = torch`, `cuda = torch.cuda`: a name assigned only a module (one the file imports, or one
    in `modules`) is an alias of it; `torch = object()` makes an imported name the user's
    (`torch = None`, the optional-import fallback, keeps it). A name assigned anything else too,
    or a class or function (`norm_layer = nn.LayerNorm`), is left as it was.
    """
    known = set(aliases.values()) | set(modules)
    made: dict[str, str | None] = {}
    for assign in assigns:
        value = assign.value
        resolved = None
        if isinstance(value, (cst.Name, cst.Attribute)):
            path = dotted(value)
            head, _, rest = (path or "").partition(".")
            if head in aliases:
                resolved = aliases[head] + ("." + rest if rest else "")
        if resolved not in known:
            resolved = None
        for target in assign.targets:
            if not isinstance(target.target, cst.Name):
                continue
            name = target.target.value
            if isinstance(value, cst.Name) and value.value == "None" and name in aliases:
                continue
            made[name] = resolved if name not in made or made[name] == resolved else None
    result = dict(aliases)
    for name, qualified in made.items():
        if qualified is not None:
            result[name] = qualified
        elif name in aliases:
            del result[name]
    return result


def chain_root(node: cst.BaseExpression) -> cst.Name:
    """`a` of `a.b.c`."""
    while isinstance(node, cst.Attribute):
        node = node.value
    assert isinstance(node, cst.Name)
    return node


def _chain_len(node: cst.BaseExpression) -> int:
    count = 0
    while isinstance(node, cst.Attribute):
        count += 1
        node = node.value
    return count


def set_segments(chain: cst.BaseExpression, segments: Sequence[str]) -> cst.BaseExpression:
    """Give `chain` (root.a.b) the attribute names `segments`, keeping its layout when it can."""
    if _chain_len(chain) == len(segments):
        if not segments:
            return chain
        assert isinstance(chain, cst.Attribute)
        inner = set_segments(chain.value, segments[:-1])
        attr = chain.attr if chain.attr.value == segments[-1] else chain.attr.with_changes(value=segments[-1])
        if inner is chain.value and attr is chain.attr:
            return chain
        return chain.with_changes(value=inner, attr=attr)
    return build_dotted(".".join(["_", *segments]), root=chain_root(chain)) if segments else chain_root(chain)
