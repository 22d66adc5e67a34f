#include "json_fields.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>

#include "ojs/core/error.hpp"

namespace ojs::ml {

int read_int(const Field& f, long long lo, long long hi) {
  const auto& v = *f.value;
  bool ok = v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (ok) {
    double d = v.get<double>();
    ok = d >= static_cast<double>(lo) && d <= static_cast<double>(hi);
  }
  if (!ok) {
    std::string rule = "must be an integer ";
    rule += hi == kNoMax ? ">= " + std::to_string(lo) : "between " + std::to_string(lo) + " and " + std::to_string(hi);
    throw invalid_field(f.path, rule);
  }
  return static_cast<int>(v.get<double>());
}

double read_number(const Field& f, double lo, double hi) {
  const auto& v = *f.value;
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi) {
    std::string rule = "must be a number ";
    rule += hi >= 1e15 ? ">= " + format_number(lo) : "between " + format_number(lo) + " and " + format_number(hi);
    throw invalid_field(f.path, rule);
  }
  return v.get<double>();
}

bool read_bool(const Field& f) {
  if (!f.value->is_boolean()) throw invalid_field(f.path, "must be a boolean");
  return f.value->get<bool>();
}

std::string read_string(const Field& f, std::size_t max_len) {
  if (!f.value->is_string()) throw invalid_field(f.path, "must be a string");
  const auto& s = f.value->get_ref<const std::string&>();
  if (s.size() > max_len) throw invalid_field(f.path, "must be at most " + std::to_string(max_len) + " characters");
  return s;
}

std::string read_enum(const Field& f, std::initializer_list<std::string_view> allowed) {
  if (f.value->is_string()) {
    const auto& s = f.value->get_ref<const std::string&>();
    for (auto a : allowed)
      if (a == s) return s;
  }
  std::string rule = "must be one of ";
  bool first = true;
  for (auto a : allowed) {
    rule += (first ? "" : ", ") + std::string(a);
    first = false;
  }
  throw invalid_field(f.path, rule);
}

std::vector<std::string> read_string_list(const Field& f) {
  if (!f.value->is_array()) throw invalid_field(f.path, "must be an array of strings");
  std::vector<std::string> out;
  out.reserve(f.value->size());
  for (const auto& item : *f.value) {
    if (!item.is_string()) throw invalid_field(f.path, "must be an array of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

Labels read_string_map(const Field& f) {
  if (!f.value->is_object()) throw invalid_field(f.path, "must be an object of string values");
  Labels out;
  for (auto it = f.value->begin(); it != f.value->end(); ++it) {
    if (!it.value().is_string()) throw invalid_field(f.path + "." + it.key(), "must be a string");
    out.emplace(it.key(), it.value().get<std::string>());
  }
  return out;
}

Field member(const Field& f, std::string_view name) {
  if (!f.value->is_object()) throw invalid_field(f.path, "must be an object");
  auto it = f.value->find(std::string(name));
  return {it == f.value->end() ? nullptr : &*it, f.path + "." + std::string(name)};
}

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

}  // namespace ojs::ml

namespace ojs::ml {
nlohmann::json canonical_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return static_cast<long long>(v);
  return v;
}

std::pair<std::string, std::string> split_label(const std::string& entry) {
  const auto eq = entry.find('=');
  if (eq == std::string::npos) return {entry, "true"};
  return {entry.substr(0, eq), entry.substr(eq + 1)};
}

}  // namespace ojs::ml
