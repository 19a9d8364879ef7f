"""In-house CTR model utilities (GPU training helpers + the DeepFM-lite network)."""
from .net import DeepFMLite, build_model
from .gpu_utils import DataPrefetcher, describe_devices, select_device

__all__ = ["DeepFMLite", "build_model", "DataPrefetcher", "describe_devices", "select_device"]
