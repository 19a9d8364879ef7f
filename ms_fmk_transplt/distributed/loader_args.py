"""A DataLoader call's arguments by name, and the call rewritten for a DistributedSampler."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.distributed import snippets


@dataclass
class LoaderArgs:
    """A DataLoader call's arguments by name (positional ones named), and its one ** mapping."""

    call: cst.Call
    given: dict[str, cst.BaseExpression]
    star: cst.BaseExpression | None

    @classmethod
    def read(cls, call: cst.Call, positional: tuple[str, ...]) -> LoaderArgs | None:
        given: dict[str, cst.BaseExpression] = {}
        stars = [a.value for a in call.args if a.star == "**"]
        if len(stars) > 1 or any(a.star == "*" for a in call.args):
            return None
        index = 0
        for arg in call.args:
            if arg.keyword is not None:
                given[arg.keyword.value] = arg.value
            elif not arg.star:
                if index < len(positional):
                    given[positional[index]] = arg.value
                index += 1
        return cls(call, given, stars[0] if stars else None)

    def value(self, name: str) -> cst.BaseExpression:
        """The argument's expression: given, else read from the ** mapping, else False."""
        if name in self.given:
            return self.given[name]
        if self.star is not None:
            star = cst.Module([]).code_for_node(snippets.atom(self.star))
            return snippets.expression(f'{star}.get("{name}", False)')
        return cst.Name("False")

    def rewritten(self, sampler: str, dataset: cst.BaseExpression) -> cst.Call:
        """The call with the sampler passed, the dataset named and the loader's shuffle off when sharded."""
        code = cst.Module([]).code_for_node
        args = []
        for index, arg in enumerate(self.call.args):
            positional_dataset = index == 0 and arg.keyword is None and not arg.star
            if positional_dataset or (arg.keyword is not None and arg.keyword.value == "dataset"):
                arg = arg.with_changes(value=dataset)
            elif arg.value is self.given.get("shuffle"):
                guarded = snippets.expression(f"{sampler} is None and {code(snippets.atom(arg.value))}")
                arg = arg.with_changes(value=guarded)
            elif arg.star == "**" and "shuffle" not in self.given:
                mapping = code(self.star)  # type: ignore[arg-type]  # a ** argument is what set self.star
                merged = f'{{**{mapping}, "shuffle": False}} if {sampler} is not None else {mapping}'
                arg = arg.with_changes(value=snippets.expression(f"({merged})"))
            args.append(arg)
        keyword = cst.Arg(
            keyword=cst.Name("sampler"),
            value=cst.Name(sampler),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
        )
        star_at = next((i for i, a in enumerate(args) if a.star == "**"), len(args))
        if star_at < len(args) or isinstance(args[-1].comma, cst.Comma):
            # between arguments, or before a trailing comma: the separator of the one before it
            previous = args[star_at - 1]
            keyword = keyword.with_changes(comma=previous.comma)
            if star_at == len(args) and len(args) > 1:
                args[-1] = previous.with_changes(comma=args[-2].comma)
        args.insert(star_at, keyword)
        return self.call.with_changes(args=args)
