"""Stage 5 probes: the mask as a plain attribute versus a registered buffer."""
import torch

from .common import Probes, device_report, qkv_weights, state_dict_report
from .stage3 import D_IN, D_OUT, build_causal, known_forward

PROBES = Probes()

WITHOUT, WITH = "CausalAttentionWithoutBuffers", "CausalAttentionWithBuffer"


@PROBES.add("s5.forward", golden=True)
def forward_both(lab, device):
    # d_out 4, and 6: scaling by d_k * 0.5 instead of d_k ** 0.5 agrees at 4 and only there
    return {**{cls: lab.attempt(known_forward, build_causal(lab, cls, "buffers"), True, device)
               for cls in (WITHOUT, WITH)},
            **{f"{cls} d_out=6": lab.attempt(known_forward, build_causal(lab, cls, "buffers"), True, device, d_out=6)
               for cls in (WITHOUT, WITH)}}


@PROBES.add("s5.kinds")
def kinds(lab, device):
    def run(cls):
        module = build_causal(lab, cls, "buffers")({})
        mask = getattr(module, "mask", None)
        return {"has_tensor_mask": isinstance(mask, torch.Tensor),
                "is_buffer": "mask" in dict(module.named_buffers()),
                "in_state_dict": "mask" in module.state_dict()}

    return {cls: lab.attempt(run, cls) for cls in (WITHOUT, WITH)}


@PROBES.add("s5.device")
def device(lab, device):
    weights = qkv_weights(D_IN, D_OUT, seed=600, bias=False)
    return {cls: lab.attempt(device_report, lab, lambda: build_causal(lab, cls, "buffers")({}), weights, device, D_IN)
            for cls in (WITHOUT, WITH)}


@PROBES.add("s5.state_dict")
def state_dict(lab, device):
    return {cls: lab.attempt(state_dict_report, lambda: build_causal(lab, cls, "buffers")({}), device, D_IN)
            for cls in (WITHOUT, WITH)}
