#include "k8s_format.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host.hpp"
#include "url.hpp"

namespace numadra::dracel::detail {

namespace {

using cel::Value;
using Messages = std::vector<std::string>;

// ---- k8s.io/apimachinery validation ----------------------------------------------------------

constexpr std::string_view kDns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1123LabelErrMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";
constexpr std::string_view kDns1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDns1123SubdomainErrMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kDns1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1035LabelErrMsg =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character";
constexpr std::string_view kLabelKeyFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kLabelKeyErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErrMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::size_t kDnsLabelMaxLength = 63;
constexpr std::size_t kDnsSubdomainMaxLength = 253;
constexpr std::size_t kLabelMaxLength = 63;

// The length limits are worded differently by the two packages upstream calls:
// pkg/util/validation says "characters", pkg/api/validate/content says "bytes".
enum class LengthUnit { Characters, Bytes };

std::string maxLenError(std::size_t length, LengthUnit unit) {
    return "must be no more than " + std::to_string(length) +
           (unit == LengthUnit::Characters ? " characters" : " bytes");
}

// apimachinery's RegexError.
std::string regexError(std::string_view message, std::string_view regex,
                       std::initializer_list<std::string_view> examples) {
    std::string text(message);
    if (examples.size() == 0)
        return text + " (regex used for validation is '" + std::string(regex) + "')";
    text += " (e.g. ";
    bool first = true;
    for (const std::string_view example : examples) {
        if (!first)
            text += " or ";
        first = false;
        text += "'" + std::string(example) + "', ";
    }
    return text + "regex used for validation is '" + std::string(regex) + "')";
}

enum class Pattern { Dns1123Label, Dns1123Subdomain, Dns1035Label, LabelKey, LabelValue };

// Whether all of `text` matches the pattern (RE2 and Go's regexp agree on these ASCII
// patterns). They are compiled once, in Pattern's order, and only read after.
bool matches(std::string_view text, Pattern pattern) {
    static const std::array<re2::RE2, 5> kCompiled{
        re2::RE2(std::string(kDns1123LabelFmt)), re2::RE2(std::string(kDns1123SubdomainFmt)),
        re2::RE2(std::string(kDns1035LabelFmt)), re2::RE2(std::string(kLabelKeyFmt)),
        re2::RE2(std::string(kLabelValueFmt))};
    return re2::RE2::FullMatch(re2::StringPiece(text.data(), text.size()),
                               kCompiled[static_cast<std::size_t>(pattern)]);
}

// IsDNS1123Subdomain, in either package's wording of the length limit.
Messages dns1123Subdomain(std::string_view value, LengthUnit unit) {
    Messages errors;
    if (value.size() > kDnsSubdomainMaxLength)
        errors.push_back(maxLenError(kDnsSubdomainMaxLength, unit));
    if (!matches(value, Pattern::Dns1123Subdomain))
        errors.push_back(
            regexError(kDns1123SubdomainErrMsg, kDns1123SubdomainFmt, {"example.com"}));
    return errors;
}

// pkg/util/validation IsDNS1123Label.
Messages dns1123Label(std::string_view value) {
    Messages errors;
    if (value.size() > kDnsLabelMaxLength)
        errors.push_back(maxLenError(kDnsLabelMaxLength, LengthUnit::Characters));
    if (!matches(value, Pattern::Dns1123Label)) {
        // A valid subdomain is not a label only for its dots (the length is checked above).
        if (matches(value, Pattern::Dns1123Subdomain))
            errors.emplace_back("must not contain dots");
        else
            errors.push_back(
                regexError(kDns1123LabelErrMsg, kDns1123LabelFmt, {"my-name", "123-abc"}));
    }
    return errors;
}

// pkg/util/validation IsDNS1035Label.
Messages dns1035Label(std::string_view value) {
    Messages errors;
    if (value.size() > kDnsLabelMaxLength)
        errors.push_back(maxLenError(kDnsLabelMaxLength, LengthUnit::Characters));
    if (!matches(value, Pattern::Dns1035Label))
        errors.push_back(regexError(kDns1035LabelErrMsg, kDns1035LabelFmt, {"my-name", "abc-123"}));
    return errors;
}

// pkg/api/validate/content IsLabelKey (upstream's qualifiedName): [prefix/]name.
Messages qualifiedName(std::string_view value) {
    Messages errors;
    const auto slash = value.find('/');
    std::string_view name = value;
    if (slash != std::string_view::npos) {
        if (value.find('/', slash + 1) != std::string_view::npos)
            return {"a valid label key " +
                    regexError(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"}) +
                    " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"};
        const std::string_view prefix = value.substr(0, slash);
        name = value.substr(slash + 1);
        if (prefix.empty())
            errors.emplace_back("prefix part must be non-empty");
        for (const std::string& message :
             prefix.empty() ? Messages{} : dns1123Subdomain(prefix, LengthUnit::Bytes))
            errors.push_back("prefix part " + message);
    }
    if (name.empty())
        errors.emplace_back("name part must be non-empty");
    else if (name.size() > kLabelMaxLength)
        errors.push_back("name part " + maxLenError(kLabelMaxLength, LengthUnit::Bytes));
    if (!matches(name, Pattern::LabelKey))
        errors.push_back("name part " + regexError(kLabelKeyErrMsg, kLabelKeyFmt,
                                                   {"MyName", "my.name", "123-abc"}));
    return errors;
}

// pkg/api/validate/content IsLabelValue.
Messages labelValue(std::string_view value) {
    Messages errors;
    if (value.size() > kLabelMaxLength)
        errors.push_back(maxLenError(kLabelMaxLength, LengthUnit::Bytes));
    if (!matches(value, Pattern::LabelValue))
        errors.push_back(
            regexError(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
    return errors;
}

// apimachinery's maskTrailingDash for the *Prefix formats (a generated suffix will follow):
// a final dash is allowed. Upstream replaces the last two characters with "a", not one.
std::string maskTrailingDash(std::string_view name) {
    if (name.size() > 1 && name.back() == '-')
        return std::string(name.substr(0, name.size() - 2)) + "a";
    return std::string(name);
}

// ---- kube-openapi strfmt ---------------------------------------------------------------------

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}

bool isHexDigit(char c) {
    return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// strfmt's UUIDPattern: (?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$
bool isUuid(std::string_view text) {
    std::size_t at = 0;
    const std::array<std::size_t, 5> groups{8, 4, 4, 4, 12};
    for (std::size_t g = 0; g < groups.size(); ++g) {
        if (g > 0 && at < text.size() && text[at] == '-')
            ++at;
        if (at + groups[g] > text.size() ||
            !std::all_of(text.begin() + static_cast<long>(at),
                         text.begin() + static_cast<long>(at + groups[g]), isHexDigit))
            return false;
        at += groups[g];
    }
    return at == text.size();
}

bool isBase64Character(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || isDigit(c) || c == '+' || c == '/';
}

// govalidator's Base64 pattern: whole groups of four, the last one padded with at most two '='.
bool isBase64(std::string_view text) {
    if (text.empty() || text.size() % 4 != 0)
        return false;
    std::size_t padding = 0;
    while (padding < 2 && text[text.size() - 1 - padding] == '=')
        ++padding;
    return std::all_of(text.begin(), text.end() - static_cast<long>(padding), isBase64Character);
}

int twoDigits(std::string_view text, std::size_t at) {
    return (text[at] - '0') * 10 + (text[at + 1] - '0');
}

int daysInMonth(int month, int year) {
    static constexpr std::array<int, 12> kDays{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    return month == 2 && leap ? 29 : kDays[static_cast<std::size_t>(month - 1)];
}

// strfmt's IsDate: Go's time.Parse("2006-01-02", text), the day checked against the month.
bool isDate(std::string_view text) {
    if (text.size() != 10 || text[4] != '-' || text[7] != '-')
        return false;
    for (const std::size_t at : {0, 1, 2, 3, 5, 6, 8, 9})
        if (!isDigit(text[at]))
            return false;
    const int year = twoDigits(text, 0) * 100 + twoDigits(text, 2);
    const int month = twoDigits(text, 5);
    const int day = twoDigits(text, 8);
    return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(month, year);
}

// The width of the character at `at` as Go's regexp steps over it: a UTF-8 sequence, or one
// byte that is not one.
std::size_t characterWidth(std::string_view text, std::size_t at) {
    const auto lead = static_cast<unsigned char>(text[at]);
    std::size_t width = 1;
    if (lead >= 0xC2 && lead <= 0xDF)
        width = 2;
    else if (lead >= 0xE0 && lead <= 0xEF)
        width = 3;
    else if (lead >= 0xF0 && lead <= 0xF4)
        width = 4;
    if (at + width > text.size())
        return 1;
    for (std::size_t i = 1; i < width; ++i)
        if ((static_cast<unsigned char>(text[at + i]) & 0xC0U) != 0x80U)
            return 1;
    return width;
}

// z|([+-][0-9]{2}:[0-9]{2}), the whole text.
bool isZone(std::string_view text) {
    return text == "z" ||
           (text.size() == 6 && (text[0] == '+' || text[0] == '-') && isDigit(text[1]) &&
            isDigit(text[2]) && text[3] == ':' && isDigit(text[4]) && isDigit(text[5]));
}

// strfmt's DateTimePattern on the lowercased time part:
// ^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$ (its '.' is any
// character but a newline), then hours <= 23, minutes and seconds <= 59.
bool isTimeOfDay(std::string_view text) {
    if (text.size() < 8 || text[2] != ':' || text[5] != ':')
        return false;
    for (const std::size_t at : {0, 1, 3, 4, 6, 7})
        if (!isDigit(text[at]))
            return false;
    std::string_view rest = text.substr(8);
    if (!isZone(rest)) {
        if (rest.empty() || rest[0] == '\n')
            return false;
        rest.remove_prefix(characterWidth(rest, 0));
        const auto digits = std::find_if_not(rest.begin(), rest.end(), isDigit) - rest.begin();
        if (digits == 0 || !isZone(rest.substr(static_cast<std::size_t>(digits))))
            return false;
    }
    return twoDigits(text, 0) <= 23 && twoDigits(text, 3) <= 59 && twoDigits(text, 6) <= 59;
}

// strfmt's IsDateTime: lowercased, split at 't'; the date before the first, the time of day
// between the first and the second.
bool isDateTime(std::string_view text) {
    if (text.size() < 4)
        return false;
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
        return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    });
    const auto t = lower.find('t');
    if (t == std::string::npos)
        return false;
    const std::string_view time = std::string_view(lower).substr(t + 1);
    return isDate(std::string_view(lower).substr(0, t)) &&
           isTimeOfDay(time.substr(0, time.find('t')));
}

// ---- The named formats -----------------------------------------------------------------------

Messages unless(bool valid, const char* message) {
    return valid ? Messages{} : Messages{message};
}

struct NamedFormat {
    std::string_view key;   // format.named's name, and format.<key>()
    std::string_view name;  // upstream's Format.Name, what equality compares
    Messages (*validate)(std::string_view text);
};

// upstream's ConstantFormats.
constexpr std::array<NamedFormat, 13> kFormats{{
    {"dns1123Label", "DNS1123Label", [](std::string_view s) { return dns1123Label(s); }},
    {"dns1123Subdomain", "DNS1123Subdomain",
     [](std::string_view s) { return dns1123Subdomain(s, LengthUnit::Characters); }},
    {"dns1035Label", "DNS1035Label", [](std::string_view s) { return dns1035Label(s); }},
    {"qualifiedName", "QualifiedName", [](std::string_view s) { return qualifiedName(s); }},
    {"dns1123LabelPrefix", "DNS1123LabelPrefix",
     [](std::string_view s) { return dns1123Label(maskTrailingDash(s)); }},
    {"dns1123SubdomainPrefix", "DNS1123SubdomainPrefix",
     [](std::string_view s) {
         return dns1123Subdomain(maskTrailingDash(s), LengthUnit::Characters);
     }},
    {"dns1035LabelPrefix", "DNS1035LabelPrefix",
     [](std::string_view s) { return dns1035Label(maskTrailingDash(s)); }},
    {"labelValue", "LabelValue", [](std::string_view s) { return labelValue(s); }},
    {"uri", "URI",
     [](std::string_view s) {
         auto error = requestUriError(s);
         return error ? Messages{*error} : Messages{};
     }},
    {"uuid", "uuid",
     [](std::string_view s) { return unless(isUuid(s), "does not match the UUID format"); }},
    {"byte", "byte", [](std::string_view s) { return unless(isBase64(s), "invalid base64"); }},
    {"date", "date", [](std::string_view s) { return unless(isDate(s), "invalid date"); }},
    {"datetime", "datetime",
     [](std::string_view s) { return unless(isDateTime(s), "invalid datetime"); }},
}};

const NamedFormat* findFormat(std::string_view key) {
    const auto found = std::find_if(kFormats.begin(), kFormats.end(),
                                    [key](const NamedFormat& format) { return format.key == key; });
    return found == kFormats.end() ? nullptr : &*found;
}

class FormatValue final : public cel::Opaque {
  public:
    explicit FormatValue(const NamedFormat& format) : format_(&format) {}
    std::string typeName() const override { return "kubernetes.NamedFormat"; }
    bool equals(const cel::Opaque& other) const override {
        return format_->name == static_cast<const FormatValue&>(other).format_->name;
    }
    std::string debugString() const override {
        return "format." + std::string(format_->key) + "()";
    }
    const NamedFormat& format() const { return *format_; }

  private:
    const NamedFormat* format_;  // an entry of kFormats
};

Value named(const Args& args) {
    const std::string* key = args.size() == 1 ? asString(args[0]) : nullptr;
    if (!key)
        return noSuchOverload("format.named", args);
    const NamedFormat* format = findFormat(*key);
    return cel::optionalValue(format ? std::optional<Value>(opaqueValue<FormatValue>(*format))
                                     : std::nullopt);
}

// f.validate(s): none when s is valid, else the list of what is wrong.
Value validate(const Args& args) {
    const FormatValue* format = args.size() == 2 ? asOpaque<FormatValue>(args[0]) : nullptr;
    const std::string* text = format ? asString(args[1]) : nullptr;
    if (!text)
        return noSuchOverload("validate", args);
    cel::List errors;
    for (std::string& message : format->format().validate(*text))
        errors.emplace_back(std::move(message));
    return cel::optionalValue(
        errors.empty() ? std::nullopt : std::optional<Value>(Value::list(std::move(errors))));
}

}  // namespace

std::vector<std::string> validateFormat(std::string_view name, std::string_view text) {
    const NamedFormat* format = findFormat(name);
    return format ? format->validate(text) : Messages{};
}

void addFormatFunctions(cel::Environment& environment) {
    auto& global = environment.globalFunctions;
    global["format.named"] = named;
    for (const NamedFormat& format : kFormats) {
        const std::string name = "format." + std::string(format.key);
        global[name] = [name, &format](const Args& args) -> Value {
            return args.empty() ? opaqueValue<FormatValue>(format) : noSuchOverload(name, args);
        };
    }
    chain(environment.memberFunctions, "validate", validate);
}

}  // namespace numadra::dracel::detail
