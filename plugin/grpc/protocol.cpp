#include "protocol.hpp"

#include <algorithm>
#include <array>

namespace numadra::rpc::detail {

std::string frameMessage(std::string_view message) {
    const auto length = static_cast<std::uint32_t>(message.size());
    std::string framed;
    framed.reserve(message.size() + 5);
    framed.push_back('\0');
    for (int shift = 24; shift >= 0; shift -= 8)
        framed.push_back(static_cast<char>((length >> shift) & 0xffU));
    framed.append(message);
    return framed;
}

MessageReader::Outcome MessageReader::append(std::string_view bytes) {
    while (!bytes.empty()) {
        if (!expected_) {
            const std::size_t take = std::min(5 - prefix_.size(), bytes.size());
            prefix_.append(bytes.substr(0, take));
            bytes.remove_prefix(take);
            if (prefix_.size() < 5)
                return Outcome::Fine;
            if (message_)
                return Outcome::SecondMessage;
            if (prefix_[0] != '\0')
                return Outcome::Compressed;
            std::size_t length = 0;
            for (std::size_t i = 1; i < 5; ++i)
                length = (length << 8) | static_cast<unsigned char>(prefix_[i]);
            if (length > maxMessageBytes_)
                return Outcome::TooLarge;
            expected_ = length;
            prefix_.clear();
        }
        const std::size_t take = std::min(*expected_ - body_.size(), bytes.size());
        body_.append(bytes.substr(0, take));
        bytes.remove_prefix(take);
        if (body_.size() == *expected_) {
            message_ = std::move(body_);
            body_.clear();
            expected_.reset();
        }
    }
    return Outcome::Fine;
}

std::optional<Clock::duration> parseGrpcTimeout(std::string_view value) {
    if (value.size() < 2 || value.size() > 9)
        return std::nullopt;
    std::int64_t amount = 0;
    for (char digit : value.substr(0, value.size() - 1)) {
        if (digit < '0' || digit > '9')
            return std::nullopt;
        amount = amount * 10 + (digit - '0');
    }
    using std::chrono::duration_cast;
    constexpr auto kYear = std::chrono::hours(24 * 365);
    auto capped = [&](auto unit) -> Clock::duration {
        using Unit = decltype(unit);
        if (amount > duration_cast<Unit>(kYear).count())
            return kYear;
        return duration_cast<Clock::duration>(Unit(amount));
    };
    switch (value.back()) {
        case 'H':
            return capped(std::chrono::hours{});
        case 'M':
            return capped(std::chrono::minutes{});
        case 'S':
            return capped(std::chrono::seconds{});
        case 'm':
            return capped(std::chrono::milliseconds{});
        case 'u':
            return capped(std::chrono::microseconds{});
        case 'n':
            return capped(std::chrono::nanoseconds{});
        default:
            return std::nullopt;
    }
}

std::string percentEncode(std::string_view message) {
    constexpr std::array<char, 16> kHex{'0', '1', '2', '3', '4', '5', '6', '7',
                                        '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'};
    std::string encoded;
    encoded.reserve(message.size());
    for (char c : message) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte <= 0x7e && byte != '%') {
            encoded.push_back(c);
            continue;
        }
        encoded.push_back('%');
        encoded.push_back(kHex[byte >> 4U]);
        encoded.push_back(kHex[byte & 0xfU]);
    }
    return encoded;
}

std::string grpcMessageValue(std::string_view message) {
    std::size_t kept = 0;
    std::size_t encodedBytes = 0;
    for (; kept < message.size(); ++kept) {
        const auto byte = static_cast<unsigned char>(message[kept]);
        const std::size_t cost = byte >= 0x20 && byte <= 0x7e && byte != '%' ? 1 : 3;
        if (encodedBytes + cost > kMaxStatusMessageValueBytes)
            break;
        encodedBytes += cost;
    }
    // Back to the start of a character: a continuation byte (10xxxxxx) is not one.
    while (kept > 0 && kept < message.size() &&
           (static_cast<unsigned char>(message[kept]) & 0xc0U) == 0x80U)
        --kept;
    return percentEncode(message.substr(0, kept));
}

bool isGrpcContentType(std::string_view contentType) {
    constexpr std::string_view kGrpc = "application/grpc";
    if (contentType.substr(0, kGrpc.size()) != kGrpc)
        return false;
    return contentType.size() == kGrpc.size() || contentType[kGrpc.size()] == '+' ||
           contentType[kGrpc.size()] == ';';
}

}  // namespace numadra::rpc::detail
