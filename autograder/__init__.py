"""attention-lab's instructor toolkit: check registry, probes, judges, runner, reports, CLI."""
