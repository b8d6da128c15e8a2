#pragma once
// Semantic versions as the DRA CEL environment sees them (`kubernetes.Semver`): semver 2.0.0
// parsing as blang/semver's Parse (what Kubernetes uses), the Kubernetes semver library's
// normalize mode, and semver precedence.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/cel/cel.hpp"
#include "numadra/common/result.hpp"

namespace numadra::dracel {

class Semver final : public cel::Opaque {
  public:
    static constexpr std::string_view kTypeName = "kubernetes.Semver";

    enum class Mode {
        Strict,     // semver 2.0.0: MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], no leading zeros
        Normalize,  // first: drop a leading "v", drop leading zeros, pad a missing minor/patch
    };

    // Errors name the text: `invalid semver "1.0": No Major.Minor.Patch elements found`.
    static Result<Semver> parse(std::string_view text, Mode mode = Mode::Strict);

    std::uint64_t major() const { return major_; }
    std::uint64_t minor() const { return minor_; }
    std::uint64_t patch() const { return patch_; }
    // The text it was parsed from, as given.
    const std::string& text() const { return text_; }
    // The canonical semver text ("1.2.0" for semver("v1.2", true)); equals text() for a
    // strictly parsed version.
    std::string toString() const;

    // Semver precedence: -1, 0 or 1. Pre-release versions precede the release; pre-release
    // identifiers compare numerically when both are numeric, numeric ones before alphanumeric
    // ones, and a shorter list of equal identifiers first. Build metadata is ignored.
    int compare(const Semver& other) const;
    // Equal precedence (build metadata ignored), as CEL's `==` on semver values.
    bool operator==(const Semver& other) const { return compare(other) == 0; }

    // cel::Opaque
    std::string typeName() const override { return std::string(kTypeName); }
    bool equals(const cel::Opaque& other) const override;
    std::string debugString() const override { return "semver(\"" + text_ + "\")"; }

  private:
    struct Identifier {
        std::string text;
        std::uint64_t number = 0;
        bool numeric = false;
    };

    std::string text_;
    std::uint64_t major_ = 0;
    std::uint64_t minor_ = 0;
    std::uint64_t patch_ = 0;
    std::vector<Identifier> prerelease_;
    std::vector<std::string> build_;
};

}  // namespace numadra::dracel
