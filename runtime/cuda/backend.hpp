// The CUDA device backend: one stream, the device allocator, cuBLASLt's handle and workspace.
// Built twice: for the GPU (namespace stag::cuda, Device::cuda) and, always, in interpret mode
// (stag::cuda_interpret, Device::cuda_interpret): the same host code and kernels on the CPU
// through ops/cuda_interpret.hpp, with a host GEMM in place of cuBLASLt.
#pragma once

#include <string>

#if defined(STAG_CUDA_INTERPRET)
#include <stag/ops/cuda_interpret.hpp>  // the CUDA runtime emulated; no cuBLASLt (matmul.cpp)
#else
#include <cublasLt.h>
#include <cuda_runtime.h>
#endif

#include <stag/ops/cuda_launch.hpp>
#include <stag/runtime/device.hpp>

namespace stag::STAG_CUDA_NAMESPACE {

// Throws a stag::Error naming `what` when a CUDA runtime call failed.
void check(cudaError_t e, const char* what);

class Backend final : public DeviceBackend {
 public:
  Backend();
  ~Backend() override;
#if defined(STAG_CUDA_INTERPRET)
  Device device() const override {
    return Device::cuda_interpret;
  }
#else
  Device device() const override {
    return Device::cuda;
  }
#endif
  std::string describe() const override {
    return describe_;
  }
  void* alloc(std::size_t bytes) override;
  void free(void* p) noexcept override;
  void to_device(void* dst, const void* src, std::size_t bytes) override;
  void to_host(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override;
  std::uint8_t strided(OpId op) const override;
  std::unique_ptr<DevicePlanState> plan_state(const GraphView& g, int nodes, bool tf32,
                                              bool graphs) override;
  std::unique_ptr<Kernel> make_kernel(const KernelNode& n, DevicePlanState& s) override;
  void finish_step(DevicePlanState& s) override;
  void begin_step(DevicePlanState& s, const RunState& state) override;
  void run_step(DevicePlanState& s, const StepKey& key,
                const std::function<void()>& enqueue) override;

  cudaStream_t stream() const {
    return stream_;
  }
#if !defined(STAG_CUDA_INTERPRET)
  cublasLtHandle_t blas() const {
    return blas_;
  }
  void* blas_workspace() const {
    return blas_ws_;
  }
  static constexpr std::size_t kBlasWorkspace = std::size_t{32} << 20;
#endif

 private:
  cudaStream_t stream_ = nullptr;
#if !defined(STAG_CUDA_INTERPRET)
  cublasLtHandle_t blas_ = nullptr;
  void* blas_ws_ = nullptr;
#endif
  std::string describe_;
};

}  // namespace stag::STAG_CUDA_NAMESPACE
