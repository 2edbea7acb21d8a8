"""Developer tools, not part of the installed package: benchmarks and the zoo's assembly. Never
shipped, never fingerprinted."""
