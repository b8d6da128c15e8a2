#pragma once
// The Kubernetes CEL IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library ip.go, cidr.go),
// which upstream's DRA environment enables, with Go's net/netip semantics:
//   ip(s) isIP(s) ip.isCanonical(s); ip.family() ip.isUnspecified() ip.isLoopback()
//   ip.isLinkLocalMulticast() ip.isLinkLocalUnicast() ip.isGlobalUnicast(); string(ip)
//   cidr(s) isCIDR(s); c.containsIP(ip|s) c.containsCIDR(cidr|s) c.ip() c.masked()
//   c.prefixLength(); string(c)
// Addresses with a zone (fe80::1%eth0) and IPv4-mapped IPv6 addresses (::ffff:1.2.3.4) are
// refused, as upstream refuses them. `==` compares the addresses (and prefix lengths).

#include "numadra/cel/cel.hpp"

namespace numadra::dracel::detail {

void addNetworkFunctions(cel::Environment& environment);

}  // namespace numadra::dracel::detail
