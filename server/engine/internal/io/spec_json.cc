#include "engine/spec_json.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

namespace tether {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

constexpr int kMaxDepth = 32;  // descriptions nest 5 levels

// A strict RFC 8259 reader that walks the JSON together with the message
// descriptor, so every problem is reported with its field path, line and
// column. protobuf's own parser is lenient (trailing commas, single quotes,
// a scalar where a list belongs); this runs first, then protobuf converts.
class StrictChecker {
 public:
  StrictChecker(std::string_view text, std::string_view source) : s_(text), source_(source) {}

  Status Check(const Descriptor* root) {
    SkipSpace();
    if (pos_ >= s_.size()) {
      Fail("", "the file is empty; expected a JSON object");
      return error_;
    }
    if (!Message(root, "", 0)) return error_;
    SkipSpace();
    if (pos_ < s_.size()) {
      Fail("", "invalid JSON: unexpected text after the JSON object: " + Describe());
      return error_;
    }
    return Status::Ok();
  }

 private:
  bool Message(const Descriptor* d, const std::string& path, int depth) {
    if (!Enter(path, depth)) return false;
    if (Peek() != '{')
      return Fail(path, "expected a JSON object for " + Name(path) + ", found " + Describe()),
             false;
    ++pos_;
    SkipSpace();
    if (Peek() == '}') {
      ++pos_;
      return true;
    }
    std::vector<const FieldDescriptor*> seen;  // fields given so far
    while (true) {
      SkipSpace();
      if (Peek() != '"')
        return Fail(path,
                    "invalid JSON: expected a field name in double quotes, found " + Describe()),
               false;
      std::string key;
      if (!String(path, &key)) return false;
      SkipSpace();
      if (Peek() != ':')
        return Fail(path, "invalid JSON: expected ':' after " + QuoteForMessage(key) + ", found " +
                              Describe()),
               false;
      ++pos_;
      SkipSpace();
      const FieldDescriptor* f = d->FindFieldByName(key);
      for (int i = 0; !f && i < d->field_count(); ++i) {
        if (d->field(i)->json_name() == key) f = d->field(i);
      }
      if (!f) {
        std::string known;
        for (int i = 0; i < d->field_count(); ++i)
          known += (i ? ", " : "") + d->field(i)->json_name();
        return Fail(Join(path, EscapeForMessage(key)), "unknown field " + QuoteForMessage(key) +
                                                           " in " + Name(path) +
                                                           "; expected one of " + known),
               false;
      }
      const std::string fpath = Join(path, f->name());
      // JSON leaves duplicate names undefined and protobuf keeps the last
      // one silently; a description says each thing once. A field given by
      // its proto name and by its JSON name is the same field.
      if (std::find(seen.begin(), seen.end(), f) != seen.end())
        return Fail(fpath, "duplicate field " + QuoteForMessage(key) + " in " + Name(path) +
                               "; each field may appear once"),
               false;
      seen.push_back(f);
      if (!Field(f, fpath, depth + 1)) return false;
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
        if (Peek() == '}') return Fail(path, "invalid JSON: trailing ',' before '}'"), false;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return true;
      }
      return Fail(path, "invalid JSON: expected ',' or '}' after field " + QuoteForMessage(key) +
                            ", found " + Describe()),
             false;
    }
  }

  bool Field(const FieldDescriptor* f, const std::string& path, int depth) {
    if (Literal("null")) return true;
    if (!f->is_repeated()) return Value(f, path, depth);
    if (f->is_map()) return Fail(path, "maps are not part of a description"), false;
    if (!Enter(path, depth)) return false;
    if (Peek() != '[')
      return Fail(path, "expected a JSON array (a list) for " + path + ", found " + Describe()),
             false;
    ++pos_;
    SkipSpace();
    if (Peek() == ']') {
      ++pos_;
      return true;
    }
    for (int i = 0;; ++i) {
      SkipSpace();
      if (!Value(f, path + "[" + std::to_string(i) + "]", depth + 1)) return false;
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
        if (Peek() == ']') return Fail(path, "invalid JSON: trailing ',' before ']'"), false;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return true;
      }
      return Fail(path, "invalid JSON: expected ',' or ']' in the list, found " + Describe()),
             false;
    }
  }

  // One (non-list) value of field f.
  bool Value(const FieldDescriptor* f, const std::string& path, int depth) {
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE: return Message(f->message_type(), path, depth);
      case FieldDescriptor::CPPTYPE_STRING:
        if (Peek() != '"') return Fail(path, "expected a string, found " + Describe()), false;
        return String(path, nullptr);
      case FieldDescriptor::CPPTYPE_BOOL:
        if (Literal("true") || Literal("false")) return true;
        return Fail(path, "expected true or false, found " + Describe()), false;
      case FieldDescriptor::CPPTYPE_ENUM: {
        if (Peek() == '"') {
          std::string name;
          size_t at = pos_;
          if (!String(path, &name)) return false;
          if (!f->enum_type()->FindValueByName(name)) {
            std::string known;
            for (int i = 0; i < f->enum_type()->value_count(); ++i) {
              known += (i ? ", " : "") + f->enum_type()->value(i)->name();
            }
            pos_ = at;
            return Fail(path, "unknown value \"" + EscapeForMessage(name) + "\"; expected one of " +
                                  known),
                   false;
          }
          return true;
        }
        return Number(path, /*integer=*/true, /*unsigned_only=*/false);
      }
      default: {
        const bool integer = f->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE &&
                             f->cpp_type() != FieldDescriptor::CPPTYPE_FLOAT;
        if (Peek() == '"') {
          // The JSON mapping allows numbers as strings ("1.5", "NaN").
          std::string text;
          size_t at = pos_;
          if (!String(path, &text)) return false;
          if (!integer && (text == "NaN" || text == "Infinity" || text == "-Infinity")) return true;
          char* end = nullptr;
          errno = 0;
          double x = std::strtod(text.c_str(), &end);
          if (text.empty() || end != text.c_str() + text.size() ||
              std::isspace(static_cast<unsigned char>(text[0]))) {
            pos_ = at;
            return Fail(path, std::string("expected a number, found the string \"") +
                                  EscapeForMessage(text) + "\""),
                   false;
          }
          if (!std::isfinite(x) || errno == ERANGE) {
            pos_ = at;
            return Fail(path,
                        "number " + EscapeForMessage(text) + " is out of the range of a double"),
                   false;
          }
          return true;
        }
        const bool unsigned_only = f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32 ||
                                   f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64;
        return Number(path, integer, unsigned_only);
      }
    }
  }

  bool Number(const std::string& path, bool integer, bool unsigned_only) {
    size_t start = pos_;
    if (Peek() == '-') ++pos_;
    if (!std::isdigit(static_cast<unsigned char>(Peek()))) {
      pos_ = start;
      return Fail(path, "expected a number, found " + Describe()), false;
    }
    if (Peek() == '0') {
      ++pos_;
    } else {
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    }
    bool fraction = false;
    if (Peek() == '.') {
      fraction = true;
      ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(Peek())))
        return Fail(path, "invalid JSON: malformed number"), false;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      fraction = true;
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(Peek())))
        return Fail(path, "invalid JSON: malformed number"), false;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    }
    std::string literal(s_.substr(start, pos_ - start));
    errno = 0;
    double x = std::strtod(literal.c_str(), nullptr);
    if (!std::isfinite(x) || (errno == ERANGE && std::fabs(x) > 1)) {
      pos_ = start;
      return Fail(path, "number " + literal + " is out of the range of a double"), false;
    }
    if (integer && (fraction ? x != std::floor(x) : false)) {
      pos_ = start;
      return Fail(path, "expected an integer, found " + literal), false;
    }
    if (unsigned_only && x < 0) {
      pos_ = start;
      return Fail(path, "expected an integer >= 0, found " + literal), false;
    }
    return true;
  }

  bool String(const std::string& path, std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        return Fail(path, "invalid JSON: control character in a string (escape it)"), false;
      }
      if (c == '\\') {
        if (pos_ >= s_.size()) break;
        char e = s_[pos_++];
        switch (e) {
          case '"':
          case '\\':
          case '/':
            if (out) *out += e;
            break;
          case 'b':
            if (out) *out += '\b';
            break;
          case 'f':
            if (out) *out += '\f';
            break;
          case 'n':
            if (out) *out += '\n';
            break;
          case 'r':
            if (out) *out += '\r';
            break;
          case 't':
            if (out) *out += '\t';
            break;
          case 'u':
            for (int k = 0; k < 4; ++k) {
              if (pos_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[pos_]))) {
                return Fail(path, "invalid JSON: malformed \\u escape in a string"), false;
              }
              ++pos_;
            }
            if (out) *out += '?';
            break;
          default:
            --pos_;
            return Fail(path,
                        "invalid JSON: " + std::string("invalid escape '\\") + e + "' in a string"),
                   false;
        }
      } else if (out) {
        *out += c;
      }
    }
    return Fail(path, "invalid JSON: unterminated string"), false;
  }

  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  bool Enter(const std::string& path, int depth) {
    if (depth > kMaxDepth) return Fail(path, "nesting deeper than a description has"), false;
    return true;
  }

  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  std::string Describe() const {
    if (pos_ >= s_.size()) return "the end of the file";
    unsigned char c = static_cast<unsigned char>(s_[pos_]);
    if (c == '"') return "a string";
    if (c == '[') return "a list";
    if (c == '{') return "an object";
    if (std::isdigit(c) || c == '-') return "a number";
    if (std::isprint(c)) return std::string("'") + s_[pos_] + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
  }
  static std::string Join(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }
  static std::string Name(const std::string& path) {
    return path.empty() ? "the description" : path;
  }

  void Fail(const std::string& path, const std::string& message) {
    if (failed_) return;
    failed_ = true;
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    const std::string field = path.empty() ? std::string(source_) : path;
    const std::string where = "line " + std::to_string(line) + ", column " + std::to_string(column);
    error_ = InvalidArgument(std::string(source_) + ": " + where + ": " + field + ": " + message,
                             {{field, where + ": " + message}});
  }

  std::string_view s_;
  std::string_view source_;
  size_t pos_ = 0;
  bool failed_ = false;
  Status error_;
};

}  // namespace

Status ParseSpecJson(std::string_view json, v1::SimulationSpec* spec, std::string_view source) {
  if (json.size() > kMaxSpecJsonBytes) {
    return InvalidArgument(std::string(source) + ": description is " + std::to_string(json.size()) +
                               " bytes; at most " + std::to_string(kMaxSpecJsonBytes) +
                               " are accepted",
                           {{std::string(source), "description too large"}});
  }
  Status strict = StrictChecker(json, source).Check(v1::SimulationSpec::descriptor());
  if (!strict.ok()) return strict;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  spec->Clear();
  auto status = google::protobuf::util::JsonStringToMessage(json, spec, options);
  if (!status.ok()) {
    std::string message(status.message());
    return InvalidArgument(
        std::string(source) + ": not a valid SimulationSpec in protobuf JSON: " + message,
        {{std::string(source), message}});
  }
  return Status::Ok();
}

Status ReadFileBounded(const std::string& path, std::size_t max_bytes, std::string_view what,
                       std::string* out) {
  out->clear();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return NotFound(path + ": is a directory; expected " + std::string(what));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open " + std::string(what));
  // In blocks, stopping one byte past the bound: the file's size is not
  // trusted (a pipe or a device has none).
  constexpr std::size_t kBlock = 1 << 16;
  while (in) {
    const std::size_t room = max_bytes + 1 - out->size();
    const std::size_t at = out->size();
    out->resize(at + std::min(kBlock, room));
    in.read(out->data() + at, static_cast<std::streamsize>(out->size() - at));
    out->resize(at + static_cast<std::size_t>(in.gcount()));
    if (out->size() > max_bytes) {
      out->clear();
      return InvalidArgument(path + ": more than " + std::to_string(max_bytes) + " bytes (" +
                                 std::string(what) + "); at most " + std::to_string(max_bytes) +
                                 " are accepted",
                             {{path, "too large"}});
    }
  }
  if (in.bad()) return NotFound(path + ": read error");
  return Status::Ok();
}

Status LoadSpecFile(const std::string& path, v1::SimulationSpec* spec) {
  std::string json;
  if (Status s = ReadFileBounded(path, kMaxSpecJsonBytes, "a description file", &json); !s.ok()) {
    return s;
  }
  return ParseSpecJson(json, spec, path);
}

namespace {

// protobuf prints -0.0 as the number -0, which its parser reads back as +0
// (an integer token): every -0 outside a string becomes -0.0, which reads
// back with its sign. Strings are skipped (escapes included).
std::string KeepNegativeZeros(std::string json) {
  std::string out;
  out.reserve(json.size() + 8);
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    out.push_back(c);
    if (in_string) {
      if (c == '\\') {
        if (i + 1 < json.size()) out.push_back(json[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '-' && i + 1 < json.size() && json[i + 1] == '0' &&
               (i + 2 == json.size() || (json[i + 2] != '.' && json[i + 2] != 'e' &&
                                         json[i + 2] != 'E' && !std::isdigit(json[i + 2])))) {
      out += "0.0";
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = false;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return KeepNegativeZeros(std::move(out));
}

}  // namespace tether
