"""``torch_npu.contrib.transfer_to_npu``'s patches: ``transfer.py`` (one function per group),
``device_args.py`` (which arguments are a CUDA device or an nccl backend), ``patch_log.py``
(patches that can be undone, for tests)."""
