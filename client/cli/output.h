// Writing frames and certificates as the CLI prints them; the driver
// (driver.h) uses them for both backends, so both give the same bytes.
#pragma once

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tether/v1/ensemble.pb.h"
#include "tether/v1/simulation.pb.h"

namespace tether::cli {

struct ColumnNames {
  std::vector<std::string> coordinates;
  std::vector<std::string> constraints;
  std::vector<std::string> outputs;
};

// jsonl: one Frame per line in protobuf JSON, every field printed, and a last
// line {"certificate": {...}}. csv: a header line, then one row per frame;
// the certificate is not part of the csv (the CLI summarises it on stderr).
class FrameWriter {
 public:
  virtual ~FrameWriter() = default;
  virtual void WriteFrame(const v1::Frame& frame) = 0;
  virtual void WriteCertificate(const v1::Certificate& certificate) = 0;
  // Returns nullptr for an unknown format.
  static std::unique_ptr<FrameWriter> Create(const std::string& format, const ColumnNames& names,
                                             std::ostream* out);
};

// `tether ensemble`'s output, one line per instance. jsonl: the
// EnsembleInstanceResult in protobuf JSON (engine/ensemble.h,
// EnsembleResultToJson). csv: a header, then one row per instance: index,
// the values it set (one column per name, in the ensemble's order), ok,
// steps, t, each coordinate's final q then v, the certificate summary,
// error, failed_step, failed_time, seed.
class EnsembleWriter {
 public:
  virtual ~EnsembleWriter() = default;
  virtual void Write(const v1::EnsembleInstanceResult& result) = 0;
  // nullptr for an unknown format. `value_names`: the names an instance
  // sets, in order (every instance sets the same ones).
  static std::unique_ptr<EnsembleWriter> Create(const std::string& format,
                                                const std::vector<std::string>& value_names,
                                                const std::vector<std::string>& coordinates,
                                                std::ostream* out);
};

// A one-line progress bar on stderr (when enabled: a terminal and no
// --quiet), redrawn at most ten times a second; positions run from start
// to end (steps or time).
class Progress {
 public:
  Progress(bool enabled, double start, double end) : enabled_(enabled), start_(start), end_(end) {}
  void Update(double position);
  // Erases the bar (if one was drawn).
  void Done();

 private:
  bool enabled_;
  double start_, end_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// A readable multi-line summary of a certificate: the four judgements and
// the bound, per constraint.
// The summary names at most `max_constraints` constraints (0: all): those
// with the largest position bounds, and as many of the worst conditioning's
// constraints, saying how many more there are.
void PrintCertificate(const v1::Certificate& certificate, std::ostream& out,
                      uint64_t max_constraints = 0);

// Diagnostics as "error: field: message" lines, then the initial judgements.
void PrintValidationReport(const v1::ValidationReport& report, std::ostream& out);

}  // namespace tether::cli
