// Private helpers for reading validated values out of JSON documents. Each reader
// throws ojs::invalid_field(path, rule) with the rule spelled the same way
// everywhere, so producers and workers see consistent messages.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ojs/ml/types.hpp"

namespace ojs::ml {

struct Field {
  const nlohmann::json* value = nullptr;
  std::string path;  // as the sender spelled it: "ext_ml_gpu_count", "capabilities.gpu.count"
};

inline constexpr long long kNoMax = std::numeric_limits<int>::max();

// Integral JSON numbers (2 or 2.0, as JSON Schema counts them) within [lo, hi].
int read_int(const Field& f, long long lo, long long hi = kNoMax);
double read_number(const Field& f, double lo, double hi = 1e15);
bool read_bool(const Field& f);
std::string read_string(const Field& f, std::size_t max_len = 1024);
std::string read_enum(const Field& f, std::initializer_list<std::string_view> allowed);
std::vector<std::string> read_string_list(const Field& f);
Labels read_string_map(const Field& f);

// Member `name` of object f (which must be an object); value null when absent.
Field member(const Field& f, std::string_view name);

bool parse_double(const std::string& s, double& out);

// One worker-info style label entry: "k=v" -> {k, v}; a bare flag -> {flag, "true"}.
std::pair<std::string, std::string> split_label(const std::string& entry);

}  // namespace ojs::ml

namespace ojs::ml {
// Integral values as JSON integers (80, not 80.0) so canonical dumps are stable.
nlohmann::json canonical_number(double v);
}  // namespace ojs::ml
