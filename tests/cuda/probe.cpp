// Exits 0 when the CUDA backend can run here, else prints why and exits 77 (ctest's skip code).
#include <cstdio>

#include <stag/runtime/device.hpp>

int main() {
  std::string why;
  if (stag::cuda_available(&why)) {
    std::printf("stag-cuda-probe: %s\n",
                stag::device_backend(stag::Device::cuda)->describe().c_str());
    return 0;
  }
  std::printf("stag-cuda-probe: skipped: %s\n", why.c_str());
  return 77;
}
