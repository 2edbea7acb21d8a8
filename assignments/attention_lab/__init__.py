"""attention-lab: attention from a dot product to multi-head attention.

Each module is one stage of the lab; fill in the regions marked ``YOUR CODE HERE``
and check yourself with ``pytest assignments`` (or ``pytest assignments -m stage3``).
"""
