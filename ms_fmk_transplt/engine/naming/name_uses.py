"""How each name of a module is used, read from the shared node index before the rewrite.

The transformer asks, for an original Name or Attribute: is it a load (not an attribute's own
name, a keyword, a parameter or a definition's name), is it the inner part of a longer dotted
chain (only the whole chain is looked up), is it the function of a call?
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.syntax import NodeIndex


class NameUses:
    """Node-keyed answers about names; libcst nodes hash by identity, so these are the very nodes."""

    def __init__(self, nodes: NodeIndex) -> None:
        not_loads: set[cst.CSTNode] = set()
        inner: set[cst.CSTNode] = set()
        for attribute in nodes.of(cst.Attribute):
            not_loads.add(attribute.attr)
            if isinstance(attribute.value, (cst.Name, cst.Attribute)):
                inner.add(attribute.value)
        not_loads.update(arg.keyword for arg in nodes.of(cst.Arg) if arg.keyword is not None)
        not_loads.update(param.name for param in nodes.of(cst.Param))
        not_loads.update(node.name for node in nodes.of_any(cst.FunctionDef, cst.ClassDef))
        self._not_loads = not_loads
        self._inner = inner
        self._called = {call.func for call in nodes.of(cst.Call)}

    def is_load(self, node: cst.CSTNode) -> bool:
        """Not a name that is bound or spelled as a label: `.attr`, `keyword=`, a parameter, `def name`."""
        return node not in self._not_loads

    def is_inner(self, node: cst.CSTNode) -> bool:
        """The `a.b` of `a.b.c`: the chain is looked up whole, at its outermost node."""
        return node in self._inner

    def is_called(self, node: cst.CSTNode) -> bool:
        """The function expression of a call."""
        return node in self._called
