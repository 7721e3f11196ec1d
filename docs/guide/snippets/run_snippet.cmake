# Runs one guide snippet and checks what it printed (docs/guide/snippets/CMakeLists.txt):
#   cmake -DEXE=<program> -DRC=<exit status> [-DEXPECTED=<file>] [-DCHECK=<mode>] -P run_snippet.cmake
# EXPECTED: stdout must equal the file (the output the guide states).
# CHECK attend: the claims of docs/guide/attention.md about attend_nvfp4's table.
# CHECK verify: the mismatches of docs/guide/verify.md (inputs 0.3 and 19 only).
cmake_minimum_required(VERSION 3.20)
execute_process(COMMAND ${EXE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL RC)
  message(FATAL_ERROR "${EXE}: exit status ${rc}, expected ${RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED EXPECTED)
  file(READ ${EXPECTED} want)
  if(NOT out STREQUAL want)
    message(FATAL_ERROR "${EXE}: output differs from ${EXPECTED}\n--- printed:\n${out}--- stated:\n${want}")
  endif()
endif()

# The value of `key` on the line of `scheme` (a number).
function(field scheme key var)
  if(NOT out MATCHES "(^|\n)${scheme} +[^\n]*${key} ([-+0-9.e]+)")
    message(FATAL_ERROR "${EXE}: no ${key} for ${scheme} in:\n${out}")
  endif()
  set(${var} ${CMAKE_MATCH_2} PARENT_SCOPE)
endfunction()

function(less a b what)
  # CMake compares numbers as doubles with LESS.
  if(NOT a LESS b)
    message(FATAL_ERROR "${EXE}: expected ${what} (${a} < ${b}) in:\n${out}")
  endif()
endfunction()

if(CHECK STREQUAL "attend")
  # The page says: bf16 keeps the ranking (weighted tau > 0.999, KL < 1e-3 nats, top-8
  # intact); every step down in bits (fp8 -> NVFP4 -> MXFP4) loses more, in each metric.
  field(bf16 weighted_tau bt)
  field(bf16 "recall@8" br)
  field(bf16 KL bk)
  less(0.999 ${bt} "bf16 weighted tau above 0.999")
  less(0.999 ${br} "bf16 recall@8 of 1")
  less(${bk} 1e-3 "bf16 KL below 1e-3")
  set(prev_t ${bt})
  set(prev_k ${bk})
  foreach(s fp8_e4m3 nvfp4_te mxfp4_rceil)
    field(${s} weighted_tau t)
    field(${s} KL k)
    less(${t} ${prev_t} "${s} ranks worse than the scheme above it")
    less(${prev_k} ${k} "${s} has a larger KL than the scheme above it")
    set(prev_t ${t})
    set(prev_k ${k})
  endforeach()
elseif(CHECK STREQUAL "verify")
  # Worked out by hand in the page: 0.3 lies between e4m3 0.28125 and 0.3125 (nearer the
  # second), 19 is the tie 18 | 20 (even: 20); truncation gives the lower one for both. 17
  # (tie 16 | 18, even: 16) and 1000 (saturates to 448) agree.
  if(NOT out MATCHES "2 of 4")
    message(FATAL_ERROR "${EXE}: expected 2 mismatches of 4 elements:\n${out}")
  endif()
endif()
