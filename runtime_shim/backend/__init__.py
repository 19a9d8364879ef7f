"""The device as the dispatcher sees it: PrivateUse1 renamed ``npu``, its hooks, and every kernel.

``registration.py`` installs the device, ``kernels.py`` builds one kernel per ATen op over host
views, ``attention.py`` gives SDPA and dropout the CPU's kernel choice, ``rnn.py`` replays
recurrent layers with the CPU's unfused ops, ``native.py`` loads the C++ hooks
(``runtime_shim/csrc``), and ``libraries.py`` makes and holds every dispatcher library.
"""
