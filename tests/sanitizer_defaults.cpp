// Defaults for the sanitizer build (STAG_SANITIZE): LeakSanitizer suppressions for leaks inside
// Graphviz 2.42 and the font libraries under it. Measured by rendering one graph 1 and 20 times:
// stag frees every object Graphviz hands it (runtime/viz/render.cpp), but dot's cluster layout and
// its HTML-label parser leak per render, and fontconfig/pango keep process-wide caches. A leak of
// ours (an unclosed graph, unfreed render data) is still reported. Compiles to nothing otherwise.
#if defined(__SANITIZE_ADDRESS__)
#define STAG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STAG_ASAN 1
#endif
#endif

#ifdef STAG_ASAN
extern "C" {
// Full unwinding, so that suppressions can match frames inside libraries built without frame
// pointers (Graphviz, pango).
const char* __asan_default_options() {
  return "fast_unwind_on_malloc=0";
}
const char* __lsan_default_suppressions() {
  return "leak:dot_mincross\n"
         "leak:dot_position\n"
         "leak:make_html_label\n"
         "leak:pango_parse_markup\n"
         "leak:libfontconfig.so\n"
         "leak:libpangoft2\n"
         "leak:pango_font_map_load_fontset\n"
         "leak:pango_itemize\n"
         "leak:gvconfig\n";
}
}
#endif

// ThreadSanitizer (STAG_TSAN): libtbb and libgomp are not instrumented, so their own task
// objects and barriers look racy; runtime/plan.cpp tells TSan about the flow graph's edges, and
// these suppressions drop reports whose racing frames are inside TBB's headers or libraries.
#if defined(__SANITIZE_THREAD__)
#define STAG_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STAG_TSAN 1
#endif
#endif

#ifdef STAG_TSAN
extern "C" const char* __tsan_default_suppressions() {
  return "race:libtbb.so\n"
         "race:libgomp.so\n"
         "called_from_lib:libtbb.so\n"
         "called_from_lib:libgomp.so\n";
}
#endif
