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

cel::Value toValue(api::Quantity quantity) {
    return Value(
        std::shared_ptr<const cel::Opaque>(std::make_shared<const Quantity>(std::move(quantity))));
}

cel::Value toValue(Semver version) {
    return Value(
        std::shared_ptr<const cel::Opaque>(std::make_shared<const Semver>(std::move(version))));
}

const api::Quantity* asQuantity(const cel::Value& value) {
    const auto* opaque = std::get_if<std::shared_ptr<const cel::Opaque>>(&value.v);
    const auto* quantity =
        opaque && *opaque ? dynamic_cast<const Quantity*>(opaque->get()) : nullptr;
    return quantity ? &quantity->quantity() : nullptr;
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
    auto q = api::Quantity::parse(*text);
    if (!q)
        return Value::error(q.error().message);
    return toValue(std::move(*q));
}

Value isQuantity(const Args& args) {
    const std::string* text = args.size() == 1 ? asString(args[0]) : nullptr;
    if (!text)
        return noSuchOverload("isQuantity", args);
    return Value(api::Quantity::parse(*text).ok());
}

// q.add(q|int) / q.sub(q|int); an int is taken as a DecimalExponent quantity, as Kubernetes does.
Value quantityArithmetic(std::string_view name, const Args& args, bool subtract) {
    const api::Quantity* a = args.size() == 2 ? asQuantity(args[0]) : nullptr;
    if (!a)
        return noSuchOverload(name, args);
    std::optional<api::Quantity> converted;
    const api::Quantity* b = asQuantity(args[1]);
    if (!b) {
        const auto* i = std::get_if<std::int64_t>(&args[1].v);
        if (!i)
            return noSuchOverload(name, args);
        converted = api::Quantity::fromInt(*i, api::Quantity::Format::DecimalExponent);
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
    if (const api::Quantity* a = asQuantity(args[0])) {
        const api::Quantity* b = asQuantity(args[1]);
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
    const auto* x = std::get_if<std::shared_ptr<const cel::Opaque>>(&a.v);
    const auto* y = std::get_if<std::shared_ptr<const cel::Opaque>>(&b.v);
    if (x && y && *x && *y && (*x)->typeName() == (*y)->typeName())
        return (*x)->order(**y);
    return std::nullopt;
}

// cel-go's traits.Comparer: what the lists library orders (numbers, strings, bytes, bools, and
// the host values with an order, timestamps and durations). NaN is one: it just compares with
// nothing.
bool comparable(const Value& v) {
    if (v.is<double>())
        return true;
    return compareScalars(v, v).has_value();
}

// Two values of one type (sort()'s rule: int and uint differ, and so do two host types).
bool sameType(const Value& a, const Value& b) {
    return a.v.index() == b.v.index() && a.typeName() == b.typeName();
}

// Kubernetes' isSorted(): a pair that does not compare (NaN, two types in a list(dyn)) leaves
// the list sorted, as upstream only looks for "greater".
Value isSorted(const Args& args) {
    const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
    if (!list)
        return noSuchOverload("isSorted", args);
    const Value* previous = nullptr;
    for (const Value& next : *list) {
        if (!comparable(next))
            return noSuchOverload("isSorted", args);
        if (previous && compareScalars(*previous, next) == 1)
            return Value(false);
        previous = &next;
    }
    return Value(true);
}

// What sum() adds to: upstream's overload for the first element's type (int for an empty list,
// upstream's first overload), nullopt when there is none.
std::optional<Value> sumStart(const cel::List& list) {
    if (list.empty() || list.front().is<std::int64_t>())
        return fromInt(0);
    if (list.front().is<std::uint64_t>())
        return Value(std::uint64_t{0});
    if (list.front().is<double>())
        return Value(0.0);
    if (detail::isDuration(list.front()))
        return detail::zeroDuration();
    return std::nullopt;
}

// cel-go's Add of a running total and the next element: numbers of the total's type only;
// durations (and a timestamp they reach) as CEL's `+` adds them.
Value addToSum(const Value& total, const Value& next) {
    if (const auto* i = std::get_if<std::int64_t>(&total.v)) {
        const auto* j = std::get_if<std::int64_t>(&next.v);
        std::int64_t out = 0;
        if (!j)
            return noSuchOverload("sum", {total, next});
        return __builtin_add_overflow(*i, *j, &out) ? Value::error("integer overflow") : Value(out);
    }
    if (const auto* u = std::get_if<std::uint64_t>(&total.v)) {
        const auto* v = std::get_if<std::uint64_t>(&next.v);
        std::uint64_t out = 0;
        if (!v)
            return noSuchOverload("sum", {total, next});
        return __builtin_add_overflow(*u, *v, &out) ? Value::error("unsigned integer overflow")
                                                    : Value(out);
    }
    if (const auto* d = std::get_if<double>(&total.v)) {
        const auto* e = std::get_if<double>(&next.v);
        return e ? Value(*d + *e) : noSuchOverload("sum", {total, next});
    }
    return detail::addTimes(total, next);
}

Value sumFrom(Value total, const cel::List& list) {
    for (const Value& next : list) {
        total = addToSum(total, next);
        if (total.isError())
            break;
    }
    return total;
}

// sum() where the checker could not tell the element type: the first element decides.
Value sum(const Args& args) {
    const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
    std::optional<Value> total = list ? sumStart(*list) : std::nullopt;
    if (!total)
        return noSuchOverload("sum", args);
    return sumFrom(std::move(*total), *list);
}

// sum() of a list the checker typed: the overload's zero, also for an empty list.
cel::Function typedSum(Value zero) {
    return [zero = std::move(zero)](const Args& args) -> Value {
        const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
        return list ? sumFrom(zero, *list) : noSuchOverload("sum", args);
    };
}

// min() / max(): the first least / greatest element.
Value extreme(std::string_view name, const Args& args, int replaceWhen) {
    const cel::List* list = args.size() == 1 ? asList(args[0]) : nullptr;
    if (!list)
        return noSuchOverload(name, args);
    const Value* best = nullptr;
    for (const Value& next : *list) {
        if (!comparable(next))
            return noSuchOverload(name, args);
        // As upstream: a pair that does not compare (NaN, two types) keeps the one found so far.
        if (!best || compareScalars(*best, next) == replaceWhen)
            best = &next;
    }
    if (!best)
        return Value::error(std::string(name) + " called on empty list");
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
    if (!list || (!list->empty() && !comparable(list->front())))
        return noSuchOverload("sort", args);
    for (const Value& item : *list)
        if (!sameType(item, list->front()))
            return Value::error("list elements must have the same type");
    // Upstream sorts with "less" only: NaN is less than nothing and nothing is less than NaN.
    cel::List out(*list);
    std::stable_sort(out.begin(), out.end(),
                     [](const Value& a, const Value& b) { return compareScalars(a, b) == -1; });
    return Value::list(std::move(out));
}

// ---- Strings extension: strings.quote() (cel-go ext.Strings, version 1 and up) ----------------

// The length of the UTF-8 sequence at `at` as Go's utf8.DecodeRune accepts it (no overlong
// forms, surrogates or values above U+10FFFF), 0 when the byte starts none.
std::size_t validSequenceLength(std::string_view text, std::size_t at) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[at + k]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80)
        return 1;
    const std::size_t length = lead >= 0xC2 && lead <= 0xDF   ? 2
                               : lead >= 0xE0 && lead <= 0xEF ? 3
                               : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                              : 0;
    if (length == 0 || at + length > text.size())
        return 0;
    // The second byte's range is narrower after E0, ED, F0 and F4.
    const unsigned char low = lead == 0xE0 ? 0xA0 : (lead == 0xF0 ? 0x90 : 0x80);
    const unsigned char high = lead == 0xED ? 0x9F : (lead == 0xF4 ? 0x8F : 0xBF);
    if (byte(1) < low || byte(1) > high)
        return 0;
    for (std::size_t k = 2; k < length; ++k)
        if (byte(k) < 0x80 || byte(k) > 0xBF)
            return 0;
    return length;
}

// CEL's escape for an ASCII character strings.quote() escapes, empty for the others.
std::string_view quoteEscape(char c) {
    switch (c) {
        case '\a':
            return "\\a";
        case '\b':
            return "\\b";
        case '\f':
            return "\\f";
        case '\n':
            return "\\n";
        case '\r':
            return "\\r";
        case '\t':
            return "\\t";
        case '\v':
            return "\\v";
        case '\\':
            return "\\\\";
        case '"':
            return "\\\"";
        default:
            return {};
    }
}

// cel-go's quote(): the text in double quotes with those escapes; every other character as it
// is (control characters too), and each byte of invalid UTF-8 as U+FFFD, as Go reads it.
std::string quoted(std::string_view text) {
    std::string out = "\"";
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t length = validSequenceLength(text, i);
        const std::string_view escape = length == 1 ? quoteEscape(text[i]) : std::string_view();
        if (length == 0)
            out += "\xEF\xBF\xBD";
        else if (!escape.empty())
            out += escape;
        else
            out.append(text.substr(i, length));
        i += std::max<std::size_t>(length, 1);
    }
    return out + "\"";
}

Value quote(const Args& args) {
    const std::string* text = args.size() == 1 ? asString(args[0]) : nullptr;
    return text ? Value(quoted(*text)) : noSuchOverload("strings.quote", args);
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
        const api::Quantity* q = args.size() == 1 ? asQuantity(args[0]) : nullptr;
        return q ? Value(q->isInteger()) : noSuchOverload("isInteger", args);
    };
    member["asInteger"] = [](const Args& args) -> Value {
        const api::Quantity* q = args.size() == 1 ? asQuantity(args[0]) : nullptr;
        if (!q)
            return noSuchOverload("asInteger", args);
        const auto i = q->asInteger();
        return i ? fromInt(*i) : Value::error(i.error().message);
    };
    member["asApproximateFloat"] = [](const Args& args) -> Value {
        const api::Quantity* q = args.size() == 1 ? asQuantity(args[0]) : nullptr;
        return q ? Value(q->asApproximateFloat()) : noSuchOverload("asApproximateFloat", args);
    };
    member["sign"] = [](const Args& args) -> Value {
        const api::Quantity* q = args.size() == 1 ? asQuantity(args[0]) : nullptr;
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
    env.overloadFunctions["list_int_sum_int"] = typedSum(fromInt(0));
    env.overloadFunctions["list_uint_sum_uint"] = typedSum(Value(std::uint64_t{0}));
    env.overloadFunctions["list_double_sum_double"] = typedSum(Value(0.0));
    env.overloadFunctions["list_duration_sum_duration"] = typedSum(detail::zeroDuration());
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
    global["strings.quote"] = quote;
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
