// The type checker, a port of cel-go v0.29.2's checker/checker.go over the parsed tree lowered
// to cel-go's AST shape: identifiers, field selections, calls with overload resolution (all
// matching overloads are kept, as the cost estimate covers each), list and map literals
// (HomogeneousAggregateLiterals: one element type), and comprehensions with their scopes.

#include "checked.hpp"

namespace numadra::cel::detail {

namespace {

constexpr const char* kAccumulator = "@result";

// Lowers the parsed tree to cel-go's AST: operators become calls, has() a test-only selection,
// and every macro the comprehension cel-go's macro expands it to.
class Lowering {
  public:
    CheckedPtr lower(const Node& node) {
        switch (node.kind) {
            case NodeKind::Literal: {
                auto expr = make(CheckedKind::Literal, node);
                expr->literal = node.literal;
                return expr;
            }
            case NodeKind::Ident:
                return ident(node, node.name);
            case NodeKind::Select:
                if (node.optional)
                    return call(node, "_?._", lower(*node.children[0]),
                                stringLiteral(node, node.name));
                return select(node, lower(*node.children[0]), node.name, false);
            case NodeKind::Has:
                return select(node, lower(*node.children[0]), node.name, true);
            case NodeKind::Index:
                return call(node, node.optional ? "_[?_]" : "_[_]", lower(*node.children[0]),
                            lower(*node.children[1]));
            case NodeKind::Call:
                return lowerCall(node);
            case NodeKind::List:
            case NodeKind::Map:
                return aggregate(node);
            case NodeKind::Not:
                return call(node, "!_", lower(*node.children[0]));
            case NodeKind::Negate:
                return call(node, "-_", lower(*node.children[0]));
            case NodeKind::Binary:
                return call(node, binaryOpName(node.op), lower(*node.children[0]),
                            lower(*node.children[1]));
            case NodeKind::And:
            case NodeKind::Or:
                return call(node, node.kind == NodeKind::And ? "_&&_" : "_||_",
                            lower(*node.children[0]), lower(*node.children[1]));
            case NodeKind::Conditional:
                return call(node, "_?_:_", lower(*node.children[0]), lower(*node.children[1]),
                            lower(*node.children[2]));
            case NodeKind::Comprehension:
                return macro(node);
            case NodeKind::Bind:
                return bind(node, node.name, lower(*node.children[0]), lower(*node.children[1]));
        }
        return make(CheckedKind::Literal, node);
    }

    int count() const { return next_; }
    std::vector<std::pair<const Node*, int>> takeSourceCalls() { return std::move(sourceCalls_); }

  private:
    CheckedPtr make(CheckedKind kind, const Node& at) {
        auto expr = std::make_unique<CheckedExpr>();
        expr->kind = kind;
        expr->id = next_++;
        expr->line = at.line;
        expr->column = at.column;
        return expr;
    }

    CheckedPtr ident(const Node& at, std::string name) {
        auto expr = make(CheckedKind::Ident, at);
        expr->name = std::move(name);
        return expr;
    }

    CheckedPtr accu(const Node& at) { return ident(at, kAccumulator); }

    CheckedPtr literal(const Node& at, Value value) {
        auto expr = make(CheckedKind::Literal, at);
        expr->literal = std::move(value);
        return expr;
    }

    CheckedPtr stringLiteral(const Node& at, const std::string& text) {
        return literal(at, Value{text});
    }

    CheckedPtr select(const Node& at, CheckedPtr operand, std::string field, bool testOnly) {
        auto expr = make(CheckedKind::Select, at);
        expr->name = std::move(field);
        expr->testOnly = testOnly;
        expr->args.push_back(std::move(operand));
        return expr;
    }

    template <typename... Args>
    CheckedPtr call(const Node& at, std::string function, Args... args) {
        auto expr = make(CheckedKind::Call, at);
        expr->name = std::move(function);
        (expr->args.push_back(std::move(args)), ...);
        return expr;
    }

    template <typename... Args>
    CheckedPtr memberCall(const Node& at, std::string function, CheckedPtr target, Args... args) {
        auto expr = call(at, std::move(function), std::move(args)...);
        expr->target = std::move(target);
        return expr;
    }

    CheckedPtr list(const Node& at, std::vector<CheckedPtr> elements = {}) {
        auto expr = make(CheckedKind::List, at);
        expr->optionalEntries.assign(elements.size(), false);
        expr->args = std::move(elements);
        return expr;
    }

    CheckedPtr single(const Node& at, CheckedPtr element) {
        std::vector<CheckedPtr> elements;
        elements.push_back(std::move(element));
        return list(at, std::move(elements));
    }

    CheckedPtr lowerCall(const Node& node) {
        auto expr = make(CheckedKind::Call, node);
        expr->name = node.name;
        sourceCalls_.emplace_back(&node, expr->id);
        std::size_t first = 0;
        if (node.receiver) {
            expr->target = lower(*node.children[0]);
            first = 1;
        }
        for (std::size_t i = first; i < node.children.size(); ++i)
            expr->args.push_back(lower(*node.children[i]));
        return expr;
    }

    CheckedPtr aggregate(const Node& node) {
        auto expr = make(node.kind == NodeKind::List ? CheckedKind::List : CheckedKind::Map, node);
        for (const auto& child : node.children)
            expr->args.push_back(lower(*child));
        expr->optionalEntries = node.optionalEntries;
        const std::size_t entries =
            node.kind == NodeKind::List ? expr->args.size() : expr->args.size() / 2;
        expr->optionalEntries.resize(entries, false);
        return expr;
    }

    struct Parts {
        CheckedPtr accuInit, condition, step, result;
    };

    CheckedPtr comprehension(const Node& at, CheckedPtr range, std::string iterVar,
                             std::string iterVar2, std::string accuVar, Parts parts) {
        auto expr = make(CheckedKind::Comprehension, at);
        expr->iterRange = std::move(range);
        expr->iterVar = std::move(iterVar);
        expr->iterVar2 = std::move(iterVar2);
        expr->accuVar = std::move(accuVar);
        expr->accuInit = std::move(parts.accuInit);
        expr->loopCondition = std::move(parts.condition);
        expr->loopStep = std::move(parts.step);
        expr->result = std::move(parts.result);
        return expr;
    }

    // cel.bind(name, init, body) and the macros cel-go expands to the same shape.
    CheckedPtr bind(const Node& at, const std::string& name, CheckedPtr init, CheckedPtr body) {
        return comprehension(
            at, list(at), "#unused", "", name,
            {std::move(init), literal(at, Value{false}), ident(at, name), std::move(body)});
    }

    CheckedPtr macro(const Node& node) {
        CheckedPtr range = lower(*node.children[0]);
        switch (node.macro) {
            case Macro::All:
            case Macro::Exists:
            case Macro::ExistsOne:
                return quantifier(node, std::move(range), lower(*node.children[1]));
            case Macro::Map:
            case Macro::MapFilter:
            case Macro::Filter:
            case Macro::TransformList:
                return toList(node, std::move(range));
            case Macro::TransformMap:
            case Macro::TransformMapEntry:
                return toMap(node, std::move(range));
            case Macro::OptMap:
            case Macro::OptFlatMap:
                return optionalMap(node);
            case Macro::SortBy:
                return sortBy(node, std::move(range));
        }
        return range;
    }

    CheckedPtr quantifier(const Node& node, CheckedPtr range, CheckedPtr predicate) {
        Parts parts;
        switch (node.macro) {
            case Macro::All:
                parts = {literal(node, Value{true}), call(node, "@not_strictly_false", accu(node)),
                         call(node, "_&&_", accu(node), std::move(predicate)), accu(node)};
                break;
            case Macro::Exists:
                parts = {literal(node, Value{false}),
                         call(node, "@not_strictly_false", call(node, "!_", accu(node))),
                         call(node, "_||_", accu(node), std::move(predicate)), accu(node)};
                break;
            default:
                parts = {literal(node, Value{std::int64_t{0}}), literal(node, Value{true}),
                         call(node, "_?_:_", std::move(predicate),
                              call(node, "_+_", accu(node), literal(node, Value{std::int64_t{1}})),
                              accu(node)),
                         call(node, "_==_", accu(node), literal(node, Value{std::int64_t{1}}))};
                break;
        }
        return comprehension(node, std::move(range), node.name, node.name2, kAccumulator,
                             std::move(parts));
    }

    // map, filter, transformList: append to a list, behind the filter when there is one.
    CheckedPtr toList(const Node& node, CheckedPtr range) {
        const bool filtered = node.children.size() == 3 || node.macro == Macro::Filter;
        CheckedPtr filter = filtered ? lower(*node.children[1]) : nullptr;
        CheckedPtr element =
            node.macro == Macro::Filter ? ident(node, node.name) : lower(*node.children.back());
        CheckedPtr step = call(node, "_+_", accu(node), single(node, std::move(element)));
        if (filter)
            step = call(node, "_?_:_", std::move(filter), std::move(step), accu(node));
        return comprehension(node, std::move(range), node.name, node.name2, kAccumulator,
                             {list(node), literal(node, Value{true}), std::move(step), accu(node)});
    }

    CheckedPtr toMap(const Node& node, CheckedPtr range) {
        CheckedPtr filter = node.children.size() == 3 ? lower(*node.children[1]) : nullptr;
        CheckedPtr transform = lower(*node.children.back());
        CheckedPtr step = node.macro == Macro::TransformMap
                              ? call(node, "cel.@mapInsert", accu(node), ident(node, node.name),
                                     std::move(transform))
                              : call(node, "cel.@mapInsert", accu(node), std::move(transform));
        if (filter)
            step = call(node, "_?_:_", std::move(filter), std::move(step), accu(node));
        auto empty = make(CheckedKind::Map, node);
        return comprehension(
            node, std::move(range), node.name, node.name2, kAccumulator,
            {std::move(empty), literal(node, Value{true}), std::move(step), accu(node)});
    }

    // optMap/optFlatMap: target.hasValue() ? [optional.of](bind(v, target.value(), e)) : none
    CheckedPtr optionalMap(const Node& node) {
        CheckedPtr bound =
            bind(node, node.name, memberCall(node, "value", lower(*node.children[0])),
                 lower(*node.children[1]));
        if (node.macro == Macro::OptMap)
            bound = call(node, "optional.of", std::move(bound));
        return call(node, "_?_:_", memberCall(node, "hasValue", lower(*node.children[0])),
                    std::move(bound), call(node, "optional.none"));
    }

    // sortBy: bind(@__sortBy_input__, target,
    //              @__sortBy_input__.@sortByAssociatedKeys(@__sortBy_input__.map(v, key)))
    CheckedPtr sortBy(const Node& node, CheckedPtr range) {
        const std::string input = "@__sortBy_input__";
        CheckedPtr keys = comprehension(
            node, ident(node, input), node.name, "", kAccumulator,
            {list(node), literal(node, Value{true}),
             call(node, "_+_", accu(node), single(node, lower(*node.children[1]))), accu(node)});
        CheckedPtr sorted =
            memberCall(node, "@sortByAssociatedKeys", ident(node, input), std::move(keys));
        return bind(node, input, std::move(range), std::move(sorted));
    }

    int next_ = 0;
    std::vector<std::pair<const Node*, int>> sourceCalls_;
};

// Local variables in scope, innermost last.
struct Scope {
    const Scope* parent;
    std::string_view name;
    TypePtr type;
};

class TypeChecker {
  public:
    TypeChecker(const TypeEnvironment& environment, int count) : environment_(environment) {
        ast_.types.resize(static_cast<std::size_t>(count));
        ast_.overloads.resize(static_cast<std::size_t>(count));
    }

    Result<CheckedAst> run(CheckedPtr root) {
        check(*root, nullptr);
        if (error_)
            return *error_;
        for (auto& type : ast_.types)
            if (type)
                type = substitute(mapping_, type, true);
        validateHomogeneous(*root, 0);
        if (error_)
            return *error_;
        ast_.root = std::move(root);
        return std::move(ast_);
    }

  private:
    void fail(const CheckedExpr& at, const std::string& message) {
        if (!error_)
            error_ = Error{"line " + std::to_string(at.line) + ", column " +
                           std::to_string(at.column) + ": " + message};
    }

    void setType(const CheckedExpr& expr, TypePtr type) {
        ast_.types[static_cast<std::size_t>(expr.id)] = std::move(type);
    }

    const TypePtr& typeOf(const CheckedExpr& expr) const {
        return ast_.types[static_cast<std::size_t>(expr.id)];
    }

    bool assignable(const TypePtr& from, const TypePtr& to) {
        return isAssignable(mapping_, from, to);
    }

    TypePtr newTypeVar() { return typeParam("_var" + std::to_string(freeTypeVars_++)); }

    void check(CheckedExpr& expr, const Scope* scope) {
        switch (expr.kind) {
            case CheckedKind::Literal:
                setType(expr, literalType(expr.literal));
                return;
            case CheckedKind::Ident:
                checkIdent(expr, scope);
                return;
            case CheckedKind::Select:
                checkSelect(expr, scope);
                return;
            case CheckedKind::Call:
                checkCall(expr, scope);
                return;
            case CheckedKind::List:
                checkList(expr, scope);
                return;
            case CheckedKind::Map:
                checkMap(expr, scope);
                return;
            case CheckedKind::Comprehension:
                checkComprehension(expr, scope);
                return;
        }
    }

    // cel-go's ValidateHomogeneousAggregateLiterals on the checked types: the elements of a
    // list literal, and the keys and values of a map literal, have one type (type parameter
    // names aside), except inside format() calls.
    void validateHomogeneous(const CheckedExpr& expr, int exempt) {
        const int inner =
            exempt + (expr.kind == CheckedKind::Call && expr.name == "format" ? 1 : 0);
        if (expr.kind == CheckedKind::List && exempt == 0)
            homogeneous(expr, 0, 1);
        if (expr.kind == CheckedKind::Map && exempt == 0) {
            homogeneous(expr, 0, 2);
            homogeneous(expr, 1, 2);
        }
        forEachChild(expr, [&](const CheckedExpr& child) { validateHomogeneous(child, inner); });
    }

    void homogeneous(const CheckedExpr& expr, std::size_t first, std::size_t stride) {
        TypePtr expected;
        for (std::size_t i = first; i < expr.args.size(); i += stride) {
            TypePtr type = typeOf(*expr.args[i]);
            const bool optionalEntry =
                expr.optionalEntries[expr.kind == CheckedKind::List ? i : i / 2];
            if (optionalEntry && (expr.kind == CheckedKind::List || first == 1) &&
                !type->params.empty())
                type = type->params[0];
            if (!expected) {
                expected = type;
            } else if (!isEquivalentType(*expected, *type)) {
                typeMismatch(*expr.args[i], expected, type);
                return;
            }
        }
    }

    template <typename Visit>
    static void forEachChild(const CheckedExpr& expr, Visit visit) {
        if (expr.target)
            visit(*expr.target);
        for (const auto& arg : expr.args)
            visit(*arg);
        for (const CheckedExpr* part :
             {expr.iterRange.get(), expr.accuInit.get(), expr.loopCondition.get(),
              expr.loopStep.get(), expr.result.get()})
            if (part)
                visit(*part);
    }

    static TypePtr literalType(const Value& value) {
        switch (value.v.index()) {
            case 0:
                return makeType(TypeKind::Null);
            case 1:
                return makeType(TypeKind::Bool);
            case 2:
                return makeType(TypeKind::Int);
            case 3:
                return makeType(TypeKind::Uint);
            case 4:
                return makeType(TypeKind::Double);
            case 5:
                return makeType(TypeKind::String);
            case 6:
                return makeType(TypeKind::Bytes);
            default:
                return makeType(TypeKind::Dyn);
        }
    }

    static const TypePtr* local(const Scope* scope, std::string_view name) {
        for (; scope; scope = scope->parent)
            if (scope->name == name)
                return &scope->type;
        return nullptr;
    }

    // The type names a program may use as values (int, list, ...), as cel-go's type provider
    // resolves them.
    static TypePtr typeIdent(std::string_view name) {
        static const std::map<std::string, TypePtr, std::less<>> names = {
            {"bool", typeType(makeType(TypeKind::Bool))},
            {"bytes", typeType(makeType(TypeKind::Bytes))},
            {"double", typeType(makeType(TypeKind::Double))},
            {"int", typeType(makeType(TypeKind::Int))},
            {"list", typeType(listType(makeType(TypeKind::Dyn)))},
            {"map", typeType(mapType(makeType(TypeKind::Dyn), makeType(TypeKind::Dyn)))},
            {"null_type", typeType(makeType(TypeKind::Null))},
            {"string", typeType(makeType(TypeKind::String))},
            {"type", typeType(makeType(TypeKind::Type))},
            {"uint", typeType(makeType(TypeKind::Uint))},
            {"optional_type", typeType(optionalType(makeType(TypeKind::Dyn)))},
            {"google.protobuf.Timestamp", typeType(makeType(TypeKind::Timestamp))},
            {"google.protobuf.Duration", typeType(makeType(TypeKind::Duration))},
        };
        const auto it = names.find(name);
        return it == names.end() ? nullptr : it->second;
    }

    void checkIdent(CheckedExpr& expr, const Scope* scope) {
        if (const TypePtr* localType = local(scope, expr.name)) {
            setType(expr, *localType);
        } else if (const TypePtr* variable = environment_.variable(expr.name)) {
            setType(expr, *variable);
        } else if (TypePtr type = typeIdent(expr.name)) {
            setType(expr, std::move(type));
        } else {
            setType(expr, makeType(TypeKind::Error));
            fail(expr, "undeclared reference to '" + expr.name + "' (in container '')");
        }
    }

    void checkSelect(CheckedExpr& expr, const Scope* scope) {
        // Before the operand, the whole chain a.b.c as one name (cel-go's checkSelect): a
        // variable declared with a dotted name, or a type name such as google.protobuf.Timestamp.
        // Outermost first, so the longest declared name wins.
        if (!expr.testOnly) {
            if (auto name = qualifiedName(expr)) {
                TypePtr type;
                if (const TypePtr* variable = environment_.variable(*name))
                    type = *variable;
                else
                    type = typeIdent(*name);
                if (type) {
                    expr.kind = CheckedKind::Ident;
                    expr.name = std::move(*name);
                    expr.args.clear();
                    setType(expr, std::move(type));
                    return;
                }
            }
        }
        TypePtr result = selectField(expr, *expr.args[0], expr.name, false, scope);
        if (expr.testOnly)
            result = makeType(TypeKind::Bool);
        setType(expr, substitute(mapping_, result, false));
    }

    TypePtr selectField(const CheckedExpr& at, CheckedExpr& operand, const std::string& field,
                        bool optional, const Scope* scope) {
        check(operand, scope);
        const TypePtr operandType = substitute(mapping_, typeOf(operand), false);
        const auto [target, wasOptional] = unwrapOptional(operandType);
        TypePtr result = makeType(TypeKind::Error);
        switch (target->kind) {
            case TypeKind::Map:
                result = target->params[1];
                break;
            case TypeKind::Struct:
                if (const TypePtr* type = environment_.field(target->name, field))
                    result = *type;
                else
                    fail(at, "undefined field '" + field + "'");
                break;
            case TypeKind::TypeParam:
                assignable(makeType(TypeKind::Dyn), target);
                result = makeType(TypeKind::Dyn);
                break;
            default:
                if (!isDynOrError(*target))
                    fail(at, "type '" + formatType(*target) + "' does not support field selection");
                result = makeType(TypeKind::Dyn);
        }
        return wasOptional || optional ? optionalType(result) : result;
    }

    void checkCall(CheckedExpr& expr, const Scope* scope) {
        if (expr.name == "_?._" && !expr.target && expr.args.size() == 2 &&
            expr.args[1]->kind == CheckedKind::Literal && expr.args[1]->literal.is<std::string>()) {
            const std::string field = expr.args[1]->literal.as<std::string>();
            check(*expr.args[1], scope);
            setType(expr, substitute(mapping_, selectField(expr, *expr.args[0], field, true, scope),
                                     false));
            ast_.overloads[static_cast<std::size_t>(expr.id)] = {"select_optional_field"};
            return;
        }
        for (auto& arg : expr.args)
            check(*arg, scope);
        if (!expr.target) {
            resolveGlobal(expr);
            return;
        }
        // `a.b.f()`: a namespaced function a.b.f when one is declared, else f on receiver a.b.
        if (auto qualified = qualifiedName(*expr.target)) {
            if (environment_.function(*qualified + "." + expr.name)) {
                expr.name = *qualified + "." + expr.name;
                expr.target.reset();
                resolveGlobal(expr);
                return;
            }
        }
        check(*expr.target, scope);
        const auto* overloads = environment_.function(expr.name);
        if (!overloads) {
            setType(expr, makeType(TypeKind::Error));
            fail(expr, "undeclared reference to '" + expr.name + "' (in container '')");
            return;
        }
        resolve(expr, *overloads, true);
    }

    void resolveGlobal(CheckedExpr& expr) {
        const auto* overloads = environment_.function(expr.name);
        if (!overloads) {
            setType(expr, makeType(TypeKind::Error));
            fail(expr, "undeclared reference to '" + expr.name + "' (in container '')");
            return;
        }
        resolve(expr, *overloads, false);
    }

    // The dotted name an Ident/Select chain spells (cel-go's containers.ToQualifiedName).
    static std::optional<std::string> qualifiedName(const CheckedExpr& expr) {
        if (expr.kind == CheckedKind::Ident)
            return expr.name;
        if (expr.kind == CheckedKind::Select && !expr.testOnly)
            if (auto prefix = qualifiedName(*expr.args[0]))
                return *prefix + "." + expr.name;
        return std::nullopt;
    }

    void resolve(CheckedExpr& expr, const std::vector<OverloadDeclaration>& overloads,
                 bool member) {
        std::vector<TypePtr> argTypes;
        if (member)
            argTypes.push_back(typeOf(*expr.target));
        for (const auto& arg : expr.args)
            argTypes.push_back(typeOf(*arg));
        if (expr.name == "_&&_" || expr.name == "_||_") {
            resolveLogical(expr, overloads, argTypes);
            return;
        }
        TypePtr result;
        auto& matched = ast_.overloads[static_cast<std::size_t>(expr.id)];
        for (const auto& overload : overloads) {
            if (overload.member != member || overload.args.size() != argTypes.size())
                continue;
            // A generic overload is instantiated with fresh type variables; the others are
            // tried as declared (no copies).
            TypeMapping fresh;
            std::vector<TypePtr> instantiated;
            for (const auto& param : overload.typeParams)
                fresh.add(*typeParam(param), newTypeVar());
            if (!overload.typeParams.empty())
                for (const auto& arg : overload.args)
                    instantiated.push_back(substitute(fresh, arg, false));
            const auto& candidate = overload.typeParams.empty() ? overload.args : instantiated;
            if (!isAssignableList(mapping_, argTypes, candidate))
                continue;
            matched.push_back(overload.id);
            TypePtr overloadResult =
                substitute(mapping_, substitute(fresh, overload.result, false), false);
            if (!result)
                result = std::move(overloadResult);
            else if (!isDyn(*result) && !isExactType(*overloadResult, *result))
                result = makeType(TypeKind::Dyn);
        }
        if (!result) {
            setType(expr, makeType(TypeKind::Error));
            noMatchingOverload(expr, argTypes, member);
            return;
        }
        setType(expr, std::move(result));
    }

    void resolveLogical(CheckedExpr& expr, const std::vector<OverloadDeclaration>& overloads,
                        const std::vector<TypePtr>& argTypes) {
        for (std::size_t i = 0; i < argTypes.size(); ++i)
            if (!assignable(argTypes[i], makeType(TypeKind::Bool)))
                fail(*expr.args[i], "expected type 'bool' but found '" +
                                        formatType(*substitute(mapping_, argTypes[i], true)) + "'");
        if (!overloads.empty())
            ast_.overloads[static_cast<std::size_t>(expr.id)] = {overloads.front().id};
        setType(expr, makeType(TypeKind::Bool));
    }

    // cel-go's checker.FormatCELType, which names the argument types of a call no overload
    // accepts: the well-known and null types by their short names.
    static std::string signatureType(const CelType& type) {
        switch (type.kind) {
            case TypeKind::Any:
                return "any";
            case TypeKind::Duration:
                return "duration";
            case TypeKind::Error:
                return "!error!";
            case TypeKind::Null:
                return "null";
            case TypeKind::Timestamp:
                return "timestamp";
            default:
                break;
        }
        if (type.params.empty())
            return typeName(type);
        std::string text = typeName(type) + "(";
        for (std::size_t i = 0; i < type.params.size(); ++i)
            text += (i ? ", " : "") + signatureType(*type.params[i]);
        return text + ")";
    }

    void noMatchingOverload(const CheckedExpr& expr, const std::vector<TypePtr>& argTypes,
                            bool member) {
        std::string applied;
        for (std::size_t i = member ? 1 : 0; i < argTypes.size(); ++i)
            applied += (applied.empty() ? "" : ", ") +
                       signatureType(*substitute(mapping_, argTypes[i], true));
        std::string signature = "(" + applied + ")";
        if (member)
            signature = signatureType(*substitute(mapping_, argTypes[0], true)) + "." + signature;
        fail(expr,
             "found no matching overload for '" + expr.name + "' applied to '" + signature + "'");
    }

    void checkList(CheckedExpr& expr, const Scope* scope) {
        TypePtr elements;
        for (std::size_t i = 0; i < expr.args.size(); ++i) {
            CheckedExpr& element = *expr.args[i];
            check(element, scope);
            TypePtr type = typeOf(element);
            if (expr.optionalEntries[i]) {
                auto [value, wasOptional] = unwrapOptional(type);
                if (!wasOptional && !isDyn(*value))
                    typeMismatch(element, optionalType(value), value);
                type = value;
            }
            elements = join(elements, type);
        }
        setType(expr, listType(elements ? elements : newTypeVar()));
    }

    void checkMap(CheckedExpr& expr, const Scope* scope) {
        TypePtr keys;
        TypePtr values;
        for (std::size_t i = 0; i + 1 < expr.args.size(); i += 2) {
            CheckedExpr& key = *expr.args[i];
            check(key, scope);
            keys = join(keys, typeOf(key));
            CheckedExpr& value = *expr.args[i + 1];
            check(value, scope);
            TypePtr type = typeOf(value);
            if (expr.optionalEntries[i / 2]) {
                auto [inner, wasOptional] = unwrapOptional(type);
                if (!wasOptional && !isDyn(*inner))
                    typeMismatch(value, optionalType(inner), inner);
                type = inner;
            }
            values = join(values, type);
        }
        if (!keys) {
            keys = newTypeVar();
            values = newTypeVar();
        }
        setType(expr, mapType(keys, values));
    }

    // Elements of different types make a list of dyn here (cel-go's checker); the
    // homogeneous-literal rule is a validator run on the checked types afterwards.
    TypePtr join(const TypePtr& previous, const TypePtr& current) {
        if (!previous)
            return current;
        if (assignable(previous, current))
            return mostGeneral(previous, current);
        return makeType(TypeKind::Dyn);
    }

    void typeMismatch(const CheckedExpr& at, const TypePtr& expected, const TypePtr& found) {
        fail(at, "expected type '" + formatType(*substitute(mapping_, expected, true)) +
                     "' but found '" + formatType(*substitute(mapping_, found, true)) + "'");
    }

    void checkComprehension(CheckedExpr& expr, const Scope* scope) {
        check(*expr.iterRange, scope);
        check(*expr.accuInit, scope);
        const TypePtr range = substitute(mapping_, typeOf(*expr.iterRange), false);
        const TypePtr accuType = typeOf(*expr.accuInit);
        const Scope accumulator{scope, expr.accuVar, accuType};
        auto [first, second] = iterationTypes(expr, range);
        const Scope iteration{&accumulator, expr.iterVar, first};
        const Scope iteration2{&iteration, expr.iterVar2, second};
        const Scope* loop = expr.iterVar2.empty() ? &iteration : &iteration2;
        check(*expr.loopCondition, loop);
        assertType(*expr.loopCondition, makeType(TypeKind::Bool));
        check(*expr.loopStep, loop);
        assertType(*expr.loopStep, accuType);
        check(*expr.result, &accumulator);
        setType(expr, substitute(mapping_, typeOf(*expr.result), false));
    }

    std::pair<TypePtr, TypePtr> iterationTypes(const CheckedExpr& expr, const TypePtr& range) {
        const bool two = !expr.iterVar2.empty();
        switch (range->kind) {
            case TypeKind::List:
                if (two)
                    return {makeType(TypeKind::Int), range->params[0]};
                return {range->params[0], nullptr};
            case TypeKind::Map:
                return {range->params[0], two ? range->params[1] : nullptr};
            case TypeKind::Dyn:
            case TypeKind::Any:
            case TypeKind::Error:
            case TypeKind::TypeParam:
                assignable(makeType(TypeKind::Dyn), range);
                return {makeType(TypeKind::Dyn), two ? makeType(TypeKind::Dyn) : nullptr};
            default:
                fail(*expr.iterRange, "expression of type '" + formatType(*range) +
                                          "' cannot be range of a comprehension (must be list, "
                                          "map, or dynamic)");
                return {makeType(TypeKind::Error), two ? makeType(TypeKind::Error) : nullptr};
        }
    }

    void assertType(const CheckedExpr& expr, const TypePtr& type) {
        if (!assignable(type, typeOf(expr)))
            typeMismatch(expr, type, typeOf(expr));
    }

    const TypeEnvironment& environment_;
    CheckedAst ast_;
    TypeMapping mapping_;
    int freeTypeVars_ = 0;
    std::optional<Error> error_;
};

}  // namespace

Result<CheckedAst> typeCheck(const Node& root,
                             const std::shared_ptr<const TypeEnvironment>& environment) {
    Lowering lowering;
    CheckedPtr lowered = lowering.lower(root);
    auto checked = TypeChecker(*environment, lowering.count()).run(std::move(lowered));
    if (checked) {
        checked->environment = environment;
        checked->sourceCalls = lowering.takeSourceCalls();
    }
    return checked;
}

}  // namespace numadra::cel::detail
