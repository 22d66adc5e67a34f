#include "worker/config/json_file.hpp"
#include "worker/execution/model_integrity.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

namespace ojs::worker {
namespace {

constexpr const char* kAbcSha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

class ModelIntegrityTest : public ::testing::Test {
 protected:
  testing::ScratchDir dir_{"model"};
  WorkerConfig config_;
  ModelVerifier verifier_;

  void SetUp() override {
    config_.models_dir = dir_.path().string();
    write_text_file_atomically((dir_.path() / "tiny-model").string(), "abc");
  }
  JobView job_with(const std::string& checksum, const std::string& model_id = "tiny-model") {
    JobView job;
    job.id = "j";
    job.model_id = model_id;
    job.model_checksum = checksum;
    return job;
  }
};

TEST_F(ModelIntegrityTest, StreamsSha256OfAFile) {
  EXPECT_EQ(file_digest_hex((dir_.path() / "tiny-model").string()), kAbcSha256);
  EXPECT_THROW(file_digest_hex((dir_.path() / "missing").string()), std::runtime_error);
  EXPECT_THROW(file_digest_hex((dir_.path() / "tiny-model").string(), "nosuchalgo"), std::runtime_error);
}

TEST_F(ModelIntegrityTest, MatchingChecksumPasses) {
  EXPECT_FALSE(verifier_.check(job_with(std::string("sha256:") + kAbcSha256), config_).has_value());
  EXPECT_FALSE(verifier_.check(job_with(std::string("SHA256:") + kAbcSha256), config_).has_value());
}

TEST_F(ModelIntegrityTest, MismatchIsANonRetryableError) {
  const auto error = verifier_.check(job_with("sha256:" + std::string(64, '0')), config_);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ((*error)["code"], "model_checksum_mismatch");
  EXPECT_EQ((*error)["retryable"], false);
  EXPECT_EQ((*error)["details"]["actual"], std::string("sha256:") + kAbcSha256);
}

TEST_F(ModelIntegrityTest, ChangedFileIsHashedAgain) {
  const auto good = job_with(std::string("sha256:") + kAbcSha256);
  EXPECT_FALSE(verifier_.check(good, config_).has_value());
  write_text_file_atomically((dir_.path() / "tiny-model").string(), "abcd");
  EXPECT_TRUE(verifier_.check(good, config_).has_value());
}

TEST_F(ModelIntegrityTest, FileUriWinsAndRemoteWeightsAreSkipped) {
  auto job = job_with("sha256:" + std::string(64, '0'), "not-local");
  EXPECT_FALSE(verifier_.check(job, config_).has_value());  // nothing local to verify
  job.model_registry_uri = "file://" + (dir_.path() / "tiny-model").string();
  EXPECT_EQ(local_model_path(job, config_), (dir_.path() / "tiny-model").string());
  EXPECT_TRUE(verifier_.check(job, config_).has_value());
}

}  // namespace
}  // namespace ojs::worker
