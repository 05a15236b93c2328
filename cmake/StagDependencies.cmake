# The Debian-packaged dependencies, found the standard way for each.
find_package(Boost 1.74 REQUIRED)                     # Boost.Hana: config reflection
find_package(dnnl REQUIRED)                           # oneDNN 2.6: CPU primitives
find_package(TBB REQUIRED)                            # oneTBB: the runtime's scheduler
find_package(OpenMP REQUIRED)                         # intra-op threads, shared with oneDNN
find_package(nlohmann_json 3 REQUIRED)                # checkpoint headers, metrics lines
find_package(PkgConfig REQUIRED)
pkg_check_modules(GVC REQUIRED IMPORTED_TARGET libgvc libcgraph)  # Graphviz: pictures
find_package(nlohmann_json 3 REQUIRED)              # JSON: data sets, tokenisers (header-only)
