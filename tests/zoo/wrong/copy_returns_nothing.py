"""copy_v2_into_v1 copies the weights correctly but forgets to return sa_v1."""
MODULE = "self_attention"
LOSES = ["s2.copy_v2_into_v1"]
MENTIONS = "should return"


def copy_v2_into_v1(sa_v2, sa_v1):
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
