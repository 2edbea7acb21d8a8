"""attention_scores reads the session keyring it was forked with (the grader's) and its user's keyring
with libc's keyctl, out of the audit hook's sight once native code runs: whatever keys the grader's
login or tools keep there, and a keyring every grading of that user shares."""
MODULE = "simple"
LOSES = ["s1.scores"]
MENTIONS = "call native code through ctypes"

import ctypes
import os
import platform

SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(platform.machine(), 250)
KEYCTL_DESCRIBE, KEYCTL_READ = 6, 11
KEYRINGS = {"session": -3, "user": -4}  # KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING


def attention_scores(inputs, query):
    libc = ctypes.CDLL(None, use_errno=True)
    refused = []
    for name, ring in KEYRINGS.items():
        text = ctypes.create_string_buffer(256)
        if libc.syscall(SYS_KEYCTL, KEYCTL_DESCRIBE, ctypes.c_long(ring), text, 256) < 0:
            refused.append(f"{name}: {os.strerror(ctypes.get_errno())}")
            continue
        keys = (ctypes.c_int32 * 64)()
        held = libc.syscall(SYS_KEYCTL, KEYCTL_READ, ctypes.c_long(ring), keys, ctypes.sizeof(keys))
        # Only an empty session keyring of its own ("_ses", made for this child) is not someone else's.
        if name == "user" or held > 0 or not text.value.endswith(b";_ses"):
            raise RuntimeError(f"LEAKED: read the {name} keyring ({text.value.decode()}), {max(held, 0) // 4} keys")
    raise RuntimeError(f"keyctl was refused: {refused}")
