"""Each failed test of a pytest report log (pytest-reportlog's JSON lines, written as each test ends):
its node id, the innermost frame's lines and where it failed. For a run that may be cut short, where
pytest's own summary, printed at the end, never comes.

    python tests/gpu/failures.py suite-report.jsonl
"""
import json
import sys


def failures(lines):
    for line in lines:
        report = json.loads(line)
        if report.get("$report_type") != "TestReport" or report["outcome"] != "failed":
            continue
        said = report["longrepr"]
        yield f"== {report['nodeid']} ({report['when']})"
        if isinstance(said, dict) and said.get("reprtraceback"):
            entries = said["reprtraceback"]["reprentries"]
            if entries:
                yield from entries[-1]["data"].get("lines", [])
            yield "at {path}:{lineno}".format(**said["reprcrash"])
        else:
            yield str(said)


if __name__ == "__main__":
    with open(sys.argv[1]) as log:
        print("\n".join(failures(log)))
