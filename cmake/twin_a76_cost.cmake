# twin_a76_cost.cmake -- fold tools/a76_cost.tsv (the NEON kernels' llvm-mca cycles per 32-weight
# block on the Cortex-A76, written by tools/a76_cost.sh; docs/kernels.md "A76 cost table") into
# the board twin's default constants at configure time: ORK_TWIN_A76_DEFS, compile definitions
# of the twin library (one value ORK_TWIN_A76_<TYPE>_M<ROWS> and one source string
# ..._SRC per constant) that the constants table of src/twin/twin_consts.c expands
# (docs/twin.md "CPU matmuls from the kernels' cost table"). The twin reads no file at run
# time; a changed table re-runs the configure step (CMAKE_CONFIGURE_DEPENDS) and rebuilds it.
# The Q6_K constants (interleaved Q6_K: M = 1 the 4-stream decode, M > 1 tiles of up to 6 X
# rows) are the twin's Q6_K matmul charge, like the other types'.
#
# Columns are found by their header names, so added columns do not matter; a kernel the twin
# needs that is missing from the table stops the configure step naming it.

set(ORK_A76_COST_TSV ${CMAKE_SOURCE_DIR}/tools/a76_cost.tsv)

set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ORK_A76_COST_TSV})

# macro suffix | kernel function (column "function") of the row that gives it
set(_ork_a76_map
    "Q8_0_M1|xn_q8_g4m1" "Q8_0_M2|xn_q8_g1m2" "Q8_0_M4|xn_q8_g1m4" "Q8_0_M6|xn_q8_g1m6"
    "Q4_0_M1|xn_q4_g4m1" "Q4_0_M2|xn_q4_g1m2" "Q4_0_M4|xn_q4_g1m4" "Q4_0_M6|xn_q4_g1m6"
    "Q4_K_M1|xkn_g4m1" "Q4_K_M4|xkn_g1m4"
    "Q6_K_M1|x6n_g4m1" "Q6_K_M2|x6n_g1m2" "Q6_K_M4|x6n_g1m4" "Q6_K_M6|x6n_g1m6"
    "ROWS_M1|q8_blocks_neon_dot")

file(STRINGS ${ORK_A76_COST_TSV} _ork_a76_lines)
set(_ork_a76_cols "")
foreach(_line IN LISTS _ork_a76_lines)
  if(_line MATCHES "^kernel\t")
    string(REPLACE "\t" ";" _ork_a76_cols "${_line}")
  elseif(NOT _line MATCHES "^#" AND NOT _line STREQUAL "")
    if(NOT _ork_a76_cols)
      message(FATAL_ERROR "${ORK_A76_COST_TSV}: a row before the header line")
    endif()
    string(REPLACE "\t" ";" _f "${_line}")
    list(FIND _ork_a76_cols "function" _ifn)
    list(FIND _ork_a76_cols "mca_cycles_per_block" _icy)
    list(FIND _ork_a76_cols "kernel" _ilb)
    if(_ifn LESS 0 OR _icy LESS 0 OR _ilb LESS 0)
      message(FATAL_ERROR "${ORK_A76_COST_TSV}: the header needs the columns kernel, function "
                          "and mca_cycles_per_block")
    endif()
    list(GET _f ${_ifn} _fn)
    list(GET _f ${_icy} _cy)
    list(GET _f ${_ilb} _lb)
    set(_ork_a76_cy_${_fn} "${_cy}")
    set(_ork_a76_lb_${_fn} "${_lb}")
  endif()
endforeach()

set(ORK_TWIN_A76_DEFS "")
foreach(_entry IN LISTS _ork_a76_map)
  string(REPLACE "|" ";" _e "${_entry}")
  list(GET _e 0 _suffix)
  list(GET _e 1 _fn)
  if(NOT DEFINED _ork_a76_cy_${_fn})
    message(FATAL_ERROR "${ORK_A76_COST_TSV}: no row for kernel ${_fn}, which the twin's "
                        "constant cpu_mm_${_suffix} needs (tools/a76_cost.sh --tsv)")
  endif()
  if(NOT _ork_a76_cy_${_fn} MATCHES "^[0-9]+(\\.[0-9]+)?$")
    message(FATAL_ERROR "${ORK_A76_COST_TSV}: kernel ${_fn}: mca_cycles_per_block "
                        "'${_ork_a76_cy_${_fn}}' is not a number")
  endif()
  string(REPLACE "\"" "'" _lb "${_ork_a76_lb_${_fn}}")
  list(APPEND ORK_TWIN_A76_DEFS "ORK_TWIN_A76_${_suffix}=${_ork_a76_cy_${_fn}}"
       "ORK_TWIN_A76_${_suffix}_SRC=\"${_fn} (${_lb})\"")
endforeach()
