"""Monkey-patches of torch: what torch_npu patches into PyTorch and ported scripts rely on.

``torch_npu_api.py`` is applied at activation; ``transfer_to_npu/`` when a script imports
``torch_npu.contrib.transfer_to_npu``.
"""
