"""The hidden graders: one module of judges per stage, each with its ``CHECKS`` (see ``registry``)."""
