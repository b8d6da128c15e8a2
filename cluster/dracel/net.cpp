#include "net.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "host.hpp"
#include "numadra/common/result.hpp"

namespace numadra::dracel::detail {

namespace {

using cel::Value;

// An address as Go's netip.Addr holds it: 4 or 16 bytes, IPv4 in the first 4.
struct Address {
    std::array<std::uint8_t, 16> bytes{};
    bool v4 = false;

    std::size_t size() const { return v4 ? 4 : 16; }
    bool operator==(const Address&) const = default;
};

// Go's parseIPv4: exactly four decimal fields, no leading zeros, each at most 255.
std::optional<Address> parseV4(std::string_view text) {
    Address address;
    address.v4 = true;
    std::size_t field = 0;
    std::size_t start = 0;
    while (true) {
        const std::size_t dot = text.find('.', start);
        const std::size_t end = dot == std::string_view::npos ? text.size() : dot;
        const std::string_view digits = text.substr(start, end - start);
        if (field == 4 || digits.empty() || digits.size() > 3 ||
            (digits.size() > 1 && digits[0] == '0') ||
            !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return std::nullopt;
        int value = 0;
        std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (value > 255)
            return std::nullopt;
        address.bytes[field++] = static_cast<std::uint8_t>(value);
        if (dot == std::string_view::npos)
            break;
        start = dot + 1;
    }
    if (field != 4)
        return std::nullopt;
    return address;
}

// Go's netip.ParseAddr without upstream's two refusals (zones, IPv4-mapped), which each caller
// words itself.
std::optional<Address> parseBareAddress(std::string_view text) {
    if (text.find('%') != std::string_view::npos)
        return std::nullopt;
    if (text.find(':') == std::string_view::npos)
        return parseV4(text);
    Address address;
    const std::string copy(text);
    if (inet_pton(AF_INET6, copy.c_str(), address.bytes.data()) != 1)
        return std::nullopt;
    return address;
}

bool isV4Mapped(const Address& address) {
    static constexpr std::array<std::uint8_t, 12> kMappedPrefix{0, 0, 0, 0, 0,    0,
                                                                0, 0, 0, 0, 0xff, 0xff};
    return !address.v4 &&
           std::equal(kMappedPrefix.begin(), kMappedPrefix.end(), address.bytes.begin());
}

Result<Address> parseAddress(std::string_view text) {
    const std::string quoted = "\"" + std::string(text) + "\"";
    if (text.find('%') != std::string_view::npos)
        return Error{"IP address " + quoted + " with zone value is not allowed"};
    auto address = parseBareAddress(text);
    if (!address)
        return Error{"IP Address " + quoted + " parse error during conversion from string: " +
                     "ParseAddr(" + quoted + "): unable to parse IP"};
    if (isV4Mapped(*address))
        return Error{"IPv4-mapped IPv6 address " + quoted + " is not allowed"};
    return *address;
}

// Go's netip.Addr.String(): dotted quad, or RFC 5952 (the longest run of two or more zero
// groups compressed, lowercase hex).
std::string addressText(const Address& address) {
    if (address.v4)
        return std::to_string(address.bytes[0]) + "." + std::to_string(address.bytes[1]) + "." +
               std::to_string(address.bytes[2]) + "." + std::to_string(address.bytes[3]);
    std::array<unsigned, 8> groups{};
    for (std::size_t i = 0; i < 8; ++i)
        groups[i] = (address.bytes[2 * i] << 8U) | address.bytes[2 * i + 1];
    int bestStart = -1;
    int bestLength = 0;
    for (int i = 0; i < 8;) {
        int j = i;
        while (j < 8 && groups[static_cast<std::size_t>(j)] == 0)
            ++j;
        if (j - i >= 2 && j - i > bestLength) {
            bestStart = i;
            bestLength = j - i;
        }
        i = j == i ? i + 1 : j;
    }
    std::string out;
    char hex[8];
    for (int i = 0; i < 8; ++i) {
        if (i == bestStart) {
            out += "::";
            i += bestLength - 1;
            continue;
        }
        if (!out.empty() && out.back() != ':')
            out += ':';
        const auto [end, error] =
            std::to_chars(hex, hex + sizeof hex, groups[static_cast<std::size_t>(i)], 16);
        out.append(hex, end);
    }
    return out;
}

// The first `bits` bits of both addresses are equal.
bool samePrefix(const Address& a, const Address& b, int bits) {
    for (int i = 0; i < bits; ++i) {
        const auto byte = static_cast<std::size_t>(i / 8);
        const unsigned mask = 0x80U >> static_cast<unsigned>(i % 8);
        if ((a.bytes[byte] & mask) != (b.bytes[byte] & mask))
            return false;
    }
    return true;
}

bool inRange(const Address& address, std::array<std::uint8_t, 16> prefix, int bits, bool v4) {
    Address network;
    network.bytes = prefix;
    network.v4 = v4;
    return address.v4 == v4 && samePrefix(address, network, bits);
}

class IpValue final : public cel::Opaque {
  public:
    explicit IpValue(Address address) : address_(address) {}
    std::string typeName() const override { return "net.IP"; }
    bool equals(const cel::Opaque& other) const override {
        return address_ == static_cast<const IpValue&>(other).address_;
    }
    std::string debugString() const override { return "ip(\"" + addressText(address_) + "\")"; }
    const Address& address() const { return address_; }

  private:
    Address address_;
};

struct Prefix {
    Address address;
    int bits = 0;
    bool operator==(const Prefix&) const = default;
};

class CidrValue final : public cel::Opaque {
  public:
    explicit CidrValue(Prefix prefix) : prefix_(prefix) {}
    std::string typeName() const override { return "net.CIDR"; }
    bool equals(const cel::Opaque& other) const override {
        return prefix_ == static_cast<const CidrValue&>(other).prefix_;
    }
    std::string debugString() const override { return "cidr(\"" + text() + "\")"; }
    std::string text() const {
        return addressText(prefix_.address) + "/" + std::to_string(prefix_.bits);
    }
    const Prefix& prefix() const { return prefix_; }

  private:
    Prefix prefix_;
};

Value ipValue(const Address& address) {
    return opaqueValue<IpValue>(address);
}

Value cidrValue(const Prefix& prefix) {
    return opaqueValue<CidrValue>(prefix);
}

Result<Prefix> parsePrefix(std::string_view text) {
    const std::string quoted = "\"" + std::string(text) + "\"";
    auto refused = [&](const std::string& why) {
        return Error{
            "network address parse error during conversion from string: "
            "netip.ParsePrefix(" +
            quoted + "): " + why};
    };
    const auto slash = text.rfind('/');
    if (slash == std::string_view::npos)
        return refused("no '/'");
    const std::string_view addressPart = text.substr(0, slash);
    if (addressPart.find('%') != std::string_view::npos)
        return refused("IPv6 zones cannot be present in a prefix");
    auto address = parseBareAddress(addressPart);
    if (!address)
        return refused("ParseAddr(\"" + std::string(addressPart) + "\"): unable to parse IP");
    if (isV4Mapped(*address))
        return Error{"IPv4-mapped IPv6 address " + quoted + " is not allowed"};
    const std::string_view bitsPart = text.substr(slash + 1);
    int bits = -1;
    const bool digits = !bitsPart.empty() && bitsPart.size() <= 3 &&
                        std::all_of(bitsPart.begin(), bitsPart.end(),
                                    [](char c) { return c >= '0' && c <= '9'; }) &&
                        !(bitsPart.size() > 1 && bitsPart[0] == '0');
    if (digits)
        std::from_chars(bitsPart.data(), bitsPart.data() + bitsPart.size(), bits);
    if (!digits || bits < 0 || bits > static_cast<int>(address->size() * 8))
        return refused("bad bits after slash: \"" + std::string(bitsPart) + "\"");
    return Prefix{*address, bits};
}

Value ipOf(const Args& args) {
    const std::string* text = args.size() == 1 ? asString(args[0]) : nullptr;
    if (!text)
        return noSuchOverload("ip", args);
    auto address = parseAddress(*text);
    return address ? ipValue(*address) : Value::error(address.error().message);
}

Value cidrOf(const Args& args) {
    const std::string* text = args.size() == 1 ? asString(args[0]) : nullptr;
    if (!text)
        return noSuchOverload("cidr", args);
    auto prefix = parsePrefix(*text);
    return prefix ? cidrValue(*prefix) : Value::error(prefix.error().message);
}

// ip.f() predicates.
template <bool (*Test)(const Address&)>
cel::Function ipPredicate(std::string name) {
    return [name = std::move(name)](const Args& args) -> Value {
        const IpValue* ip = args.size() == 1 ? asOpaque<IpValue>(args[0]) : nullptr;
        return ip ? Value(Test(ip->address())) : noSuchOverload(name, args);
    };
}

bool isUnspecified(const Address& a) {
    return std::all_of(a.bytes.begin(), a.bytes.begin() + static_cast<long>(a.size()),
                       [](std::uint8_t b) { return b == 0; });
}

bool isLoopback(const Address& a) {
    Address one;
    one.bytes[15] = 1;
    return a.v4 ? a.bytes[0] == 127 : a == one;
}

bool isMulticast(const Address& a) {
    return a.v4 ? (a.bytes[0] & 0xf0U) == 0xe0U : a.bytes[0] == 0xff;
}

bool isLinkLocalMulticast(const Address& a) {
    return a.v4 ? inRange(a, {224, 0, 0}, 24, true) : inRange(a, {0xff, 0x02}, 16, false);
}

bool isLinkLocalUnicast(const Address& a) {
    return a.v4 ? inRange(a, {169, 254}, 16, true) : inRange(a, {0xfe, 0x80}, 10, false);
}

// Go's netip.Addr.IsGlobalUnicast: everything but the special ranges above and the IPv4
// broadcast address (private ranges included).
bool isGlobalUnicast(const Address& a) {
    const bool broadcast = a.v4 && std::all_of(a.bytes.begin(), a.bytes.begin() + 4,
                                               [](std::uint8_t b) { return b == 0xff; });
    return !broadcast && !isUnspecified(a) && !isLoopback(a) && !isMulticast(a) &&
           !isLinkLocalUnicast(a);
}

// Go's netip.Prefix.Contains: same family, the first `bits` bits equal.
bool contains(const Prefix& prefix, const Address& address) {
    return prefix.address.v4 == address.v4 && samePrefix(prefix.address, address, prefix.bits);
}

Value containsIP(const Args& args) {
    const CidrValue* cidr = args.size() == 2 ? asOpaque<CidrValue>(args[0]) : nullptr;
    if (!cidr)
        return noSuchOverload("containsIP", args);
    if (const IpValue* ip = asOpaque<IpValue>(args[1]))
        return Value(contains(cidr->prefix(), ip->address()));
    if (const std::string* text = asString(args[1])) {
        auto address = parseAddress(*text);
        return address ? Value(contains(cidr->prefix(), *address))
                       : Value::error(address.error().message);
    }
    return noSuchOverload("containsIP", args);
}

Value containsCIDR(const Args& args) {
    const CidrValue* cidr = args.size() == 2 ? asOpaque<CidrValue>(args[0]) : nullptr;
    if (!cidr)
        return noSuchOverload("containsCIDR", args);
    std::optional<Prefix> other;
    if (const CidrValue* value = asOpaque<CidrValue>(args[1])) {
        other = value->prefix();
    } else if (const std::string* text = asString(args[1])) {
        auto parsed = parsePrefix(*text);
        if (!parsed)
            return Value::error(parsed.error().message);
        other = *parsed;
    } else {
        return noSuchOverload("containsCIDR", args);
    }
    // Go: cidr.Overlaps(other) && cidr.Bits() <= other.Bits().
    const Prefix& self = cidr->prefix();
    const bool overlaps =
        self.address.v4 == other->address.v4 &&
        samePrefix(self.address, other->address, std::min(self.bits, other->bits));
    return Value(overlaps && self.bits <= other->bits);
}

Value masked(const Args& args) {
    const CidrValue* cidr = args.size() == 1 ? asOpaque<CidrValue>(args[0]) : nullptr;
    if (!cidr)
        return noSuchOverload("masked", args);
    Prefix prefix = cidr->prefix();
    for (int i = prefix.bits; i < static_cast<int>(prefix.address.size() * 8); ++i)
        prefix.address.bytes[static_cast<std::size_t>(i / 8)] &=
            static_cast<std::uint8_t>(~(0x80U >> static_cast<unsigned>(i % 8)));
    return cidrValue(prefix);
}

}  // namespace

void addNetworkFunctions(cel::Environment& environment) {
    auto& global = environment.globalFunctions;
    auto& member = environment.memberFunctions;
    global["ip"] = ipOf;
    global["isIP"] = [](const Args& args) -> Value {
        const std::string* text = args.size() == 1 ? asString(args[0]) : nullptr;
        return text ? Value(parseAddress(*text).ok()) : noSuchOverload("isIP", args);
    };
    global["ip.isCanonical"] = [](const Args& args) -> Value {
        const std::string* text = args.size() == 1 ? asString(args[0]) : nullptr;
        if (!text)
            return noSuchOverload("ip.isCanonical", args);
        auto address = parseAddress(*text);
        return address ? Value(addressText(*address) == *text)
                       : Value::error(address.error().message);
    };
    global["cidr"] = cidrOf;
    global["isCIDR"] = [](const Args& args) -> Value {
        const std::string* text = args.size() == 1 ? asString(args[0]) : nullptr;
        return text ? Value(parsePrefix(*text).ok()) : noSuchOverload("isCIDR", args);
    };
    // string(ip) and string(cidr): the standard library's string() has no overload for them.
    chain(global, "string", [](const Args& args) -> Value {
        if (args.size() == 1) {
            if (const IpValue* ip = asOpaque<IpValue>(args[0]))
                return Value(addressText(ip->address()));
            if (const CidrValue* cidr = asOpaque<CidrValue>(args[0]))
                return Value(cidr->text());
        }
        return noSuchOverload("string", args);
    });
    member["family"] = [](const Args& args) -> Value {
        const IpValue* ip = args.size() == 1 ? asOpaque<IpValue>(args[0]) : nullptr;
        if (!ip)
            return noSuchOverload("family", args);
        return Value(std::int64_t{ip->address().v4 ? 4 : 6});
    };
    member["isUnspecified"] = ipPredicate<isUnspecified>("isUnspecified");
    member["isLoopback"] = ipPredicate<isLoopback>("isLoopback");
    member["isLinkLocalMulticast"] = ipPredicate<isLinkLocalMulticast>("isLinkLocalMulticast");
    member["isLinkLocalUnicast"] = ipPredicate<isLinkLocalUnicast>("isLinkLocalUnicast");
    member["isGlobalUnicast"] = ipPredicate<isGlobalUnicast>("isGlobalUnicast");
    member["containsIP"] = containsIP;
    member["containsCIDR"] = containsCIDR;
    member["ip"] = [](const Args& args) -> Value {
        const CidrValue* cidr = args.size() == 1 ? asOpaque<CidrValue>(args[0]) : nullptr;
        return cidr ? ipValue(cidr->prefix().address) : noSuchOverload("ip", args);
    };
    member["masked"] = masked;
    member["prefixLength"] = [](const Args& args) -> Value {
        const CidrValue* cidr = args.size() == 1 ? asOpaque<CidrValue>(args[0]) : nullptr;
        return cidr ? Value(std::int64_t{cidr->prefix().bits})
                    : noSuchOverload("prefixLength", args);
    };
}

}  // namespace numadra::dracel::detail
