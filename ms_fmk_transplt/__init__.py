"""ms_fmk_transplt: migrate PyTorch CUDA training scripts to Ascend NPU."""

__version__ = "0.1.0"
