"""The code the distributed mode writes, in CUDA terms: the ordinary conversion that follows turns
`torch.cuda` into `torch.npu` and "nccl" into "hccl", and the same script runs on the CPU with gloo."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

SETUP = """\
# ms_fmk_transplt distributed: under torchrun (RANK, LOCAL_RANK and WORLD_SIZE in the environment)
# each process drives one device; started without a launcher the script runs as one process
{rank} = int(os.environ.get("RANK", 0))
{local_rank} = int(os.environ.get("LOCAL_RANK", 0))
{world_size} = int(os.environ.get("WORLD_SIZE", 1))
if {world_size} > 1 and not torch.distributed.is_initialized():
    if torch.cuda.is_available():
        torch.cuda.set_device({local_rank})
    torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
"""
SAMPLER = (
    "{sampler} = torch.utils.data.DistributedSampler({dataset}, shuffle={shuffle}, drop_last={drop_last})"
    " if torch.distributed.is_initialized() else None\n"
)
SET_EPOCH = "if {sampler} is not None:\n    {sampler}.set_epoch({epoch})\n"
# no device_ids: DDP takes the device the model is on (the script may keep it on the CPU)
DDP = "if torch.distributed.is_initialized():\n    {model} = torch.nn.parallel.DistributedDataParallel({model})\n"
BARRIER = "if torch.distributed.is_initialized():\n    torch.distributed.barrier()\n"
# a temporary folder the ranks share: made on rank 0, its name sent to the others
SHARED = """\
def {helper}(make, *args, **kwargs):
    # ms_fmk_transplt distributed: rank 0 makes the temporary folder, every rank gets its name
    if not torch.distributed.is_initialized():
        return make(*args, **kwargs)
    made = [make(*args, **kwargs) if torch.distributed.get_rank() == 0 else None]
    torch.distributed.broadcast_object_list(made, src=0)
    return made[0]
"""
DESTROY = "if torch.distributed.is_initialized():\n    torch.distributed.destroy_process_group()\n"


@dataclass(frozen=True)
class Names:
    """The module-level names the setup binds (prefixed when the script binds them already)."""

    rank: str
    local_rank: str
    world_size: str

    @classmethod
    def avoiding(cls, bound: set[str]) -> Names:
        """RANK, LOCAL_RANK, WORLD_SIZE, or MSFT_RANK, ... when the script uses those names."""
        plain = ("RANK", "LOCAL_RANK", "WORLD_SIZE")
        prefix = "MSFT_" if bound & set(plain) else ""
        return cls(*(prefix + name for name in plain))


def statements(template: str, **fields: str) -> list[cst.BaseStatement]:
    """The statements of `template` filled with `fields`."""
    return list(cst.parse_module(template.format(**fields)).body)


def setup(names: Names) -> list[cst.BaseStatement]:
    """The process-group set-up, after the script's imports, a blank line before it."""
    body = cst.parse_module(
        SETUP.format(rank=names.rank, local_rank=names.local_rank, world_size=names.world_size)
    )
    first = body.body[0].with_changes(
        leading_lines=[cst.EmptyLine(), *body.header]  # the comment block parses as the module header
    )
    return [first, *body.body[1:]]


def expression(text: str) -> cst.BaseExpression:
    """One expression from its text."""
    return cst.parse_expression(text)


def unwrapped(model: str) -> cst.BaseExpression:
    """`getattr(model, "module", model)`: the model itself, wrapped by DistributedDataParallel or not."""
    return expression(f'getattr({model}, "module", {model})')


def atom(node: cst.BaseExpression) -> cst.BaseExpression:
    """`node`, in parentheses unless it is a name, attribute, call, subscript or constant."""
    simple = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.SimpleString)
    if isinstance(node, simple) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def shared(helper: str) -> list[cst.BaseStatement]:
    """The helper that makes a temporary folder on rank 0 for every rank, two blank lines before it."""
    body = statements(SHARED, helper=helper)
    return [body[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]), *body[1:]]


def on_rank_zero(helper: str, call: cst.Call) -> cst.Call:
    """`tempfile.mkdtemp(ARGS)` -> `helper(tempfile.mkdtemp, ARGS)`."""
    return call.with_changes(func=cst.Name(helper), args=[cst.Arg(call.func), *call.args])
