"""Autocast on the simulated npu, in one place.

``policy.py``: the AutocastPrivateUse1 kernels (PyTorch's CPU policy), registered at activation;
``flags.py``: ``torch.npu``'s autocast flags (``is_autocast_enabled``, ...);
``amp.py``: ``torch.npu.amp`` (``autocast``, ``GradScaler``, ``custom_fwd``/``custom_bwd``).
"""
