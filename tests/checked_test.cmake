# stag_add_checked_test(): a ctest of a program that is judged by its exit status and its output
# together (tests/checked_run.cmake runs it). Use it instead of PASS_REGULAR_EXPRESSION, which
# makes ctest ignore the exit status, and instead of WILL_FAIL, which passes on any failure
# whatever it says.
#   stag_add_checked_test(NAME name
#     [EXIT 0|error|N]          the status wanted (default 0; error: a failure on purpose)
#     [MATCH regex...]          each must match stdout + stderr
#     [NO_MATCH regex...]       none may match
#     [VALUES "name op bound"...]  printed numbers checked, e.g. "val_accuracy > 0.55"
#     [NEEDS file]              skipped (not passed) while this file does not exist
#     [LABELS l...] [ENVIRONMENT v...] [DEPENDS t...] [TIMEOUT s] [FIXTURES_REQUIRED f...]
#     COMMAND program arg...)
# A program that exits 77 (its data set is not installed) is reported as skipped.
set(STAG_CHECKED_RUN ${CMAKE_CURRENT_LIST_DIR}/checked_run.cmake)
function(stag_add_checked_test)
  cmake_parse_arguments(PARSE_ARGV 0 T "" "NAME;EXIT;NEEDS;TIMEOUT"
                        "MATCH;NO_MATCH;VALUES;LABELS;ENVIRONMENT;DEPENDS;FIXTURES_REQUIRED;COMMAND")
  if(NOT T_NAME OR NOT T_COMMAND)
    message(FATAL_ERROR "stag_add_checked_test needs NAME and COMMAND")
  endif()
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "stag_add_checked_test(${T_NAME}): unknown arguments ${T_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT DEFINED T_EXIT)
    set(T_EXIT 0)
  endif()
  # A target name as the program means its file, as in add_test(COMMAND).
  list(GET T_COMMAND 0 program)
  if(TARGET ${program})
    list(REMOVE_AT T_COMMAND 0)
    list(INSERT T_COMMAND 0 $<TARGET_FILE:${program}>)
  endif()
  # Lists travel as one -D argument each; a regex or check must not contain ';'.
  add_test(NAME ${T_NAME} COMMAND ${CMAKE_COMMAND} -DEXIT=${T_EXIT} "-DMATCH=${T_MATCH}"
    "-DNO_MATCH=${T_NO_MATCH}" "-DVALUES=${T_VALUES}" "-DNEEDS=${T_NEEDS}" -P ${STAG_CHECKED_RUN} -- ${T_COMMAND})
  set(labels unit)
  if(T_LABELS)
    set(labels ${T_LABELS})
  endif()
  set(env "OMP_WAIT_POLICY=passive")
  if(T_ENVIRONMENT)
    set(env ${T_ENVIRONMENT})
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${labels}" ENVIRONMENT "${env}"
    SKIP_REGULAR_EXPRESSION "stag-test: skipped: ")
  if(T_DEPENDS)
    set_tests_properties(${T_NAME} PROPERTIES DEPENDS "${T_DEPENDS}")
  endif()
  if(T_TIMEOUT)
    set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT})
  endif()
  if(T_FIXTURES_REQUIRED)
    set_tests_properties(${T_NAME} PROPERTIES FIXTURES_REQUIRED "${T_FIXTURES_REQUIRED}")
  endif()
endfunction()
