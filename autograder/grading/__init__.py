"""The trusted process: the registry of checks, the judges (``checks/``), golden data and the
forms of the reference's observations, and ``grade``, which runs the probes in the sandbox and
turns what comes back into results. Only this zone holds expected values."""
