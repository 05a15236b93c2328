# The Debian-packaged dependencies, found the standard way for each, and a one-line report of the
# optional parts found or skipped. To add a dependency: find it here and name it in tools/deps.sh.
find_package(Boost 1.74 REQUIRED)                     # Boost.Hana: config reflection
find_package(dnnl REQUIRED)                           # oneDNN 2.6: CPU primitives
find_package(TBB REQUIRED)                            # oneTBB: the runtime's scheduler
find_package(OpenMP REQUIRED)                         # intra-op threads, shared with oneDNN
find_package(nlohmann_json 3 REQUIRED)                # checkpoints, metrics, data sets, tokenisers
find_package(PkgConfig REQUIRED)
pkg_check_modules(GVC REQUIRED IMPORTED_TARGET libgvc libcgraph)  # Graphviz: pictures
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)  # pretrained tokenisers' regexes

# Optional parts. None is needed to build or test on the CPU; a pristine Debian 12 root has none.
# CUDA: the GPU backend (runtime/cuda/, ops/*/cuda.cu) is built where STAG_CUDA is on and CMake
# finds a CUDA toolkit >= 12 (nvcc on PATH, in CUDACXX, or in /usr/local/cuda); the CPU build
# never needs it. The architecture defaults to sm_90 (H100/H200): `native` fails on a machine
# without a GPU, where CI builds it (-DCMAKE_CUDA_ARCHITECTURES=... to change it).
option(STAG_CUDA "Build the CUDA backend when a CUDA toolkit is found" ON)
set(STAG_OPTIONAL_REPORT "")
set(STAG_HAVE_CUDA OFF)
# Sanitizer and fuzzing builds are for the host code: their flags are not nvcc's.
if(STAG_SANITIZE OR STAG_TSAN OR STAG_FUZZ)
  set(STAG_CUDA_SKIP_REASON "a sanitizer or fuzzing build")
endif()
if(STAG_CUDA AND NOT STAG_CUDA_SKIP_REASON)
  if(NOT DEFINED ENV{CUDACXX} AND NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    # NOTE: CMake 3.25 does not know nvcc's C++20 flag (it rejects CUDA_STANDARD 20): say it.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND AND CUDAToolkit_VERSION VERSION_GREATER_EQUAL 12)
      set(STAG_HAVE_CUDA ON)
    endif()
  endif()
endif()
if(STAG_HAVE_CUDA)
  string(APPEND STAG_OPTIONAL_REPORT "CUDA ${CUDAToolkit_VERSION} found (GPU backend for sm_${CMAKE_CUDA_ARCHITECTURES})")
elseif(STAG_CUDA_SKIP_REASON)
  string(APPEND STAG_OPTIONAL_REPORT "CUDA skipped (${STAG_CUDA_SKIP_REASON})")
elseif(STAG_CUDA)
  string(APPEND STAG_OPTIONAL_REPORT "CUDA skipped (no toolkit >= 12)")
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
