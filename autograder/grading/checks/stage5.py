"""Stage 5 judges: the mask as a plain attribute versus a registered buffer."""
from ...probes.stage5 import WITH, WITHOUT
from ..forms import is_error_record
from ..judging import LAYER, device_mismatch, expect, expect_close, get
from ..registry import MOVES, NUMERIC, Checks
from ..judging import check_device, check_state_dict
from ..pictures import moved_and_left

CHECKS = Checks(5)
CHECKS.look("CausalAttentionWithBuffer", "CausalAttentionWithBuffer(3, 2, 6, 0.0)")


@CHECKS.add("s5.forward", points=2, probe="s5.forward", devices=NUMERIC,
            title="both classes compute causal attention (known weights)")
def forward(obs, ctx):
    for cls in (WITHOUT, WITH):
        expect_close(get(obs, cls), ctx.golden[cls], f"{cls} output", dtype=LAYER)
        expect_close(get(obs, f"{cls} d_out=6"), ctx.golden[f"{cls} d_out=6"], f"{cls}(..., d_out=6) output "
                     "(scores scaled by 1/sqrt(d_out))", dtype=LAYER)


@CHECKS.add("s5.kinds", points=2, probe="s5.kinds",
            title="only CausalAttentionWithBuffer registers mask as a buffer")
def kinds(obs, ctx):
    without, with_ = get(obs, WITHOUT), get(obs, WITH)
    expect(without["has_tensor_mask"], f"{WITHOUT}.mask should be a tensor attribute")
    expect(not without["is_buffer"], f"{WITHOUT}.mask is a registered buffer; this class shows what goes "
           "wrong without one, so keep it a plain attribute")
    expect(with_["is_buffer"], f"{WITH}.mask is not a registered buffer")
    expect(with_["in_state_dict"], f"{WITH}.mask is not in the state_dict (persistent=False?)")


@CHECKS.add("s5.with.device", points=2, probe="s5.device", devices=MOVES,
            title="CausalAttentionWithBuffer moves to another device, mask included")
def with_device(obs, ctx):
    return check_device(get(obs, WITH), ctx.device, WITH)


@CHECKS.add("s5.without.device", points=1, probe="s5.device", devices=MOVES,
            title="CausalAttentionWithoutBuffers shows the failure: its mask stays behind")
def without_device(obs, ctx):
    """Judged by where the mask is. That forward then fails is asked only of a real device: on
    ``meta`` an in-place ``masked_fill_`` with a CPU mask does not raise (the seeds' own code)."""
    rep = get(obs, WITHOUT)
    mask = rep["buffers"]["mask"]
    expect(not mask["is_buffer"], f"{WITHOUT}.mask should not be a buffer")
    expect(mask["device"] == "cpu", f"after .to('{ctx.device}') the plain mask should stay on cpu, "
           f"it is on {mask['device']}")
    if ctx.device != "meta":
        fwd = rep["forward"]
        expect(is_error_record(fwd) and device_mismatch(fwd),
               f"{WITHOUT} moved to {ctx.device} should fail in forward because its mask stayed on the CPU "
               "(the seeds' 'expected self and mask to be on the same device')")


@CHECKS.add("s5.with.state_dict", points=2, probe="s5.state_dict", devices=NUMERIC,
            title="a changed mask survives save/load of CausalAttentionWithBuffer's state_dict")
def with_state_dict(obs, ctx):
    check_state_dict(obs[WITH], WITH)


@CHECKS.add("s5.without.state_dict", points=1, probe="s5.state_dict",
            title="a changed plain mask is lost by save/load, as the seeds show")
def without_state_dict(obs, ctx):
    check_state_dict(obs[WITHOUT], WITHOUT, persists=False)


CHECKS.pictures(draw={"s5.device": lambda o: moved_and_left(o, "the two layers of stage 5")})
