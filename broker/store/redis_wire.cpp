#include "broker/store/redis_wire.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <memory>

namespace ojs::broker {

namespace {

// hiredis's reader builds each reply straight into a RedisValue: no redisReply
// tree (one calloc per element, one malloc per string) to copy and free after.
// A nested value lives in its parent's elements, sized when the array header
// is read; only the root is allocated, and hiredis frees only roots.
RedisValue* place(const redisReadTask* task) {
  if (task->parent) return &static_cast<RedisValue*>(task->parent->obj)->elements[static_cast<std::size_t>(task->idx)];
  return new RedisValue;
}

void* create_string(const redisReadTask* task, char* str, size_t len) {
  RedisValue* v = place(task);
  v->type = task->type == REDIS_REPLY_ERROR    ? RedisValue::Type::error
            : task->type == REDIS_REPLY_STATUS ? RedisValue::Type::status
                                               : RedisValue::Type::string;
  v->str.assign(str, len);
  return v;
}

void* create_array(const redisReadTask* task, int elements) {
  RedisValue* v = place(task);
  v->type = RedisValue::Type::array;
  v->elements.resize(static_cast<std::size_t>(std::max(0, elements)));
  return v;
}

void* create_integer(const redisReadTask* task, long long value) {
  RedisValue* v = place(task);
  v->type = RedisValue::Type::integer;
  v->integer = value;
  return v;
}

void* create_nil(const redisReadTask* task) {
  RedisValue* v = place(task);
  v->type = RedisValue::Type::nil;
  return v;
}

void free_value(void* root) { delete static_cast<RedisValue*>(root); }

redisReplyObjectFunctions value_functions{create_string, create_array, create_integer, create_nil, free_value};

}  // namespace

void use_value_replies(redisContext* ctx) { ctx->reader->fn = &value_functions; }

RedisValue take_value(void* reply) {
  std::unique_ptr<RedisValue> root(static_cast<RedisValue*>(reply));
  return std::move(*root);
}

// The commands in RESP (arrays of bulk strings), formatted here and handed to
// hiredis in one piece: redisAppendCommandArgv formats every argument with
// sdscatfmt, which parses a format string per argument (7% of the broker's
// instructions under FETCH+ACK load, a job's document being one argument).
void append_commands(redisContext* ctx, const std::vector<std::vector<std::string>>& commands) {
  std::size_t size = 0;
  for (const auto& argv : commands) {
    size += 16;
    for (const auto& a : argv) size += a.size() + 24;
  }
  std::string out;
  out.reserve(size);
  const auto put_length = [&out](char mark, std::size_t n) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out.push_back(mark);
    out.append(digits, end);
    out.append("\r\n", 2);
  };
  for (const auto& argv : commands) {
    put_length('*', argv.size());
    for (const auto& a : argv) {
      put_length('$', a.size());
      out.append(a);
      out.append("\r\n", 2);
    }
  }
  redisAppendFormattedCommand(ctx, out.data(), out.size());
}


}  // namespace ojs::broker
