"""attention_scores_loop sends its inputs in a UDP datagram to 127.0.0.1 through libc's socket and
sendto, out of the audit hook's sight once native code runs. Where the kernel gives the child no network
namespace (a container that forbids unshare), and Landlock governs no UDP (below ABI 10), it arrives."""
MODULE = "simple"
LOSES = ["s1.scores_loop"]
MENTIONS = "call native code through ctypes"

import ctypes
import os
import struct

AF_INET, SOCK_DGRAM = 2, 2


def attention_scores_loop(inputs, query):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(AF_INET, SOCK_DGRAM, 0)
    if fd < 0:
        raise RuntimeError(f"socket was refused: {os.strerror(ctypes.get_errno())}")
    address = struct.pack("=H", AF_INET) + struct.pack("!H", 9) + bytes([127, 0, 0, 1]) + bytes(8)  # sockaddr_in
    payload = repr(inputs.tolist()).encode()[:512]
    if libc.sendto(fd, payload, len(payload), 0, address, len(address)) > 0:
        raise RuntimeError("LEAKED: sent a datagram to 127.0.0.1")
    raise RuntimeError(f"sendto was refused: {os.strerror(ctypes.get_errno())}")
