#pragma once
// CEL's timestamp and duration (google.protobuf.Timestamp / Duration), which upstream's DRA
// environment has from cel-go's standard library:
//   timestamp(s) (RFC 3339), timestamp(int) (Unix seconds); duration(s) (Go's "1h30m", "1.5s",
//   "300ms", "-2us", "1ns"); <, <=, >, >=, == between two of a kind; ts + d, d + ts, ts - d,
//   ts - ts (a duration), d + d, d - d, -d; string(ts) (RFC 3339), string(d) ("5400s"),
//   int(ts) (Unix seconds), int(d) (nanoseconds);
//   ts.getFullYear() getMonth() getDate() getDayOfMonth() getDayOfWeek() getDayOfYear()
//   getHours() getMinutes() getSeconds() getMilliseconds(), each with an optional time zone:
//   a fixed offset ("+05:30", "-08:00") or an IANA name ("UTC", "Europe/Berlin") read from
//   the system's zoneinfo (Debian's tzdata) as Go reads it; times after a zone file's last
//   transition (2037 in Debian's files) under a daylight-saving rule are an error.
//   d.getHours() getMinutes() getSeconds() getMilliseconds(): the whole duration in that unit.
// Timestamps run from year 1 to 9999, durations to about ±290 years, as in cel-go; leaving the
// range is an error.

#include <optional>
#include <string>

#include "numadra/cel/cel.hpp"

namespace numadra::dracel::detail {

void addTimeFunctions(cel::Environment& environment);

// For the lists library's sum(): whether a value is a duration, the zero duration (where a
// sum of durations starts), and `a + b` as CEL adds timestamps and durations ("no such overload"
// for other operands).
bool isDuration(const cel::Value& value);
cel::Value zeroDuration();
cel::Value addTimes(const cel::Value& a, const cel::Value& b);

// For the compile-time check of literal arguments (cel-go refuses `timestamp("2026-13-01...")`
// and `duration("1d")` when it compiles them): the error, or nullopt for a valid literal.
std::optional<std::string> timestampLiteralError(const std::string& text);
std::optional<std::string> durationLiteralError(const std::string& text);

}  // namespace numadra::dracel::detail
