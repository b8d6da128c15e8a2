#include "numadra/dracel/semver.hpp"

#include <charconv>
#include <optional>

namespace numadra::dracel {

namespace {

bool onlyDigits(std::string_view s) {
    for (const char c : s)
        if (c < '0' || c > '9')
            return false;
    return true;
}

bool onlyAlphanumeric(std::string_view s) {  // [0-9A-Za-z-]
    for (const char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '-'))
            return false;
    return true;
}

bool hasLeadingZero(std::string_view s) {
    return s.size() > 1 && s[0] == '0';
}

std::optional<std::uint64_t> parseUint(std::string_view s) {
    std::uint64_t value = 0;
    if (s.empty())
        return std::nullopt;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || ptr != s.data() + s.size())
        return std::nullopt;
    return value;
}

// Splits at '.' into at most `limit` parts (Go's strings.SplitN).
std::vector<std::string_view> splitN(std::string_view s, std::size_t limit) {
    std::vector<std::string_view> parts;
    while (parts.size() + 1 < limit) {
        const auto dot = s.find('.');
        if (dot == std::string_view::npos)
            break;
        parts.push_back(s.substr(0, dot));
        s.remove_prefix(dot + 1);
    }
    parts.push_back(s);
    return parts;
}

std::string quoted(std::string_view s) {
    return "\"" + std::string(s) + "\"";
}

// The Kubernetes semver library's normalization (blang/semver's ParseTolerant without its
// whitespace trimming): drop a leading "v", drop leading zeros of the three parts, pad a missing
// minor or patch with 0.
Result<std::string> normalize(std::string_view s) {
    if (s.starts_with('v'))
        s.remove_prefix(1);
    std::vector<std::string> parts;
    for (const auto part : splitN(s, 3)) {
        std::string p(part);
        if (p.size() > 1) {
            const auto first = p.find_first_not_of('0');
            p.erase(0, first == std::string::npos ? p.size() : first);
            if (p.empty() || p[0] < '0' || p[0] > '9')
                p.insert(p.begin(), '0');
        }
        parts.push_back(std::move(p));
    }
    if (parts.size() < 3) {
        if (parts.back().find_first_of("+-") != std::string::npos)
            return Error{"short version cannot contain PreRelease/Build meta data"};
        while (parts.size() < 3)
            parts.emplace_back("0");
    }
    return parts[0] + "." + parts[1] + "." + parts[2];
}

}  // namespace

Result<Semver> Semver::parse(std::string_view text, Mode mode) {
    auto fail = [text](const std::string& why) {
        return Error{"invalid semver " + quoted(text) + ": " + why};
    };
    std::string normalized;
    std::string_view s = text;
    if (mode == Mode::Normalize) {
        auto n = normalize(text);
        if (!n)
            return fail(n.error().message);
        normalized = std::move(*n);
        s = normalized;
    }
    // blang/semver v4 Parse.
    if (s.empty())
        return fail("Version string empty");
    const auto parts = splitN(s, 3);
    if (parts.size() != 3)
        return fail("No Major.Minor.Patch elements found");

    Semver v;
    v.text_ = std::string(text);
    auto number = [&fail](std::string_view part, const char* what) -> Result<std::uint64_t> {
        if (!onlyDigits(part))
            return fail(std::string("Invalid character(s) found in ") + what + " number " +
                        quoted(part));
        if (hasLeadingZero(part))
            return fail(std::string(what) + " number must not contain leading zeroes " +
                        quoted(part));
        const auto n = parseUint(part);
        if (!n)
            return fail(std::string("invalid ") + what + " number " + quoted(part));
        return *n;
    };
    auto major = number(parts[0], "major");
    if (!major)
        return major.error();
    auto minor = number(parts[1], "minor");
    if (!minor)
        return minor.error();
    v.major_ = *major;
    v.minor_ = *minor;

    std::string_view patch = parts[2];
    std::string_view build;
    std::string_view prerelease;
    bool hasBuild = false;
    bool hasPrerelease = false;
    if (const auto plus = patch.find('+'); plus != std::string_view::npos) {
        build = patch.substr(plus + 1);
        patch = patch.substr(0, plus);
        hasBuild = true;
    }
    if (const auto dash = patch.find('-'); dash != std::string_view::npos) {
        prerelease = patch.substr(dash + 1);
        patch = patch.substr(0, dash);
        hasPrerelease = true;
    }
    auto patchNumber = number(patch, "patch");
    if (!patchNumber)
        return patchNumber.error();
    v.patch_ = *patchNumber;

    if (hasPrerelease) {
        for (const auto id : splitN(prerelease, std::string_view::npos)) {
            if (id.empty())
                return fail("Prerelease is empty");
            Identifier identifier;
            if (onlyDigits(id)) {
                if (hasLeadingZero(id))
                    return fail("Numeric PreRelease version must not contain leading zeroes " +
                                quoted(id));
                const auto n = parseUint(id);
                if (!n)
                    return fail("invalid PreRelease version " + quoted(id));
                identifier.number = *n;
                identifier.numeric = true;
            } else if (!onlyAlphanumeric(id)) {
                return fail("Invalid character(s) found in prerelease " + quoted(id));
            }
            identifier.text = std::string(id);
            v.prerelease_.push_back(std::move(identifier));
        }
    }
    if (hasBuild) {
        for (const auto id : splitN(build, std::string_view::npos)) {
            if (id.empty())
                return fail("Build meta data is empty");
            if (!onlyAlphanumeric(id))
                return fail("Invalid character(s) found in build meta data " + quoted(id));
            v.build_.emplace_back(id);
        }
    }
    return v;
}

std::string Semver::toString() const {
    std::string out =
        std::to_string(major_) + "." + std::to_string(minor_) + "." + std::to_string(patch_);
    for (std::size_t i = 0; i < prerelease_.size(); ++i)
        out.append(i == 0 ? "-" : ".").append(prerelease_[i].text);
    for (std::size_t i = 0; i < build_.size(); ++i)
        out.append(i == 0 ? "+" : ".").append(build_[i]);
    return out;
}

int Semver::compare(const Semver& other) const {
    auto three = [](auto a, auto b) { return a < b ? -1 : (a > b ? 1 : 0); };
    if (major_ != other.major_)
        return three(major_, other.major_);
    if (minor_ != other.minor_)
        return three(minor_, other.minor_);
    if (patch_ != other.patch_)
        return three(patch_, other.patch_);
    if (prerelease_.empty() || other.prerelease_.empty())
        return three(prerelease_.empty(), other.prerelease_.empty());  // a release comes last
    for (std::size_t i = 0; i < prerelease_.size() && i < other.prerelease_.size(); ++i) {
        const Identifier& a = prerelease_[i];
        const Identifier& b = other.prerelease_[i];
        if (a.numeric != b.numeric)
            return a.numeric ? -1 : 1;
        const int c = a.numeric ? three(a.number, b.number) : a.text.compare(b.text);
        if (c != 0)
            return c < 0 ? -1 : 1;
    }
    return three(prerelease_.size(), other.prerelease_.size());
}

bool Semver::equals(const cel::Opaque& other) const {
    const auto* that = dynamic_cast<const Semver*>(&other);
    return that != nullptr && compare(*that) == 0;
}

}  // namespace numadra::dracel
