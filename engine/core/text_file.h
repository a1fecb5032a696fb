// The one reader of the small JSON and text files MixLab is given or keeps (model files, Keras
// JSON, sweep files, GPU profile files, the doctor's calibration caches, a sweep folder's
// description): only a regular file is read, and at most a stated number of bytes, so that a
// FIFO cannot block, /dev/zero cannot fill memory and a huge file is refused before it is read.
// The file is opened with O_NONBLOCK and checked with fstat on the open descriptor (no window
// between the check and the read); what is not a regular file is refused by its kind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace mixlab {

// What kind of file is read, for its errors, and how large one may be.
struct TextFileKind {
  std::string_view what;      // "model file", "sweep file", "profile file"
  std::uintmax_t max_bytes;   // a larger file is refused, and no more than this is ever read
  std::string_view size_why;  // appended to the too-large error: " (it describes layers, ...)"
};

// A file's text, or why it could not be read.
struct TextFileRead {
  std::string text;      // the file's bytes (when `problem` is empty)
  std::string problem;   // "<path>: cannot read <what>: not a regular file (a FIFO)", ...
  bool missing = false;  // the file does not exist (a cache not written yet is not a problem)
  bool ok() const { return problem.empty(); }
};

// Never throws for a file's problems (a cache that cannot be read is ignored, with a note); the
// problems: the file missing or not openable ("<path>: cannot open <what>: <errno text>"), not a
// regular file ("<path>: cannot read <what>: it is a directory", "...: not a regular file (a
// FIFO)"), over kind.max_bytes, or a read error.
TextFileRead try_read_text_file(const std::filesystem::path& path, const TextFileKind& kind);

// The same, throwing Error(problem) with the caller's error type.
template <class Error>
std::string read_text_file(const std::filesystem::path& path, const TextFileKind& kind) {
  TextFileRead read = try_read_text_file(path, kind);
  if (!read.ok()) throw Error(read.problem);
  return std::move(read.text);
}

}  // namespace mixlab
