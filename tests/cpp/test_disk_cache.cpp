// The persistent compile cache (export/disk_cache.h) from a C++ program with no Python: a joint
// forward+backward graph compiled through the cache is read back from disk (forward, backward
// and num_saved), runs with the values worked out by hand (y = sum(x * w): dy/dx = w, dy/dw = x),
// and a truncated entry is ignored and rewritten. The Python tests
// (tests/python/test_compile_disk_cache.py) cover damaged entries, eviction and processes.
#include <gtest/gtest.h>

#include "compile_test_util.h"
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "lucid/compile/export/disk_cache.h"
#include "lucid/compile/ir/graph.h"

using namespace lucid;
using lucid::test::expect_values;
using lucid::test::kJoint;
using lucid::test::vec;

namespace {

// Runs the pair: y, then the gradients for a grad output of 2.
void check_runs(const rt::JointCompileResult& r) {
  Tensor x = vec({1, 2, 3}), w = vec({4, 5, 6});
  TensorList f = r.forward.exe->run({x}, {w});
  ASSERT_EQ(f.size(), static_cast<size_t>(1 + r.num_saved));
  expect_values(f[0], {32});  // 1*4 + 2*5 + 3*6
  TensorList bin(f.begin() + 1, f.end());
  Tensor gy = Tensor::empty({}, DType::Float32);
  *gy.data<float>() = 2;
  bin.push_back(gy);
  TensorList g = r.backward.exe->run(bin, {w});
  ASSERT_EQ(g.size(), 2u);
  expect_values(g[0], {8, 10, 12});
  expect_values(g[1], {2, 4, 6});
}

struct TempCacheDir {
  std::string dir;
  TempCacheDir() {
    char tmpl[] = "/tmp/lucid-disk-cache-test-XXXXXX";
    dir = ::mkdtemp(tmpl);
    ::setenv("LUCID_COMPILE_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCacheDir() {
    ::unsetenv("LUCID_COMPILE_CACHE_DIR");
    std::filesystem::remove_all(dir);
  }
  std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> v;
    for (const auto& e : std::filesystem::directory_iterator(dir)) v.push_back(e.path());
    return v;
  }
};

}  // namespace

TEST(DiskCache, JointEntryRoundTripsAndDamagedEntryIsReplaced) {
  TempCacheDir tmp;
  ir::Graph joint = ir::parse(kJoint);
  rt::JointCompileResult first = artifact::compile_joint_cached(joint, 1, 1, "");
  EXPECT_FALSE(first.forward.from_disk);
  check_runs(first);
  ASSERT_EQ(tmp.entries().size(), 1u);

  rt::clear_executable_cache();  // what runs next is the program read from disk
  rt::JointCompileResult second = artifact::compile_joint_cached(joint, 1, 1, "");
  EXPECT_TRUE(second.forward.from_disk && second.backward.from_disk);
  EXPECT_EQ(second.num_saved, first.num_saved);
  EXPECT_EQ(second.forward.stats.nodes_after, first.forward.stats.nodes_after);
  EXPECT_EQ(second.backward.stats.nodes_before, first.backward.stats.nodes_before);
  check_runs(second);

  // The same graph compiled as a plain graph is another key.
  rt::CompileResult plain = artifact::compile_graph_cached(joint, "");
  EXPECT_FALSE(plain.from_disk);
  EXPECT_EQ(tmp.entries().size(), 2u);

  std::filesystem::path entry = tmp.entries()[0];
  for (const auto& p : tmp.entries())
    if (std::filesystem::file_size(p) > std::filesystem::file_size(entry)) entry = p;  // the joint one: two programs
  std::filesystem::resize_file(entry, std::filesystem::file_size(entry) / 2);
  rt::clear_executable_cache();
  rt::JointCompileResult third = artifact::compile_joint_cached(joint, 1, 1, "");
  EXPECT_FALSE(third.forward.from_disk);
  check_runs(third);
  rt::JointCompileResult fourth = artifact::compile_joint_cached(joint, 1, 1, "");
  EXPECT_TRUE(fourth.forward.from_disk);
  EXPECT_EQ(tmp.entries().size(), 2u);
}

TEST(DiskCache, DumpIrAndDisabledBypassTheCache) {
  TempCacheDir tmp;
  ir::Graph joint = ir::parse(kJoint);
  ::setenv("LUCID_COMPILE_CACHE_DIR", "0", 1);
  EXPECT_FALSE(artifact::compile_joint_cached(joint, 1, 1, "").forward.from_disk);
  EXPECT_FALSE(artifact::compile_joint_cached(joint, 1, 1, "").forward.from_disk);
  EXPECT_TRUE(tmp.entries().empty());
  ::setenv("LUCID_COMPILE_CACHE_DIR", tmp.dir.c_str(), 1);
  artifact::compile_joint_cached(joint, 1, 1, "");
  EXPECT_EQ(tmp.entries().size(), 1u);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(artifact::compile_joint_cached(joint, 1, 1, "cse").forward.from_disk);  // LUCID_DUMP_IR=cse
  EXPECT_NE(testing::internal::GetCapturedStderr().find("after cse"), std::string::npos);
}
