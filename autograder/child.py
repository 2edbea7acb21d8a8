"""The child process: imports the student's package and runs the probes it is given.

Started by ``runner.py`` as ``python -I -m autograder.child JOB.json``. It writes one file
of plain data per task (atomically) and, before each task, the task's index to ``current``,
so the parent can tell which task a crash or a hang belongs to.
"""
import json
import os
import sys
from pathlib import Path


def main(job_path):
    job = json.loads(Path(job_path).read_text())
    out = Path(job["out"])
    sys.dont_write_bytecode = True  # leave no __pycache__ in the student's folder
    sys.path.insert(0, job["submission"])

    import torch

    from autograder.probes import PROBES, Lab
    from autograder.probes.common import attempt

    lab = Lab(job["submission"])
    for module, message in job["broken"].items():
        lab.mark_broken(module, message)

    for index, kind, name, device in job["tasks"]:
        (out / "current").write_text(str(index))
        torch.manual_seed(0)
        torch.set_default_dtype(torch.float32)
        with torch.enable_grad():
            if kind == "import":
                result = attempt(lambda: lab.load(name) and {"ok": True})
            else:
                result = attempt(PROBES[name].fn, lab, device)
        tmp = out / f"{index}.tmp"
        torch.save(result, tmp)
        os.replace(tmp, out / f"{index}.pt")
    (out / "current").write_text("done")


if __name__ == "__main__":
    main(sys.argv[1])
