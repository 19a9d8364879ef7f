"""The rule record rule files load into; it is defined by the engine, which consumes it."""

from ms_fmk_transplt.engine.rule import Example, Rule

__all__ = ["Example", "Rule"]
