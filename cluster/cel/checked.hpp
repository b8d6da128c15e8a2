#pragma once
// The checked form of an expression: the parsed tree lowered to cel-go's AST shape (operators
// as calls, macros expanded into comprehensions exactly as cel-go expands them), with the type
// of every expression and the overloads every call may resolve to. The cost estimator walks it
// as cel-go's does; evaluation keeps using the parsed tree.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ast.hpp"
#include "numadra/cel/checker.hpp"

namespace numadra::cel::detail {

enum class CheckedKind { Literal, Ident, Select, Call, List, Map, Comprehension };

struct CheckedExpr;
using CheckedPtr = std::unique_ptr<CheckedExpr>;

struct CheckedExpr {
    CheckedKind kind = CheckedKind::Literal;
    int id = 0;
    int line = 1;
    int column = 1;
    Value literal;
    std::string name;       // Ident: the name; Select: the field; Call: the function
    bool testOnly = false;  // Select: has()
    CheckedPtr target;      // Call: the receiver of a member call
    // Call: the arguments; List: the elements; Map: key, value, key, value...; Select: operand.
    std::vector<CheckedPtr> args;
    std::vector<bool> optionalEntries;  // List: per element; Map: per entry
    // Comprehension
    std::string iterVar, iterVar2, accuVar;
    CheckedPtr iterRange, accuInit, loopCondition, loopStep, result;
};

struct CheckedAst {
    CheckedPtr root;
    std::vector<TypePtr> types;  // by expression id
    // By expression id (calls): the ids of the overloads the call may resolve to, viewing the
    // environment's declarations, which `environment` keeps alive.
    std::vector<std::vector<std::string_view>> overloads;
    std::shared_ptr<const TypeEnvironment> environment;
    // The parsed calls and the ids of the calls they were lowered to.
    std::vector<std::pair<const Node*, int>> sourceCalls;
};

// Lowers and type-checks `root` against `environment`. Errors: "line L, column C: message" with
// cel-go's wording (undeclared reference, no matching overload, type mismatch, ...).
Result<CheckedAst> typeCheck(const Node& root,
                             const std::shared_ptr<const TypeEnvironment>& environment);

// cel-go's checker.Cost on a checked expression, with the Kubernetes environments' options
// (has() costs nothing; the estimators of the Lists v3 and Sets libraries).
CostEstimate estimateCost(const CheckedAst& ast, const CostEstimator& estimator);

}  // namespace numadra::cel::detail
