// A plain oneDNN matmul outside stag: the ceiling that stag-bench prints as
// bench.peak.matmul_gflops (f32) and bench.peak.matmul_bf16_gflops (bf16 operands, f32 product,
// as the autocast graphs run them), so that a reader can tell a slow machine from a slow runtime.
#include <cstdint>
#include <cstring>
#include <memory>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench_models.hpp"

namespace stag::bench {

std::function<void()> onednn_matmul(std::int64_t n, bool bf16) {
  struct State {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{eng};
    dnnl::memory a, b, c;
    dnnl::matmul prim;
  };
  auto s = std::make_shared<State>();
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc md({n, n}, dt::f32, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc in =
      bf16 ? dnnl::memory::desc({n, n}, dt::bf16, dnnl::memory::format_tag::ab) : md;
  s->a = dnnl::memory(in, s->eng);
  s->b = dnnl::memory(in, s->eng);
  s->c = dnnl::memory(md, s->eng);
  for (dnnl::memory* mem : {&s->a, &s->b}) {
    if (bf16) {  // the bf16 bits of (i % 7 - 3) / 4: exact in bf16
      auto* p = static_cast<std::uint16_t*>(mem->get_data_handle());
      for (std::int64_t i = 0; i < n * n; ++i) {
        const float f = static_cast<float>((i % 7) - 3) * 0.25f;
        std::uint32_t w;
        std::memcpy(&w, &f, 4);
        p[i] = static_cast<std::uint16_t>(w >> 16);
      }
      continue;
    }
    auto* p = static_cast<float*>(mem->get_data_handle());
    for (std::int64_t i = 0; i < n * n; ++i) p[i] = static_cast<float>((i % 7) - 3) * 0.25f;
  }
  s->prim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(in, in, md), s->eng));
  return [s] {
    s->prim.execute(s->stream,
                    {{DNNL_ARG_SRC, s->a}, {DNNL_ARG_WEIGHTS, s->b}, {DNNL_ARG_DST, s->c}});
    s->stream.wait();
  };
}

}  // namespace stag::bench
