# The compiler flags of the compile-fail runner (check.cmake) and of the precompiled stag.hpp it
# reads (pch.cmake): one list, since a precompiled header is only used under the flags it was made
# with. Sets `flags` from COMPILER_ID, INCLUDE and BOOST_INCLUDE.
if(COMPILER_ID STREQUAL "GNU")
  set(limits -fconstexpr-ops-limit=4294967296 -fconstexpr-loop-limit=16777216)
else()
  set(limits -fconstexpr-steps=2147483647)
endif()
set(flags -std=c++20 -I${INCLUDE} -I${BOOST_INCLUDE} ${limits})
# LC_ALL=C pins the compiler's messages (gettext ignores LANGUAGE in the C locale).
set(run_compiler ${CMAKE_COMMAND} -E env LC_ALL=C LANG=C --unset=LANGUAGE ${COMPILER})
