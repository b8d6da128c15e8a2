#pragma once
// The Kubernetes CEL format library (k8s.io/apiserver/pkg/cel/library/format.go), which
// upstream's DRA environment enables:
//   format.named(name) (an optional format; none for an unknown name);
//   format.dns1123Label() format.dns1123Subdomain() format.dns1035Label() format.qualifiedName()
//   format.dns1123LabelPrefix() format.dns1123SubdomainPrefix() format.dns1035LabelPrefix()
//   format.labelValue() format.uri() format.uuid() format.byte() format.date() format.datetime();
//   f.validate(s): optional.none() when s is valid, else optional.of(the list of what is wrong),
// with the rules and messages of k8s.io/apimachinery's validation (pkg/util/validation,
// pkg/api/validate/content) and kube-openapi's strfmt, as upstream calls them.
// type(format.uuid()) is kubernetes.NamedFormat; two formats are equal when their names are.

#include <string>
#include <string_view>
#include <vector>

#include "numadra/cel/cel.hpp"

namespace numadra::dracel::detail {

void addFormatFunctions(cel::Environment& environment);

// What format `name` (format.named's names) finds wrong with `text`: empty when it is valid.
// An unknown name finds nothing wrong.
std::vector<std::string> validateFormat(std::string_view name, std::string_view text);

}  // namespace numadra::dracel::detail
