"""What the simulated npu reports about a run: the operator check (``opcheck.py``) and the step
records ``ms_fmk_transplt verify`` compares (``step_record.py``)."""
