// tests/harness/test_host_topology.cpp — host_topology() (hwloc) against what Linux
// itself says in /proc/cpuinfo and /sys (packages, cores, hardware threads, NUMA nodes,
// cpu0's caches), and cpu_frequency() on real and imitated /sys and /proc folders.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "harness/host_topology.h"

namespace tb {
namespace {

namespace fs = std::filesystem;

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

struct CpuinfoCounts {
  int processors = 0;
  std::set<std::string> packages;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
};

CpuinfoCounts read_cpuinfo() {
  CpuinfoCounts c;
  std::ifstream in("/proc/cpuinfo");
  std::string physical;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = line.substr(line.find_first_not_of(' ', colon + 1) == std::string::npos
                                              ? line.size() : line.find_first_not_of(' ', colon + 1));
    if (key == "processor") ++c.processors;
    if (key == "physical id") physical = value, c.packages.insert(value);
    if (key == "core id") c.cores.insert({physical, value});
  }
  return c;
}

TEST(HostTopology, MatchesProcCpuinfo) {
  const HostTopology t = host_topology();
  if (!t.available) GTEST_SKIP() << t.why_not;
  const CpuinfoCounts c = read_cpuinfo();
  ASSERT_GT(c.processors, 0) << "no /proc/cpuinfo";
  EXPECT_EQ(t.pus, c.processors);
  if (!c.packages.empty()) {
    EXPECT_EQ(t.sockets, static_cast<int>(c.packages.size()));
  }
  if (!c.cores.empty()) {
    EXPECT_EQ(t.cores, static_cast<int>(c.cores.size()));
    EXPECT_EQ(t.threads_per_core, (c.processors + t.cores - 1) / t.cores);
  }
  EXPECT_GE(t.allowed_pus, 1);
  EXPECT_LE(t.allowed_pus, t.pus);
  EXPECT_FALSE(t.hwloc_version.empty());
}

TEST(HostTopology, NumaNodesMatchSys) {
  const HostTopology t = host_topology();
  if (!t.available) GTEST_SKIP() << t.why_not;
  int nodes = 0;
  if (fs::exists("/sys/devices/system/node"))
    for (const auto& e : fs::directory_iterator("/sys/devices/system/node"))
      if (e.path().filename().string().rfind("node", 0) == 0 &&
          e.path().filename().string().find_first_not_of("0123456789", 4) == std::string::npos)
        ++nodes;
  EXPECT_EQ(t.numa_nodes, nodes > 0 ? nodes : 1);  // hwloc reports one node where the OS has none
}

// cpu0's caches as the kernel lists them (level, type, size): hwloc must have each.
TEST(HostTopology, CachesMatchSysForCpu0) {
  const HostTopology t = host_topology();
  if (!t.available) GTEST_SKIP() << t.why_not;
  const fs::path dir = "/sys/devices/system/cpu/cpu0/cache";
  if (!fs::exists(dir)) GTEST_SKIP() << "no " << dir;
  const std::map<std::string, std::string> types = {{"Data", "data"}, {"Instruction", "instruction"},
                                                    {"Unified", "unified"}};
  int checked = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("index", 0) != 0) continue;
    const int level = std::stoi(first_line(e.path() / "level"));
    const std::string type = types.at(first_line(e.path() / "type"));
    std::string size = first_line(e.path() / "size");  // "48K", "32768K"
    int64_t bytes = std::stoll(size);
    if (size.back() == 'K') bytes <<= 10;
    if (size.back() == 'M') bytes <<= 20;
    bool found = false;
    for (const CacheLevel& c : t.caches)
      found |= c.level == level && c.type == type && c.size_bytes == bytes && c.instances >= 1;
    EXPECT_TRUE(found) << "L" << level << " " << type << " " << size << " not in hwloc's caches";
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(CpuFrequency, ReadsCpufreqWhereTheKernelHasIt) {
  const fs::path root = fs::path(TB_TEST_TMPDIR) / "fake-sysfs";
  fs::remove_all(root);
  const fs::path cpufreq = root / "sys/devices/system/cpu/cpu0/cpufreq";
  fs::create_directories(cpufreq);
  std::ofstream(cpufreq / "scaling_governor") << "performance\n";
  std::ofstream(cpufreq / "scaling_cur_freq") << "2400000\n";
  std::ofstream(cpufreq / "cpuinfo_max_freq") << "3500000\n";
  const CpuFrequency f = cpu_frequency(root.string());
  EXPECT_EQ(f.governor, "performance");
  EXPECT_DOUBLE_EQ(f.cur_mhz, 2400);
  EXPECT_DOUBLE_EQ(f.max_mhz, 3500);
  EXPECT_NE(f.source.find("cpufreq"), std::string::npos) << f.source;
  fs::remove_all(root);
}

TEST(CpuFrequency, FallsBackToProcCpuinfoAndSaysSo) {
  const fs::path root = fs::path(TB_TEST_TMPDIR) / "fake-proc";
  fs::remove_all(root);
  fs::create_directories(root / "proc");
  std::ofstream(root / "proc/cpuinfo") << "processor\t: 0\ncpu MHz\t\t: 2596.098\n";
  const CpuFrequency f = cpu_frequency(root.string());
  EXPECT_EQ(f.governor, "");
  EXPECT_DOUBLE_EQ(f.cur_mhz, 2596.098);
  EXPECT_EQ(f.max_mhz, -1);
  EXPECT_NE(f.source.find("no cpufreq"), std::string::npos) << f.source;
  fs::remove_all(root / "proc");
  EXPECT_NE(cpu_frequency(root.string()).source.find("not readable"), std::string::npos);
  fs::remove_all(root);
}

TEST(CpuFrequency, ThisMachineSaysWhereItsNumbersCameFrom) {
  const CpuFrequency f = cpu_frequency();
  EXPECT_FALSE(f.source.empty());
  if (f.cur_mhz >= 0) {
    EXPECT_GT(f.cur_mhz, 1);
  }
}

}  // namespace
}  // namespace tb
