# Precompiles <stag/stag.hpp> for the compile-fail runner (check.cmake), once per compiler and per
# change of a header, instead of parsing it in every one of the cases' two compilations (the parse
# is about 2.5 s of a case's 3 s). Run at build time by the target stag_compile_fail_pch_<label>
# (tests/CMakeLists.txt) with COMPILER, COMPILER_ID, INCLUDE, BOOST_INCLUDE and OUT:
#   g++:   OUT is <dir>/stag/stag.hpp.gch; with -I<dir> ahead of INCLUDE, g++ reads it where a
#          case includes <stag/stag.hpp> first (and falls back to the header anywhere else);
#   clang: OUT is a .pch file, given to clang with -include-pch.
# The compiler's output is shown only when it fails (g++ warns that stag.hpp's `#pragma once`
# is in the main file, which is what precompiling a header means).
include(${CMAKE_CURRENT_LIST_DIR}/flags.cmake)
get_filename_component(out_dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${out_dir})
# OUT.d lists the headers it was made from (-MD, with OUT as the target): the build's DEPFILE, so
# that a change to any of them makes it again, and check.cmake's, which refuses a header newer
# than OUT, since g++ would read a stale precompiled header without a word (clang refuses one).
execute_process(COMMAND ${run_compiler} ${flags} -x c++-header ${INCLUDE}/stag/stag.hpp -o ${OUT}.tmp
    -MD -MF ${OUT}.d.tmp -MT ${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp ${OUT}.d.tmp)
  message(FATAL_ERROR "could not precompile stag.hpp with ${COMPILER}:\n${out}")
endif()
file(RENAME ${OUT}.tmp ${OUT})
file(RENAME ${OUT}.d.tmp ${OUT}.d)
