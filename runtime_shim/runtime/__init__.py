"""Runtime state of the simulated device: which device is current, npu storages over host bytes,
memory accounting, storages shared between processes, the ``hccl`` process-group backend."""
