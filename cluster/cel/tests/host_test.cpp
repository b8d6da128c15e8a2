// Host extensions: global and member functions supplied by the Environment, Opaque values
// (equality, member dispatch, comparisons through host functions, operator fallbacks), and one
// Program evaluated concurrently from several threads.

#include <gtest/gtest.h>

#include <thread>

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

// A toy version type standing in for the DRA environment's semver.
class Version : public Opaque {
  public:
    explicit Version(std::int64_t major) : major_(major) {}
    std::string typeName() const override { return "test.Version"; }
    bool equals(const Opaque& other) const override {
        return major_ == static_cast<const Version&>(other).major_;
    }
    std::string debugString() const override { return "v" + std::to_string(major_); }
    std::int64_t major() const { return major_; }

  private:
    std::int64_t major_;
};

const Version* asVersion(const Value& value) {
    const auto* opaque = std::get_if<std::shared_ptr<const Opaque>>(&value.v);
    return opaque ? dynamic_cast<const Version*>(opaque->get()) : nullptr;
}

Environment versionEnvironment() {
    Environment env;
    env.globalFunctions["version"] = [](const std::vector<Value>& args) -> Value {
        if (args.size() != 1 || !args[0].is<std::int64_t>())
            return Value::error("version() wants one int");
        return Value(
            std::shared_ptr<const Opaque>(std::make_shared<Version>(args[0].as<std::int64_t>())));
    };
    env.memberFunctions["major"] = [](const std::vector<Value>& args) -> Value {
        const Version* v = asVersion(args[0]);
        if (!v)
            return Value::error("major() wants a version");
        return Value(v->major());
    };
    env.memberFunctions["compareTo"] = [](const std::vector<Value>& args) -> Value {
        const Version* a = asVersion(args[0]);
        const Version* b = args.size() == 2 ? asVersion(args[1]) : nullptr;
        if (!a || !b)
            return Value::error("compareTo() wants two versions");
        return Value(
            std::int64_t{a->major() < b->major() ? -1 : (a->major() > b->major() ? 1 : 0)});
    };
    env.memberFunctions["isGreaterThan"] = [](const std::vector<Value>& args) -> Value {
        const Version* a = asVersion(args[0]);
        const Version* b = args.size() == 2 ? asVersion(args[1]) : nullptr;
        if (!a || !b)
            return Value::error("isGreaterThan() wants two versions");
        return Value(a->major() > b->major());
    };
    return env;
}

std::string evalWith(const std::string& expr, const Environment& env,
                     const Activation& activation = {}) {
    return testing::evalText(expr, activation, env);
}

// A host type with an order (as the DRA environment's timestamps and durations have).
class Rank : public Opaque {
  public:
    explicit Rank(std::int64_t rank) : rank_(rank) {}
    std::string typeName() const override { return "test.Rank"; }
    bool equals(const Opaque& other) const override {
        return rank_ == static_cast<const Rank&>(other).rank_;
    }
    std::optional<int> order(const Opaque& other) const override {
        const std::int64_t theirs = static_cast<const Rank&>(other).rank_;
        return rank_ < theirs ? -1 : (rank_ > theirs ? 1 : 0);
    }
    bool isZeroValue() const override { return rank_ == 0; }

  private:
    std::int64_t rank_;
};

Environment rankEnvironment() {
    Environment env = versionEnvironment();
    env.globalFunctions["rank"] = [](const std::vector<Value>& args) -> Value {
        if (args.size() != 1 || !args[0].is<std::int64_t>())
            return Value::error("rank() wants one int");
        return Value(
            std::shared_ptr<const Opaque>(std::make_shared<Rank>(args[0].as<std::int64_t>())));
    };
    return env;
}

// optional.ofNonZeroValue asks a host type whether a value is its zero (cel-go's traits.Zeroer);
// a host type that does not say is never zero.
TEST(HostFunctions, OfNonZeroValueAsksTheHostTypeForItsZero) {
    EXPECT_EQ(evalWith("optional.ofNonZeroValue(rank(0)).hasValue()", rankEnvironment()), "false");
    EXPECT_EQ(evalWith("optional.ofNonZeroValue(rank(1)).hasValue()", rankEnvironment()), "true");
    EXPECT_EQ(evalWith("optional.ofNonZeroValue(version(0)).hasValue()", rankEnvironment()),
              "true");
}

TEST(HostFunctions, SortByOrdersKeysOfAHostTypeWithAnOrder) {
    EXPECT_EQ(evalWith("[1, 2, 3].sortBy(x, rank(-x))", rankEnvironment()), "[3, 2, 1]");
}

TEST(HostFunctions, SortByRefusesKeysOfAHostTypeWithoutAnOrder) {
    EXPECT_EQ(evalWith("[1, 2].sortBy(x, version(x))", rankEnvironment()),
              "error(sortBy: the keys must be of one orderable type, found test.Version)");
}

TEST(HostFunctions, SortByRefusesKeysOfTwoHostTypes) {
    EXPECT_EQ(evalWith("[1, 2].sortBy(x, x == 1 ? rank(x) : version(x))", rankEnvironment()),
              "error(sortBy: the keys must be of one orderable type, found test.Version)");
}

TEST(HostFunctions, GlobalFunctionIsCalled) {
    EXPECT_EQ(evalWith("version(2)", versionEnvironment()), "v2");
}

TEST(HostFunctions, OpaqueReceiverDispatchesToMemberFunctions) {
    EXPECT_EQ(evalWith("version(3).major()", versionEnvironment()), "3");
}

TEST(HostFunctions, OpaqueValuesCompareThroughHostFunctions) {
    const Environment env = versionEnvironment();
    EXPECT_EQ(evalWith("version(3).compareTo(version(2))", env), "1");
    EXPECT_EQ(evalWith("version(1).compareTo(version(2)) < 0", env), "true");
    EXPECT_EQ(evalWith("version(3).isGreaterThan(version(2))", env), "true");
}

TEST(HostFunctions, OpaqueEqualityUsesEquals) {
    const Environment env = versionEnvironment();
    EXPECT_EQ(evalWith("version(2) == version(2)", env), "true");
    EXPECT_EQ(evalWith("version(2) != version(3)", env), "true");
    EXPECT_EQ(evalWith("version(2) == 2", env), "false");
    EXPECT_EQ(evalWith("version(2) in [version(1), version(2)]", env), "true");
}

TEST(HostFunctions, OpaqueHasNoOrderingOperatorByDefault) {
    EXPECT_EQ(evalWith("version(2) < version(3)", versionEnvironment()),
              "error(no such overload: _<_(test.Version, test.Version))");
}

TEST(HostFunctions, OperatorFallsBackToAHostOverload) {
    Environment env = versionEnvironment();
    env.globalFunctions["_<_"] = [](const std::vector<Value>& args) -> Value {
        return Value(asVersion(args[0])->major() < asVersion(args[1])->major());
    };
    EXPECT_EQ(evalWith("version(2) < version(3)", env), "true");
    EXPECT_EQ(evalWith("1 < 2", env), "true");  // built-in overloads still win
}

TEST(HostFunctions, TypeOfAnOpaqueIsItsTypeName) {
    EXPECT_EQ(evalWith("type(version(1))", versionEnvironment()), "test.Version");
}

TEST(HostFunctions, HostErrorsAreValues) {
    const Environment env = versionEnvironment();
    EXPECT_EQ(evalWith("version('x')", env), "error(version() wants one int)");
    EXPECT_EQ(evalWith("false && version('x').major() == 1", env), "false");
}

TEST(HostFunctions, ArgumentErrorsAreNotPassedToTheHost) {
    int calls = 0;
    Environment env;
    env.globalFunctions["f"] = [&calls](const std::vector<Value>&) -> Value {
        ++calls;
        return Value(true);
    };
    EXPECT_EQ(evalWith("f(1 / 0)", env), "error(division by zero)");
    EXPECT_EQ(calls, 0);
}

TEST(HostFunctions, UnknownFunctionIsNoSuchOverload) {
    EXPECT_EQ(evalWith("nope(1)", Environment{}), "error(no such overload: nope(int))");
    EXPECT_EQ(evalWith("1.nope()", Environment{}), "error(no such overload: nope(int))");
}

TEST(HostFunctions, HostExtendsABuiltinNameForOtherTypes) {
    // Like Kubernetes' lists library adding indexOf() for lists next to the string one.
    Environment env;
    env.memberFunctions["indexOf"] = [](const std::vector<Value>& args) -> Value {
        const auto& list = *args[0].as<std::shared_ptr<const List>>();
        for (std::size_t i = 0; i < list.size(); ++i)
            if (list[i] == args[1])
                return Value(static_cast<std::int64_t>(i));
        return Value(std::int64_t{-1});
    };
    EXPECT_EQ(evalWith("[5, 6, 7].indexOf(6)", env), "1");
    EXPECT_EQ(evalWith("'abc'.indexOf('c')", env), "2");
}

TEST(HostFunctions, QualifiedGlobalFunction) {
    Environment env;
    env.globalFunctions["sets.contains"] = [](const std::vector<Value>& args) -> Value {
        return Value(args.size() == 2);
    };
    EXPECT_EQ(evalWith("sets.contains([1], [1])", env), "true");
}

TEST(HostFunctions, VariableWinsOverQualifiedFunction) {
    Environment env;
    env.globalFunctions["s.size"] = [](const std::vector<Value>&) -> Value { return Value(true); };
    Activation activation;
    activation.bind("s", Value(std::string("abc")));
    EXPECT_EQ(evalWith("s.size()", env, activation), "3");
}

TEST(HostFunctions, ReceiverIsTheFirstArgument) {
    Environment env;
    env.memberFunctions["pair"] = [](const std::vector<Value>& args) -> Value {
        return Value::list(args);
    };
    EXPECT_EQ(evalWith("'a'.pair(1, 2u)", env), "[\"a\", 1, 2u]");
}

TEST(ThreadSafety, OneProgramEvaluatedFromManyThreads) {
    auto program = Program::compile(
        "[1, 2, 3, 4].map(x, x * n).filter(y, y % 2 == 0).size() == 2 && "
        "name.matches('^gpu-[0-9]+$')");
    ASSERT_TRUE(program.ok());
    const Program shared = *program;
    const Environment env;
    std::vector<std::thread> threads;
    std::vector<int> correct(8, 0);
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 500; ++i) {
                Activation activation;
                activation.bind("n", Value(std::int64_t{t % 2 == 0 ? 1 : 2}));
                activation.bind("name", Value("gpu-" + std::to_string(i)));
                const Value result = shared.evaluate(activation, env);
                // n == 1: [2, 4] has two even numbers → true; n == 2: all four are even → false.
                if (result == Value(t % 2 == 0))
                    ++correct[static_cast<std::size_t>(t)];
            }
        });
    }
    for (auto& thread : threads)
        thread.join();
    for (int t = 0; t < 8; ++t)
        EXPECT_EQ(correct[static_cast<std::size_t>(t)], 500) << "thread " << t;
}

TEST(Program, CopiesShareTheCompiledTree) {
    auto program = Program::compile("1 + 1");
    ASSERT_TRUE(program.ok());
    const Program copy = *program;
    EXPECT_EQ(copy.evaluate({}, {}), Value(std::int64_t{2}));
    EXPECT_EQ(&copy.source(), &program->source());
}

TEST(Values, ToStringEscapesStringsAndBytes) {
    EXPECT_EQ(toString(Value(std::string("a\"b\\\n"))), "\"a\\\"b\\\\\\n\"");
    EXPECT_EQ(toString(Value::bytes(std::string("\x01\xff", 2))), "b\"\\x01\\xff\"");
}

TEST(Values, TypeNames) {
    EXPECT_EQ(Value().typeName(), "null_type");
    EXPECT_EQ(Value(std::uint64_t{1}).typeName(), "uint");
    EXPECT_EQ(Value::list({}).typeName(), "list");
    EXPECT_EQ(Value::type("int").typeName(), "type");
}

TEST(Values, EqualityIsHeterogeneousForNumbers) {
    EXPECT_EQ(Value(std::int64_t{1}), Value(std::uint64_t{1}));
    EXPECT_EQ(Value(std::int64_t{1}), Value(1.0));
    EXPECT_FALSE(Value(std::int64_t{1}) == Value(std::string("1")));
    EXPECT_EQ(Value::error("x"), Value::error("x"));
}

}  // namespace
}  // namespace numadra::cel
