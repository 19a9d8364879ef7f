"""``torch_npu.contrib`` on the simulated NPU: only ``transfer_to_npu`` is simulated.

torch_npu's other contrib modules (fused NPU modules and functions) need NPU-only operators;
importing them raises ModuleNotFoundError naming them.
"""
