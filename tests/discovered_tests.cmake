# Read by ctest (TEST_INCLUDE_FILES, tests/CMakeLists.txt) after the lists that Catch2's discovery
# wrote, for the properties that are lists: Catch2's discovery passes its PROPERTIES through a
# flattened list, so it cannot set two labels or two environment variables itself.
# - the label quick (./test.sh --quick) on every unit test and gradcheck of stag_tests and
#   stag_train_tests, next to the label they have;
# - the interpret device for the op and [gpu] cases run as cuda_interpret.ops: <case> and
#   cuda_interpret.gpu: <case>.
# A list is empty until its program is built (ctest then shows a *_NOT_BUILT test in its place).
foreach(t IN LISTS stag_unit_TESTS stag_train_unit_TESTS)
  set_tests_properties("${t}" PROPERTIES LABELS "unit;quick")
endforeach()
foreach(t IN LISTS stag_gradcheck_TESTS)
  set_tests_properties("${t}" PROPERTIES LABELS "gradcheck;quick")
endforeach()
foreach(t IN LISTS stag_cuda_interpret_op_TESTS stag_cuda_interpret_gpu_TESTS)
  set_tests_properties("${t}" PROPERTIES
    ENVIRONMENT "OMP_WAIT_POLICY=passive;STAG_TEST_DEVICE=cuda_interpret")
endforeach()
