// Checkpoint storage URIs: normalised before any prefix comparison.
#include <gtest/gtest.h>

#include "ojs/ml/storage_uri.hpp"

using ojs::ml::is_safe_relative_key;
using ojs::ml::normalise_storage_uri;
using ojs::ml::storage_uri_allowed;

TEST(StorageUri, NormalisesDotsAndDoubleSlashesAndRefusesOtherShapes) {
  EXPECT_EQ(normalise_storage_uri("s3://b/a/./c//d/"), "s3://b/a/c/d/");
  EXPECT_EQ(normalise_storage_uri("s3://b"), "s3://b/");
  EXPECT_EQ(normalise_storage_uri("file:///data/ck/"), "file:///data/ck/");
  for (const char* bad : {"s3:/evil/x", "s3:evil/x", "file:/etc/passwd", "//evil/x", "s3://b/../evil/", "http://b/x",
                          "s3:///nobucket/", "file://host/x", "s3://user@b/x", "s3://b/a\\..\\x", "S3://b/x"})
    EXPECT_FALSE(normalise_storage_uri(bad)) << bad;
}

TEST(StorageUri, PrefixesMatchOnSegmentBoundariesAfterNormalising) {
  const std::vector<std::string> prefixes = {"s3://allowed/", "gs://team/ckpt"};
  EXPECT_TRUE(storage_uri_allowed("s3://allowed/run/1", prefixes));
  EXPECT_TRUE(storage_uri_allowed("s3://allowed//run/./1", prefixes));
  EXPECT_TRUE(storage_uri_allowed("gs://team/ckpt/x", prefixes));
  EXPECT_TRUE(storage_uri_allowed("gs://team/ckpt", prefixes));
  EXPECT_FALSE(storage_uri_allowed("gs://team/ckptx/y", prefixes));
  EXPECT_FALSE(storage_uri_allowed("s3://allowedx/", prefixes));
  EXPECT_FALSE(storage_uri_allowed("s3://allowed/../../evil/", prefixes));
  EXPECT_FALSE(storage_uri_allowed("s3:/allowed/x", prefixes));
}

TEST(StorageUri, RelativeKeysStayRelative) {
  EXPECT_TRUE(is_safe_relative_key("ckpt/step-10"));
  EXPECT_TRUE(is_safe_relative_key("a/./b"));
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../b", "s3:evil", "c:\\x", "..", "./"})
    EXPECT_FALSE(is_safe_relative_key(bad)) << bad;
}
