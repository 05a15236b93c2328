# The Debian-packaged dependencies, found the standard way for each, and a one-line report of the
# optional parts found or skipped. To add a dependency: find it here and name it in tools/deps.sh.
find_package(Boost 1.74 REQUIRED)                     # Boost.Hana: config reflection
find_package(dnnl REQUIRED)                           # oneDNN 2.6: CPU primitives
find_package(TBB REQUIRED)                            # oneTBB: the runtime's scheduler
find_package(OpenMP REQUIRED)                         # intra-op threads, shared with oneDNN
find_package(nlohmann_json 3 REQUIRED)                # checkpoints, metrics, data sets, tokenisers
find_package(PkgConfig REQUIRED)
pkg_check_modules(GVC REQUIRED IMPORTED_TARGET libgvc libcgraph)  # Graphviz: pictures

# Optional parts. None is needed to build or test on the CPU; a pristine Debian 12 root has none.
# CUDA: looked for only where STAG_CUDA is on and a toolkit is installed (nvcc on PATH or in
# /usr/local/cuda); the CPU build never needs it.
option(STAG_CUDA "Look for a CUDA toolkit (the GPU backend)" ON)
set(STAG_OPTIONAL_REPORT "")
if(STAG_CUDA AND (EXISTS /usr/local/cuda/bin/nvcc OR DEFINED ENV{CUDACXX}))
  set(STAG_CUDA_FOUND_AT /usr/local/cuda)
  if(DEFINED ENV{CUDACXX})
    set(STAG_CUDA_FOUND_AT $ENV{CUDACXX})
  endif()
  string(APPEND STAG_OPTIONAL_REPORT "CUDA toolkit found (${STAG_CUDA_FOUND_AT}) but no GPU backend is built yet")
elseif(STAG_CUDA)
  string(APPEND STAG_OPTIONAL_REPORT "CUDA skipped (no toolkit)")
else()
  string(APPEND STAG_OPTIONAL_REPORT "CUDA skipped (STAG_CUDA=OFF)")
endif()
# Open MPI: data-parallel training across processes and machines (runtime/dist/). Found with
# CMake's FindMPI; without it a program runs as a world of one (docs/distributed.md).
option(STAG_MPI "Look for MPI (data-parallel training across processes)" ON)
set(STAG_HAVE_MPI OFF)
if(STAG_MPI)
  # The C API from C++ (without the deprecated C++ bindings): the project enables no C compiler.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(STAG_HAVE_MPI ON)
  endif()
endif()
find_program(STAG_MPIEXEC NAMES mpirun mpiexec)
if(STAG_HAVE_MPI)
  string(APPEND STAG_OPTIONAL_REPORT "; MPI ${MPI_CXX_VERSION} found (data-parallel training)")
elseif(STAG_MPI)
  string(APPEND STAG_OPTIONAL_REPORT "; MPI skipped (not found: apt-get install libopenmpi-dev openmpi-bin)")
else()
  string(APPEND STAG_OPTIONAL_REPORT "; MPI skipped (STAG_MPI=OFF)")
endif()
# PyTorch: only tools/torch_*.py (the comparisons in docs/) use it; found without importing it.
find_program(STAG_PYTHON3 python3)
set(STAG_HAVE_TORCH OFF)
if(STAG_PYTHON3)
  execute_process(COMMAND ${STAG_PYTHON3} -c
    "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
    RESULT_VARIABLE STAG_TORCH_RC OUTPUT_QUIET ERROR_QUIET)
  if(STAG_TORCH_RC EQUAL 0)
    set(STAG_HAVE_TORCH ON)
  endif()
endif()
if(STAG_HAVE_TORCH)
  string(APPEND STAG_OPTIONAL_REPORT "; PyTorch found (comparison scripts)")
else()
  string(APPEND STAG_OPTIONAL_REPORT "; PyTorch skipped (comparison scripts only: apt-get install python3-torch)")
endif()
message(STATUS "stag optional parts: ${STAG_OPTIONAL_REPORT}")
