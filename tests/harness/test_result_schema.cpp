// tests/harness/test_result_schema.cpp — the CSV schema table (harness/result_schema.h):
// the header is the table, every knob is a column, units are in the names, knob cells
// are empty where the backend does not honour them, traits come from the backends,
// curves carry the configuration, and `trainbench schema` prints the table.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/backend.h"
#include "harness/result_schema.h"
#include "tests/shell.h"

namespace tb {
namespace {

size_t index_of(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  ADD_FAILURE() << "no column " << name;
  return 0;
}

std::string cell(const ResultRow& r, const std::string& name) {
  return result_fields(r)[index_of(results_header(), name)];
}

ResultRow row(const std::string& backend) {
  ResultRow r;
  r.config.backend = backend;
  r.config.workload = "w";
  r.has_metrics = true;
  return r;
}

TEST(Schema, TheHeaderIsTheTableWithUniqueNamesAndUnitsInThem) {
  std::set<std::string> seen;
  for (const Column& c : result_columns()) {
    EXPECT_TRUE(seen.insert(c.name).second) << "duplicate column " << c.name;
    EXPECT_TRUE(c.get) << c.name;
    const std::string n = c.name, u = c.unit;
    const auto ends = [&](const std::string& s) { return n.size() > s.size() && n.rfind(s) == n.size() - s.size(); };
    if (u == "s") {
      EXPECT_TRUE(ends("_s")) << n;
    }
    if (u == "bytes") {
      EXPECT_TRUE(ends("_bytes") || ends("_bytes_per_step")) << n;
    }
    if (u == "samples/s") {
      EXPECT_TRUE(ends("_per_s")) << n;
    }
    if (u == "GB/s") {
      EXPECT_TRUE(ends("_gbps")) << n;
    }
    if (u == "MiB") {
      EXPECT_TRUE(ends("_mb")) << n;
    }
  }
  EXPECT_EQ(results_header().size(), result_columns().size());
  EXPECT_EQ(results_header().front(), "schema_version");
  EXPECT_EQ(results_header().back(), "status");
  EXPECT_EQ(result_fields(row("cpu-omp")).size(), results_header().size());
  EXPECT_EQ(cell(row("cpu-omp"), "schema_version"), std::to_string(kSchemaVersion));
}

TEST(Schema, EveryKnobIsAColumnAndEveryConfigurationColumnIsInCurves) {
  for (const KnobDef& k : knob_defs()) {
    bool found = false;
    for (const Column& c : result_columns()) found |= (c.knobs & k.bit) != 0;
    EXPECT_TRUE(found) << k.flag << " has no column";
  }
  const std::vector<std::string> curves = curves_header();
  for (const Column& c : result_columns()) {
    if (is_configuration(c.role)) {
      EXPECT_NO_FATAL_FAILURE(index_of(curves, c.name));
    }
  }
  for (const char* name : {"schema_version", "run_id", "repetition", "epoch", "train_loss", "shuffle", "warmup"}) {
    EXPECT_NO_FATAL_FAILURE(index_of(curves, name));
  }
}

TEST(Schema, KnobCellsAreEmptyWhereTheBackendDoesNotHonourThemUnlessAskedFor) {
  ResultRow omp = row("cpu-omp");
  EXPECT_EQ(cell(omp, "data_placement"), "");
  EXPECT_EQ(cell(omp, "cuda_graph"), "");
  EXPECT_EQ(cell(omp, "bucket_mb"), "");
  EXPECT_EQ(cell(omp, "shuffle"), "false");  // applies to every backend
  omp.config.shuffle = true;
  omp.config.warmup = 4;
  EXPECT_EQ(cell(omp, "shuffle"), "true");
  EXPECT_EQ(cell(omp, "warmup"), "4");
  omp.config.cuda_graph = true;  // asked of a backend that ignores it: the row is skipped, the cell says so
  EXPECT_EQ(cell(omp, "cuda_graph"), "true");
  ResultRow ddp = row("cpu-ddp");
  ddp.config.bucket_mb = 2.5;
  ddp.config.overlap = false;
  EXPECT_EQ(cell(ddp, "bucket_mb"), "2.5");
  EXPECT_EQ(cell(ddp, "overlap"), "false");
  EXPECT_EQ(cell(ddp, "deterministic"), "false");
  ResultRow dp = row("cuda-dp");
  dp.config.dp_devices = {0, 0, 1};
  EXPECT_EQ(cell(dp, "dp_devices"), "0,0,1");
  EXPECT_EQ(cell(dp, "dp_mode"), "faithful");
  EXPECT_EQ(cell(dp, "data_placement"), "");
}

TEST(Schema, TraitColumnsComeFromTheBackendsTraits) {
  for (const auto& b : all_backends()) {
    const BackendTraits t = b->traits();
    const ResultRow r = row(b->name());
    EXPECT_EQ(cell(r, "implementation"), "trainbench");
    EXPECT_EQ(cell(r, "device_kind"), device_kind_name(t.device)) << b->name();
    EXPECT_EQ(cell(r, "parallelism"), parallelism_name(t.parallelism)) << b->name();
    EXPECT_EQ(cell(r, "scaling_base"), t.scaling_base) << b->name();
    EXPECT_EQ(cell(r, "oracle"), t.oracle ? "true" : "false") << b->name();
  }
  EXPECT_EQ(cell(row("reference"), "oracle"), "true");
}

TEST(Schema, MetricCellsAreEmptyWithoutMetricsAndStringsAreValidUtf8) {
  ResultRow r = row("cpu-omp");
  r.has_metrics = false;
  r.status = "skipped: why";
  r.dataset_desc = "csv:/data/caf\xE9.csv";
  for (const Column& c : result_columns()) {
    if (c.role == ColumnRole::kMetric || c.role == ColumnRole::kPhase) {
      EXPECT_EQ(cell(r, c.name), "") << c.name;
    }
  }
  EXPECT_EQ(cell(r, "dataset"), "csv:/data/caf\xEF\xBF\xBD.csv");
  EXPECT_EQ(cell(r, "status"), "skipped: why");
}

TEST(Schema, CurveRowsCarryTheirConfiguration) {
  ResultRow r = row("cpu-omp");
  r.config.shuffle = true;
  r.world_size = 1;
  const CurvePoint p{2, 3, 0.25};
  const std::vector<std::string> h = curves_header(), f = curve_fields(r, p);
  ASSERT_EQ(f.size(), h.size());
  EXPECT_EQ(f[index_of(h, "shuffle")], "true");
  EXPECT_EQ(f[index_of(h, "backend")], "cpu-omp");
  EXPECT_EQ(f[index_of(h, "repetition")], "2");
  EXPECT_EQ(f[index_of(h, "epoch")], "3");
  EXPECT_EQ(f[index_of(h, "train_loss")], "0.25");
}

TEST(Schema, JsonAndMarkdownListEveryColumn) {
  const nlohmann::json j = nlohmann::json::parse(schema_json());
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  ASSERT_EQ(j["results"].size(), result_columns().size());
  ASSERT_EQ(j["curves"].size(), curve_columns().size());
  const std::string md = schema_markdown();
  for (size_t i = 0; i < result_columns().size(); ++i) {
    const Column& c = result_columns()[i];
    EXPECT_EQ(j["results"][i]["name"], c.name);
    EXPECT_EQ(j["results"][i]["type"], column_type_name(c.type));
    EXPECT_EQ(j["results"][i]["role"], column_role_name(c.role));
    EXPECT_NE(md.find(std::string("| ") + c.name + " |"), std::string::npos) << c.name;
  }
}

// ---- the executable --------------------------------------------------------------------

TEST(SchemaExe, SchemaCommandPrintsTheTable) {
  const test::ShellResult j = test::trainbench("schema --json");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_EQ(j.out, schema_json());
  const test::ShellResult md = test::trainbench("schema --markdown");
  ASSERT_EQ(md.code, 0) << md.out;
  EXPECT_EQ(md.out, schema_markdown());
  // Bad input names what was given (no flag said "(got '')").
  for (const auto& [args, got] : std::vector<std::pair<std::string, std::string>>{
           {"", "(got nothing)"}, {" --yaml", "(got '--yaml')"}, {" --json --markdown", "(got 2 arguments)"}}) {
    const test::ShellResult r = test::trainbench("schema" + args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_NE(r.out.find("schema: expected one of --markdown, --json " + got), std::string::npos) << r.out;
  }
  EXPECT_EQ(test::trainbench("schema --help").code, 0);
}

}  // namespace
}  // namespace tb
