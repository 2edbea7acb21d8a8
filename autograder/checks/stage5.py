"""Stage 5 judges: the mask as a plain attribute versus a registered buffer."""
from ..forms import is_error_record
from ..judging import LAYER, expect, expect_close, get
from ..probes.stage5 import WITH, WITHOUT
from ..registry import MOVES, NUMERIC, check
from .stage3 import check_device, check_state_dict


@check("s5.forward", stage=5, points=2, probe="s5.forward", devices=NUMERIC,
       title="both classes compute causal attention (known weights)")
def forward(obs, golden):
    for cls in (WITHOUT, WITH):
        expect_close(get(obs, cls), golden[cls], f"{cls} output", dtype=LAYER)


@check("s5.kinds", stage=5, points=2, probe="s5.kinds",
       title="only CausalAttentionWithBuffer registers mask as a buffer")
def kinds(obs, golden):
    without, with_ = get(obs, WITHOUT), get(obs, WITH)
    expect(without["has_tensor_mask"], f"{WITHOUT}.mask should be a tensor attribute")
    expect(not without["is_buffer"], f"{WITHOUT}.mask is a registered buffer; this class shows what goes "
           "wrong without one, so keep it a plain attribute")
    expect(with_["is_buffer"], f"{WITH}.mask is not a registered buffer")
    expect(with_["in_state_dict"], f"{WITH}.mask is not in the state_dict (persistent=False?)")


@check("s5.with.device", stage=5, points=2, probe="s5.device", devices=MOVES,
       title="CausalAttentionWithBuffer moves to another device, mask included")
def with_device(obs, golden, device):
    return check_device(get(obs, WITH), device, WITH)


@check("s5.without.device", stage=5, points=1, probe="s5.device", devices=MOVES,
       title="CausalAttentionWithoutBuffers shows the failure: its mask stays behind")
def without_device(obs, golden, device):
    """Judged by where the mask is. That forward then fails is asked only of a real device: on
    ``meta`` an in-place ``masked_fill_`` with a CPU mask does not raise (the seeds' own code)."""
    rep = get(obs, WITHOUT)
    expect(not rep["mask_is_buffer"], f"{WITHOUT}.mask should not be a buffer")
    expect(rep["mask_device"] == "cpu", f"after .to('{device}') the plain mask should stay on cpu, "
           f"it is on {rep['mask_device']}")
    if device != "meta":
        fwd = rep["forward"]
        expect(is_error_record(fwd) and fwd["error"]["type"] == "RuntimeError",
               f"{WITHOUT} moved to {device} should fail in forward because its mask stayed on the CPU "
               "(the seeds' 'expected self and mask to be on the same device')")


@check("s5.with.state_dict", stage=5, points=2, probe="s5.state_dict", devices=NUMERIC,
       title="a changed mask survives save/load of CausalAttentionWithBuffer's state_dict")
def with_state_dict(obs, golden):
    check_state_dict(obs[WITH], WITH)


@check("s5.without.state_dict", stage=5, points=1, probe="s5.state_dict",
       title="a changed plain mask is lost by save/load, as the seeds show")
def without_state_dict(obs, golden):
    check_state_dict(obs[WITHOUT], WITHOUT, persists=False)
