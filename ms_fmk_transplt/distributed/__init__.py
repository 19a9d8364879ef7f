"""`ms_fmk_transplt distributed`: a single-device training script -> a torchrun one on many NPUs.

`distribute_source` (transform.py) rewrites the main script in CUDA terms; `stage.py` runs it
inside an ordinary conversion (which then turns CUDA into NPU) and adds the launchers.
"""

from ms_fmk_transplt.distributed.transform import Distributed, distribute_source

__all__ = ["Distributed", "distribute_source"]
