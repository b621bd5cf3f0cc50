// Fuzzes the libsvm line parser: any line gives an example or an error.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/formats/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static clickd::LabeledExample example;  // reused, as the reader does
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  if (clickd::ParseLine(clickd::InputFormat::kLibsvm, line, &example).ok()) {
    // Accepted values are finite: the parsers promise it.
    if (!std::isfinite(example.label) || !std::isfinite(example.importance)) std::abort();
    for (const auto& ns : example.example.namespaces) {
      for (const auto& f : ns.features) {
        if (!std::isfinite(f.value)) std::abort();
      }
    }
  }
  return 0;
}
