"""copy_v2_into_v1 copies each nn.Linear weight without transposing it (Linear stores (d_out, d_in))."""
MODULE = "self_attention"
LOSES = ["s2.copy_v2_into_v1"]


def copy_v2_into_v1(sa_v2, sa_v1):
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight)
        sa_v1.W_key.copy_(sa_v2.W_key.weight)
        sa_v1.W_value.copy_(sa_v2.W_value.weight)
    return sa_v1
