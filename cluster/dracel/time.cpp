#include "time.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "host.hpp"
#include "numadra/cel/go_text.hpp"
#include "numadra/common/result.hpp"

namespace numadra::dracel::detail {

namespace {

using cel::Value;
using Int128 = __int128;

constexpr std::int64_t kNanosPerSecond = 1'000'000'000;
// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z in Unix seconds (cel-go's range).
constexpr std::int64_t kMinSeconds = -62135596800;
constexpr std::int64_t kMaxSeconds = 253402300799;
// cel-go's duration range: what an int64 of nanoseconds holds, as Go's time.Duration.
constexpr Int128 kMaxDurationNanos = std::numeric_limits<std::int64_t>::max();

int compareNanos(Int128 a, Int128 b) {
    return a < b ? -1 : (b < a ? 1 : 0);
}

class TimestampValue final : public cel::Opaque {
  public:
    // nanos since the Unix epoch; offset: seconds east of UTC it was written in, kept (as Go's
    // time.Time keeps its location) for printing only: equality and order are the instant's.
    TimestampValue(Int128 nanos, std::int32_t offset) : nanos_(nanos), offset_(offset) {}
    std::string typeName() const override { return "google.protobuf.Timestamp"; }
    bool equals(const cel::Opaque& other) const override {
        return nanos_ == static_cast<const TimestampValue&>(other).nanos_;
    }
    std::optional<int> order(const cel::Opaque& other) const override {
        return compareNanos(nanos_, static_cast<const TimestampValue&>(other).nanos_);
    }
    // Go's time.Time.IsZero (cel-go's Timestamp.IsZeroValue): 0001-01-01T00:00:00Z, not the
    // Unix epoch.
    bool isZeroValue() const override { return nanos_ == Int128{kMinSeconds} * kNanosPerSecond; }
    Int128 nanos() const { return nanos_; }
    std::int32_t offset() const { return offset_; }

  private:
    Int128 nanos_;
    std::int32_t offset_;
};

class DurationValue final : public cel::Opaque {
  public:
    explicit DurationValue(Int128 nanos) : nanos_(nanos) {}
    std::string typeName() const override { return "google.protobuf.Duration"; }
    bool isZeroValue() const override { return nanos_ == 0; }
    bool equals(const cel::Opaque& other) const override {
        return nanos_ == static_cast<const DurationValue&>(other).nanos_;
    }
    std::optional<int> order(const cel::Opaque& other) const override {
        return compareNanos(nanos_, static_cast<const DurationValue&>(other).nanos_);
    }
    Int128 nanos() const { return nanos_; }

  private:
    Int128 nanos_;
};

// Division rounding toward negative infinity: the second (day) an instant before 1970 is in.
Int128 floorDiv(Int128 a, Int128 b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

Value timestampValue(Int128 nanos, std::int32_t offset = 0) {
    const Int128 seconds = floorDiv(nanos, kNanosPerSecond);
    if (seconds < kMinSeconds || seconds > kMaxSeconds)
        return Value::error("timestamp out of range");
    return opaqueValue<TimestampValue>(nanos, offset);
}

Value durationValue(Int128 nanos) {
    if (nanos > kMaxDurationNanos || nanos < -kMaxDurationNanos)
        return Value::error("duration out of range");
    return opaqueValue<DurationValue>(nanos);
}

// Days since 1970-01-01 of a civil date, and back (Howard Hinnant's algorithms).
std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct Civil {
    std::int64_t year;
    unsigned month;  // 1..12
    unsigned day;    // 1..31
};

Civil civilFromDays(std::int64_t z) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    return {y + (m <= 2), m, d};
}

bool digitsAt(std::string_view text, std::size_t at, std::size_t count, int& out) {
    if (at + count > text.size())
        return false;
    out = 0;
    for (std::size_t i = at; i < at + count; ++i) {
        if (text[i] < '0' || text[i] > '9')
            return false;
        out = out * 10 + (text[i] - '0');
    }
    return true;
}

struct ParsedTime {
    Int128 nanos;
    std::int32_t offset;  // seconds east of UTC
};

// RFC 3339 as Go's time.Parse(time.RFC3339) reads it: YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM),
// 'T' and 'Z' upper case.
std::optional<ParsedTime> parseRfc3339(std::string_view text) {
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    if (!digitsAt(text, 0, 4, year) || text.size() < 20 || text[4] != '-' ||
        !digitsAt(text, 5, 2, month) || text[7] != '-' || !digitsAt(text, 8, 2, day) ||
        text[10] != 'T' || !digitsAt(text, 11, 2, hour) || text[13] != ':' ||
        !digitsAt(text, 14, 2, minute) || text[16] != ':' || !digitsAt(text, 17, 2, second))
        return std::nullopt;
    std::size_t at = 19;
    Int128 fraction = 0;
    if (at < text.size() && text[at] == '.') {
        ++at;
        int scale = 0;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
            if (scale < 9) {
                fraction = fraction * 10 + (text[at] - '0');
                ++scale;
            }
            ++at;
        }
        if (scale == 0)
            return std::nullopt;
        for (; scale < 9; ++scale)
            fraction *= 10;
    }
    std::int64_t offset = 0;
    if (at < text.size() && text[at] == 'Z') {
        ++at;
    } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
        int oh = 0, om = 0;
        if (!digitsAt(text, at + 1, 2, oh) || at + 3 >= text.size() || text[at + 3] != ':' ||
            !digitsAt(text, at + 4, 2, om) || oh > 23 || om > 59)
            return std::nullopt;
        offset = (std::int64_t{oh} * 3600 + std::int64_t{om} * 60) * (text[at] == '-' ? -1 : 1);
        at += 6;
    } else {
        return std::nullopt;
    }
    if (at != text.size() || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 ||
        second > 59)
        return std::nullopt;
    static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (day > kDays[month - 1] + (month == 2 && leap ? 1 : 0))
        return std::nullopt;
    const std::int64_t seconds =
        daysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 +
        std::int64_t{hour} * 3600 + std::int64_t{minute} * 60 + second - offset;
    return ParsedTime{static_cast<Int128>(seconds) * kNanosPerSecond + fraction,
                      static_cast<std::int32_t>(offset)};
}

// Go's time.ParseDuration.
std::optional<Int128> parseGoDuration(std::string_view text) {
    if (text.empty())
        return std::nullopt;
    bool negative = false;
    std::size_t at = 0;
    if (text[0] == '-' || text[0] == '+') {
        negative = text[0] == '-';
        ++at;
    }
    if (text.substr(at) == "0")
        return Int128{0};
    if (at == text.size())
        return std::nullopt;
    Int128 total = 0;
    while (at < text.size()) {
        Int128 whole = 0;
        std::size_t start = at;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
            whole = whole * 10 + (text[at++] - '0');
            if (whole > kMaxDurationNanos)
                return std::nullopt;
        }
        const bool hadWhole = at > start;
        Int128 fraction = 0;
        Int128 scale = 1;
        bool hadFraction = false;
        if (at < text.size() && text[at] == '.') {
            ++at;
            start = at;
            while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
                if (scale < Int128{1'000'000'000'000'000'000}) {
                    fraction = fraction * 10 + (text[at] - '0');
                    scale *= 10;
                }
                ++at;
            }
            hadFraction = at > start;
        }
        if (!hadWhole && !hadFraction)
            return std::nullopt;
        start = at;
        while (at < text.size() && !(text[at] >= '0' && text[at] <= '9') && text[at] != '.')
            ++at;
        const std::string_view unit = text.substr(start, at - start);
        Int128 nanos = 0;
        if (unit == "ns")
            nanos = 1;
        else if (unit == "us" || unit == "µs" || unit == "μs")
            nanos = 1'000;
        else if (unit == "ms")
            nanos = 1'000'000;
        else if (unit == "s")
            nanos = kNanosPerSecond;
        else if (unit == "m")
            nanos = Int128{60} * kNanosPerSecond;
        else if (unit == "h")
            nanos = Int128{3600} * kNanosPerSecond;
        else
            return std::nullopt;
        total += whole * nanos + fraction * nanos / scale;
        if (total > kMaxDurationNanos + (negative ? 1 : 0))
            return std::nullopt;
    }
    return negative ? -total : total;
}

// A time zone file (TZif, RFC 8536) as Go's time.LoadLocation reads it from the system's
// zoneinfo: the offsets in force from each transition on.
struct ZoneRules {
    std::vector<std::int64_t> transitions;  // Unix seconds, ascending
    std::vector<std::int32_t> offsets;      // the offset from transitions[i] on
    std::int32_t initial = 0;               // before the first transition (first standard type)
    bool hasFutureRule = false;             // a footer rule governs times after the last one
};

std::int64_t bigEndian(const std::string& data, std::size_t at, std::size_t bytes) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < bytes; ++i)
        value = (value << 8U) | static_cast<unsigned char>(data[at + i]);
    if (bytes == 4)
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(value));
    return static_cast<std::int64_t>(value);
}

std::optional<ZoneRules> parseTzif(const std::string& data) {
    if (data.size() < 44 || data.compare(0, 4, "TZif") != 0 || data[4] < '2')
        return std::nullopt;
    // Skip the version 1 block (32-bit times) to the version 2 header.
    auto counts = [&](std::size_t header) {
        std::array<std::int64_t, 6> c{};
        for (std::size_t i = 0; i < 6; ++i)
            c[i] = bigEndian(data, header + 20 + 4 * i, 4);
        return c;  // isutcnt isstdcnt leapcnt timecnt typecnt charcnt
    };
    // Counts no zone file has (negative, or more than the file could hold) end the reading
    // before any offset is computed from them.
    const auto sane = [&](const std::array<std::int64_t, 6>& c) {
        return std::all_of(c.begin(), c.end(), [&](std::int64_t n) {
            return n >= 0 && n <= static_cast<std::int64_t>(data.size());
        });
    };
    const auto v1 = counts(0);
    if (!sane(v1))
        return std::nullopt;
    const std::size_t v2 =
        44 + static_cast<std::size_t>(v1[3] * 5 + v1[4] * 6 + v1[5] + v1[2] * 8 + v1[1] + v1[0]);
    if (data.size() < v2 + 44 || data.compare(v2, 4, "TZif") != 0)
        return std::nullopt;
    const auto c = counts(v2);
    if (!sane(c))
        return std::nullopt;
    const auto timecnt = static_cast<std::size_t>(c[3]);
    const auto typecnt = static_cast<std::size_t>(c[4]);
    const std::size_t times = v2 + 44;
    const std::size_t indices = times + timecnt * 8;
    const std::size_t types = indices + timecnt;
    const std::size_t end =
        types + typecnt * 6 + static_cast<std::size_t>(c[5] + c[2] * 12 + c[1] + c[0]);
    if (typecnt == 0 || data.size() < end)
        return std::nullopt;
    ZoneRules rules;
    auto typeOffset = [&](std::size_t type) {
        return static_cast<std::int32_t>(bigEndian(data, types + type * 6, 4));
    };
    rules.initial = typeOffset(0);
    for (std::size_t t = 0; t < typecnt; ++t)
        if (data[types + t * 6 + 4] ==
            0) {  // the first standard-time type, as Go's lookupFirstZone
            rules.initial = typeOffset(t);
            break;
        }
    for (std::size_t i = 0; i < timecnt; ++i) {
        const auto type = static_cast<unsigned char>(data[indices + i]);
        if (type >= typecnt)
            return std::nullopt;
        rules.transitions.push_back(bigEndian(data, times + i * 8, 8));
        rules.offsets.push_back(typeOffset(type));
    }
    // The footer (a POSIX TZ string) matters only when it has a daylight-saving rule.
    const std::size_t footer = data.find('\n', end);
    rules.hasFutureRule =
        footer != std::string::npos && data.find(',', footer) != std::string::npos;
    return rules;
}

// The zone files of the system, read once per path (like the environment's regex cache: an
// immutable result per key, shared by every evaluation).
const std::optional<ZoneRules>& zoneFile(const std::string& path) {
    static std::mutex mutex;
    static std::map<std::string, std::optional<ZoneRules>> zones;
    std::lock_guard lock(mutex);
    auto it = zones.find(path);
    if (it == zones.end()) {
        std::optional<ZoneRules> rules;
        std::ifstream file(path, std::ios::binary);
        if (file) {
            const std::string data((std::istreambuf_iterator<char>(file)),
                                   std::istreambuf_iterator<char>());
            rules = parseTzif(data);
        }
        it = zones.emplace(path, std::move(rules)).first;
    }
    return it->second;
}

// An IANA name from the system's zoneinfo, as Go's time.LoadLocation looks one up (names with a
// character no zone name has are refused before the file system is asked).
Result<const ZoneRules*> loadZone(const std::string& name) {
    const bool plausible =
        !name.empty() && name.find_first_not_of(
                             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                             "0123456789/_+-") == std::string::npos;
    if (!plausible)
        return Error{"unknown time zone " + name};
    const auto& rules = zoneFile("/usr/share/zoneinfo/" + name);
    if (!rules)
        return Error{"unknown time zone " + name};
    return &*rules;
}

// Go's time.Local, as Go's initLocal sets it: $TZ unset is /etc/localtime, $TZ empty is UTC,
// $TZ=":name" or "name" a zone file (an absolute path, or a name of the system's zoneinfo); UTC
// when that file is not a zone. nullptr stands for UTC.
const ZoneRules* localZone() {
    const char* tz = std::getenv("TZ");
    if (tz == nullptr) {
        const auto& rules = zoneFile("/etc/localtime");
        return rules ? &*rules : nullptr;
    }
    std::string name = tz;
    if (!name.empty() && name.front() == ':')
        name.erase(0, 1);
    if (name.empty() || name == "UTC")
        return nullptr;
    if (name.front() == '/') {
        const auto& rules = zoneFile(name);
        return rules ? &*rules : nullptr;
    }
    auto rules = loadZone(name);
    return rules ? *rules : nullptr;
}

Result<std::int64_t> offsetInZone(const std::string& zone, const ZoneRules& z, Int128 instant) {
    const auto seconds = static_cast<std::int64_t>(floorDiv(instant, kNanosPerSecond));
    if (z.transitions.empty() || seconds < z.transitions.front())
        return std::int64_t{z.initial};
    if (seconds >= z.transitions.back() && z.hasFutureRule &&
        seconds > z.transitions.back() + std::int64_t{366} * 86400)
        return Error{"time zone " + zone + ": times after " + std::to_string(z.transitions.back()) +
                     " follow a rule this build does not evaluate"};
    const auto after = std::upper_bound(z.transitions.begin(), z.transitions.end(), seconds);
    return std::int64_t{z.offsets[static_cast<std::size_t>(after - z.transitions.begin()) - 1]};
}

// Go's strconv.Atoi: an optional sign and one or more decimal digits, in int64's range; its
// errors as Go words them (a range error where the value first overflows, before any later
// character is read, as ParseUint reports).
Result<std::int64_t> goAtoi(std::string_view text) {
    const auto fail = [&](const char* why) {
        return Error{"strconv.Atoi: parsing " + cel::goQuote(text) + ": " + why};
    };
    std::string_view digits = text;
    const bool negative = !digits.empty() && digits.front() == '-';
    if (!digits.empty() && (digits.front() == '-' || digits.front() == '+'))
        digits.remove_prefix(1);
    if (digits.empty())
        return fail("invalid syntax");
    const std::uint64_t limit =
        negative ? std::uint64_t{1} << 63U : (std::uint64_t{1} << 63U) - 1;  // |int64 min|, max
    std::uint64_t value = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9')
            return fail("invalid syntax");
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (limit - digit) / 10)
            return fail("value out of range");
        value = value * 10 + digit;
    }
    return negative ? static_cast<std::int64_t>(std::uint64_t{0} - value)
                    : static_cast<std::int64_t>(value);
}

// cel-go's timeZone() for a zone argument with a colon: the hours before the first colon and
// the minutes after it, each read by strconv.Atoi ("+01:00", "-08:00", "01:00", "1:5" alike);
// minutes outside [0, 59] are refused; a leading '-' subtracts the minutes. The offset is then
// computed as cel-go computes it, in Go's wrapping int64 arithmetic:
// int((time.Duration(hours*60 ± minutes) * time.Minute).Seconds()).
Result<std::int64_t> fixedOffset(const std::string& zone, std::size_t colon) {
    auto hours = goAtoi(std::string_view(zone).substr(0, colon));
    if (!hours)
        return hours.error();
    auto minutes = goAtoi(std::string_view(zone).substr(colon + 1));
    if (!minutes)
        return minutes.error();
    if (*minutes < 0 || *minutes > 59)
        return Error{"timezone offset minutes out of range [0, 59]: " + zone};
    const auto wrap = [](std::uint64_t bits) { return static_cast<std::int64_t>(bits); };
    const std::uint64_t hourMinutes = static_cast<std::uint64_t>(*hours) * 60U;
    const std::int64_t offsetMinutes =
        wrap(zone.front() == '-' ? hourMinutes - static_cast<std::uint64_t>(*minutes)
                                 : hourMinutes + static_cast<std::uint64_t>(*minutes));
    const std::int64_t nanos =
        wrap(static_cast<std::uint64_t>(offsetMinutes) * std::uint64_t{60'000'000'000});
    // time.Duration.Seconds(): whole seconds plus the fraction, in float64; int() truncates.
    const std::int64_t whole = nanos / kNanosPerSecond;
    const std::int64_t fraction = nanos % kNanosPerSecond;
    const double seconds = static_cast<double>(whole) + static_cast<double>(fraction) / 1e9;
    return static_cast<std::int64_t>(seconds);
}

// Seconds east of UTC at an instant for a zone argument, as cel-go's timeZone() reads it: with
// a colon, a fixed offset (fixedOffset); without one, a name for Go's time.LoadLocation: "" and
// "UTC" are UTC, "Local" the process's zone (localZone), a name with ".." or a leading slash is
// refused, anything else is a file of the system's zoneinfo ("Europe/Berlin", "Etc/GMT+1";
// "Z" is no zone name).
Result<std::int64_t> zoneOffset(const std::string& zone, Int128 instant) {
    if (const std::size_t colon = zone.find(':'); colon != std::string::npos)
        return fixedOffset(zone, colon);
    if (zone.empty() || zone == "UTC")
        return std::int64_t{0};
    if (zone == "Local") {
        const ZoneRules* local = localZone();
        return local ? offsetInZone(zone, *local, instant) : std::int64_t{0};
    }
    if (zone.find("..") != std::string::npos || zone.front() == '/' || zone.front() == '\\')
        return Error{"time: invalid location name"};
    auto rules = loadZone(zone);
    if (!rules)
        return rules.error();
    return offsetInZone(zone, **rules, instant);
}

enum class Part {
    Year,
    Month,
    Date,
    DayOfMonth,
    DayOfWeek,
    DayOfYear,
    Hours,
    Minutes,
    Seconds,
    Milliseconds
};

Value timestampPart(std::string_view name, Part part, const Args& args) {
    const TimestampValue* ts = !args.empty() ? asOpaque<TimestampValue>(args[0]) : nullptr;
    const std::string* zone = args.size() == 2 ? asString(args[1]) : nullptr;
    if (!ts || args.size() > 2 || (args.size() == 2 && !zone))
        return noSuchOverload(name, args);
    auto offset = zoneOffset(zone ? *zone : std::string(), ts->nanos());
    if (!offset)
        return Value::error(offset.error().message);
    const Int128 local = ts->nanos() + static_cast<Int128>(*offset) * kNanosPerSecond;
    const auto seconds = static_cast<std::int64_t>(floorDiv(local, kNanosPerSecond));
    const auto nanos = static_cast<std::int64_t>(local - Int128{seconds} * kNanosPerSecond);
    const std::int64_t days = floorDiv(seconds, 86400);
    const std::int64_t secondOfDay = seconds - days * 86400;
    const Civil civil = civilFromDays(days);
    switch (part) {
        case Part::Year:
            return Value(civil.year);
        case Part::Month:
            return Value(std::int64_t{civil.month} - 1);
        case Part::Date:
            return Value(std::int64_t{civil.day});
        case Part::DayOfMonth:
            return Value(std::int64_t{civil.day} - 1);
        case Part::DayOfWeek:
            return Value(static_cast<std::int64_t>(((days % 7) + 11) % 7));  // 1970-01-01: Thursday
        case Part::DayOfYear:
            return Value(days - daysFromCivil(civil.year, 1, 1));
        case Part::Hours:
            return Value(secondOfDay / 3600);
        case Part::Minutes:
            return Value(secondOfDay / 60 % 60);
        case Part::Seconds:
            return Value(secondOfDay % 60);
        case Part::Milliseconds:
            return Value(nanos / 1'000'000);
    }
    return noSuchOverload(name, args);
}

Value durationPart(std::string_view name, Int128 unit, const Args& args) {
    const DurationValue* d = args.size() == 1 ? asOpaque<DurationValue>(args[0]) : nullptr;
    return d ? Value(static_cast<std::int64_t>(d->nanos() / unit)) : noSuchOverload(name, args);
}

// ".5", ".000000001": the nanoseconds of a second as Go prints them, trailing zeros dropped;
// nothing for none.
std::string fractionText(std::int64_t nanos) {
    if (nanos == 0)
        return {};
    std::string digits = std::to_string(nanos);
    digits.insert(0, 9 - digits.size(), '0');
    while (digits.back() == '0')
        digits.pop_back();
    return "." + digits;
}

// Go's time.Time.Format(time.RFC3339Nano) in the offset it was written in, as cel-go prints a
// timestamp ("Z" for UTC).
std::string timestampText(Int128 instant, std::int32_t offset) {
    const Int128 nanos = instant + Int128{offset} * kNanosPerSecond;
    const auto seconds = static_cast<std::int64_t>(floorDiv(nanos, kNanosPerSecond));
    const auto fraction = static_cast<std::int64_t>(nanos - Int128{seconds} * kNanosPerSecond);
    const std::int64_t days = floorDiv(seconds, 86400);
    const std::int64_t secondOfDay = seconds - days * 86400;
    const Civil civil = civilFromDays(days);
    char buffer[64];
    int length = std::snprintf(buffer, sizeof buffer, "%04lld-%02u-%02uT%02lld:%02lld:%02lld",
                               static_cast<long long>(civil.year), civil.month, civil.day,
                               static_cast<long long>(secondOfDay / 3600),
                               static_cast<long long>(secondOfDay / 60 % 60),
                               static_cast<long long>(secondOfDay % 60));
    std::string out(buffer, static_cast<std::size_t>(length));
    out += fractionText(fraction);
    if (offset == 0)
        return out + "Z";
    const std::int32_t magnitude = offset < 0 ? -offset : offset;
    const auto twoDigits = [](std::int32_t value) {
        return std::string{static_cast<char>('0' + value / 10 % 10),
                           static_cast<char>('0' + value % 10)};
    };
    return out + (offset < 0 ? "-" : "+") + twoDigits(magnitude / 3600) + ":" +
           twoDigits(magnitude / 60 % 60);
}

// cel-go prints a duration as seconds: "5400s", "1.5s", "-0.000000001s".
std::string durationText(Int128 nanos) {
    const bool negative = nanos < 0;
    const Int128 magnitude = negative ? -nanos : nanos;
    std::string out = (negative ? "-" : "") +
                      std::to_string(static_cast<std::int64_t>(magnitude / kNanosPerSecond));
    const auto fraction = static_cast<std::int64_t>(magnitude % kNanosPerSecond);
    out += fractionText(fraction);
    return out + "s";
}

template <class A, class B>
bool both(const Args& args, const A*& a, const B*& b) {
    a = args.size() == 2 ? asOpaque<A>(args[0]) : nullptr;
    b = args.size() == 2 ? asOpaque<B>(args[1]) : nullptr;
    return a && b;
}

// The ordering operators between two timestamps or two durations.
cel::Function ordering(std::string name, bool (*holds)(Int128, Int128)) {
    return [name = std::move(name), holds](const Args& args) -> Value {
        const TimestampValue *t1 = nullptr, *t2 = nullptr;
        if (both(args, t1, t2))
            return Value(holds(t1->nanos(), t2->nanos()));
        const DurationValue *d1 = nullptr, *d2 = nullptr;
        if (both(args, d1, d2))
            return Value(holds(d1->nanos(), d2->nanos()));
        return noSuchOverload(name, args);
    };
}

Value add(const Args& args) {
    const TimestampValue* t = nullptr;
    const DurationValue* d = nullptr;
    if (both(args, t, d))
        return timestampValue(t->nanos() + d->nanos(), t->offset());
    const DurationValue* d1 = nullptr;
    const TimestampValue* t1 = nullptr;
    if (both(args, d1, t1))
        return timestampValue(t1->nanos() + d1->nanos(), t1->offset());
    const DurationValue* a = nullptr;
    const DurationValue* b = nullptr;
    if (both(args, a, b))
        return durationValue(a->nanos() + b->nanos());
    return noSuchOverload("_+_", args);
}

Value subtract(const Args& args) {
    const TimestampValue* t = nullptr;
    const DurationValue* d = nullptr;
    if (both(args, t, d))
        return timestampValue(t->nanos() - d->nanos(), t->offset());
    const TimestampValue* t1 = nullptr;
    const TimestampValue* t2 = nullptr;
    if (both(args, t1, t2))
        return durationValue(t1->nanos() - t2->nanos());
    const DurationValue* a = nullptr;
    const DurationValue* b = nullptr;
    if (both(args, a, b))
        return durationValue(a->nanos() - b->nanos());
    return noSuchOverload("_-_", args);
}

}  // namespace

bool isDuration(const cel::Value& value) {
    return asOpaque<DurationValue>(value) != nullptr;
}

cel::Value zeroDuration() {
    return durationValue(0);
}

cel::Value addTimes(const cel::Value& a, const cel::Value& b) {
    return add({a, b});
}

std::optional<std::string> timestampLiteralError(const std::string& text) {
    return parseRfc3339(text) ? std::nullopt
                              : std::optional<std::string>("invalid timestamp argument");
}

std::optional<std::string> durationLiteralError(const std::string& text) {
    return parseGoDuration(text) ? std::nullopt
                                 : std::optional<std::string>("invalid duration argument");
}

void addTimeFunctions(cel::Environment& environment) {
    auto& global = environment.globalFunctions;
    auto& member = environment.memberFunctions;
    chain(global, "timestamp", [](const Args& args) -> Value {
        if (args.size() == 1) {
            if (const std::string* text = asString(args[0])) {
                auto parsed = parseRfc3339(*text);
                if (!parsed)
                    return Value::error("timestamp(\"" + *text + "\"): not an RFC 3339 time");
                return timestampValue(parsed->nanos, parsed->offset);
            }
            if (const auto* seconds = std::get_if<std::int64_t>(&args[0].v))
                return timestampValue(Int128{*seconds} * kNanosPerSecond);
            if (asOpaque<TimestampValue>(args[0]))
                return args[0];
        }
        return noSuchOverload("timestamp", args);
    });
    chain(global, "duration", [](const Args& args) -> Value {
        if (args.size() == 1) {
            if (const std::string* text = asString(args[0])) {
                auto nanos = parseGoDuration(*text);
                if (!nanos)
                    return Value::error("duration(\"" + *text + "\"): invalid duration");
                return durationValue(*nanos);
            }
            if (asOpaque<DurationValue>(args[0]))
                return args[0];
        }
        return noSuchOverload("duration", args);
    });
    chain(global, "string", [](const Args& args) -> Value {
        if (args.size() == 1) {
            if (const auto* t = asOpaque<TimestampValue>(args[0]))
                return Value(timestampText(t->nanos(), t->offset()));
            if (const auto* d = asOpaque<DurationValue>(args[0]))
                return Value(durationText(d->nanos()));
        }
        return noSuchOverload("string", args);
    });
    chain(global, "int", [](const Args& args) -> Value {
        if (args.size() == 1) {
            if (const auto* t = asOpaque<TimestampValue>(args[0]))
                return Value(static_cast<std::int64_t>(floorDiv(t->nanos(), kNanosPerSecond)));
            if (const auto* d = asOpaque<DurationValue>(args[0]))
                return Value(static_cast<std::int64_t>(d->nanos()));
        }
        return noSuchOverload("int", args);
    });
    chain(global, "_<_", ordering("_<_", [](Int128 a, Int128 b) { return a < b; }));
    chain(global, "_<=_", ordering("_<=_", [](Int128 a, Int128 b) { return a <= b; }));
    chain(global, "_>_", ordering("_>_", [](Int128 a, Int128 b) { return a > b; }));
    chain(global, "_>=_", ordering("_>=_", [](Int128 a, Int128 b) { return a >= b; }));
    chain(global, "_+_", add);
    chain(global, "_-_", subtract);

    const auto timestampGetter = [&member](const std::string& name, Part part) {
        chain(member, name,
              [name, part](const Args& args) { return timestampPart(name, part, args); });
    };
    timestampGetter("getFullYear", Part::Year);
    timestampGetter("getMonth", Part::Month);
    timestampGetter("getDate", Part::Date);
    timestampGetter("getDayOfMonth", Part::DayOfMonth);
    timestampGetter("getDayOfWeek", Part::DayOfWeek);
    timestampGetter("getDayOfYear", Part::DayOfYear);
    // Durations have these four too: the whole duration in the unit.
    const auto bothGetter = [&member](const std::string& name, Part part, Int128 unit) {
        chain(member, name, [name, part, unit](const Args& args) -> Value {
            if (args.size() == 1 && asOpaque<DurationValue>(args[0]))
                return durationPart(name, unit, args);
            return timestampPart(name, part, args);
        });
    };
    bothGetter("getHours", Part::Hours, Int128{3600} * kNanosPerSecond);
    bothGetter("getMinutes", Part::Minutes, Int128{60} * kNanosPerSecond);
    bothGetter("getSeconds", Part::Seconds, kNanosPerSecond);
    bothGetter("getMilliseconds", Part::Milliseconds, 1'000'000);
}

}  // namespace numadra::dracel::detail
