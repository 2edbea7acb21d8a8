"""The numbers the chapter prints, to 4 decimals: what the seeded examples must reproduce.

``tests/test_book.py`` holds these against the reference and against the seed notes' text.
The build copies this file into ``assignments/tests/`` for the public self-checks: only torch here.
"""
import torch

T = torch.tensor

# "Your journey starts with one step": the inputs of every seeded example (one row per token).
INPUTS = T([[0.43, 0.15, 0.89],   # Your     (x^1)
            [0.55, 0.87, 0.66],   # journey  (x^2)
            [0.57, 0.85, 0.64],   # starts   (x^3)
            [0.22, 0.58, 0.33],   # with     (x^4)
            [0.77, 0.25, 0.10],   # one      (x^5)
            [0.05, 0.80, 0.55]])  # step     (x^6)
BATCH = torch.stack((INPUTS, INPUTS), dim=0)  # the book's batch: two copies of the sentence

ATTN_SCORES_2 = T([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
WEIGHTS_2_BY_SUM = T([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])
WEIGHTS_2_SOFTMAX = T([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
CONTEXT_VEC_2 = T([0.4419, 0.6515, 0.5683])
ATTN_WEIGHTS = T([
    [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
    [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
    [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
    [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
    [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
    [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896],
])
ALL_CONTEXT_VECS = T([
    [0.4421, 0.5931, 0.5790],
    [0.4419, 0.6515, 0.5683],
    [0.4431, 0.6496, 0.5671],
    [0.4304, 0.6298, 0.5510],
    [0.4671, 0.5910, 0.5266],
    [0.4177, 0.6503, 0.5645],
])

# Trainable weights, step by step (seed 123, torch.rand weights, query = token 2).
STEP_SCORES_2 = T([1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440])
STEP_WEIGHTS_2 = T([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])
STEP_CONTEXT_2 = T([0.3061, 0.8210])

SA_V1 = T([[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203],
           [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]])
SA_V2 = T([[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702],
           [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]])

# Causal weights of the seed-789 SelfAttention_v2 (both mask builders give these).
CAUSAL_WEIGHTS = T([
    [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
    [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
    [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
    [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
])

# Seed 123 on the batch of two copies of the inputs; both batch entries are equal.
CAUSAL_ATTENTION = T([[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],
                      [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]])
MHA_WRAPPER = T([[-0.4519, 0.2216, 0.4772, 0.1063], [-0.5874, 0.0058, 0.5891, 0.3257],
                 [-0.6300, -0.0632, 0.6202, 0.3860], [-0.5675, -0.0843, 0.5478, 0.3589],
                 [-0.5526, -0.0981, 0.5321, 0.3428], [-0.5299, -0.1081, 0.5077, 0.3493]])
MHA = T([[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593],
         [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]])

GPT2_MHA_PARAMETERS = 2_360_064

PRINTED = 5e-5 + 1e-6  # printed to 4 decimals: the true value is within half a unit of the last digit
