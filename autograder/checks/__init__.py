"""The hidden graders: one module of judges per stage, registered in ``autograder.registry``."""
from . import stage1, stage2, stage3, stage4, stage5, stage6, stage7, stage8  # noqa: F401
