// A port of cel-go v0.29.2's type unification (checker/types.go): the same rules in the same
// order, so that which overloads match and which result types follow are upstream's.

#include "numadra/cel/types.hpp"

#include <array>

namespace numadra::cel {

TypePtr makeType(TypeKind kind) {
    static const auto primitives = [] {
        std::array<TypePtr, static_cast<std::size_t>(TypeKind::Uint) + 1> all;
        for (std::size_t i = 0; i < all.size(); ++i)
            all[i] = std::make_shared<const CelType>(CelType{static_cast<TypeKind>(i), {}, {}});
        return all;
    }();
    return primitives[static_cast<std::size_t>(kind)];
}

TypePtr listType(TypePtr element) {
    return std::make_shared<const CelType>(CelType{TypeKind::List, {}, {std::move(element)}});
}

TypePtr mapType(TypePtr key, TypePtr value) {
    return std::make_shared<const CelType>(
        CelType{TypeKind::Map, {}, {std::move(key), std::move(value)}});
}

TypePtr opaqueType(std::string name, std::vector<TypePtr> params) {
    return std::make_shared<const CelType>(
        CelType{TypeKind::Opaque, std::move(name), std::move(params)});
}

TypePtr optionalType(TypePtr value) {
    return opaqueType("optional_type", {std::move(value)});
}

TypePtr structType(std::string name) {
    return std::make_shared<const CelType>(CelType{TypeKind::Struct, std::move(name), {}});
}

TypePtr typeParam(std::string name) {
    return std::make_shared<const CelType>(CelType{TypeKind::TypeParam, std::move(name), {}});
}

TypePtr typeType(TypePtr of) {
    if (!of)
        return makeType(TypeKind::Type);
    return std::make_shared<const CelType>(CelType{TypeKind::Type, {}, {std::move(of)}});
}

namespace {

// A recursive-descent reader of the declarations' type encoding.
class TypeReader {
  public:
    explicit TypeReader(std::string_view text) : text_(text) {}

    std::optional<TypePtr> readAll() {
        auto type = read();
        if (!type || pos_ != text_.size())
            return std::nullopt;
        return type;
    }

  private:
    std::optional<TypePtr> read() {
        const std::string word = name();
        if (word.empty())
            return std::nullopt;
        if (word[0] == '~')
            return typeParam(word.substr(1));
        if (word.starts_with("struct:"))
            return structType(word.substr(7));
        std::vector<TypePtr> params;
        if (pos_ < text_.size() && text_[pos_] == '(') {
            auto read = parameters();
            if (!read)
                return std::nullopt;
            params = std::move(*read);
        }
        if (word.starts_with("opaque:"))
            return opaqueType(word.substr(7), std::move(params));
        return composite(word, std::move(params));
    }

    static std::optional<TypePtr> composite(const std::string& word, std::vector<TypePtr> params) {
        if (word == "list" && params.size() == 1)
            return listType(params[0]);
        if (word == "map" && params.size() == 2)
            return mapType(params[0], params[1]);
        if (word == "type" && params.size() <= 1)
            return typeType(params.empty() ? nullptr : params[0]);
        if (!params.empty())
            return std::nullopt;
        static const std::map<std::string, TypeKind, std::less<>> primitives = {
            {"dyn", TypeKind::Dyn},
            {"any", TypeKind::Any},
            {"bool", TypeKind::Bool},
            {"bytes", TypeKind::Bytes},
            {"double", TypeKind::Double},
            {"duration", TypeKind::Duration},
            {"error", TypeKind::Error},
            {"int", TypeKind::Int},
            {"null", TypeKind::Null},
            {"string", TypeKind::String},
            {"timestamp", TypeKind::Timestamp},
            {"uint", TypeKind::Uint},
        };
        const auto it = primitives.find(word);
        if (it == primitives.end())
            return std::nullopt;
        return makeType(it->second);
    }

    std::optional<std::vector<TypePtr>> parameters() {
        std::vector<TypePtr> params;
        ++pos_;  // '('
        while (true) {
            auto param = read();
            if (!param || pos_ >= text_.size())
                return std::nullopt;
            params.push_back(*param);
            const char next = text_[pos_++];
            if (next == ')')
                return params;
            if (next != ',')
                return std::nullopt;
        }
    }

    std::string name() {
        const std::size_t start = pos_;
        while (pos_ < text_.size() && text_[pos_] != '(' && text_[pos_] != ')' &&
               text_[pos_] != ',')
            ++pos_;
        return std::string(text_.substr(start, pos_ - start));
    }

    std::string_view text_;
    std::size_t pos_ = 0;
};

}  // namespace

std::optional<TypePtr> parseType(std::string_view text) {
    return TypeReader(text).readAll();
}

std::string typeName(const CelType& type) {
    switch (type.kind) {
        case TypeKind::Dyn:
            return "dyn";
        case TypeKind::Any:
            return "google.protobuf.Any";
        case TypeKind::Bool:
            return "bool";
        case TypeKind::Bytes:
            return "bytes";
        case TypeKind::Double:
            return "double";
        case TypeKind::Duration:
            return "google.protobuf.Duration";
        case TypeKind::Error:
            return "*error*";
        case TypeKind::Int:
            return "int";
        case TypeKind::List:
            return "list";
        case TypeKind::Map:
            return "map";
        case TypeKind::Null:
            return "null_type";
        case TypeKind::String:
            return "string";
        case TypeKind::Timestamp:
            return "google.protobuf.Timestamp";
        case TypeKind::Type:
            return "type";
        case TypeKind::Uint:
            return "uint";
        case TypeKind::Opaque:
        case TypeKind::Struct:
        case TypeKind::TypeParam:
            return type.name;
    }
    return "dyn";
}

std::string formatType(const CelType& type) {
    if (type.params.empty())
        return typeName(type);
    std::string text = typeName(type) + "(";
    for (std::size_t i = 0; i < type.params.size(); ++i)
        text += (i ? ", " : "") + formatType(*type.params[i]);
    return text + ")";
}

namespace {

bool sameType(const CelType& a, const CelType& b, bool paramNames) {
    if (&a == &b)
        return true;
    if (a.kind != b.kind || a.params.size() != b.params.size())
        return false;
    if ((paramNames || a.kind != TypeKind::TypeParam) && typeName(a) != typeName(b))
        return false;
    for (std::size_t i = 0; i < a.params.size(); ++i)
        if (!sameType(*a.params[i], *b.params[i], paramNames))
            return false;
    return true;
}

}  // namespace

bool isExactType(const CelType& a, const CelType& b) {
    return sameType(a, b, true);
}

bool isEquivalentType(const CelType& a, const CelType& b) {
    return sameType(a, b, false);
}

bool isDyn(const CelType& type) {
    return type.kind == TypeKind::Dyn || type.kind == TypeKind::Any;
}

bool isDynOrError(const CelType& type) {
    return isDyn(type) || type.kind == TypeKind::Error;
}

bool isOptionalType(const CelType& type) {
    return type.kind == TypeKind::Opaque && type.name == "optional_type";
}

std::pair<TypePtr, bool> unwrapOptional(const TypePtr& type) {
    if (isOptionalType(*type))
        return {type->params[0], true};
    return {type, false};
}

const TypePtr* TypeMapping::find(const CelType& param) const {
    if (param.kind != TypeKind::TypeParam)
        return nullptr;
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
        if (it->first == param.name)
            return &it->second;
    return nullptr;
}

namespace {

// cel-go's Type.IsAssignableType (the default rule: the same instance, a dynamic target, or
// the same kind and name with assignable parameters).
bool typeAcceptsType(const CelType& to, const CelType& from) {
    if (&to == &from || isDyn(to) || to.kind == TypeKind::TypeParam)
        return true;
    if (to.kind != from.kind || typeName(to) != typeName(from) ||
        to.params.size() != from.params.size())
        return false;
    for (std::size_t i = 0; i < to.params.size(); ++i)
        if (!typeAcceptsType(*to.params[i], *from.params[i]))
            return false;
    return true;
}

bool isLegacyNullable(const CelType& type) {
    switch (type.kind) {
        case TypeKind::Opaque:
        case TypeKind::Struct:
        case TypeKind::Any:
        case TypeKind::Duration:
        case TypeKind::Timestamp:
            return true;
        default:
            return false;
    }
}

bool isAssignableNull(const CelType& type) {
    return isLegacyNullable(type) || typeAcceptsType(type, *makeType(TypeKind::Null));
}

bool isEqualOrLessSpecific(const CelType& t1, const CelType& t2) {
    if (isDyn(t1) || t1.kind == TypeKind::TypeParam)
        return true;
    if (isDyn(t2) || t2.kind == TypeKind::TypeParam)
        return false;
    if (t1.kind != t2.kind)
        return false;
    switch (t1.kind) {
        case TypeKind::Opaque:
            if (t1.name != t2.name || t1.params.size() != t2.params.size())
                return false;
            for (std::size_t i = 0; i < t1.params.size(); ++i)
                if (!isEqualOrLessSpecific(*t1.params[i], *t2.params[i]))
                    return false;
            return true;
        case TypeKind::List:
            return isEqualOrLessSpecific(*t1.params[0], *t2.params[0]);
        case TypeKind::Map:
            return isEqualOrLessSpecific(*t1.params[0], *t2.params[0]) &&
                   isEqualOrLessSpecific(*t1.params[1], *t2.params[1]);
        case TypeKind::Type:
            return true;
        default:
            return isExactType(t1, t2);
    }
}

// The occurs check of unification: whether `type` does not appear within `within`.
bool notReferencedIn(const TypeMapping& mapping, const CelType& type, const CelType& within) {
    if (isExactType(type, within))
        return false;
    switch (within.kind) {
        case TypeKind::TypeParam: {
            const TypePtr* sub = mapping.find(within);
            return !sub || notReferencedIn(mapping, type, **sub);
        }
        case TypeKind::Opaque:
        case TypeKind::List:
        case TypeKind::Map:
        case TypeKind::Type:
            for (const auto& param : within.params)
                if (!notReferencedIn(mapping, type, *param))
                    return false;
            return true;
        default:
            return true;
    }
}

bool internalIsAssignable(TypeMapping& mapping, const TypePtr& t1, const TypePtr& t2);

// Whether t2 (or its substitution) is a valid substitution for t1; `hasSub`: t2 already had one.
bool isValidTypeSubstitution(TypeMapping& mapping, const TypePtr& t1, const TypePtr& t2,
                             bool& hasSub) {
    hasSub = false;
    if (t1->kind == t2->kind && isExactType(*t1, *t2)) {
        hasSub = true;
        return true;
    }
    if (const TypePtr* found = mapping.find(*t2)) {
        hasSub = true;
        const TypePtr t2Sub = *found;
        if (t1->kind == t2Sub->kind && isExactType(*t1, *t2Sub))
            return true;
        if (internalIsAssignable(mapping, t1, t2Sub)) {
            TypePtr general = mostGeneral(t1, t2Sub);
            if (notReferencedIn(mapping, *t2, *general))
                mapping.add(*t2, std::move(general));
            return true;
        }
        return false;
    }
    if (notReferencedIn(mapping, *t2, *t1)) {
        mapping.add(*t2, t1);
        return true;
    }
    return false;
}

bool internalIsAssignableList(TypeMapping& mapping, const std::vector<TypePtr>& l1,
                              const std::vector<TypePtr>& l2) {
    if (l1.size() != l2.size())
        return false;
    for (std::size_t i = 0; i < l1.size(); ++i)
        if (!internalIsAssignable(mapping, l1[i], l2[i]))
            return false;
    return true;
}

bool internalIsAssignable(TypeMapping& mapping, const TypePtr& t1, const TypePtr& t2) {
    if (t2->kind == TypeKind::TypeParam) {
        bool hasSub = false;
        if (isValidTypeSubstitution(mapping, t1, t2, hasSub))
            return true;
        if (hasSub)
            return false;
    }
    if (t1->kind == TypeKind::TypeParam) {
        bool hasSub = false;
        return isValidTypeSubstitution(mapping, t2, t1, hasSub);
    }
    if (isDynOrError(*t1) || isDynOrError(*t2))
        return true;
    if (t1->kind == TypeKind::Null)
        return isAssignableNull(*t2);
    if (t2->kind == TypeKind::Null)
        return isAssignableNull(*t1);
    switch (t1->kind) {
        case TypeKind::Bool:
        case TypeKind::Bytes:
        case TypeKind::Double:
        case TypeKind::Int:
        case TypeKind::String:
        case TypeKind::Uint:
        case TypeKind::Any:
        case TypeKind::Duration:
        case TypeKind::Timestamp:
        case TypeKind::Struct:
            return typeAcceptsType(*t2, *t1);
        case TypeKind::Type:
            return t2->kind == TypeKind::Type;
        case TypeKind::Opaque:
        case TypeKind::List:
        case TypeKind::Map:
            return t1->kind == t2->kind && typeName(*t1) == typeName(*t2) &&
                   internalIsAssignableList(mapping, t1->params, t2->params);
        default:
            return false;
    }
}

}  // namespace

bool isAssignable(TypeMapping& mapping, const TypePtr& from, const TypePtr& to) {
    const std::size_t mark = mapping.mark();
    if (internalIsAssignable(mapping, from, to))
        return true;
    mapping.rollback(mark);
    return false;
}

bool isAssignableList(TypeMapping& mapping, const std::vector<TypePtr>& from,
                      const std::vector<TypePtr>& to) {
    const std::size_t mark = mapping.mark();
    if (internalIsAssignableList(mapping, from, to))
        return true;
    mapping.rollback(mark);
    return false;
}

TypePtr mostGeneral(const TypePtr& a, const TypePtr& b) {
    return isEqualOrLessSpecific(*a, *b) ? a : b;
}

// The type with its parameters substituted; the same instance when nothing changes (most
// types have no parameters), so checking does not rebuild every list and map type it meets.
TypePtr substitute(const TypeMapping& mapping, const TypePtr& type, bool paramsToDyn) {
    if (const TypePtr* sub = mapping.find(*type))
        return substitute(mapping, *sub, paramsToDyn);
    if (type->kind == TypeKind::TypeParam)
        return paramsToDyn ? makeType(TypeKind::Dyn) : type;
    if (type->params.empty())
        return type;
    std::vector<TypePtr> params;
    params.reserve(type->params.size());
    bool changed = false;
    for (const auto& param : type->params) {
        params.push_back(substitute(mapping, param, paramsToDyn));
        changed = changed || params.back() != param;
    }
    if (!changed)
        return type;
    return std::make_shared<const CelType>(CelType{type->kind, type->name, std::move(params)});
}

}  // namespace numadra::cel
