#include "templates.hpp"

#include "json_path.hpp"

#include <regex>
#include <stdexcept>

namespace ojs::conformance {

using nlohmann::json;

Scope::Scope() : doc_{{"steps", json::object()}, {"ref", json::object()}} {}

void Scope::record_response(const std::string& step_id, long status, const std::map<std::string, std::string>& headers,
                            const json& body) {
  doc_["steps"][step_id] = {{"response", {{"status", status}, {"headers", headers}, {"body", body}}}};
}

void Scope::store(const std::string& name, const json& value) { doc_["ref"][name] = value; }

const json* Scope::find(const std::string& expression) const {
  std::string expr = expression;
  const auto first = expr.find_first_not_of(' ');
  const auto last = expr.find_last_not_of(' ');
  expr = first == std::string::npos ? "" : expr.substr(first, last - first + 1);
  if (expr.starts_with("$ref.")) expr = expr.substr(1);
  else if (expr.starts_with("captures.")) expr = "ref." + expr.substr(9);
  // "{{job_id}}": the extension cases name a capture bare.
  else if (!expr.starts_with("steps.") && !expr.starts_with("ref.") && expr.find_first_of(".[") == std::string::npos)
    expr = "ref." + expr;
  try {
    return lookup(doc_, expr);
  } catch (const std::invalid_argument&) {
    return nullptr;
  }
}

namespace {

// "{{expression}}", "$ref.name", and "${name}" (the durable-execution cases' spelling
// of a capture).
const std::regex& template_regex() {
  static const std::regex re(R"(\{\{([^{}]+)\}\}|\$ref\.([A-Za-z0-9_\-]+)|\$\{([A-Za-z0-9_\-]+)\})");
  return re;
}

std::string expression_of(const std::smatch& m) {
  if (m[1].matched) return m[1].str();
  return "ref." + (m[2].matched ? m[2].str() : m[3].str());
}

json lookup_or(const Scope& scope, const std::string& expression, const std::string& text, Unresolved mode) {
  if (const json* found = scope.find(expression)) return *found;
  if (mode == Unresolved::Null) return nullptr;
  throw std::runtime_error("unresolved template '" + text + "'");
}

json resolve_string(const std::string& text, const Scope& scope, const ResolveOptions& options) {
  std::smatch m;
  if (!std::regex_search(text, m, template_regex())) return text;
  if (m.position(0) == 0 && static_cast<std::size_t>(m.length(0)) == text.size()) {
    json value = lookup_or(scope, expression_of(m), text, options.unresolved);
    return options.literal_wrap ? json{{"$eq", std::move(value)}} : value;
  }
  std::string out;
  auto begin = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), template_regex()), end; it != end; ++it) {
    out.append(begin, text.cbegin() + it->position(0));
    const json value = lookup_or(scope, expression_of(*it), it->str(0), options.unresolved);
    out += value.is_string() ? value.get<std::string>() : value.dump();
    begin = text.cbegin() + it->position(0) + it->length(0);
  }
  out.append(begin, text.cend());
  return out;
}

// An object key is text: a template in it (a body assertion path such as
// "$.jobs[?(@.id=='{{steps.step-1.response.body.job.id}}')]") is spliced in.
std::string resolve_key(const std::string& key, const Scope& scope, ResolveOptions options) {
  options.literal_wrap = false;
  const json value = resolve_string(key, scope, options);
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

json resolve(const json& value, const Scope& scope, ResolveOptions options) {
  if (value.is_string()) return resolve_string(value.get_ref<const std::string&>(), scope, options);
  if (value.is_object()) {
    json out = json::object();
    for (const auto& [key, item] : value.items()) out[resolve_key(key, scope, options)] = resolve(item, scope, options);
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (const auto& item : value) out.push_back(resolve(item, scope, options));
    return out;
  }
  return value;
}

}  // namespace ojs::conformance
