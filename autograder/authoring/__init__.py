"""The build: stubs, the public checks' copies, golden data and the GitHub Classroom workflow, all
generated from ``solutions/`` and the registry, and the drift check that keeps them in sync."""
