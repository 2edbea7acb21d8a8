"""Runs untrusted code and knows no check: a host side (``runner``, ``workspace``, ``forkserver``)
that starts, watches and reaps children, and an inside (``server``, ``child``, ``confine``) that
confines itself before any student code runs. What they say to each other is ``protocol``; the
kernel calls they share are ``linux``. The probes a child runs are named in its job, and imported
by that name: the sandbox itself imports no probe."""
