// stag-generate (apps/stag_generate.cpp) with the library's presets.
#include "generate_main.hpp"

int main(int argc, char** argv) {
  return stag::generate_main(argc, argv);
}
