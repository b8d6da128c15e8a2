#include "numadra/dracel/device.hpp"

#include <array>
#include <utility>
#include <vector>

#include "cost_model.hpp"
#include "declarations.hpp"
#include "numadra/dracel/environment.hpp"
#include "numadra/dracel/semver.hpp"
#include "time.hpp"

namespace numadra::dracel {

namespace {

const cel::Value& emptyMap() {
    static const cel::Value empty = cel::Value::map({});
    return empty;
}

// device.attributes / device.capacity: domain -> map(id -> value); an unknown domain reads as an
// empty map, but only present domains are entries (for `in`, size() and comprehensions).
class DomainMap final : public cel::HostMap {
  public:
    explicit DomainMap(cel::Map entries) : entries_(std::move(entries)) {}

    std::optional<cel::Value> lookup(const cel::MapKey& key) const override {
        if (const auto it = entries_.find(key); it != entries_.end())
            return it->second;
        if (std::holds_alternative<std::string>(key))
            return emptyMap();
        return std::nullopt;
    }
    const cel::Map& entries() const override { return entries_; }

  private:
    cel::Map entries_;
};

// Groups "domain/id" (or "id" of the driver's domain) entries into per-domain maps.
class DomainBuilder {
  public:
    explicit DomainBuilder(std::string_view driver) : driver_(driver) {}

    void add(std::string_view name, cel::Value value) {
        const auto slash = name.find('/');
        const bool qualified = slash != std::string_view::npos;
        const std::string_view domain = qualified ? name.substr(0, slash) : driver_;
        std::string id(qualified ? name.substr(slash + 1) : name);
        cel::Map& inner = domainMap(domain);
        if (qualified)  // the explicit form wins over a bare id of the driver's domain
            inner.insert_or_assign(std::move(id), std::move(value));
        else
            inner.try_emplace(std::move(id), std::move(value));
    }

    cel::Value build() && {
        cel::Map outer;
        for (auto& [domain, inner] : domains_)
            outer.emplace(std::string(domain), cel::Value::map(std::move(inner)));
        return cel::Value(std::shared_ptr<const cel::Opaque>(
            std::make_shared<const DomainMap>(std::move(outer))));
    }

  private:
    cel::Map& domainMap(std::string_view domain) {
        for (auto& [name, inner] : domains_)  // devices have few domains
            if (name == domain)
                return inner;
        return domains_.emplace_back(domain, cel::Map{}).second;
    }

    std::string_view driver_;
    std::vector<std::pair<std::string_view, cel::Map>> domains_;
};

Result<cel::Value> parseVersion(const std::string& name, const api::Version& version) {
    auto v = Semver::parse(version.text, Semver::Mode::Strict);
    if (!v)
        return Error{"device attribute \"" + name + "\": " + v.error().message};
    return toValue(std::move(*v));
}

Result<cel::Value> attributeValue(const std::string& name, const api::AttributeValue& attribute) {
    struct Visitor {
        const std::string& name;
        Result<cel::Value> operator()(bool b) const { return cel::Value(b); }
        Result<cel::Value> operator()(std::int64_t i) const { return cel::Value(i); }
        Result<cel::Value> operator()(const std::string& s) const { return cel::Value(s); }
        Result<cel::Value> operator()(const api::Version& v) const { return parseVersion(name, v); }
        Result<cel::Value> operator()(const std::vector<bool>& list) const {
            cel::List out;
            out.reserve(list.size());
            for (const bool b : list)
                out.emplace_back(b);
            return cel::Value::list(std::move(out));
        }
        Result<cel::Value> operator()(const std::vector<std::int64_t>& list) const {
            return cel::Value::list(cel::List(list.begin(), list.end()));
        }
        Result<cel::Value> operator()(const std::vector<std::string>& list) const {
            return cel::Value::list(cel::List(list.begin(), list.end()));
        }
        Result<cel::Value> operator()(const std::vector<api::Version>& list) const {
            cel::List out;
            out.reserve(list.size());
            for (const auto& version : list) {
                auto v = parseVersion(name, version);
                if (!v)
                    return v.error();
                out.push_back(std::move(*v));
            }
            return cel::Value::list(std::move(out));
        }
    };
    return std::visit(Visitor{name}, attribute);
}

Error runtimeError(std::string message) {
    if (message.find("no such key") != std::string::npos)
        message +=
            ". consider using CEL optional chaining (.? followed by orValue()) or guarding "
            "the check with has() for optional fields";
    return Error{std::move(message)};
}

}  // namespace

Result<cel::Value> deviceValue(const DeviceView& device) {
    DomainBuilder attributes(device.driver);
    if (device.attributes) {
        for (const auto& [name, attribute] : *device.attributes) {
            auto value = attributeValue(name, attribute);
            if (!value)
                return value.error();
            attributes.add(name, std::move(*value));
        }
    }
    DomainBuilder capacity(device.driver);
    if (device.capacity)
        for (const auto& [name, quantity] : *device.capacity)
            capacity.add(name, toValue(quantity));

    cel::Map fields;
    fields.emplace(std::string("driver"), cel::Value(std::string(device.driver)));
    fields.emplace(std::string("attributes"), std::move(attributes).build());
    fields.emplace(std::string("capacity"), std::move(capacity).build());
    fields.emplace(std::string("allowMultipleAllocations"),
                   cel::Value(device.allowMultipleAllocations));
    return cel::Value::map(std::move(fields));
}

cel::Value derivedDeviceValue(const cel::Value& device, std::string_view name) {
    const auto* fields = std::get_if<std::shared_ptr<const cel::Map>>(&device.v);
    if (fields == nullptr || *fields == nullptr)
        return device;  // not deviceValue()'s value: nothing to add to
    cel::Map named = **fields;
    named.insert_or_assign(std::string("name"), cel::Value(std::string(name)));
    return cel::Value::map(std::move(named));
}

namespace {

// Upstream's declarations, with device.name for derived attributes (KEP-6080; upstream 1.37.2
// has no name field yet). nullptr only if the compiled-in declarations do not parse, which the
// unit tests rule out.
std::shared_ptr<const cel::TypeEnvironment> makeTypeEnvironment(ExpressionKind kind) {
    auto environment = cel::TypeEnvironment::parse(detail::upstreamDeclarations());
    if (!environment)
        return nullptr;
    if (kind == ExpressionKind::DerivedAttribute) {
        // A device name is a DNS label: at most 63 characters.
        environment->addField("kubernetes.DRADevice", "name", cel::makeType(cel::TypeKind::String));
        environment->addSize("device.name", {63, "scalar", false});
    }
    return std::make_shared<const cel::TypeEnvironment>(std::move(*environment));
}

}  // namespace

const std::shared_ptr<const cel::TypeEnvironment>& typeEnvironment(ExpressionKind kind) {
    static const auto selector = makeTypeEnvironment(ExpressionKind::Selector);
    static const auto derived = makeTypeEnvironment(ExpressionKind::DerivedAttribute);
    return kind == ExpressionKind::Selector ? selector : derived;
}

cel::Declarations deviceDeclarations(ExpressionKind kind) {
    std::set<std::string> fields{"driver", "attributes", "capacity", "allowMultipleAllocations"};
    if (kind == ExpressionKind::DerivedAttribute)
        fields.insert("name");
    cel::Declarations declarations;
    declarations.variables.emplace("device", std::move(fields));
    // The namespaces of the functions this environment has (math., base64. ... are not in
    // upstream's DRA environment either: there they are undeclared references).
    declarations.namespaces = std::set<std::string, std::less<>>{
        "optional", "sets", "lists", "cel", "ip", "format", "strings"};
    declarations.regexMemberFunctions = {"find", "findAll"};
    declarations.literalArgumentChecks.emplace("timestamp", detail::timestampLiteralError);
    declarations.literalArgumentChecks.emplace("duration", detail::durationLiteralError);
    declarations.types = typeEnvironment(kind);
    for (const auto& [overload, function] : draEnvironment().overloadFunctions)
        declarations.staticOverloads.insert(overload);
    return declarations;
}

namespace {

const cel::CompileOptions& compileOptions(ExpressionKind kind) {
    static const cel::CompileOptions selector{deviceDeclarations(ExpressionKind::Selector)};
    static const cel::CompileOptions derived{deviceDeclarations(ExpressionKind::DerivedAttribute)};
    return kind == ExpressionKind::Selector ? selector : derived;
}

// A selector that compiles once name is declared failed on device.name alone: an "undefined
// field" would suggest a typo, while the field exists, only not in selectors.
Error selectorCompileError(std::string_view text, Error error) {
    if (!cel::Program::compile(text, compileOptions(ExpressionKind::DerivedAttribute)))
        return error;
    error.message +=
        " (device.name is available in derived-attribute expressions only; upstream's selector "
        "environment has no name field)";
    return error;
}

}  // namespace

namespace {

bool isDerivedElementType(const cel::CelType& type) {
    switch (type.kind) {
        case cel::TypeKind::Bool:
        case cel::TypeKind::Int:
        case cel::TypeKind::String:
        case cel::TypeKind::Any:
        case cel::TypeKind::Dyn:
            return true;
        case cel::TypeKind::Struct:
            return type.name == "kubernetes.Semver";
        default:
            return false;
    }
}

// Upstream's validateOutputType: a selector is bool or an attribute value (dyn); a derived
// attribute a bool, int, string, semver or dyn, or a list of one of them.
std::optional<Error> checkResultType(const cel::Program& program, ExpressionKind kind) {
    const cel::TypePtr type = program.checkedType();
    if (!type)
        return Error{"the expression was not type-checked (upstream's declarations did not load)"};
    if (kind == ExpressionKind::Selector) {
        if (type->kind == cel::TypeKind::Bool || type->kind == cel::TypeKind::Dyn)
            return std::nullopt;
        return Error{"must evaluate to bool or the unknown type, not " + cel::formatType(*type)};
    }
    if (isDerivedElementType(*type) ||
        (type->kind == cel::TypeKind::List && isDerivedElementType(*type->params[0])))
        return std::nullopt;
    return Error{
        "must evaluate to a primitive scalar (string, integer, boolean, semver) or a list of "
        "these scalars, not " +
        cel::formatType(*type)};
}

// cel-go's static worst-case cost of the expression in upstream's environment (max of the
// range; 2^64-1 when unbounded).
std::uint64_t staticCost(const cel::Program& program, ExpressionKind kind) {
    static const auto estimators = [] {
        std::array<std::optional<detail::DeviceCostEstimator>, 2> built;
        for (const auto each : {ExpressionKind::Selector, ExpressionKind::DerivedAttribute})
            if (const auto& environment = typeEnvironment(each))
                built[static_cast<std::size_t>(each)].emplace(*environment);
        return built;
    }();
    const auto& estimator = estimators[static_cast<std::size_t>(kind)];
    if (!estimator)
        return 0;
    const auto cost = program.estimateCost(*estimator);
    return cost ? cost->max : 0;
}

}  // namespace

Result<Expression> Expression::compile(std::string_view text, ExpressionKind kind) {
    if (text.size() > kMaxExpressionLength)
        return Error{"expression too long (" + std::to_string(text.size()) +
                     " characters, maximum " + std::to_string(kMaxExpressionLength) + ")"};
    const bool selector = kind == ExpressionKind::Selector;
    auto program = cel::Program::compile(text, compileOptions(kind));
    if (!program)
        return selector ? selectorCompileError(text, program.error()) : program.error();
    if (auto error = checkResultType(*program, kind))
        return *error;
    if (auto error = program->checkConstantConversions(draEnvironment()))
        return *error;
    // The API server refuses an expression whose worst-case cost exceeds the limit when the
    // object is written; so do we, with the same estimate (the runtime limit stays as a
    // second guard).
    const std::uint64_t cost = staticCost(*program, kind);
    if (cost > kMaxEstimatedCost)
        return Error{"too complex, exceeds cost limit (estimated worst-case cost " +
                     std::to_string(cost) + ", limit " + std::to_string(kMaxEstimatedCost) + ")"};
    return Expression(std::move(*program), cost);
}

Result<Expression> Expression::compileSelector(std::string_view text) {
    return compile(text, ExpressionKind::Selector);
}

Result<Expression> Expression::compileDerived(std::string_view text) {
    return compile(text, ExpressionKind::DerivedAttribute);
}

cel::Value Expression::evaluate(const cel::Value& device, std::int64_t* cost) const {
    cel::Activation activation;
    activation.bind("device", device);
    return program_.evaluate(activation, draEnvironment(), cost);
}

Result<bool> Expression::matches(const cel::Value& device, std::int64_t* cost) const {
    cel::Value result = evaluate(device, cost);
    if (auto* error = std::get_if<cel::ErrorValue>(&result.v))
        return runtimeError(std::move(error->message));
    if (const auto* b = std::get_if<bool>(&result.v))
        return *b;
    return Error{"CEL result of type " + result.typeName() + " could not be converted to bool"};
}

namespace {

// One scalar of a derived attribute, into the list of its kind.
template <class T>
bool appendAll(const cel::List& list, std::vector<T>& out) {
    out.reserve(list.size());
    for (const cel::Value& item : list) {
        if constexpr (std::is_same_v<T, api::Version>) {
            const Semver* v = asSemver(item);
            if (!v)
                return false;
            out.push_back(api::Version{v->toString()});
        } else {
            const T* x = std::get_if<T>(&item.v);
            if (!x)
                return false;
            out.push_back(*x);
        }
    }
    return true;
}

template <class T>
Result<api::AttributeValue> listOf(const cel::List& list) {
    std::vector<T> out;
    if (!appendAll(list, out))
        return Error{
            "derived attribute: a list must hold values of one type (bool, int, string "
            "or semver)"};
    return api::AttributeValue(std::move(out));
}

}  // namespace

Result<api::AttributeValue> Expression::derive(const cel::Value& device, std::int64_t* cost) const {
    cel::Value result = evaluate(device, cost);
    if (auto* error = std::get_if<cel::ErrorValue>(&result.v))
        return runtimeError(std::move(error->message));
    if (const auto* b = std::get_if<bool>(&result.v))
        return api::AttributeValue(*b);
    if (const auto* i = std::get_if<std::int64_t>(&result.v))
        return api::AttributeValue(*i);
    if (auto* s = std::get_if<std::string>(&result.v))
        return api::AttributeValue(std::move(*s));
    if (const Semver* v = asSemver(result))
        return api::AttributeValue(api::Version{v->toString()});
    if (const auto* listPtr = std::get_if<std::shared_ptr<const cel::List>>(&result.v)) {
        const cel::List& list = **listPtr;
        if (list.empty())
            return Error{"derived attribute: an empty list has no attribute type"};
        const cel::Value& first = list.front();
        if (first.is<bool>())
            return listOf<bool>(list);
        if (first.is<std::int64_t>())
            return listOf<std::int64_t>(list);
        if (first.is<std::string>())
            return listOf<std::string>(list);
        if (asSemver(first))
            return listOf<api::Version>(list);
        return Error{"derived attribute: CEL result of type list(" + first.typeName() +
                     ") is not a list of bool, int, string or semver"};
    }
    return Error{"derived attribute: CEL result of type " + result.typeName() +
                 " is not a bool, int, string, semver or a list of them"};
}

}  // namespace numadra::dracel
