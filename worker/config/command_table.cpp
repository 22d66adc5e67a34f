#include "worker/config/command_table.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace ojs::worker {

CommandSpec shell_command(const std::string& command_line) { return CommandSpec{{"/bin/sh", "-c", command_line}}; }

CommandSpec command_from_json(const nlohmann::json& value) {
  if (value.is_string()) return shell_command(value.get<std::string>());
  if (value.is_array() && !value.empty()) return CommandSpec{value.get<std::vector<std::string>>()};
  throw std::invalid_argument("a command is a shell string or a non-empty array of arguments");
}

std::pair<std::string, CommandSpec> parse_command_assignment(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == assignment.size())
    throw std::invalid_argument("expected TYPE=COMMAND, got '" + assignment + "'");
  return {assignment.substr(0, eq), shell_command(assignment.substr(eq + 1))};
}

const CommandSpec* resolve_command(const CommandTable& table, std::string_view job_type) {
  if (auto exact = table.find(std::string(job_type)); exact != table.end()) return &exact->second;
  const CommandSpec* best = nullptr;
  std::size_t best_prefix_length = 0;
  for (const auto& [pattern, command] : table) {
    if (pattern.empty() || pattern.back() != '*') continue;
    const std::string_view prefix(pattern.data(), pattern.size() - 1);
    if (job_type.substr(0, prefix.size()) != prefix) continue;
    if (!best || prefix.size() > best_prefix_length) {
      best = &command;
      best_prefix_length = prefix.size();
    }
  }
  return best;
}

}  // namespace ojs::worker
