# The declared limits of every study's numeric grid options, at their ends: each value
# either runs (exit 0, the CSV written) or is refused before anything is created (exit 2,
# one line on stderr, --out DIR absent). A run that fails part-way (exit 1, or a usage
# error after DIR exists) is the defect this test exists for: validation must reject
# everything the run would reject.
#   cmake -DKVQ=<exe> -DWORK=<scratch dir> -P study_limits.cmake
#
# Each case: STUDY|base options|OPTION|v1,v2,...; the base options keep the runs small
# (the option under test comes last, and the last value of an option wins). A value is a
# whole option value: "256,1" is one --contexts list.
cmake_minimum_required(VERSION 3.20)

set(o "outliers|--schemes|bf16,fp8_e4m3,nvfp4_te,mxfp4_rceil,kivi_int4|--contexts|256|--queries|2")
set(s "sinks|--paths|bf16,nvfp4_te,fa3_s1_fwd|--contexts|256|--sinks|2|--deltas|8|--queries|2")
set(c "citations|--schemes|bf16,nvfp4_te|--contexts|256|--seeds|1|--queries|8")
set(p "policy|--uniform|bf16,nvfp4_te|--tiered|nvfp4_te|--contexts|256|--queries|4|--window|16")
set(r "rotation|--schemes|fp8_e4m3_cal,nvfp4_te|--contexts|256|--magnitudes|0,100|--queries|2")
set(a "accumulation|--paths|ideal_fp32,sm90|--contexts|256|--queries|2")
set(bf "outliers|--schemes|bf16|--contexts|256|--queries|2")

set(cases
  # outliers: contexts 1..4M, head-dim 1..4096, queries, outlier-channels 1..4096, magnitudes 0..1e30
  "${o}|--contexts|1" "${o}|--contexts|2" "${o}|--contexts|256,1" "${o}|--contexts|5000"
  "${o}|--head-dim|1" "${o}|--head-dim|2" "${o}|--head-dim|4096"
  "${bf}|--head-dim|1" "${bf}|--head-dim|2" "${bf}|--head-dim|3"
  "${o}|--queries|1" "${o}|--queries|300"
  "${o}|--outlier-channels|1" "${o}|--outlier-channels|128" "${o}|--outlier-channels|4096"
  "${bf}|--head-dim|4|--outlier-channels|4" "${bf}|--head-dim|1|--outlier-channels|1"
  "${o}|--magnitudes|0" "${o}|--magnitudes|1e30" "${o}|--magnitudes|1e-320"
  # sinks: sinks 1..1M, deltas -100..100, contexts 2..4M, massive 0..1e6, head-dim 2..4096
  "${s}|--sinks|1" "${s}|--sinks|255" "${s}|--sinks|1048576"
  "${s}|--deltas|-100" "${s}|--deltas|100"
  "${s}|--contexts|2" "${s}|--contexts|3" "${s}|--contexts|5000"
  "${s}|--massive|0" "${s}|--massive|1e6"
  "${s}|--head-dim|2" "${s}|--head-dim|3" "${s}|--head-dim|4" "${s}|--head-dim|6" "${s}|--head-dim|16" "${s}|--head-dim|4096"
  "sinks|--paths|bf16|--contexts|256|--sinks|2|--deltas|8|--queries|2|--massive|0|--head-dim|2"
  "sinks|--paths|bf16|--contexts|256|--sinks|2|--deltas|8|--queries|2|--head-dim|3"
  "sinks|--paths|bf16|--contexts|256|--sinks|2|--deltas|8|--queries|2|--head-dim|2"
  "sinks|--paths|bf16|--contexts|256|--sinks|2|--deltas|8|--queries|2|--head-dim|4"
  "${s}|--queries|1" "${s}|--queries|300"
  # citations: contexts 64..4M, seeds, queries, topk, span, margins, outlier, sink-delta, head-dim 2..4096
  "${c}|--contexts|64" "${c}|--contexts|5000"
  "${c}|--seeds|1" "${c}|--seeds|3"
  "${c}|--queries|1" "${c}|--queries|65536"
  "${c}|--topk|1" "${c}|--topk|255" "${c}|--topk|1048576"
  "${c}|--span|1" "${c}|--span|30" "${c}|--span|1024"
  "${c}|--margin-min|-100" "${c}|--margin-max|100" "${c}|--margin-min|100|--margin-max|100"
  "${c}|--outlier|0" "${c}|--outlier|1e30"
  "${c}|--sink-delta|-100" "${c}|--sink-delta|100"
  "${c}|--head-dim|2" "${c}|--head-dim|4" "${c}|--head-dim|6" "${c}|--head-dim|8" "${c}|--head-dim|16" "${c}|--head-dim|4096"
  "citations|--schemes|bf16|--contexts|256|--seeds|1|--queries|8|--head-dim|2"
  "citations|--schemes|bf16|--contexts|256|--seeds|1|--queries|8|--head-dim|6"
  "citations|--schemes|bf16|--contexts|256|--seeds|1|--queries|8|--head-dim|8"
  "citations|--schemes|bf16|--contexts|256|--seeds|1|--queries|8|--outlier|0|--head-dim|2"
  "citations|--schemes|bf16|--contexts|256|--seeds|1|--queries|8|--outlier|0|--head-dim|4"
  # policy: sinks 0..1M, window 0..16M, contexts 64..4M, queries, topk, span, outlier, sink-delta, head-dim
  "${p}|--sinks|0" "${p}|--sinks|255" "${p}|--sinks|1048576"
  "${p}|--window|0" "${p}|--window|16777216"
  "${p}|--contexts|64" "${p}|--contexts|5000"
  "${p}|--queries|1" "${p}|--queries|65536"
  "${p}|--topk|1" "${p}|--topk|1048576"
  "${p}|--span|1" "${p}|--span|1024"
  "${p}|--outlier|0" "${p}|--outlier|1e30"
  "${p}|--sink-delta|-100" "${p}|--sink-delta|100"
  "${p}|--head-dim|2" "${p}|--head-dim|4" "${p}|--head-dim|6" "${p}|--head-dim|8" "${p}|--head-dim|16" "${p}|--head-dim|4096"
  "policy|--uniform|bf16|--tiered|fp8_e4m3_cal|--contexts|256|--queries|4|--window|16|--head-dim|2"
  "policy|--uniform|bf16|--tiered|fp8_e4m3_cal|--contexts|256|--queries|4|--window|16|--head-dim|8"
  "policy|--uniform|bf16|--tiered|fp8_e4m3_cal|--contexts|256|--queries|4|--window|16|--outlier|0|--head-dim|4"
  # rotation: magnitudes, contexts 2..4M, head-dim 2..4096 (powers of two), queries, outlier-channels
  "${r}|--magnitudes|0" "${r}|--magnitudes|1e30"
  "${r}|--contexts|2" "${r}|--contexts|5000"
  "${r}|--head-dim|2" "${r}|--head-dim|16" "${r}|--head-dim|4096"
  "rotation|--schemes|fp8_e4m3_cal|--contexts|256|--queries|2|--head-dim|2" "rotation|--schemes|fp8_e4m3_cal|--contexts|256|--queries|2|--head-dim|4"
  "${r}|--queries|1" "${r}|--queries|300"
  "${r}|--outlier-channels|1" "${r}|--outlier-channels|128" "${r}|--outlier-channels|4096"
  # accumulation: contexts 256..4M, queries, span, margins, sinks 0..1024, sink-delta, head-dim 2..4096
  "${a}|--contexts|256" "${a}|--contexts|5000"
  "${a}|--queries|1" "${a}|--queries|65536"
  "${a}|--span|1" "${a}|--span|1024"
  "${a}|--margin-min|-100" "${a}|--margin-max|100"
  "${a}|--sinks|0" "${a}|--sinks|1024"
  "${a}|--sink-delta|-100" "${a}|--sink-delta|100"
  "${a}|--head-dim|2" "accumulation|--paths|ideal_fp32|--contexts|256|--queries|2|--sinks|0|--head-dim|2" "${a}|--head-dim|4" "${a}|--head-dim|6" "${a}|--head-dim|8" "${a}|--head-dim|16" "${a}|--head-dim|4096"
)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(failures "")
set(i 0)
set(ran 0)
set(refused 0)
foreach(case IN LISTS cases)
  math(EXPR i "${i} + 1")
  string(REPLACE "|" ";" args "${case}")
  list(GET args 0 study)
  list(REMOVE_AT args 0)
  set(dir "${WORK}/case${i}")
  execute_process(COMMAND ${KVQ} study ${study} --quick --quiet --threads 2 ${args} --out "${dir}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" "," err "${err}")
  string(REPLACE ";" " " shown "${study} ${args}")
  string(REGEX MATCHALL "\n" nl "${err}")
  list(LENGTH nl lines)
  if(rc EQUAL 0)
    math(EXPR ran "${ran} + 1")
    if(NOT EXISTS "${dir}/${study}.csv")
      list(APPEND failures "kvq study ${shown}: exit 0 but ${study}.csv not written")
    endif()
    message(STATUS "runs:    ${shown}")
  elseif(rc EQUAL 2)
    math(EXPR refused "${refused} + 1")
    if(EXISTS "${dir}")
      list(APPEND failures "kvq study ${shown}: refused after creating --out (${err})")
    elseif(NOT lines EQUAL 1)
      list(APPEND failures "kvq study ${shown}: refused with ${lines} stderr lines, not 1 (${err})")
    endif()
    string(STRIP "${err}" e)
    message(STATUS "refused: ${shown}: ${e}")
  else()
    string(STRIP "${err}" e)
    list(APPEND failures "kvq study ${shown}: exit ${rc} (failed during the run): ${e}")
  endif()
endforeach()
if(failures)
  string(REPLACE ";" "\n  " msg "${failures}")
  message(FATAL_ERROR "limit cases not handled up front:\n  ${msg}")
endif()
message(STATUS "every limit case runs or is refused up front (${ran} ran, ${refused} refused)")
