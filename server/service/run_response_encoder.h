// Writes tether.v1.RunResponse messages in the protobuf wire format straight
// from the engine's frames, without building v1::Frame messages: a frame is
// a few packed arrays of doubles, and building then serializing message
// objects for it cost the Run stream more CPU than the simulation itself
// (docs/benchmarks.md). The bytes are exactly those of
// RunResponse::SerializeAsString for the same frames: fields in number
// order, proto3 zero scalars omitted (by bit pattern, so -0.0 is written),
// repeated doubles packed, the residuals sub-message always present.
#pragma once

#include <cstddef>
#include <string>

#include "engine/simulation.h"
#include "tether/v1/simulation.pb.h"

namespace tether::service {

class RunResponseEncoder final : public FrameSink {
 public:
  // Appends one `frames` entry (field 1).
  void Add(const FrameView& frame) override;
  // Appends the certificate (field 2); once, after the last frame.
  void AddCertificate(const v1::Certificate& certificate);

  // Bytes of the `frames` entry Add would append for this frame (tag,
  // length and the frame).
  static std::size_t FrameEntrySize(const FrameView& frame);

  std::size_t frames() const { return frames_; }
  // Size of the first frame entry since the last Clear (0 if none).
  std::size_t first_entry_size() const { return first_entry_size_; }
  // The message so far.
  const std::string& bytes() const { return out_; }
  // Starts the next message (the buffer keeps its capacity).
  void Clear();

 private:
  std::string out_;
  std::size_t frames_ = 0;
  std::size_t first_entry_size_ = 0;
};

}  // namespace tether::service
