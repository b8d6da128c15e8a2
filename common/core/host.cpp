#include "numadra/common/host.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace numadra {

std::string defaultNodeName() {
    char buffer[256] = {};
    if (::gethostname(buffer, sizeof buffer - 1) != 0)
        return "localhost";
    std::string name(buffer);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return name;
}

}  // namespace numadra
