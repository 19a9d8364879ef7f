"""The model `-t` names, checked against the main script before anything is planned."""

from __future__ import annotations

from ms_fmk_transplt.distributed.survey import Survey

# methods only a model (an nn.Module) is usually asked for
_MODEL_METHODS = frozenset({"parameters", "named_parameters", "state_dict", "load_state_dict"})


class TargetModelError(ValueError):
    """`-t NAME` names no variable of the main script; carries the name and the candidates found."""

    def __init__(self, name: str, candidates: list[str]) -> None:
        super().__init__(name)
        self.name, self.candidates = name, candidates


def model_candidates(found: Survey) -> list[str]:
    """Variables of the script that look like a model, most likely first (a heuristic): the ones an
    optimizer takes the parameters of, then instances of the script's nn.Module classes, then the
    names a model's methods are called on."""
    assigned = found.assigned
    built = [n for n in assigned if found.assigned_call.get(n, "").split(".")[-1] in found.module_classes]
    asked = [
        a.value.value  # type: ignore[attr-defined]  # the survey keeps attributes of a Name only
        for a in found.attributes
        if a.attr.value in _MODEL_METHODS and a.value.value in assigned  # type: ignore[attr-defined]  # as above
    ]
    return list(dict.fromkeys([*(m for m in found.optimizer_models if m in assigned), *built, *asked]))


def check_target(found: Survey, model: str | None) -> None:
    """Raise TargetModelError when `model` is given and the script never assigns it."""
    if model is not None and model not in found.assigned:
        raise TargetModelError(model, model_candidates(found))
