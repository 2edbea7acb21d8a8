"""transformer.py, when it is imported, writes a result for every request the grader could make (each
saying LEAKED), answers all of them on the child's answer FIFO, and ends the child: results found in the
folder once counted, and a child that said "done" and ended was taken at its word (a submission that ran
the kit's own probes this way got full marks). The grader takes an answer only with the token of the
request it made, which the forged lines lack, and a child that ends while a request is out is blamed
for that request: the import, so every check of the module says so."""
MODULE = "transformer"
STAGES = [7]
LOSES = ["s7.*"]
MENTIONS = "exited during import of attention_lab/transformer.py (code 0)"
BOUND = 120
HELPERS = ["answers_for_itself"]

_forged = {"error": {"type": "Forged", "message": "LEAKED: a result the grader never asked for"}}
for _n in range(1, 600):
    torch.save({"out": _forged, "weights": _forged}, f"{_n}.pt")  # the child's working folder is its output folder
_answers(range(1, 600))
_os._exit(0)
