"""The device as the dispatcher sees it: PrivateUse1 renamed ``npu``, its hooks, and every kernel.

``registration.py`` installs the device, ``kernels.py`` builds one kernel per ATen op over host
views, ``rnn.py`` replays recurrent layers with the CPU's unfused ops, ``native.py`` loads the
C++ hooks (``runtime_shim/csrc``).
"""
