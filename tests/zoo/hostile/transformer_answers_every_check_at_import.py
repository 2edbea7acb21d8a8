"""transformer.py, when it is imported, writes a result for every request the grader could make (each
saying LEAKED), answers all of them on the child's answer FIFO, and ends the child: results found in the
folder once counted, and a child that said "done" and ended was taken at its word (a submission that ran
the kit's own probes this way got full marks). The grader reads the answer to the one request it made,
and a child that ends while a request is out is blamed for that request."""
MODULE = "transformer"
STAGES = [7]
LOSES = ["s7.*"]
MENTIONS = "exited (code 0)"
BOUND = 120
HELPERS = ["answers_for_itself"]

_forged = {"error": {"type": "Forged", "message": "LEAKED: a result the grader never asked for"}}
for _n in range(1, 600):
    torch.save({"out": _forged, "weights": _forged}, f"{_n}.pt")  # the child's working folder is its output folder
_answers(range(1, 600))
_os._exit(0)
