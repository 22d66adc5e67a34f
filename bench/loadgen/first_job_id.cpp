#include "loadgen/first_job_id.hpp"

#include <nlohmann/json.hpp>

#include <vector>

namespace ojs::bench {

namespace {

// Follows the path of keys and array positions from the root; keeps the string at
// <jobs>[0].id, where <jobs> is "jobs" or "fetch"."jobs".
class FirstJobId : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit FirstJobId(JobsAt where) : where_(where) {}
  std::string id;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t& s) override {
    if (at_id()) id = s;
    return value();
  }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    value();
    frames_.push_back({false, 0, {}});
    return true;
  }
  bool key(string_t& k) override {
    frames_.back().key = k;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    frames_.push_back({true, -1, {}});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    id.clear();
    return false;
  }

 private:
  struct Frame {
    bool array;
    long index;       // arrays: the position of the value being read
    std::string key;  // objects: the key of the value being read
  };
  // A value starts in the innermost frame: an array moves to its next position.
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  // Is the string being read <jobs>[0].id?
  bool at_id() const {
    const std::size_t depth = where_ == JobsAt::top ? 3 : 4;  // root {, [jobs], {job}
    if (frames_.size() != depth) return false;
    const auto& root = frames_[0];
    if (where_ == JobsAt::fetch && (root.array || root.key != "fetch" || frames_[1].array)) return false;
    const auto& holder = frames_[depth - 3];
    const auto& jobs = frames_[depth - 2];
    const auto& job = frames_[depth - 1];
    return !holder.array && holder.key == "jobs" && jobs.array && jobs.index == 0 && !job.array && job.key == "id";
  }
  JobsAt where_;
  std::vector<Frame> frames_;
};

}  // namespace

std::string first_job_id(std::string_view reply, JobsAt where) {
  FirstJobId sax(where);
  if (!nlohmann::json::sax_parse(reply.begin(), reply.end(), &sax)) return {};
  return sax.id;
}

}  // namespace ojs::bench
