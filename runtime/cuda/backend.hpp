// The CUDA device backend: one stream, the device allocator, cuBLASLt's handle and workspace.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include <stag/runtime/device.hpp>

namespace stag::cuda {

// Throws a stag::Error naming `what` when a CUDA runtime call failed.
void check(cudaError_t e, const char* what);

class Backend final : public DeviceBackend {
 public:
  Backend();
  ~Backend() override;
  Device device() const override { return Device::cuda; }
  std::string describe() const override { return describe_; }
  void* alloc(std::size_t bytes) override;
  void free(void* p) noexcept override;
  void to_device(void* dst, const void* src, std::size_t bytes) override;
  void to_host(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override;
  std::uint8_t strided(OpId op) const override;
  std::unique_ptr<DevicePlanState> plan_state(const GraphView& g, int nodes, bool tf32) override;
  std::unique_ptr<CpuKernel> make_kernel(const CpuNode& n, DevicePlanState& s) override;
  void finish_step(DevicePlanState& s) override;

  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t blas() const { return blas_; }
  void* blas_workspace() const { return blas_ws_; }
  static constexpr std::size_t kBlasWorkspace = std::size_t{32} << 20;

 private:
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  void* blas_ws_ = nullptr;
  std::string describe_;
};

}  // namespace stag::cuda
