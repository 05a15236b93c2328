// Device names and the backend registry: Device::cuda is served by runtime/cuda/ when stag is
// built with CUDA (STAG_HAVE_CUDA), and refused with the reason otherwise; Device::cuda_interpret
// by the same code built in interpret mode, always.
#include <mutex>

#include <stag/graph/graph_view.hpp>

#include <stag/runtime/device.hpp>

namespace stag {

#ifdef STAG_HAVE_CUDA
namespace cuda {
std::shared_ptr<DeviceBackend> make_backend();  // runtime/cuda/backend.cpp
bool available(std::string* why);
std::string unsupported(const GraphView& g);  // runtime/cuda/kernels.cpp
}  // namespace cuda
#endif
// The same, built in interpret mode (always).
namespace cuda_interpret {
std::shared_ptr<DeviceBackend> make_backend();
std::string unsupported(const GraphView& g);
}  // namespace cuda_interpret

std::string_view device_name(Device d) {
  switch (d) {
    case Device::cpu:
      return "cpu";
    case Device::cuda:
      return "cuda";
    case Device::cuda_interpret:
      return "cuda_interpret";
  }
  return "?";
}

std::optional<Device> device_from_name(std::string_view name) {
  for (Device d : {Device::cpu, Device::cuda, Device::cuda_interpret})
    if (device_name(d) == name) return d;
  return std::nullopt;
}

std::string device_unsupported(Device d, const GraphView& g) {
  if (d == Device::cpu) return "";
  if (d == Device::cuda_interpret) return cuda_interpret::unsupported(g);
#ifdef STAG_HAVE_CUDA
  return cuda::unsupported(g);
#else
  (void)g;
  std::string why;
  cuda_available(&why);
  return "stag: device cuda cannot run here: " + why;
#endif
}

bool cuda_available(std::string* why) {
#ifdef STAG_HAVE_CUDA
  return cuda::available(why);
#else
  if (why)
    *why =
        "this stag was built without CUDA (no CUDA toolkit was found when it was configured, "
        "or STAG_CUDA=OFF)";
  return false;
#endif
}

std::shared_ptr<DeviceBackend> device_backend(Device d) {
  if (d == Device::cpu)
    throw Error("stag: the CPU is the planner's own backend; it has no DeviceBackend");
  if (d == Device::cuda_interpret) {
    static std::mutex m;
    static auto* backend = new std::shared_ptr<DeviceBackend>;
    const std::lock_guard lock(m);
    if (!*backend) *backend = cuda_interpret::make_backend();
    return *backend;
  }
  std::string why;
  if (!cuda_available(&why)) throw Error("stag: device cuda cannot run here: " + why);
#ifdef STAG_HAVE_CUDA
  static std::mutex m;
  // NOTE: never destroyed: the CUDA runtime may be torn down before static destructors run.
  static auto* backend = new std::shared_ptr<DeviceBackend>;
  const std::lock_guard lock(m);
  if (!*backend) *backend = cuda::make_backend();
  return *backend;
#else
  return nullptr;
#endif
}

}  // namespace stag
