"""One module per rule kind; each registers itself with `registry.kind`.

A kind's module holds everything about it: JSON schema, semantic checks, summary, `compile`, and
the code that rewrites, as hook entries the engine calls (`engine/interface/hooks.py`). Kinds that compile
into the engine's name tables instead say where the engine applies them (their `Code:` paragraph).
"""
