#!/usr/bin/env bash
# The kit's CUDA half, in one command, on a Linux machine with an NVIDIA GPU and a CUDA build of torch
# (CI's machines have none, so this is run by hand: see docs/benchmarks.md for the last run's figures).
#
#   bash tests/gpu/run.sh [OUT]          OUT: where the logs go (default: gpu-run/)
#   WHEELS=DIR bash tests/gpu/run.sh     first install the test requirements from wheels in DIR
#                                        (machines without a package index) into the environment of that
#                                        machine's torch, and the kit (pip install -e .)
#
# It runs, in order, each step's output in OUT and whatever fails:
#   1. the whole suite, with CUDA required (a test that would skip for want of CUDA fails instead);
#   2. `attention-lab grade` of the reference and of the stubs, on every device;
#   3. the reference, the stubs and every zoo entry graded on the CPU and on CUDA, their points compared;
#   4. the timings: the layers (fp32 and bf16, GPT-2 size and 8k tokens), one submission, a class.
# and ends with one summary line. STEPS="suite grading agreement timings" (the default) picks steps, for
# a machine that lends a GPU in shorter spells than the whole run (about 10 minutes on one H100); SUITE_ARGS
# adds arguments to the suite's pytest. The suite alone took more than 10 minutes on an H200 with 16 cores
# (every grading there runs on both devices, and the load tests keep twice the cores busy):
# SUITE_PART=1/2, then SUITE_PART=2/2, runs every other test file, so two calls give the whole suite's two
# summary lines (the zoos' gradings are dealt across the workers: tests/conftest.py's DEALT). test_book.py
# reads the seed notes from ../shared/seeds beside the checkout: copy them there, or its 16 tests skip.
# Each test's outcome is written as it ends (suite-report.jsonl, pytest-reportlog) and each failure's
# traceback to failures.txt, so that a run cut short still says which tests failed and why.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-run}
mkdir -p "$out"
py=${PYTHON:-python3}
if [ -n "${WHEELS:-}" ]; then
    # Into the interpreter's own environment, beside its torch, and the kit itself as the README's setup
    # installs it. Not a --target folder on PYTHONPATH: graded code gets the runtime's own folders only
    # (workspace.site_paths), so bindings found through PYTHONPATH (landlockpy, pyseccomp) are missing in
    # the child, whose isolation line then says "no Landlock" (seen on an H200, 2026-11-26).
    "$py" -m pip install -q --no-index --no-deps --no-compile "$WHEELS"/*.whl || exit 2
    "$py" -m pip install -q --no-index --no-deps --no-build-isolation -e . || exit 2
fi
"$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else "no CUDA device here")' || exit 2
"$py" -c 'import torch; print("torch", torch.__version__, "on", torch.cuda.get_device_name())' | tee "$out/device.txt"
export ATTENTION_LAB_CUDA_TESTS=required PYTHONUNBUFFERED=1
failed=()
step() {  # step NAME COMMAND...: run it, log it, remember a failure
    local name=$1; shift
    echo "== $name: $*"
    "$@" 2>&1 | tee "$out/$name.log"
    [ "${PIPESTATUS[0]}" = 0 ] || failed+=("$name")
}
steps=" ${STEPS:-suite grading agreement timings} "
if [[ $steps == *" suite "* ]]; then
    files=()
    if [ -n "${SUITE_PART:-}" ]; then  # k/n: the k-th of every n test files, in name order
        k=${SUITE_PART%/*} n=${SUITE_PART#*/} i=0
        for f in tests/test_*.py; do
            [ $(( i++ % n )) = $(( k - 1 )) ] && files+=("$f")
        done
    fi
    # --report-log=FILE in one word: pytest picks its rootdir (and so pyproject.toml) from the arguments before
    # it knows a plugin's options, and a separate FILE would count as one (no testpaths, nor markers, then).
    # shellcheck disable=SC2086  # SUITE_ARGS: more pytest arguments, split on spaces (--ignore=..., -k ...)
    step suite "$py" -m pytest -q -p no:cacheprovider -n auto --dist loadscope --no-loadscope-reorder -rs \
        --report-log="$out/suite-report.jsonl" ${SUITE_ARGS:-} "${files[@]}"
    "$py" tests/gpu/failures.py "$out/suite-report.jsonl" > "$out/failures.txt"
fi
if [[ $steps == *" grading "* ]]; then
    step solutions "$py" -m autograder.cli grade solutions --verbose --json "$out/solutions.json"
    step assignments "$py" -m autograder.cli grade assignments --json "$out/assignments.json"
fi
if [[ $steps == *" agreement "* ]]; then
    step agreement "$py" -m tools.device_agreement --json "$out/agreement.json"
fi
if [[ $steps == *" timings "* ]]; then
    for dtype in float32 bfloat16; do
        step "layers-gpt2-$dtype" "$py" -m tools.bench_attention --device cuda --dtype "$dtype"
        step "layers-8k-$dtype" "$py" -m tools.bench_attention --device cuda --dtype "$dtype" --batch 1 --tokens 8192
    done
    step one-submission "$py" -m tools.bench
    step class "$py" -m tools.bench_class --students 100
fi

suite=$(grep -sE '^=* ?[0-9]+ (passed|failed).* in ' "$out/suite.log" | tail -1 | tr -d '=')
agree=$(grep -s '^device agreement:' "$out/agreement.log" | tail -1)
echo "GPU run: ${failed[*]:+FAILED in ${failed[*]}; }suite:${suite:- no summary}; ${agree:-no agreement summary}"
[ ${#failed[@]} = 0 ]
