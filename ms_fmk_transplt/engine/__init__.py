"""The conversion engine: pure functions from source bytes and compiled rules to results.

`convert.convert_source` converts one file against `tables.Tables`. The engine never
imports the rules package: rule kinds compile into `Tables`
(``ms_fmk_transplt.ruleset.compile_rules``) and the engine only reads them. This package
file imports nothing, so a light module such as `engine.rule` does not load libcst.
"""
