// harness/result_row.cpp — ResultRow and CurvePoint as CSV fields, column by column
// from the schema table (harness/result_schema.cpp).
#include "harness/result_row.h"

#include "harness/disturbance.h"

#include "harness/result_schema.h"

namespace tb {
namespace {

std::vector<std::string> names(const std::vector<Column>& cols) {
  std::vector<std::string> h;
  for (const Column& c : cols) h.push_back(c.name);
  return h;
}

}  // namespace

std::vector<std::string> results_header() { return names(result_columns()); }

std::vector<std::string> result_fields(const ResultRow& r) {
  std::vector<std::string> f;
  for (const Column& c : result_columns()) f.push_back(result_cell(c, r));
  return f;
}

std::vector<std::string> curves_header() { return names(curve_columns()); }

std::vector<std::string> curve_fields(const ResultRow& r, const CurvePoint& p) {
  std::vector<std::string> f;
  for (const Column& c : curve_columns()) f.push_back(curve_cell(c, r, p));
  return f;
}

bool ResultRow::disturbed() const {
  return others_cpu_share > kDisturbedShare || steal_share > kDisturbedShare;
}

}  // namespace tb
