#include "numadra/dracel/environment.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <compare>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "host.hpp"
#include "k8s_format.hpp"
#include "net.hpp"
#include "time.hpp"
#include "url.hpp"

namespace numadra::dracel {

using cel::Value;
using detail::Args;

cel::Value toValue(Quantity quantity) {
    return Value(
        std::shared_ptr<const cel::Opaque>(std::make_shared<const Quantity>(std::move(quantity))));
}

cel::Value toValue(Semver version) {
    return Value(
        std::shared_ptr<const cel::Opaque>(std::make_shared<const Semver>(std::move(version))));
}

const Quantity* asQuantity(const cel::Value& value) {
    const auto* opaque = std::get_if<std::shared_ptr<const cel::Opaque>>(&value.v);
    return opaque && *opaque ? dynamic_cast<const Quantity*>(opaque->get()) : nullptr;
}

const Semver* asSemver(const cel::Value& value) {
    const auto* opaque = std::get_if<std::shared_ptr<const cel::Opaque>>(&value.v);
    return opaque && *opaque ? dynamic_cast<const Semver*>(opaque->get()) : nullptr;
}

namespace {

using detail::asString;
using detail::noSuchOverload;

const cel::List* asList(const Value& v) {
    const auto* list = std::get_if<std::shared_ptr<const cel::List>>(&v.v);
    return list && *list ? list->get() : nullptr;
}

Value fromInt(std::int64_t i) {
    return Value(i);
}

// ---- Quantity --------------------------------------------------------------------------------

Value quantityOf(const Args& args) {
    const std::string* text = args.size() == 1 ? asString(args[0]) : nullptr;
    if (!text)
        return noSuchOverload("quantity", args);
    auto q = Quantity::parse(*text);
    if (!q)
        return Value::error(q.error().message);
    return toValue(std::move(*q));
}

Value isQuantity(const Args& args) {
    const std::string* text = args.size() == 1 ? asString(args[0]) : nullptr;
    if (!text)
        return noSuchOverload("isQuantity", args);
    return Value(Quantity::parse(*text).ok());
}

// q.add(q|int) / q.sub(q|int); an int is taken as a DecimalExponent quantity, as Kubernetes does.
Value quantityArithmetic(std::string_view name, const Args& args, bool subtract) {
    const Quantity* a = args.size() == 2 ? asQuantity(args[0]) : nullptr;
    if (!a)
        return noSuchOverload(name, args);
    std::optional<Quantity> converted;
    const Quantity* b = asQuantity(args[1]);
    if (!b) {
        const auto* i = std::get_if<std::int64_t>(&args[1].v);
        if (!i)
            return noSuchOverload(name, args);
        converted = Quantity::fromInt(*i, Quantity::Format::DecimalExponent);
        b = &*converted;
    }
    auto result = subtract ? a->sub(*b) : a->add(*b);
    if (!result)
        return Value::error(result.error().message);
    return toValue(std::move(*result));
}

// ---- Semver ----------------------------------------------------------------------------------

std::optional<Semver::Mode> semverArgs(const Args& args, const std::string** text) {
    if (args.empty() || args.size() > 2 || !(*text = asString(args[0])))
        return std::nullopt;
    if (args.size() == 1)
        return Semver::Mode::Strict;
    const auto* normalize = std::get_if<bool>(&args[1].v);
    if (!normalize)
        return std::nullopt;
    return *normalize ? Semver::Mode::Normalize : Semver::Mode::Strict;
}

Value semverOf(const Args& args) {
    const std::string* text = nullptr;
    const auto mode = semverArgs(args, &text);
    if (!mode)
        return noSuchOverload("semver", args);
    auto v = Semver::parse(*text, *mode);
    if (!v)
        return Value::error(v.error().message);
    return toValue(std::move(*v));
}

Value isSemver(const Args& args) {
    const std::string* text = nullptr;
    const auto mode = semverArgs(args, &text);
    if (!mode)
        return noSuchOverload("isSemver", args);
    return Value(Semver::parse(*text, *mode).ok());
}

Value semverPart(std::string_view name, const Args& args, std::uint64_t (Semver::*part)() const) {
    const Semver* v = args.size() == 1 ? asSemver(args[0]) : nullptr;
    if (!v)
        return noSuchOverload(name, args);
    return fromInt(static_cast<std::int64_t>((v->*part)()));
}

// ---- Shared by Quantity and Semver -----------------------------------------------------------

// compareTo / isGreaterThan / isLessThan on two quantities or two versions.
std::optional<int> compareExtension(const Args& args) {
    if (args.size() != 2)
        return std::nullopt;
    if (const Quantity* a = asQuantity(args[0])) {
        const Quantity* b = asQuantity(args[1]);
        if (!b)
            return std::nullopt;
        const auto c = *a <=> *b;
        return std::is_lt(c) ? -1 : (std::is_gt(c) ? 1 : 0);
    }
    if (const Semver* a = asSemver(args[0])) {
        const Semver* b = asSemver(args[1]);
        if (!b)
            return std::nullopt;
        return a->compare(*b);
    }
    return std::nullopt;
}

// ---- includes --------------------------------------------------------------------------------

Value includes(const Args& args) {
    if (args.size() != 2)
        return noSuchOverload("includes", args);
    if (const cel::List* list = asList(args[0])) {
        if (list->size() > kMaxIncludesListSize)
            return Value::error("includes() on a list of " + std::to_string(list->size()) +
                                " elements, more than the " + std::to_string(kMaxIncludesListSize) +
                                " allowed");
        for (const Value& element : *list)
            if (element == args[1])
                return Value(true);
        return Value(false);
    }
    return Value(args[0] == args[1]);
}

// ---- Lists library ---------------------------------------------------------------------------

// CEL ordering of two values of the types the lists library sorts (numbers across int, uint and
// double; strings; bytes; bools); nullopt when they are not ordered.
std::optional<int> compareScalars(const Value& a, const Value& b) {
    auto three = [](const auto& x, const auto& y) { return x < y ? -1 : (y < x ? 1 : 0); };
    auto compareDouble = [&](double d, const Value& other) -> std::optional<int> {
        if (std::isnan(d))
            return std::nullopt;
        if (const auto* i = std::get_if<std::int64_t>(&other.v)) {
            if (d < -9223372036854775808.0)
                return -1;
            if (d >= 9223372036854775808.0)
                return 1;
            return three(d, static_cast<double>(*i));
        }
        if (const auto* u = std::get_if<std::uint64_t>(&other.v)) {
            if (d < 0)
                return -1;
            if (d >= 18446744073709551616.0)
                return 1;
            return three(d, static_cast<double>(*u));
        }
        if (const auto* e = std::get_if<double>(&other.v)) {
            if (std::isnan(*e))
                return std::nullopt;
            return three(d, *e);
        }
        return std::nullopt;
    };
    if (const auto* d = std::get_if<double>(&a.v))
        return compareDouble(*d, b);
    if (const auto* d = std::get_if<double>(&b.v)) {
        const auto r = compareDouble(*d, a);
        return r ? std::optional<int>(-*r) : std::nullopt;
    }
    if (const auto* i = std::get_if<std::int64_t>(&a.v)) {
        if (const auto* j = std::get_if<std::int64_t>(&b.v))
            return three(*i, *j);
        if (const auto* u = std::get_if<std::uint64_t>(&b.v))
            return *i < 0 ? -1 : three(static_cast<std::uint64_t>(*i), *u);
        return std::nullopt;
    }
    if (const auto* u = std::get_if<std::uint64_t>(&a.v)) {
        if (const auto* v = std::get_if<std::uint64_t>(&b.v))
            return three(*u, *v);
        if (const auto* j = std::get_if<std::int64_t>(&b.v))
            return *j < 0 ? 1 : three(*u, static_cast<std::uint64_t>(*j));
        return std::nullopt;
    }
    if (a.v.index() != b.v.index())
        return std::nullopt;
    if (const auto* s = asString(a))
        return three(*s, b.as<std::string>());
    if (const auto* x = std::get_if<cel::Bytes>(&a.v))
        return three(x->data, b.as<cel::Bytes>().data);
    if (const auto* x = std::get_if<bool>(&a.v))
        return three(*x, b.as<bool>());
    return std::nullopt;
}

Value isSorted(const Args& args) {
    const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
    if (!list)
        return noSuchOverload("isSorted", args);
    for (std::size_t i = 1; i < list->size(); ++i) {
        const auto c = compareScalars((*list)[i - 1], (*list)[i]);
        if (!c)
            return noSuchOverload("isSorted", args);
        if (*c > 0)
            return Value(false);
    }
    return Value(true);
}

Value sum(const Args& args) {
    const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
    if (!list)
        return noSuchOverload("sum", args);
    if (list->empty())
        return fromInt(0);
    const Value& first = list->front();
    if (first.is<std::int64_t>()) {
        std::int64_t total = 0;
        for (const Value& v : *list) {
            const auto* i = std::get_if<std::int64_t>(&v.v);
            if (!i)
                return noSuchOverload("sum", args);
            if (__builtin_add_overflow(total, *i, &total))
                return Value::error("integer overflow");
        }
        return Value(total);
    }
    if (first.is<std::uint64_t>()) {
        std::uint64_t total = 0;
        for (const Value& v : *list) {
            const auto* u = std::get_if<std::uint64_t>(&v.v);
            if (!u)
                return noSuchOverload("sum", args);
            if (__builtin_add_overflow(total, *u, &total))
                return Value::error("unsigned integer overflow");
        }
        return Value(total);
    }
    if (first.is<double>()) {
        double total = 0;
        for (const Value& v : *list) {
            const auto* d = std::get_if<double>(&v.v);
            if (!d)
                return noSuchOverload("sum", args);
            total += *d;
        }
        return Value(total);
    }
    return noSuchOverload("sum", args);
}

// min() / max(): the first least / greatest element.
Value extreme(std::string_view name, const Args& args, int replaceWhen) {
    const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
    if (!list)
        return noSuchOverload(name, args);
    if (list->empty())
        return Value::error(std::string(name) + "(list) argument must not be empty");
    const Value* best = &list->front();
    for (const Value& v : *list) {
        const auto c = compareScalars(*best, v);
        if (!c)
            return noSuchOverload(name, args);
        if (*c == replaceWhen)
            best = &v;
    }
    return *best;
}

Value listIndexOf(std::string_view name, const Args& args, bool last) {
    const cel::List* list = args.size() == 2 ? asList(args[0]) : nullptr;
    if (!list)
        return noSuchOverload(name, args);
    const auto n = static_cast<std::int64_t>(list->size());
    for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t i = last ? n - 1 - k : k;
        if ((*list)[static_cast<std::size_t>(i)] == args[1])
            return fromInt(i);
    }
    return fromInt(-1);
}

// ---- Sets and lists extensions (cel-go ext.Sets, ext.Lists version 3 less sortBy) ------------

bool listContains(const cel::List& list, const Value& item) {
    for (const Value& element : list)
        if (element == item)
            return true;
    return false;
}

Value setsFunction(std::string_view name, const Args& args) {
    const cel::List* a = args.size() == 2 ? asList(args[0]) : nullptr;
    const cel::List* b = a ? asList(args[1]) : nullptr;
    if (!b)
        return noSuchOverload(name, args);
    auto containsAll = [](const cel::List& x, const cel::List& y) {
        for (const Value& item : y)
            if (!listContains(x, item))
                return false;
        return true;
    };
    if (name == "sets.contains")
        return Value(containsAll(*a, *b));
    if (name == "sets.equivalent")
        return Value(containsAll(*a, *b) && containsAll(*b, *a));
    for (const Value& item : *b)  // sets.intersects
        if (listContains(*a, item))
            return Value(true);
    return Value(false);
}

Value distinct(const Args& args) {
    const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
    if (!list)
        return noSuchOverload("distinct", args);
    cel::List out;
    for (const Value& item : *list)
        if (!listContains(out, item))
            out.push_back(item);
    return Value::list(std::move(out));
}

void flattenInto(const cel::List& list, std::int64_t depth, cel::List& out) {
    for (const Value& item : list) {
        const cel::List* inner = asList(item);
        if (inner && depth > 0)
            flattenInto(*inner, depth - 1, out);
        else
            out.push_back(item);
    }
}

Value flatten(const Args& args) {
    const cel::List* list = !args.empty() && args.size() <= 2 ? asList(args[0]) : nullptr;
    const std::int64_t* depth = nullptr;
    if (list && args.size() == 2 && !(depth = std::get_if<std::int64_t>(&args[1].v)))
        list = nullptr;
    if (!list)
        return noSuchOverload("flatten", args);
    if (depth && *depth < 0)
        return Value::error("level must be non-negative");
    cel::List out;
    flattenInto(*list, depth ? *depth : 1, out);
    return Value::list(std::move(out));
}

Value range(const Args& args) {
    const auto* n = args.size() == 1 ? std::get_if<std::int64_t>(&args[0].v) : nullptr;
    if (!n)
        return noSuchOverload("lists.range", args);
    // Host functions are not charged by the interpreter: refuse what the cost limit would.
    if (*n > kCostLimit)
        return Value::error(std::string(cel::kCostLimitExceeded));
    cel::List out;
    out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(0, *n)));
    for (std::int64_t i = 0; i < *n; ++i)
        out.emplace_back(i);
    return Value::list(std::move(out));
}

Value reverse(const Args& args) {
    const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
    if (!list)
        return noSuchOverload("reverse", args);
    return Value::list(cel::List(list->rbegin(), list->rend()));
}

Value slice(const Args& args) {
    const cel::List* list = args.size() == 3 ? asList(args[0]) : nullptr;
    const auto* start = list ? std::get_if<std::int64_t>(&args[1].v) : nullptr;
    const auto* end = start ? std::get_if<std::int64_t>(&args[2].v) : nullptr;
    if (!end)
        return noSuchOverload("slice", args);
    const auto size = static_cast<std::int64_t>(list->size());
    if (*start < 0 || *end < 0)
        return Value::error("cannot slice(" + std::to_string(*start) + ", " + std::to_string(*end) +
                            "), negative indexes not supported");
    if (*start > *end)
        return Value::error("cannot slice(" + std::to_string(*start) + ", " + std::to_string(*end) +
                            "), start index must be less than or equal to end index");
    if (*end > size)
        return Value::error("cannot slice(" + std::to_string(*start) + ", " + std::to_string(*end) +
                            "), list is length " + std::to_string(size));
    return Value::list(cel::List(list->begin() + *start, list->begin() + *end));
}

Value sortList(const Args& args) {
    const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
    if (!list)
        return noSuchOverload("sort", args);
    for (const Value& item : *list) {
        if (!compareScalars(item, item))  // not an orderable type (or NaN)
            return noSuchOverload("sort", args);
        if (item.v.index() != list->front().v.index())
            return Value::error("list elements must have the same type");
    }
    cel::List out(*list);
    std::stable_sort(out.begin(), out.end(),
                     [](const Value& a, const Value& b) { return *compareScalars(a, b) < 0; });
    return Value::list(std::move(out));
}

// ---- Regex library ---------------------------------------------------------------------------

// Compiled patterns, shared by every evaluation (RE2 objects are thread-safe once built).
class RegexCache {
  public:
    std::shared_ptr<const re2::RE2> get(const std::string& pattern) {
        {
            std::lock_guard lock(mutex_);
            if (const auto it = cache_.find(pattern); it != cache_.end())
                return it->second;
        }
        re2::RE2::Options options;
        options.set_log_errors(false);
        auto regex = std::make_shared<const re2::RE2>(pattern, options);
        std::lock_guard lock(mutex_);
        if (cache_.size() >= kMaxEntries)
            cache_.clear();
        cache_.emplace(pattern, regex);
        return regex;
    }

  private:
    static constexpr std::size_t kMaxEntries = 256;
    std::mutex mutex_;
    std::unordered_map<std::string, std::shared_ptr<const re2::RE2>> cache_;
};

RegexCache& regexCache() {
    static RegexCache cache;
    return cache;
}

std::size_t utf8Width(std::string_view text, std::size_t pos) {
    const auto c = static_cast<unsigned char>(text[pos]);
    std::size_t width = 1;
    if (c >= 0xF0)
        width = 4;
    else if (c >= 0xE0)
        width = 3;
    else if (c >= 0xC0)
        width = 2;
    return std::min(width, text.size() - pos);
}

// Go's regexp FindAllString: successive non-overlapping matches, an empty match right after a
// previous match skipped; at most `limit` (all when negative).
std::vector<std::string_view> findAll(const re2::RE2& regex, std::string_view text,
                                      std::int64_t limit) {
    std::vector<std::string_view> matches;
    std::size_t pos = 0;
    std::optional<std::size_t> previousEnd;
    while ((limit < 0 || static_cast<std::int64_t>(matches.size()) < limit) && pos <= text.size()) {
        re2::StringPiece piece;
        if (!regex.Match(text, pos, text.size(), re2::RE2::UNANCHORED, &piece, 1))
            break;
        const std::string_view match(piece.data(), piece.size());
        const auto start = static_cast<std::size_t>(match.data() - text.data());
        const std::size_t end = start + match.size();
        bool accept = true;
        if (end == pos) {  // an empty match where the search started
            if (previousEnd && start == *previousEnd)
                accept = false;
            pos = pos < text.size() ? pos + utf8Width(text, pos) : text.size() + 1;
        } else {
            pos = end;
        }
        previousEnd = end;
        if (accept)
            matches.push_back(match);
    }
    return matches;
}

Value find(const Args& args) {
    const std::string* text = args.size() == 2 ? asString(args[0]) : nullptr;
    const std::string* pattern = text ? asString(args[1]) : nullptr;
    if (!pattern)
        return noSuchOverload("find", args);
    const auto regex = regexCache().get(*pattern);
    if (!regex->ok())
        return Value::error("Illegal regex: " + regex->error());
    re2::StringPiece match;
    if (!regex->Match(*text, 0, text->size(), re2::RE2::UNANCHORED, &match, 1))
        return Value(std::string());
    return Value(std::string(match.data(), match.size()));
}

Value findAllOf(const Args& args) {
    const std::string* text = args.size() >= 2 && args.size() <= 3 ? asString(args[0]) : nullptr;
    const std::string* pattern = text ? asString(args[1]) : nullptr;
    const std::int64_t* limit = nullptr;
    if (pattern && args.size() == 3 && !(limit = std::get_if<std::int64_t>(&args[2].v)))
        pattern = nullptr;
    if (!pattern)
        return noSuchOverload("findAll", args);
    const auto regex = regexCache().get(*pattern);
    if (!regex->ok())
        return Value::error("Illegal regex: " + regex->error());
    cel::List out;
    for (const auto match : findAll(*regex, *text, limit ? *limit : -1))
        out.emplace_back(std::string(match));
    return Value::list(std::move(out));
}

cel::Environment build() {
    cel::Environment env;
    env.costLimit = kCostLimit;
    auto& global = env.globalFunctions;
    auto& member = env.memberFunctions;

    global["quantity"] = quantityOf;
    global["isQuantity"] = isQuantity;
    global["semver"] = semverOf;
    global["isSemver"] = isSemver;

    member["isInteger"] = [](const Args& args) -> Value {
        const Quantity* q = args.size() == 1 ? asQuantity(args[0]) : nullptr;
        return q ? Value(q->isInteger()) : noSuchOverload("isInteger", args);
    };
    member["asInteger"] = [](const Args& args) -> Value {
        const Quantity* q = args.size() == 1 ? asQuantity(args[0]) : nullptr;
        if (!q)
            return noSuchOverload("asInteger", args);
        const auto i = q->asInteger();
        return i ? fromInt(*i) : Value::error(i.error().message);
    };
    member["asApproximateFloat"] = [](const Args& args) -> Value {
        const Quantity* q = args.size() == 1 ? asQuantity(args[0]) : nullptr;
        return q ? Value(q->asApproximateFloat()) : noSuchOverload("asApproximateFloat", args);
    };
    member["sign"] = [](const Args& args) -> Value {
        const Quantity* q = args.size() == 1 ? asQuantity(args[0]) : nullptr;
        return q ? fromInt(q->sign()) : noSuchOverload("sign", args);
    };
    member["add"] = [](const Args& args) { return quantityArithmetic("add", args, false); };
    member["sub"] = [](const Args& args) { return quantityArithmetic("sub", args, true); };

    member["major"] = [](const Args& args) { return semverPart("major", args, &Semver::major); };
    member["minor"] = [](const Args& args) { return semverPart("minor", args, &Semver::minor); };
    member["patch"] = [](const Args& args) { return semverPart("patch", args, &Semver::patch); };

    member["compareTo"] = [](const Args& args) -> Value {
        const auto c = compareExtension(args);
        return c ? fromInt(*c) : noSuchOverload("compareTo", args);
    };
    member["isGreaterThan"] = [](const Args& args) -> Value {
        const auto c = compareExtension(args);
        return c ? Value(*c > 0) : noSuchOverload("isGreaterThan", args);
    };
    member["isLessThan"] = [](const Args& args) -> Value {
        const auto c = compareExtension(args);
        return c ? Value(*c < 0) : noSuchOverload("isLessThan", args);
    };

    member["includes"] = includes;

    member["isSorted"] = isSorted;
    member["sum"] = sum;
    member["min"] = [](const Args& args) { return extreme("min", args, 1); };
    member["max"] = [](const Args& args) { return extreme("max", args, -1); };
    member["indexOf"] = [](const Args& args) { return listIndexOf("indexOf", args, false); };
    member["lastIndexOf"] = [](const Args& args) { return listIndexOf("lastIndexOf", args, true); };

    global["sets.contains"] = [](const Args& args) { return setsFunction("sets.contains", args); };
    global["sets.equivalent"] = [](const Args& args) {
        return setsFunction("sets.equivalent", args);
    };
    global["sets.intersects"] = [](const Args& args) {
        return setsFunction("sets.intersects", args);
    };
    global["lists.range"] = range;
    member["distinct"] = distinct;
    member["flatten"] = flatten;
    member["reverse"] = reverse;
    member["slice"] = slice;
    member["sort"] = sortList;
    // Lists v3: the first and last element as an optional (none for an empty list).
    member["first"] = [](const Args& args) -> Value {
        const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
        if (!list)
            return noSuchOverload("first", args);
        return cel::optionalValue(list->empty() ? std::nullopt
                                                : std::optional<Value>(list->front()));
    };
    member["last"] = [](const Args& args) -> Value {
        const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
        if (!list)
            return noSuchOverload("last", args);
        return cel::optionalValue(list->empty() ? std::nullopt
                                                : std::optional<Value>(list->back()));
    };

    member["find"] = find;
    member["findAll"] = findAllOf;
    detail::addNetworkFunctions(env);
    detail::addTimeFunctions(env);
    detail::addUrlFunctions(env);
    detail::addFormatFunctions(env);
    return env;
}

}  // namespace

const cel::Environment& draEnvironment() {
    static const cel::Environment environment = build();
    return environment;
}

}  // namespace numadra::dracel
