// Annotations for graph pictures from a Session that has run: its memory plan, the kernel each
// node runs, and the time each node took. Pass them as DotOptions::annotations:
//   auto o = stag::dot_options(); o.annotations = stag::time_annotations(session);
//   stag::draw(session.graph(), "time.svg", o);
// To annotate another per-node fact, write a function like these (DotAnnotations is keyed by node).
#pragma once

#include <stag/graph/dot.hpp>

namespace stag {

class Session;

// Per node: its arena buffer, the buffer's offset and the node's bytes, "in place" when it
// overwrites an input, "view" when it aliases its input's memory; parameters live outside the
// arena. Heat: the node's bytes as a share of the largest. The title gives the arena's peak
// and the total without reuse.
DotAnnotations plan_annotations(const Session& s);

// Per node: the kernel the CPU backend chose ("onednn matmul (brg:avx512_core)", "own masked
// softmax", "reference", "view"). Nodes that fall back to the reference kernel get heat 1 (red).
DotAnnotations kernel_annotations(const Session& s);

// Per node: mean milliseconds per step over the profiled steps and the share of the step's
// total; heat = time / the slowest node's, so the slowest is outlined in red. The session must
// have run with SessionOptions::profile (stag::Error otherwise).
DotAnnotations time_annotations(const Session& s);

}  // namespace stag
