// A plain oneDNN f32 matmul outside stag: the ceiling that stag-bench prints as
// bench.peak.matmul_gflops, so that a reader can tell a slow machine from a slow runtime.
#include <memory>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench_models.hpp"

namespace stag::bench {

std::function<void()> onednn_matmul(std::int64_t n) {
  struct State {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{eng};
    dnnl::memory a, b, c;
    dnnl::matmul prim;
  };
  auto s = std::make_shared<State>();
  const dnnl::memory::desc md({n, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  s->a = dnnl::memory(md, s->eng);
  s->b = dnnl::memory(md, s->eng);
  s->c = dnnl::memory(md, s->eng);
  for (dnnl::memory* mem : {&s->a, &s->b}) {
    auto* p = static_cast<float*>(mem->get_data_handle());
    for (std::int64_t i = 0; i < n * n; ++i) p[i] = static_cast<float>((i % 7) - 3) * 0.25f;
  }
  s->prim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), s->eng));
  return [s] {
    s->prim.execute(s->stream,
                    {{DNNL_ARG_SRC, s->a}, {DNNL_ARG_WEIGHTS, s->b}, {DNNL_ARG_DST, s->c}});
    s->stream.wait();
  };
}

}  // namespace stag::bench
