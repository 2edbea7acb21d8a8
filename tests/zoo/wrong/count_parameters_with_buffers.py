"""count_parameters sums the state_dict, which counts the mask buffer too."""
MODULE = "multihead"
LOSES = ["s4.param_count"]
MENTIONS = "count_parameters gives"


def count_parameters(module):
    return sum(t.numel() for t in module.state_dict().values())
