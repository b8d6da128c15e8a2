#pragma once
// CEL's static types as cel-go's type checker models them (common/types.Type), and the
// unification it runs on them (checker/types.go, checker/mapping.go), ported rule by rule so
// that overload resolution, and the cost estimate built on it, decide as upstream decides.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace numadra::cel {

enum class TypeKind {
    Dyn,
    Any,
    Bool,
    Bytes,
    Double,
    Duration,
    Error,
    Int,
    List,
    Map,
    Null,
    Opaque,
    String,
    Struct,
    Timestamp,
    Type,
    TypeParam,
    Uint,
};

struct CelType;
using TypePtr = std::shared_ptr<const CelType>;

struct CelType {
    TypeKind kind = TypeKind::Dyn;
    std::string name;  // Struct, Opaque and TypeParam: the type's name
    std::vector<TypePtr> params;
};

TypePtr makeType(TypeKind kind);  // a primitive (shared instances)
TypePtr listType(TypePtr element);
TypePtr mapType(TypePtr key, TypePtr value);
TypePtr opaqueType(std::string name, std::vector<TypePtr> params = {});
TypePtr optionalType(TypePtr value);
TypePtr structType(std::string name);
TypePtr typeParam(std::string name);
TypePtr typeType(TypePtr of = nullptr);  // type, or type(of)

// Reads the encoding tests/upstream/cel/declarations.go writes: int, list(T), map(K,V), type(T),
// opaque:name(params), struct:name, ~param.
std::optional<TypePtr> parseType(std::string_view text);

// cel-go's TypeName(): "int", "list", "map", a struct's or opaque's name, a parameter's name.
std::string typeName(const CelType& type);
// How cel-go prints a type in messages: list(int), map(string, dyn), optional_type(int), ...
std::string formatType(const CelType& type);
bool isExactType(const CelType& a, const CelType& b);
bool isEquivalentType(const CelType& a, const CelType& b);  // type parameter names aside
bool isDyn(const CelType& type);                            // dyn or any
bool isDynOrError(const CelType& type);
bool isOptionalType(const CelType& type);
// The value of an optional type and true, or the type itself and false.
std::pair<TypePtr, bool> unwrapOptional(const TypePtr& type);

// Type parameter substitutions found while unifying (cel-go's mapping), by parameter name.
// An append-only log (the latest entry for a name wins), so a failed unification is undone by
// truncating it instead of copying the whole mapping for every attempt.
class TypeMapping {
  public:
    // The substitution of a type parameter; nullptr for other types and unbound parameters.
    const TypePtr* find(const CelType& param) const;
    void add(const CelType& param, TypePtr type) { entries_.emplace_back(param.name, std::move(type)); }
    std::size_t mark() const { return entries_.size(); }
    void rollback(std::size_t mark) { entries_.resize(mark); }

  private:
    std::vector<std::pair<std::string, TypePtr>> entries_;
};

// Whether `from` can be assigned to `to`: on success the mapping is updated with the
// substitutions that made it so; on failure it is left unchanged.
bool isAssignable(TypeMapping& mapping, const TypePtr& from, const TypePtr& to);
bool isAssignableList(TypeMapping& mapping, const std::vector<TypePtr>& from,
                      const std::vector<TypePtr>& to);
// The more general of two types known to unify.
TypePtr mostGeneral(const TypePtr& a, const TypePtr& b);
// The type with every bound parameter replaced; unbound ones become dyn when `paramsToDyn`.
TypePtr substitute(const TypeMapping& mapping, const TypePtr& type, bool paramsToDyn);

}  // namespace numadra::cel
