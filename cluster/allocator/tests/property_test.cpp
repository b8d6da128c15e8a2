// Property tests for the allocator (spec: allocator.md §1). Random small clusters and claims are
// generated from fixed seeds (std::mt19937, seeds 1..N), turned into allocator inputs, and the
// answers are checked against an independent model of the semantics written here:
//
//   PropertySoundness     every Allocated answer satisfies every rule (devices on the node,
//                         class and request selectors, counts and All sets, result names,
//                         exclusive use, constraints with list/intersection semantics, taints,
//                         consumable capacity, shared counters, admin access, result fields).
//   PropertyCompleteness  a brute-force search over all assignments decides whether any valid
//                         allocation exists; allocate() must answer Allocated exactly then.
//   PropertyDeterminismAndCommit
//                         no error on valid input, same output from a fresh and a reused
//                         Allocator, and after commit() a second allocation of the same claims
//                         is sound and complete against the committed state and takes no
//                         exclusive device of the first one.
//
// Model choices worth knowing: a dedicated device serves one claim once, and a later claim of
// the same call may take it only with adminAccess (admin results are in flight too, so a
// non-admin request after an admin one is refused, as upstream); admin results are not
// committed; a multi-allocatable device pays its counters once; errors are expected only for a
// claim over the 32-device limit or an All request under a constraint its fixed set breaks.
//
// The allocator runs with a 50 ms time budget. GaveUp is not a failure by itself (counted and
// listed); when the brute force shows an allocation exists, the call is repeated with the
// default 10 s budget and must then answer Allocated. Determinism is compared only between
// answers that did not give up.
//
// Failures print the seed and a readable dump of the input. Environment knobs (for soak runs
// and reproduction): NUMADRA_PROPERTY_CASES=<n> (seeds 1..n for every property),
// NUMADRA_PROPERTY_SEED=<s> (that seed only), NUMADRA_PROPERTY_DUMP=1 (print each input first).
//
// Why one file of about 2,000 lines: the three properties are some 130 lines between them; the
// rest is the one independent model they all check against (generation, the semantics, the
// validity check, the brute force, dumps, reading answers), whose rules are meant to be read
// together against allocator.md §1. Splitting by property family would only move that model
// behind a test-only header of several dozen declarations; the "--- section ---" headings below
// are its chapters instead.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "numadra/allocator/allocator.hpp"
#include "numadra/allocator/model.hpp"

namespace numadra::allocator {
namespace {

// --- random helpers ------------------------------------------------------------------------

class Gen {
  public:
    explicit Gen(unsigned seed) : rng_(seed) {}
    int range(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    bool chance(int percent) { return range(0, 99) < percent; }
    template <class T>
    const T& pick(const std::vector<T>& items) {
        return items[static_cast<size_t>(range(0, static_cast<int>(items.size()) - 1))];
    }

  private:
    std::mt19937 rng_;
};

// --- the model -----------------------------------------------------------------------------

using Elem = std::variant<std::int64_t, std::string, bool>;  // typed attribute element
using ElemSet = std::vector<Elem>;                           // sorted, unique

struct MRange {
    std::int64_t min = 0;
    std::optional<std::int64_t> max;
    std::optional<std::int64_t> step;
};

struct MCapacity {  // the device's `mem` capacity
    std::int64_t value = 0;
    bool policy = false;
    std::optional<std::int64_t> def;
    std::vector<std::int64_t> validValues;
    std::optional<MRange> range;
};

struct MDevice {
    int pool = 0;
    std::string slice;
    std::string name;
    std::int64_t numa = 0;
    std::string model;
    std::optional<std::vector<std::int64_t>> numas;
    std::optional<bool> fast;
    std::optional<Elem> socket;  // "example.com/socket": an int or a string
    bool multi = false;
    std::optional<MCapacity> mem;
    std::vector<Taint> taints;
    std::map<std::string, std::int64_t> counters;  // consumed from counter set "cs"
};

struct MSlice {
    std::string name;
    std::vector<int> devices;
};

struct MPool {
    std::string driver;
    std::string name;
    bool onNode = true;  // node-1, else node-2
    std::vector<MSlice> slices;
    std::string counterSlice;                        // empty: the pool has no counter set
    std::map<std::string, std::int64_t> counterSet;  // set "cs"
};

enum class PredKind { ModelEq, NumaLe, NumaGe, FastTrue, NumasHas, Multi };
struct Pred {
    PredKind kind = PredKind::ModelEq;
    std::string text;
    std::int64_t number = 0;
};

struct MClass {
    std::string name;
    std::string driver;
    std::optional<Pred> pred;
};

struct MSpec {
    int cls = 0;
    std::vector<Pred> preds;
    bool all = false;
    int count = 1;
    std::optional<bool> admin;
    std::vector<Toleration> tolerations;
    std::optional<std::pair<std::string, std::int64_t>> capacity;  // key, amount
    bool isAdmin() const { return admin.value_or(false); }
};

struct MRequest {
    std::string name;
    bool firstAvailable = false;
    std::vector<std::pair<std::string, MSpec>> alts;  // exactly: one, named ""
    std::string planName(size_t alt) const {
        return firstAvailable ? name + "/" + alts[alt].first : name;
    }
};

struct MConstraint {
    bool match = true;
    std::string attribute;
    std::vector<std::string> requests;
};

struct MClaim {
    std::string name;
    std::vector<MRequest> requests;
    std::vector<MConstraint> constraints;
};

struct Model {
    std::vector<std::string> drivers;
    std::vector<std::string> models;
    std::vector<MPool> pools;
    std::vector<MDevice> devices;
    std::vector<MClass> classes;
    std::vector<MClaim> claims;
    const std::string& driverOf(int device) const {
        return pools[static_cast<size_t>(devices[static_cast<size_t>(device)].pool)].driver;
    }
    const MDevice& device(int index) const { return devices[static_cast<size_t>(index)]; }
};

struct Committed {
    std::set<int> exclusive;
    std::set<int> shared;                   // devices with a committed share
    std::map<int, std::int64_t> sharedMem;  // mem consumed by committed shares
    std::map<std::pair<int, std::string>, std::int64_t> counters;  // (pool, counter) -> consumed
};

// --- generation ----------------------------------------------------------------------------

Pred randomPred(Gen& g, const Model& m) {
    Pred p;
    switch (g.range(0, 5)) {
        case 0:
            p.kind = PredKind::ModelEq;
            p.text = g.pick(m.models);
            break;
        case 1:
            p.kind = PredKind::NumaLe;
            p.number = g.range(0, 2);
            break;
        case 2:
            p.kind = PredKind::NumaGe;
            p.number = g.range(1, 3);
            break;
        case 3:
            p.kind = PredKind::FastTrue;
            break;
        case 4:
            p.kind = PredKind::NumasHas;
            p.number = g.range(0, 3);
            break;
        default:
            p.kind = PredKind::Multi;
            break;
    }
    return p;
}

MCapacity randomCapacity(Gen& g, bool multi) {
    MCapacity c;
    c.value = g.range(4, 12);
    if (!multi || !g.chance(60))
        return c;
    c.policy = true;
    switch (g.range(0, 2)) {
        case 0:
            c.def = g.range(1, static_cast<int>(c.value));
            break;
        case 1: {
            MRange r;
            r.min = g.range(1, 3);
            if (g.chance(60))
                r.step = g.range(1, 3);
            if (g.chance(60))
                r.max = g.range(static_cast<int>(r.min), static_cast<int>(c.value));
            c.range = r;
            if (g.chance(50)) {
                std::int64_t d = r.min;
                if (r.step && g.chance(50) && (!r.max || d + *r.step <= *r.max))
                    d += *r.step;
                c.def = d;
            }
            break;
        }
        default: {
            std::set<std::int64_t> values;
            int n = g.range(1, 3);
            for (int i = 0; i < n; ++i)
                values.insert(g.range(1, static_cast<int>(c.value)));
            c.validValues.assign(values.begin(), values.end());
            if (g.chance(50))
                c.def = g.pick(c.validValues);
            break;
        }
    }
    return c;
}

Taint randomTaint(Gen& g) {
    Taint t;
    t.key = g.chance(50) ? "k1" : "k2";
    t.value = g.chance(50) ? "" : "v1";
    const std::vector<std::string> effects{"NoSchedule", "NoExecute", "None"};
    t.effect = g.pick(effects);
    return t;
}

Toleration randomToleration(Gen& g) {
    Toleration t;
    const std::vector<std::string> keys{"", "k1", "k2"};
    const std::vector<std::string> ops{"", "Equal", "Exists"};
    const std::vector<std::string> effects{"", "NoSchedule", "NoExecute"};
    t.key = g.pick(keys);
    t.op = g.pick(ops);
    if (t.op != "Exists")
        t.value = g.chance(50) ? "" : "v1";
    t.effect = g.pick(effects);
    return t;
}

MSpec randomSpec(Gen& g, const Model& m, bool exactly) {
    MSpec s;
    s.cls = g.range(0, static_cast<int>(m.classes.size()) - 1);
    if (g.chance(25))
        s.preds.push_back(randomPred(g, m));
    s.all = g.chance(5);
    if (!s.all) {
        int r = g.range(0, 99);
        s.count = r < 65 ? 1 : (r < 92 ? 2 : 3);
    }
    if (exactly) {
        if (g.chance(8))
            s.admin = true;
        else if (g.chance(5))
            s.admin = false;
    }
    if (g.chance(20))
        s.tolerations.push_back(randomToleration(g));
    if (g.chance(12)) {
        const std::string& driver = m.classes[static_cast<size_t>(s.cls)].driver;
        int k = g.range(0, 99);
        std::string key = k < 70 ? "mem" : (k < 95 ? driver + "/mem" : "example.org/mem");
        s.capacity = std::make_pair(key, static_cast<std::int64_t>(g.range(1, 10)));
    }
    return s;
}

Model generate(unsigned seed) {
    Gen g(seed);
    Model m;
    const std::vector<std::string> driverNames{"gpu.example.com", "nic.example.com"};
    m.drivers.assign(driverNames.begin(), driverNames.begin() + g.range(1, 2));
    const std::vector<std::string> modelNames{"a100", "h100", "l4"};
    m.models.assign(modelNames.begin(), modelNames.begin() + g.range(2, 3));

    // Pools: (driver, name) unique; the same pool name may serve both drivers.
    const std::vector<std::string> poolNames{"pool-a", "pool-b", "node-1"};
    const int poolCount = g.range(static_cast<int>(m.drivers.size()), 3);
    std::set<std::pair<std::string, std::string>> used;
    for (int p = 0; p < poolCount; ++p) {
        MPool pool;
        // Every driver gets a pool when there are enough pools.
        pool.driver = static_cast<size_t>(p) < m.drivers.size() ? m.drivers[static_cast<size_t>(p)]
                                                                : g.pick(m.drivers);
        int start = g.range(0, 2);
        for (int i = 0; i < 3; ++i) {
            const std::string& name = poolNames[static_cast<size_t>((start + i) % 3)];
            if (!used.contains({pool.driver, name})) {
                pool.name = name;
                break;
            }
        }
        if (pool.name.empty())
            continue;
        used.insert({pool.driver, pool.name});
        m.pools.push_back(pool);
    }
    if (g.chance(15)) {
        MPool remote;
        remote.driver = g.pick(m.drivers);
        remote.name = "pool-remote";
        remote.onNode = false;
        m.pools.push_back(remote);
    }

    for (size_t p = 0; p < m.pools.size(); ++p) {
        MPool& pool = m.pools[p];
        const std::string prefix = pool.driver.substr(0, 3) + "-" + pool.name;
        if (g.chance(30)) {
            pool.counterSlice = prefix + "-counters";
            pool.counterSet["c1"] = g.range(2, 6);
            if (g.chance(50))
                pool.counterSet["c2"] = g.range(1, 4);
        }
        const int sliceCount = g.range(1, 3);
        const int maxDevices = g.range(2, 8);
        int deviceInPool = 0;
        for (int s = 0; s < sliceCount; ++s) {
            MSlice slice;
            slice.name = prefix + "-" + std::to_string(s);
            const int deviceCount = g.range(1, maxDevices);
            for (int d = 0; d < deviceCount; ++d) {
                MDevice dev;
                dev.pool = static_cast<int>(p);
                dev.slice = slice.name;
                dev.name = "d" + std::to_string(deviceInPool++);
                dev.numa = g.range(0, 3);
                dev.model = g.pick(m.models);
                if (g.chance(60)) {
                    std::set<std::int64_t> numas;
                    int n = g.range(1, 3);
                    for (int i = 0; i < n; ++i)
                        numas.insert(g.range(0, 3));
                    dev.numas = std::vector<std::int64_t>(numas.begin(), numas.end());
                }
                if (g.chance(50))
                    dev.fast = g.chance(50);
                if (g.chance(50)) {
                    if (g.chance(70))
                        dev.socket = Elem{static_cast<std::int64_t>(g.range(0, 1))};
                    else
                        dev.socket = Elem{std::string(g.chance(50) ? "s0" : "s1")};
                }
                dev.multi = g.chance(20);
                if (dev.multi ? g.chance(80) : g.chance(30))
                    dev.mem = randomCapacity(g, dev.multi);
                if (g.chance(10))
                    dev.taints.push_back(randomTaint(g));
                if (!pool.counterSet.empty() && g.chance(60)) {
                    dev.counters["c1"] = g.range(1, 3);
                    if (pool.counterSet.contains("c2") && g.chance(50))
                        dev.counters["c2"] = g.range(1, 2);
                }
                slice.devices.push_back(static_cast<int>(m.devices.size()));
                m.devices.push_back(std::move(dev));
            }
            pool.slices.push_back(std::move(slice));
        }
    }

    for (const std::string& driver : m.drivers) {
        const int classCount = g.range(1, 2);
        for (int c = 0; c < classCount; ++c) {
            MClass cls;
            cls.name = driver.substr(0, 3) + "-class-" + std::to_string(c);
            cls.driver = driver;
            if (g.chance(25))
                cls.pred = Pred{PredKind::ModelEq, g.pick(m.models), 0};
            m.classes.push_back(cls);
        }
    }

    const int claimCount = g.range(1, 3);
    for (int c = 0; c < claimCount; ++c) {
        MClaim claim;
        claim.name = "claim-" + std::to_string(c);
        const int requestCount = g.range(1, 3);
        for (int r = 0; r < requestCount; ++r) {
            MRequest request;
            request.name = "r" + std::to_string(r);
            if (g.chance(15)) {
                request.firstAvailable = true;
                request.alts.emplace_back("s0", randomSpec(g, m, false));
                request.alts.emplace_back("s1", randomSpec(g, m, false));
            } else {
                request.alts.emplace_back("", randomSpec(g, m, true));
            }
            claim.requests.push_back(std::move(request));
        }
        int r = g.range(0, 99);
        const int constraintCount = r < 55 ? 0 : (r < 88 ? 1 : 2);
        for (int k = 0; k < constraintCount; ++k) {
            MConstraint constraint;
            constraint.match = g.chance(60);
            std::string driver =
                g.chance(90)
                    ? m.classes[static_cast<size_t>(claim.requests[0].alts[0].second.cls)].driver
                    : g.pick(m.drivers);
            if (g.chance(15)) {
                constraint.attribute = "example.com/socket";
            } else {
                const std::vector<std::string> ids{"numa", "model", "numas"};
                constraint.attribute = driver + "/" + g.pick(ids);
            }
            if (g.chance(50)) {
                for (const MRequest& request : claim.requests) {
                    if (!g.chance(60))
                        continue;
                    if (request.firstAvailable && g.chance(30))
                        constraint.requests.push_back(
                            request.planName(static_cast<size_t>(g.range(0, 1))));
                    else
                        constraint.requests.push_back(request.name);
                }
                if (constraint.requests.empty())
                    constraint.requests.push_back(g.pick(claim.requests).name);
            }
            claim.constraints.push_back(std::move(constraint));
        }
        m.claims.push_back(std::move(claim));
    }
    return m;
}

// --- model semantics -----------------------------------------------------------------------

std::string celOf(const Pred& p, const std::string& driver) {
    const std::string attrs = "device.attributes[\"" + driver + "\"]";
    switch (p.kind) {
        case PredKind::ModelEq:
            return attrs + ".model == \"" + p.text + "\"";
        case PredKind::NumaLe:
            return attrs + ".numa <= " + std::to_string(p.number);
        case PredKind::NumaGe:
            return attrs + ".numa >= " + std::to_string(p.number);
        case PredKind::FastTrue:
            return "has(" + attrs + ".fast) && " + attrs + ".fast";
        case PredKind::NumasHas:
            return "has(" + attrs + ".numas) && " + std::to_string(p.number) + " in " + attrs +
                   ".numas";
        case PredKind::Multi:
            return "device.allowMultipleAllocations";
    }
    return "false";
}

bool holds(const Pred& p, const MDevice& d) {
    switch (p.kind) {
        case PredKind::ModelEq:
            return d.model == p.text;
        case PredKind::NumaLe:
            return d.numa <= p.number;
        case PredKind::NumaGe:
            return d.numa >= p.number;
        case PredKind::FastTrue:
            return d.fast.value_or(false);
        case PredKind::NumasHas:
            return d.numas &&
                   std::find(d.numas->begin(), d.numas->end(), p.number) != d.numas->end();
        case PredKind::Multi:
            return d.multi;
    }
    return false;
}

bool onNode(const Model& m, int d) {
    return m.pools[static_cast<size_t>(m.device(d).pool)].onNode;
}

bool selected(const Model& m, const MSpec& spec, int d) {
    const MClass& cls = m.classes[static_cast<size_t>(spec.cls)];
    const MDevice& dev = m.device(d);
    if (m.driverOf(d) != cls.driver)
        return false;
    if (cls.pred && !holds(*cls.pred, dev))
        return false;
    return std::all_of(spec.preds.begin(), spec.preds.end(),
                       [&](const Pred& p) { return holds(p, dev); });
}

bool toleratesOne(const Toleration& t, const Taint& taint) {
    if (!t.effect.empty() && t.effect != taint.effect)
        return false;
    if (!t.key.empty() && t.key != taint.key)
        return false;
    if (t.op == "Exists")
        return true;
    if (t.op.empty() || t.op == "Equal")
        return t.value == taint.value;
    return false;
}

bool tolerated(const MSpec& spec, const MDevice& dev) {
    for (const Taint& taint : dev.taints) {
        if (taint.effect != "NoSchedule" && taint.effect != "NoExecute")
            continue;
        bool ok = false;
        for (const Toleration& t : spec.tolerations)
            ok = ok || toleratesOne(t, taint);
        if (!ok)
            return false;
    }
    return true;
}

// The amount a request takes from a `mem` capacity (allocator.md §1.9 step 2).
std::int64_t policyAmount(std::optional<std::int64_t> requested, const MCapacity& c) {
    if (!requested)
        return c.def ? *c.def : c.value;
    if (!c.policy)
        return *requested;
    if (c.range) {
        const MRange& r = *c.range;
        if (*requested < r.min)
            return r.min;
        if (r.step && *r.step > 0) {
            std::int64_t over = *requested - r.min;
            std::int64_t steps = (over + *r.step - 1) / *r.step;
            return r.min + steps * *r.step;
        }
        return *requested;
    }
    if (!c.validValues.empty()) {
        for (std::int64_t v : c.validValues)
            if (v >= *requested)
                return v;
        return *requested;
    }
    return *requested;
}

bool violates(std::int64_t amount, const MCapacity& c) {
    if (!c.policy)
        return false;
    if (c.def && *c.def == amount)
        return false;
    if (c.range) {
        if (c.range->max && amount > *c.range->max)
            return true;
        if (c.range->step && *c.range->step > 0 && (amount - c.range->min) % *c.range->step != 0)
            return true;
        return false;
    }
    if (!c.validValues.empty())
        return std::find(c.validValues.begin(), c.validValues.end(), amount) == c.validValues.end();
    return false;
}

// Whether a request can use the device at all as far as capacity goes, and what it takes from
// the device's `mem` (alone, before other shares).
struct Take {
    bool usable = true;
    std::optional<std::int64_t> mem;
};

Take take(const Model& m, const MSpec& spec, int d) {
    const MDevice& dev = m.device(d);
    Take out;
    std::optional<std::int64_t> requested;
    if (spec.capacity) {
        const std::string& key = spec.capacity->first;
        // The key names the capacity exactly as published (upstream's lookup): "<driver>/mem"
        // does not find "mem".
        if (!dev.mem || key != "mem") {
            out.usable = false;
            return out;
        }
        requested = spec.capacity->second;
    }
    if (!dev.mem)
        return out;
    std::int64_t amount = policyAmount(requested, *dev.mem);
    if (violates(amount, *dev.mem) || amount > dev.mem->value) {
        out.usable = false;
        return out;
    }
    out.mem = amount;
    return out;
}

// Constraint lookup (§1.10): the exact key, else the bare id in the driver's own domain.
std::optional<ElemSet> attributeSet(const Model& m, int d, const std::string& qualified) {
    const MDevice& dev = m.device(d);
    ElemSet out;
    if (qualified == "example.com/socket") {
        if (!dev.socket)
            return std::nullopt;
        out.push_back(*dev.socket);
        return out;
    }
    const std::string& driver = m.driverOf(d);
    if (qualified.size() <= driver.size() + 1 || qualified.compare(0, driver.size(), driver) != 0 ||
        qualified[driver.size()] != '/')
        return std::nullopt;
    const std::string id = qualified.substr(driver.size() + 1);
    if (id == "numa") {
        out.push_back(dev.numa);
    } else if (id == "model") {
        out.push_back(dev.model);
    } else if (id == "numas") {
        if (!dev.numas)
            return std::nullopt;
        for (std::int64_t v : *dev.numas)
            out.push_back(v);
    } else {
        return std::nullopt;
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

ElemSet intersect(const ElemSet& a, const ElemSet& b) {
    ElemSet out;
    for (const Elem& e : a)
        if (std::find(b.begin(), b.end(), e) != b.end())
            out.push_back(e);
    return out;
}

bool covers(const MConstraint& k, const MRequest& request, size_t alt) {
    if (k.requests.empty())
        return true;
    for (const std::string& name : k.requests)
        if (name == request.name || name == request.planName(alt))
            return true;
    return false;
}

// allocationMode All: the fixed device set (§1.4), given what is committed.
std::vector<int> allSet(const Model& m, const Committed& committed, const MSpec& spec) {
    std::vector<int> out;
    for (int d = 0; d < static_cast<int>(m.devices.size()); ++d) {
        if (!onNode(m, d) || !selected(m, spec, d))
            continue;
        Take t = take(m, spec, d);
        if (!t.usable)
            continue;
        if (t.mem && m.device(d).multi) {
            auto it = committed.sharedMem.find(d);
            std::int64_t used = it == committed.sharedMem.end() ? 0 : it->second;
            if (used + *t.mem > m.device(d).mem->value)
                continue;
        }
        out.push_back(d);
    }
    return out;
}

size_t numDevices(const Model& m, const Committed& committed, const MSpec& spec) {
    return spec.all ? allSet(m, committed, spec).size() : static_cast<size_t>(spec.count);
}

// Errors the allocator must give (claim over the 32-device limit) or may give (an All request
// under a constraint the fixed set breaks).
bool expectsLimitError(const Model& m, const Committed& committed) {
    for (const MClaim& claim : m.claims) {
        size_t lower = 0;
        for (const MRequest& request : claim.requests) {
            size_t minimum = SIZE_MAX;
            for (const auto& alt : request.alts)
                minimum = std::min(minimum, numDevices(m, committed, alt.second));
            lower += minimum;
        }
        if (lower > kMaxResults)
            return true;
    }
    return false;
}

bool allUnderConstraint(const Model& m) {
    for (const MClaim& claim : m.claims)
        for (const MConstraint& k : claim.constraints)
            for (const MRequest& request : claim.requests)
                for (size_t a = 0; a < request.alts.size(); ++a)
                    if (request.alts[a].second.all && covers(k, request, a))
                        return true;
    return false;
}

// --- assignments and the full validity check ------------------------------------------------

struct ReqChoice {
    int alt = -1;
    std::vector<int> devices;
};
using Assignment = std::vector<std::vector<ReqChoice>>;  // [claim][request]

std::string deviceLabel(const Model& m, int d) {
    const MDevice& dev = m.device(d);
    return m.driverOf(d) + "/" + m.pools[static_cast<size_t>(dev.pool)].name + "/" + dev.name;
}

// Every rule of §1 a finished allocation must satisfy; "" when it does.
std::string validate(const Model& m, const Committed& committed, const Assignment& a) {
    if (a.size() != m.claims.size())
        return "wrong number of claims";
    struct Use {
        int claim;
        bool admin;
        std::string where;
    };
    std::map<int, std::vector<Use>> uses;
    std::map<int, std::int64_t> memUsed;
    for (size_t c = 0; c < m.claims.size(); ++c) {
        const MClaim& claim = m.claims[c];
        size_t total = 0;
        for (size_t r = 0; r < claim.requests.size(); ++r) {
            const MRequest& request = claim.requests[r];
            const ReqChoice& choice = a[c][r];
            const std::string where = claim.name + " " + request.name;
            if (choice.alt < 0 || static_cast<size_t>(choice.alt) >= request.alts.size())
                return where + ": no results (or no alternative chosen)";
            const MSpec& spec = request.alts[static_cast<size_t>(choice.alt)].second;
            const std::string plan =
                claim.name + " " + request.planName(static_cast<size_t>(choice.alt));
            std::set<int> distinct(choice.devices.begin(), choice.devices.end());
            if (distinct.size() != choice.devices.size())
                return plan + ": a device appears twice in one request";
            if (spec.all) {
                std::vector<int> expected = allSet(m, committed, spec);
                if (expected.empty())
                    return plan + ": All request allocated although no device matches";
                if (std::set<int>(expected.begin(), expected.end()) != distinct)
                    return plan + ": All request did not get exactly every matching device";
            } else if (choice.devices.size() != static_cast<size_t>(spec.count)) {
                return plan + ": got " + std::to_string(choice.devices.size()) +
                       " devices, count " + std::to_string(spec.count);
            }
            total += choice.devices.size();
            for (int d : choice.devices) {
                const std::string dw = plan + " device " + deviceLabel(m, d);
                if (!onNode(m, d))
                    return dw + ": device is not on node-1";
                if (!selected(m, spec, d))
                    return dw + ": device does not pass the class/request selectors";
                if (!tolerated(spec, m.device(d)))
                    return dw + ": device taint not tolerated";
                Take t = take(m, spec, d);
                if (!t.usable)
                    return dw + ": capacity request not satisfiable on this device";
                if (m.device(d).multi) {
                    if (t.mem)
                        memUsed[d] += *t.mem;
                } else {
                    uses[d].push_back(Use{static_cast<int>(c), spec.isAdmin(), dw});
                }
                if (m.device(d).multi && !uses.contains(d))
                    uses[d];  // remember that the multi device is used (counters)
            }
        }
        if (total > kMaxResults)
            return claim.name + ": more than 32 results";
    }
    // Exclusive use: a dedicated device serves one claim once; a later claim may only take it
    // with admin access (same claim: never twice); committed devices only with admin access.
    for (const auto& [d, list] : uses) {
        if (m.device(d).multi)
            continue;
        for (size_t i = 0; i < list.size(); ++i) {
            if (!list[i].admin && committed.exclusive.contains(d))
                return list[i].where + ": device is already allocated (committed)";
            for (size_t j = 0; j < list.size(); ++j) {
                if (i == j)
                    continue;
                if (list[i].claim == list[j].claim)
                    return list[i].where + ": device used twice within the claim";
                if (list[j].claim < list[i].claim && !list[i].admin)
                    return list[i].where + ": device already used by an earlier claim";
            }
        }
    }
    for (const auto& [d, used] : memUsed) {
        auto it = committed.sharedMem.find(d);
        std::int64_t before = it == committed.sharedMem.end() ? 0 : it->second;
        if (before + used > m.device(d).mem->value)
            return deviceLabel(m, d) + ": mem over-consumed (" + std::to_string(before) + " + " +
                   std::to_string(used) + " > " + std::to_string(m.device(d).mem->value) + ")";
    }
    // Shared counters: dedicated devices pay per use, shared devices once (unless committed).
    std::map<std::pair<int, std::string>, std::int64_t> counters = committed.counters;
    for (const auto& [d, list] : uses) {
        const MDevice& dev = m.device(d);
        size_t times = dev.multi ? (committed.shared.contains(d) ? 0 : 1) : list.size();
        for (const auto& [counter, amount] : dev.counters)
            counters[{dev.pool, counter}] += amount * static_cast<std::int64_t>(times);
    }
    for (const auto& [key, amount] : counters) {
        const MPool& pool = m.pools[static_cast<size_t>(key.first)];
        if (amount > pool.counterSet.at(key.second))
            return "pool " + pool.driver + "/" + pool.name + ": counter " + key.second +
                   " over-consumed (" + std::to_string(amount) + " > " +
                   std::to_string(pool.counterSet.at(key.second)) + ")";
    }
    // Constraints, per claim, over the devices of the requests they cover.
    for (size_t c = 0; c < m.claims.size(); ++c) {
        const MClaim& claim = m.claims[c];
        for (size_t k = 0; k < claim.constraints.size(); ++k) {
            const MConstraint& constraint = claim.constraints[k];
            std::vector<std::pair<int, ElemSet>> values;
            for (size_t r = 0; r < claim.requests.size(); ++r) {
                const ReqChoice& choice = a[c][r];
                if (!covers(constraint, claim.requests[r], static_cast<size_t>(choice.alt)))
                    continue;
                for (int d : choice.devices) {
                    auto set = attributeSet(m, d, constraint.attribute);
                    if (!set)
                        return claim.name + " constraint #" + std::to_string(k) + ": device " +
                               deviceLabel(m, d) + " lacks " + constraint.attribute;
                    values.emplace_back(d, *set);
                }
            }
            if (constraint.match) {
                if (values.empty())
                    continue;
                ElemSet common = values.front().second;
                for (const auto& [d, set] : values)
                    common = intersect(common, set);
                if (common.empty())
                    return claim.name + " constraint #" + std::to_string(k) + " (match " +
                           constraint.attribute + "): no common value";
            } else {
                for (size_t i = 0; i < values.size(); ++i)
                    for (size_t j = i + 1; j < values.size(); ++j)
                        if (!intersect(values[i].second, values[j].second).empty())
                            return claim.name + " constraint #" + std::to_string(k) +
                                   " (distinct " + constraint.attribute + "): devices " +
                                   deviceLabel(m, values[i].first) + " and " +
                                   deviceLabel(m, values[j].first) + " share a value";
            }
        }
    }
    return "";
}

// --- brute force --------------------------------------------------------------------------

// Tries every assignment (claims in order, requests in order, every alternative, every
// combination of devices for ExactCount, the fixed set for All), checking each placed device
// incrementally against the rules above. All rules are monotone, so a partial assignment that
// breaks one can be dropped.
class BruteForce {
  public:
    enum class Answer { Found, None, TooBig };

    BruteForce(const Model& m, const Committed& committed, long budget)
        : m_(m), committed_(committed), budget_(budget) {
        const size_t n = m.devices.size();
        uses_.assign(n, {});
        memUsed_.assign(n, 0);
        shares_.assign(n, 0);
        current_.resize(m.claims.size());
        recorded_.resize(m.claims.size());
        results_.assign(m.claims.size(), 0);
        for (size_t c = 0; c < m.claims.size(); ++c) {
            current_[c].resize(m.claims[c].requests.size());
            recorded_[c].resize(m.claims[c].constraints.size());
        }
    }

    Answer run() {
        bool found = claimStep(0, 0);
        if (tooBig_)
            return Answer::TooBig;
        return found ? Answer::Found : Answer::None;
    }
    const Assignment& solution() const { return solution_; }
    long nodes() const { return nodes_; }

  private:
    struct Use {
        int claim;
        bool admin;
    };
    struct Undo {
        int device;
        int claim;
        size_t request = 0;
        std::int64_t mem = 0;
        bool shared = false;
        std::vector<std::pair<std::string, std::int64_t>> counters;
        std::vector<size_t> pushed;
    };

    bool claimStep(size_t c, size_t r) {
        if (tooBig_)
            return false;
        if (c == m_.claims.size()) {
            solution_ = current_;
            return true;
        }
        const MClaim& claim = m_.claims[c];
        if (r == claim.requests.size())
            return claimStep(c + 1, 0);
        const MRequest& request = claim.requests[r];
        for (size_t alt = 0; alt < request.alts.size(); ++alt) {
            const MSpec& spec = request.alts[alt].second;
            current_[c][r].alt = static_cast<int>(alt);
            current_[c][r].devices.clear();
            if (spec.all) {
                std::vector<int> set = allSet(m_, committed_, spec);
                if (set.empty())
                    continue;
                size_t placed = 0;
                bool ok = true;
                for (int d : set) {
                    if (!place(c, request, alt, d)) {
                        ok = false;
                        break;
                    }
                    ++placed;
                }
                bool found = ok && claimStep(c, r + 1);
                for (size_t i = 0; i < placed && !found; ++i)
                    unplace();
                if (found)
                    return true;
            } else {
                std::vector<int> candidates;
                for (int d = 0; d < static_cast<int>(m_.devices.size()); ++d)
                    if (onNode(m_, d) && selected(m_, spec, d))
                        candidates.push_back(d);
                if (choose(c, r, request, alt, candidates, 0, spec.count))
                    return true;
            }
            if (tooBig_)
                return false;
        }
        current_[c][r].alt = -1;
        current_[c][r].devices.clear();
        return false;
    }

    bool choose(size_t c, size_t r, const MRequest& request, size_t alt,
                const std::vector<int>& candidates, size_t from, int remaining) {
        if (remaining == 0)
            return claimStep(c, r + 1);
        for (size_t i = from; i + static_cast<size_t>(remaining) <= candidates.size(); ++i) {
            if (!place(c, request, alt, candidates[i]))
                continue;
            if (choose(c, r, request, alt, candidates, i + 1, remaining - 1))
                return true;
            unplace();
            if (tooBig_)
                return false;
        }
        return false;
    }

    // Adds device d to the current request of claim c if every rule still holds.
    bool place(size_t c, const MRequest& request, size_t alt, int d) {
        if (++nodes_ > budget_) {
            tooBig_ = true;
            return false;
        }
        const MSpec& spec = request.alts[alt].second;
        const MDevice& dev = m_.device(d);
        const size_t di = static_cast<size_t>(d);
        if (!tolerated(spec, dev))
            return false;
        Take t = take(m_, spec, d);
        if (!t.usable)
            return false;
        if (results_[c] + 1 > kMaxResults)
            return false;
        if (!dev.multi) {
            if (!spec.isAdmin() && committed_.exclusive.contains(d))
                return false;
            for (const Use& u : uses_[di])
                if (u.claim == static_cast<int>(c) || !spec.isAdmin())
                    return false;
        }
        Undo undo;
        undo.device = d;
        undo.claim = static_cast<int>(c);
        if (dev.multi && t.mem) {
            auto it = committed_.sharedMem.find(d);
            std::int64_t before = it == committed_.sharedMem.end() ? 0 : it->second;
            if (before + memUsed_[di] + *t.mem > dev.mem->value)
                return false;
            undo.mem = *t.mem;
        }
        const bool payCounters = !dev.multi || (!committed_.shared.contains(d) && shares_[di] == 0);
        if (payCounters) {
            for (const auto& [counter, amount] : dev.counters) {
                std::pair<int, std::string> key{dev.pool, counter};
                auto it = committed_.counters.find(key);
                std::int64_t before = it == committed_.counters.end() ? 0 : it->second;
                if (before + counterUsed_[key] + amount >
                    m_.pools[static_cast<size_t>(dev.pool)].counterSet.at(counter))
                    return false;
                undo.counters.emplace_back(counter, amount);
            }
        }
        const MClaim& claim = m_.claims[c];
        for (size_t k = 0; k < claim.constraints.size(); ++k) {
            const MConstraint& constraint = claim.constraints[k];
            if (!covers(constraint, request, alt))
                continue;
            auto set = attributeSet(m_, d, constraint.attribute);
            bool ok = set.has_value();
            auto& stack = recorded_[c][k];
            if (ok && constraint.match) {
                if (stack.empty()) {
                    stack.push_back(*set);
                } else {
                    ElemSet common = intersect(stack.back(), *set);
                    ok = !common.empty();
                    if (ok)
                        stack.push_back(common);
                }
            } else if (ok) {
                for (const ElemSet& other : stack)
                    ok = ok && intersect(other, *set).empty();
                if (ok)
                    stack.push_back(*set);
            }
            if (!ok) {
                for (size_t pushed : undo.pushed)
                    recorded_[c][pushed].pop_back();
                return false;
            }
            undo.pushed.push_back(k);
        }
        // Committed to placing it.
        if (!dev.multi)
            uses_[di].push_back(Use{static_cast<int>(c), spec.isAdmin()});
        else
            ++shares_[di];
        memUsed_[di] += undo.mem;
        for (const auto& [counter, amount] : undo.counters)
            counterUsed_[{dev.pool, counter}] += amount;
        ++results_[c];
        undo.request = static_cast<size_t>(&request - &claim.requests[0]);
        current_[c][undo.request].devices.push_back(d);
        undo.shared = dev.multi;
        undo_.push_back(std::move(undo));
        return true;
    }

    void unplace() {
        Undo undo = std::move(undo_.back());
        undo_.pop_back();
        const size_t di = static_cast<size_t>(undo.device);
        const MDevice& dev = m_.device(undo.device);
        const size_t c = static_cast<size_t>(undo.claim);
        if (undo.shared)
            --shares_[di];
        else
            uses_[di].pop_back();
        memUsed_[di] -= undo.mem;
        for (const auto& [counter, amount] : undo.counters)
            counterUsed_[{dev.pool, counter}] -= amount;
        for (auto it = undo.pushed.rbegin(); it != undo.pushed.rend();
             ++it)  // NOLINT(modernize-loop-convert)
            recorded_[c][*it].pop_back();
        --results_[c];
        current_[c][undo.request].devices.pop_back();
    }

    const Model& m_;
    const Committed& committed_;
    long budget_;
    long nodes_ = 0;
    bool tooBig_ = false;
    std::vector<std::vector<Use>> uses_;
    std::vector<std::int64_t> memUsed_;
    std::vector<int> shares_;
    std::map<std::pair<int, std::string>, std::int64_t> counterUsed_;
    std::vector<std::vector<std::vector<ElemSet>>> recorded_;  // [claim][constraint] stack
    std::vector<size_t> results_;
    std::vector<Undo> undo_;
    Assignment current_;
    Assignment solution_;
};

// --- allocator inputs ----------------------------------------------------------------------

Quantity qty(std::int64_t v) {
    return Quantity::fromInt(v, Quantity::Format::DecimalSI);
}

struct Inputs {
    std::vector<Slice> slices;
    std::vector<DeviceClass> classes;
    std::vector<Claim> claims;
};

DeviceRequestSpec toSpec(const Model& m, const MSpec& s) {
    DeviceRequestSpec spec;
    const MClass& cls = m.classes[static_cast<size_t>(s.cls)];
    spec.deviceClassName = cls.name;
    for (const Pred& p : s.preds)
        spec.selectors.push_back(celOf(p, cls.driver));
    spec.allocationMode = s.all ? "All" : "ExactCount";
    spec.count = s.all ? 1 : s.count;
    spec.adminAccess = s.admin;
    spec.tolerations = s.tolerations;
    if (s.capacity)
        spec.capacityRequests.emplace(s.capacity->first, qty(s.capacity->second));
    return spec;
}

Inputs toInputs(const Model& m) {
    Inputs in;
    for (const MPool& pool : m.pools) {
        const std::int64_t count =
            static_cast<std::int64_t>(pool.slices.size()) + (pool.counterSlice.empty() ? 0 : 1);
        const std::string node = pool.onNode ? "node-1" : "node-2";
        if (!pool.counterSlice.empty()) {
            Slice slice;
            slice.name = pool.counterSlice;
            slice.driver = pool.driver;
            slice.pool = Pool{pool.name, 1, count};
            slice.nodeName = node;
            CounterSet set;
            set.name = "cs";
            for (const auto& [name, value] : pool.counterSet)
                set.counters[name] = SharedCounter{qty(value), std::nullopt};
            slice.sharedCounters.push_back(std::move(set));
            in.slices.push_back(std::move(slice));
        }
        for (const MSlice& ms : pool.slices) {
            Slice slice;
            slice.name = ms.name;
            slice.driver = pool.driver;
            slice.pool = Pool{pool.name, 1, count};
            slice.nodeName = node;
            for (int d : ms.devices) {
                const MDevice& md = m.device(d);
                Device dev;
                dev.name = md.name;
                dev.attributes["numa"] = md.numa;
                dev.attributes["model"] = md.model;
                if (md.numas)
                    dev.attributes["numas"] = *md.numas;
                if (md.fast)
                    dev.attributes["fast"] = *md.fast;
                if (md.socket) {
                    if (const auto* i = std::get_if<std::int64_t>(&*md.socket))
                        dev.attributes["example.com/socket"] = *i;
                    else
                        dev.attributes["example.com/socket"] = std::get<std::string>(*md.socket);
                }
                dev.allowMultipleAllocations = md.multi;
                if (md.mem) {
                    Capacity cap;
                    cap.value = qty(md.mem->value);
                    if (md.mem->policy) {
                        RequestPolicy policy;
                        if (md.mem->def)
                            policy.defaultValue = qty(*md.mem->def);
                        for (std::int64_t v : md.mem->validValues)
                            policy.validValues.push_back(qty(v));
                        if (md.mem->range) {
                            CapacityRange range;
                            range.min = qty(md.mem->range->min);
                            if (md.mem->range->max)
                                range.max = qty(*md.mem->range->max);
                            if (md.mem->range->step)
                                range.step = qty(*md.mem->range->step);
                            policy.validRange = range;
                        }
                        cap.requestPolicy = policy;
                    }
                    dev.capacity["mem"] = cap;
                }
                dev.taints = md.taints;
                if (!md.counters.empty()) {
                    CounterConsumption use;
                    use.counterSet = "cs";
                    for (const auto& [name, amount] : md.counters)
                        use.counters[name] = CounterUse{qty(amount), std::nullopt};
                    dev.consumesCounters.push_back(std::move(use));
                }
                slice.devices.push_back(std::move(dev));
            }
            in.slices.push_back(std::move(slice));
        }
    }
    for (const MClass& mc : m.classes) {
        DeviceClass cls;
        cls.name = mc.name;
        cls.selectors.push_back("device.driver == \"" + mc.driver + "\"");
        if (mc.pred)
            cls.selectors.push_back(celOf(*mc.pred, mc.driver));
        in.classes.push_back(std::move(cls));
    }
    for (size_t c = 0; c < m.claims.size(); ++c) {
        const MClaim& mc = m.claims[c];
        Claim claim;
        claim.namespace_ = "default";
        claim.name = mc.name;
        claim.uid = "uid-" + std::to_string(c);
        for (const MRequest& mr : mc.requests) {
            Request request;
            request.name = mr.name;
            if (mr.firstAvailable) {
                for (const auto& [name, spec] : mr.alts)
                    request.firstAvailable.push_back(SubRequest{name, toSpec(m, spec)});
            } else {
                request.exactly = toSpec(m, mr.alts[0].second);
            }
            claim.requests.push_back(std::move(request));
        }
        for (const MConstraint& mk : mc.constraints) {
            Constraint constraint;
            constraint.requests = mk.requests;
            if (mk.match)
                constraint.matchAttribute = mk.attribute;
            else
                constraint.distinctAttribute = mk.attribute;
            claim.constraints.push_back(std::move(constraint));
        }
        in.claims.push_back(std::move(claim));
    }
    return in;
}

// --- dumps -----------------------------------------------------------------------------------

std::string elemText(const Elem& e) {
    if (const auto* i = std::get_if<std::int64_t>(&e))
        return std::to_string(*i);
    if (const auto* b = std::get_if<bool>(&e))
        return *b ? "true" : "false";
    return "\"" + std::get<std::string>(e) + "\"";
}

std::string capacityText(const MCapacity& c) {
    std::ostringstream out;
    out << "mem=" << c.value;
    if (c.policy) {
        out << "{";
        if (c.def)
            out << "default=" << *c.def << " ";
        if (c.range) {
            out << "range[min=" << c.range->min;
            if (c.range->max)
                out << " max=" << *c.range->max;
            if (c.range->step)
                out << " step=" << *c.range->step;
            out << "]";
        }
        if (!c.validValues.empty()) {
            out << "validValues[";
            for (size_t i = 0; i < c.validValues.size(); ++i)
                out << (i ? "," : "") << c.validValues[i];
            out << "]";
        }
        out << "}";
    }
    return out.str();
}

std::string tolerationText(const Toleration& t) {
    return "{key=\"" + t.key + "\" op=\"" + t.op + "\" value=\"" + t.value + "\" effect=\"" +
           t.effect + "\"}";
}

std::string specText(const Model& m, const MSpec& s) {
    std::ostringstream out;
    const MClass& cls = m.classes[static_cast<size_t>(s.cls)];
    out << "class=" << cls.name;
    if (s.all)
        out << " allocationMode=All";
    else
        out << " count=" << s.count;
    for (const Pred& p : s.preds)
        out << " selector=[" << celOf(p, cls.driver) << "]";
    if (s.admin)
        out << " adminAccess=" << (*s.admin ? "true" : "false");
    for (const Toleration& t : s.tolerations)
        out << " toleration=" << tolerationText(t);
    if (s.capacity)
        out << " capacity.requests{" << s.capacity->first << "=" << s.capacity->second << "}";
    return out.str();
}

// "cs{a=1 b=2}": counters of the set "cs".
std::string countersText(const std::map<std::string, std::int64_t>& counters) {
    std::string text = "cs{";
    for (const auto& [name, value] : counters)
        text += (text.size() > 3 ? " " : "") + name + "=" + std::to_string(value);
    return text + "}";
}

std::string dumpModel(const Model& m, const Committed* committed = nullptr) {
    std::ostringstream out;
    out << "--- input (node node-1) ---\n";
    for (size_t p = 0; p < m.pools.size(); ++p) {
        const MPool& pool = m.pools[p];
        out << "pool " << pool.driver << "/" << pool.name << " on "
            << (pool.onNode ? "node-1" : "node-2");
        if (!pool.counterSet.empty()) {
            out << ", slice " << pool.counterSlice << " sharedCounters "
                << countersText(pool.counterSet);
        }
        out << "\n";
        for (const MSlice& slice : pool.slices) {
            out << "  slice " << slice.name << "\n";
            for (int d : slice.devices) {
                const MDevice& dev = m.device(d);
                out << "    " << dev.name << ": numa=" << dev.numa << " model=\"" << dev.model
                    << "\"";
                if (dev.numas) {
                    out << " numas=[";
                    for (size_t i = 0; i < dev.numas->size(); ++i)
                        out << (i ? "," : "") << (*dev.numas)[i];
                    out << "]";
                }
                if (dev.fast)
                    out << " fast=" << (*dev.fast ? "true" : "false");
                if (dev.socket)
                    out << " example.com/socket=" << elemText(*dev.socket);
                if (dev.multi)
                    out << " allowMultipleAllocations";
                if (dev.mem)
                    out << " capacity " << capacityText(*dev.mem);
                for (const Taint& t : dev.taints)
                    out << " taint{" << t.key << "=" << t.value << ":" << t.effect << "}";
                if (!dev.counters.empty()) {
                    out << " consumes " << countersText(dev.counters);
                }
                out << "\n";
            }
        }
    }
    for (const MClass& cls : m.classes) {
        out << "class " << cls.name << ": [device.driver == \"" << cls.driver << "\"]";
        if (cls.pred)
            out << " [" << celOf(*cls.pred, cls.driver) << "]";
        out << "\n";
    }
    for (const MClaim& claim : m.claims) {
        out << "claim " << claim.name << "\n";
        for (const MRequest& request : claim.requests) {
            if (request.firstAvailable) {
                out << "  request " << request.name << " firstAvailable:\n";
                for (const auto& [name, spec] : request.alts)
                    out << "    " << name << ": " << specText(m, spec) << "\n";
            } else {
                out << "  request " << request.name << ": " << specText(m, request.alts[0].second)
                    << "\n";
            }
        }
        for (const MConstraint& k : claim.constraints) {
            out << "  constraint " << (k.match ? "matchAttribute " : "distinctAttribute ")
                << k.attribute << " requests=[";
            for (size_t i = 0; i < k.requests.size(); ++i)
                out << (i ? "," : "") << k.requests[i];
            out << "]\n";
        }
    }
    if (committed) {
        out << "committed: exclusive={";
        for (int d : committed->exclusive)
            out << " " << deviceLabel(m, d);
        out << " } shared={";
        for (int d : committed->shared)
            out << " " << deviceLabel(m, d);
        out << " } sharedMem={";
        for (const auto& [d, v] : committed->sharedMem)
            out << " " << deviceLabel(m, d) << "=" << v;
        out << " } counters={";
        for (const auto& [key, v] : committed->counters)
            out << " " << m.pools[static_cast<size_t>(key.first)].name << "/" << key.second << "="
                << v;
        out << " }\n";
    }
    return out.str();
}

std::string outcomeName(const Result<Outcome>& r);

std::string dumpOutcome(const Result<Outcome>& result, bool withSteps = true) {
    std::ostringstream out;
    if (!result) {
        out << "Error: " << result.error().message << "\n";
        return out.str();
    }
    const Outcome& o = *result;
    out << outcomeName(result);
    if (withSteps)
        out << " (steps " << o.searchSteps << ")";
    out << "\n";
    for (size_t c = 0; c < o.allocations.size(); ++c) {
        const Allocation& a = o.allocations[c];
        out << "  claim #" << c << ":\n";
        for (const DeviceResult& r : a.results) {
            out << "    " << r.request << " -> " << r.driver << "/" << r.pool << "/" << r.device;
            if (r.adminAccess)
                out << " adminAccess";
            if (r.shareID)
                out << " shareID=" << *r.shareID;
            for (const auto& [name, q] : r.consumedCapacity)
                out << " consumed{" << name << "=" << q.text() << "}";
            out << " tolerations=" << r.tolerations.size() << "\n";
        }
        if (a.nodeSelector) {
            out << "    nodeSelector:";
            for (const NodeSelectorTerm& t : a.nodeSelector->terms) {
                for (const NodeSelectorRequirement& req : t.matchFields) {
                    out << " field " << req.key << " " << req.op << " [";
                    for (const std::string& v : req.values)
                        out << v << " ";
                    out << "]";
                }
                for (const NodeSelectorRequirement& req : t.matchExpressions)
                    out << " label " << req.key << " " << req.op;
            }
            out << "\n";
        }
    }
    if (o.kind != OutcomeKind::Allocated && !o.explanation.empty())
        out << "  explanation: " << o.explanation << "\n";
    return out.str();
}

std::string dumpAssignment(const Model& m, const Assignment& a) {
    std::ostringstream out;
    for (size_t c = 0; c < a.size(); ++c) {
        out << "  " << m.claims[c].name << ":\n";
        for (size_t r = 0; r < a[c].size(); ++r) {
            const MRequest& request = m.claims[c].requests[r];
            out << "    "
                << (a[c][r].alt < 0 ? request.name
                                    : request.planName(static_cast<size_t>(a[c][r].alt)))
                << " ->";
            for (int d : a[c][r].devices)
                out << " " << deviceLabel(m, d);
            out << "\n";
        }
    }
    return out.str();
}

// --- reading the allocator's answer -----------------------------------------------------------

// Turns an Allocated outcome into an assignment, checking the per-result fields on the way
// (request names, admin flags, shares, consumed capacity, tolerations, node selector).
std::string readOutcome(const Model& m, const Outcome& o, Assignment& out) {
    if (o.allocations.size() != m.claims.size())
        return "expected " + std::to_string(m.claims.size()) + " allocations, got " +
               std::to_string(o.allocations.size());
    std::map<std::tuple<std::string, std::string, std::string>, int> byId;
    for (int d = 0; d < static_cast<int>(m.devices.size()); ++d)
        byId[{m.driverOf(d), m.pools[static_cast<size_t>(m.device(d).pool)].name,
              m.device(d).name}] = d;
    out.assign(m.claims.size(), {});
    for (size_t c = 0; c < m.claims.size(); ++c) {
        const MClaim& claim = m.claims[c];
        const Allocation& allocation = o.allocations[c];
        out[c].assign(claim.requests.size(), {});
        for (const DeviceResult& result : allocation.results) {
            const std::string where = claim.name + " result " + result.request + " -> " +
                                      result.driver + "/" + result.pool + "/" + result.device;
            auto slash = result.request.find('/');
            const std::string parent = result.request.substr(0, slash);
            size_t r = 0;
            while (r < claim.requests.size() && claim.requests[r].name != parent)
                ++r;
            if (r == claim.requests.size())
                return where + ": no such request";
            const MRequest& request = claim.requests[r];
            int alt = -1;
            for (size_t i = 0; i < request.alts.size(); ++i)
                if (request.planName(i) == result.request)
                    alt = static_cast<int>(i);
            if (alt < 0)
                return where + ": result name does not name the request (or request/subrequest)";
            if (out[c][r].alt >= 0 && out[c][r].alt != alt)
                return where + ": results of one request from two subrequests";
            out[c][r].alt = alt;
            auto found = byId.find({result.driver, result.pool, result.device});
            if (found == byId.end())
                return where + ": no such device";
            const int d = found->second;
            out[c][r].devices.push_back(d);
            const MSpec& spec = request.alts[static_cast<size_t>(alt)].second;
            if (result.adminAccess != spec.isAdmin())
                return where + ": adminAccess flag " + (result.adminAccess ? "set" : "not set") +
                       " but the request's adminAccess is " +
                       (spec.isAdmin() ? "true" : "not true");
            if (result.tolerations.size() != spec.tolerations.size())
                return where + ": tolerations not copied from the request";
            const MDevice& dev = m.device(d);
            if (dev.multi) {
                if (!result.shareID)
                    return where + ": multi-allocatable device without shareID";
                Take t = take(m, spec, d);
                std::map<std::string, std::int64_t> expected;
                if (t.mem)
                    expected["mem"] = *t.mem;
                std::map<std::string, std::int64_t> got;
                for (const auto& [name, q] : result.consumedCapacity)
                    got[name] = q.value();
                if (got != expected)
                    return where + ": consumedCapacity " +
                           (got.contains("mem") ? std::to_string(got["mem"]) : "none") +
                           ", expected " +
                           (expected.contains("mem") ? std::to_string(expected["mem"]) : "none");
            } else if (result.shareID || !result.consumedCapacity.empty()) {
                return where + ": dedicated device with shareID/consumedCapacity";
            }
        }
        if (!allocation.results.empty()) {
            const auto& ns = allocation.nodeSelector;
            bool ok = ns && ns->terms.size() == 1 && ns->terms[0].matchFields.size() == 1 &&
                      ns->terms[0].matchExpressions.empty() &&
                      ns->terms[0].matchFields[0].key == "metadata.name" &&
                      ns->terms[0].matchFields[0].op == "In" &&
                      ns->terms[0].matchFields[0].values == std::vector<std::string>{"node-1"};
            if (!ok)
                return claim.name + ": nodeSelector is not metadata.name In [node-1]";
        }
    }
    return "";
}

void applyCommit(const Model& m, const Assignment& a, Committed& committed) {
    for (size_t c = 0; c < a.size(); ++c) {
        for (size_t r = 0; r < a[c].size(); ++r) {
            const MRequest& request = m.claims[c].requests[r];
            const MSpec& spec = request.alts[static_cast<size_t>(a[c][r].alt)].second;
            if (spec.isAdmin())
                continue;  // admin access does not take the device
            for (int d : a[c][r].devices) {
                const MDevice& dev = m.device(d);
                bool pay = true;
                if (dev.multi) {
                    pay = committed.shared.insert(d).second;
                    Take t = take(m, spec, d);
                    if (t.mem)
                        committed.sharedMem[d] += *t.mem;
                } else {
                    committed.exclusive.insert(d);
                }
                if (pay)
                    for (const auto& [counter, amount] : dev.counters)
                        committed.counters[{dev.pool, counter}] += amount;
            }
        }
    }
}

std::set<int> exclusiveDevices(const Model& m, const Assignment& a) {
    std::set<int> out;
    for (size_t c = 0; c < a.size(); ++c)
        for (size_t r = 0; r < a[c].size(); ++r) {
            const MSpec& spec =
                m.claims[c].requests[r].alts[static_cast<size_t>(a[c][r].alt)].second;
            if (spec.isAdmin())
                continue;
            for (int d : a[c][r].devices)
                if (!m.device(d).multi)
                    out.insert(d);
        }
    return out;
}

// --- the properties --------------------------------------------------------------------------

const Node kNode{"node-1", {}};
// The allocator's time budget in these tests; a GaveUp answer is retried with the default
// budget when the brute force shows that an allocation exists.
constexpr std::chrono::milliseconds kTimeBudget{50};
constexpr long kBruteForceBudget = 200000;

struct SeedRange {
    unsigned first = 1;
    unsigned last = 0;
    unsigned count() const { return last >= first ? last - first + 1 : 0; }
};

SeedRange seeds(unsigned defaultCount) {
    if (const char* one = std::getenv("NUMADRA_PROPERTY_SEED")) {
        unsigned s = static_cast<unsigned>(std::strtoul(one, nullptr, 10));
        return {s, s};
    }
    if (const char* n = std::getenv("NUMADRA_PROPERTY_CASES"))
        return {1, static_cast<unsigned>(std::strtoul(n, nullptr, 10))};
    return {1, defaultCount};
}

// Brute force, first for each claim alone (a claim that cannot be allocated alone cannot be
// allocated next to others: claims only take resources from each other), then all together.
BruteForce::Answer decide(const Model& m, const Committed& committed, Assignment* solution) {
    if (m.claims.size() > 1) {
        for (const MClaim& claim : m.claims) {
            Model alone = m;
            alone.claims = {claim};
            BruteForce brute(alone, committed, kBruteForceBudget);
            if (brute.run() == BruteForce::Answer::None)
                return BruteForce::Answer::None;
        }
    }
    BruteForce brute(m, committed, kBruteForceBudget);
    BruteForce::Answer answer = brute.run();
    if (answer == BruteForce::Answer::Found)
        *solution = brute.solution();
    return answer;
}

struct Stats {
    long allocated = 0;
    long unsatisfiable = 0;
    long errors = 0;  // expected errors (claim limit, All under a constraint)
    long gaveUp = 0;
    long bruteFound = 0;
    long bruteNone = 0;
    long bruteSkipped = 0;
    std::vector<std::string> gaveUpNotes;  // "seed N: brute force <answer>"
};

const char* answerName(BruteForce::Answer a) {
    switch (a) {
        case BruteForce::Answer::Found:
            return "finds an allocation";
        case BruteForce::Answer::None:
            return "proves none exists";
        case BruteForce::Answer::TooBig:
            return "over budget";
    }
    return "?";
}

std::string outcomeName(const Result<Outcome>& r) {
    if (!r)
        return "Error";
    switch (r->kind) {
        case OutcomeKind::Allocated:
            return "Allocated";
        case OutcomeKind::Unsatisfiable:
            return "Unsatisfiable";
        case OutcomeKind::GaveUp:
            return "GaveUp";
        case OutcomeKind::FailedOnNode:
            return "FailedOnNode";
    }
    return "?";
}

// Checks one answer of allocate() against the model for a committed state: "" or the problem.
// With `complete`, the brute force decides too and the answers must agree; `retry` re-runs the
// allocation with the default (10 s) budget after a GaveUp.
std::string checkAnswer(unsigned seed, const Model& m, const Committed& committed,
                        const Result<Outcome>& result, bool complete,
                        const std::function<Result<Outcome>()>& retry, Assignment* allocated,
                        Stats& stats, std::string* witness, std::string* retried) {
    const bool limit = expectsLimitError(m, committed);
    if (!result) {
        ++stats.errors;
        if (limit)
            return "";
        if (allUnderConstraint(m) &&
            result.error().message.find("constraint would not be satisfied") != std::string::npos)
            return "";
        return "allocate() failed on valid input: " + result.error().message;
    }
    if (limit)
        return "expected the error for a claim over the 32-device limit, got " +
               outcomeName(result);
    const Result<Outcome>* answer = &result;
    Result<Outcome> second = Error{"not retried"};
    Assignment solution;
    std::optional<BruteForce::Answer> brute;
    if (result->kind == OutcomeKind::GaveUp) {
        ++stats.gaveUp;
        if (!complete)
            return "";
        brute = decide(m, committed, &solution);
        stats.gaveUpNotes.push_back("seed " + std::to_string(seed) + ": brute force " +
                                    answerName(*brute));
        if (*brute == BruteForce::Answer::None)
            ++stats.bruteNone;
        if (*brute == BruteForce::Answer::TooBig)
            ++stats.bruteSkipped;
        if (*brute != BruteForce::Answer::Found)
            return "";
        second = retry();
        *retried = "--- retried with the default time budget ---\n" + dumpOutcome(second);
        if (!second)
            return "allocate() failed on the retry: " + second.error().message;
        answer = &second;
    }
    const bool isAllocated = (*answer)->kind == OutcomeKind::Allocated;
    if (isAllocated) {
        ++stats.allocated;
        Assignment a;
        std::string problem = readOutcome(m, **answer, a);
        if (problem.empty())
            problem = validate(m, committed, a);
        if (!problem.empty())
            return "unsound allocation: " + problem;
        if (allocated)
            *allocated = a;
    } else if ((*answer)->kind == OutcomeKind::Unsatisfiable) {
        ++stats.unsatisfiable;
    }
    if (!complete)
        return "";
    if (!brute)
        brute = decide(m, committed, &solution);
    switch (*brute) {
        case BruteForce::Answer::TooBig:
            ++stats.bruteSkipped;
            return "";
        case BruteForce::Answer::Found: {
            ++stats.bruteFound;
            std::string selfCheck = validate(m, committed, solution);
            if (!selfCheck.empty())
                return "TEST BUG: brute force produced an invalid assignment: " + selfCheck + "\n" +
                       dumpAssignment(m, solution);
            if (!isAllocated) {
                *witness = dumpAssignment(m, solution);
                return "incomplete: allocate() answered " + outcomeName(*answer) +
                       " but a valid allocation exists";
            }
            return "";
        }
        case BruteForce::Answer::None:
            ++stats.bruteNone;
            if (isAllocated)
                return "allocate() found an allocation the brute force says cannot exist";
            return "";
    }
    return "";
}

// NUMADRA_PROPERTY_DUMP=1 prints every input before it is allocated (for crashes).
void traceInput(unsigned seed, const Model& m) {
    if (std::getenv("NUMADRA_PROPERTY_DUMP")) {
        std::printf("=== seed %u\n%s", seed, dumpModel(m).c_str());
        std::fflush(stdout);
    }
}

void printStats(const char* property, SeedRange range, const Stats& stats, bool complete) {
    std::printf(
        "[ %s ] seeds %u..%u: %ld allocated, %ld unsatisfiable, %ld expected errors, "
        "%ld gave up (time budget %lld ms)",
        property, range.first, range.last, stats.allocated, stats.unsatisfiable, stats.errors,
        stats.gaveUp, static_cast<long long>(kTimeBudget.count()));
    if (complete)
        std::printf("; brute force: %ld satisfiable, %ld unsatisfiable, %ld over budget",
                    stats.bruteFound, stats.bruteNone, stats.bruteSkipped);
    std::printf("\n");
    for (const std::string& note : stats.gaveUpNotes)
        std::printf("    gave up: %s\n", note.c_str());
}

class PropertyTest : public testing::Test {
  protected:
    // Records a failing seed; true once three seeds failed (the property stops there).
    bool report(unsigned seed, const std::string& property, const std::string& problem,
                const Model& m, const Committed* committed, const std::string& outcome,
                const std::string& witness = "") {
        ADD_FAILURE() << "seed " << seed << " (" << property
                      << "; rerun with NUMADRA_PROPERTY_SEED=" << seed << ")\n"
                      << problem << "\n"
                      << dumpModel(m, committed) << "--- allocate() ---\n"
                      << outcome
                      << (witness.empty() ? "" : "--- a valid allocation (brute force) ---\n")
                      << witness;
        return ++failures_ >= 3;
    }
    int failures_ = 0;
};

Options testOptions() {
    Options options;
    options.timeBudget = kTimeBudget;
    return options;
}

// What the sound allocations exercised (printed, so a generator change that stops producing
// some feature shows up).
struct Coverage {
    std::map<std::string, long> counts;
    void add(const Model& m, const Assignment& a) {
        std::set<std::string> seen;
        std::map<int, int> multiUses;
        std::map<int, std::pair<int, int>> dedicatedUses;  // device -> (admin, other)
        for (size_t c = 0; c < a.size(); ++c) {
            const MClaim& claim = m.claims[c];
            for (size_t r = 0; r < a[c].size(); ++r) {
                const MRequest& request = claim.requests[r];
                const MSpec& spec = request.alts[static_cast<size_t>(a[c][r].alt)].second;
                if (request.firstAvailable)
                    seen.insert(a[c][r].alt == 0 ? "firstAvailable first subrequest"
                                                 : "firstAvailable second subrequest");
                if (spec.all)
                    seen.insert("allocationMode All");
                if (spec.isAdmin())
                    seen.insert("adminAccess");
                if (a[c][r].devices.size() >= 2)
                    seen.insert("count >= 2");
                for (int d : a[c][r].devices) {
                    const MDevice& dev = m.device(d);
                    if (dev.multi)
                        ++multiUses[d];
                    else if (spec.isAdmin())
                        ++dedicatedUses[d].first;
                    else
                        ++dedicatedUses[d].second;
                    if (!dev.counters.empty())
                        seen.insert("shared counters consumed");
                    for (const Taint& t : dev.taints)
                        if (t.effect == "NoSchedule" || t.effect == "NoExecute")
                            seen.insert("taint tolerated");
                    if (spec.capacity && dev.mem) {
                        Take t = take(m, spec, d);
                        if (t.mem && *t.mem != spec.capacity->second)
                            seen.insert("capacity request rounded by policy");
                        else
                            seen.insert("capacity request");
                    }
                }
            }
            for (const MConstraint& k : claim.constraints) {
                size_t covered = 0;
                for (size_t r = 0; r < a[c].size(); ++r)
                    if (covers(k, claim.requests[r], static_cast<size_t>(a[c][r].alt)))
                        covered += a[c][r].devices.size();
                if (covered < 2)
                    continue;
                const bool list = k.attribute.ends_with("/numas");
                seen.insert(std::string(k.match ? "matchAttribute" : "distinctAttribute") +
                            (list ? " on a list" : " on a scalar") + " over >= 2 devices");
            }
        }
        for (const auto& [d, n] : multiUses)
            if (n >= 2)
                seen.insert("multi-allocatable device shared by >= 2 results");
        for (const auto& [d, uses] : dedicatedUses)
            if (uses.first >= 1 && uses.first + uses.second >= 2)
                seen.insert("admin access on a device another claim also got");
        for (const std::string& name : seen)
            ++counts[name];
    }
    void print() const {
        for (const auto& [name, n] : counts)
            std::printf("    covered: %-55s %ld allocations\n", name.c_str(), n);
    }
};

TEST_F(PropertyTest, PropertySoundness) {
    const SeedRange range = seeds(2000);
    Stats stats;
    Coverage coverage;
    for (unsigned seed = range.first; seed <= range.last; ++seed) {
        const Model m = generate(seed);
        const Inputs in = toInputs(m);
        traceInput(seed, m);
        Allocator allocator = Allocator::create(in.slices, in.classes, testOptions());
        const Result<Outcome> result = allocator.allocate(kNode, in.claims);
        Assignment a;
        const std::string problem =
            checkAnswer(seed, m, Committed{}, result, false, nullptr, &a, stats, nullptr, nullptr);
        if (problem.empty() && !a.empty())
            coverage.add(m, a);
        if (!problem.empty() && report(seed, "soundness", problem, m, nullptr, dumpOutcome(result)))
            break;
    }
    printStats("soundness", range, stats, false);
    coverage.print();
}

TEST_F(PropertyTest, PropertyCompleteness) {
    const SeedRange range = seeds(2000);
    Stats stats;
    for (unsigned seed = range.first; seed <= range.last; ++seed) {
        const Model m = generate(seed);
        const Inputs in = toInputs(m);
        traceInput(seed, m);
        Allocator allocator = Allocator::create(in.slices, in.classes, testOptions());
        const Result<Outcome> result = allocator.allocate(kNode, in.claims);
        auto retry = [&] {
            return Allocator::create(in.slices, in.classes).allocate(kNode, in.claims);
        };
        std::string witness;
        std::string retried;
        const std::string problem = checkAnswer(seed, m, Committed{}, result, true, retry, nullptr,
                                                stats, &witness, &retried);
        if (!problem.empty() && report(seed, "completeness", problem, m, nullptr,
                                       dumpOutcome(result) + retried, witness))
            break;
    }
    printStats("completeness", range, stats, true);
    EXPECT_LE(stats.bruteSkipped * 10, static_cast<long>(range.count()))
        << "the brute force was over budget for more than 10% of the cases";
}

TEST_F(PropertyTest, PropertyDeterminismAndCommit) {
    const SeedRange range = seeds(1000);
    Stats first;
    Stats after;
    long compared = 0;
    for (unsigned seed = range.first; seed <= range.last; ++seed) {
        const Model m = generate(seed);
        const Inputs in = toInputs(m);
        traceInput(seed, m);
        Allocator allocator = Allocator::create(in.slices, in.classes, testOptions());
        const Result<Outcome> result = allocator.allocate(kNode, in.claims);
        Assignment a;
        std::string problem =
            checkAnswer(seed, m, Committed{}, result, false, nullptr, &a, first, nullptr, nullptr);
        if (!problem.empty()) {
            if (report(seed, "no error", problem, m, nullptr, dumpOutcome(result)))
                break;
            continue;
        }
        const bool gaveUp = result && result->kind == OutcomeKind::GaveUp;
        // Determinism: a fresh Allocator and the same (warm) Allocator answer the same.
        Allocator fresh = Allocator::create(in.slices, in.classes, testOptions());
        const Result<Outcome> again = fresh.allocate(kNode, in.claims);
        const Result<Outcome> warm = allocator.allocate(kNode, in.claims);
        const bool anyGaveUp = gaveUp || (again && again->kind == OutcomeKind::GaveUp) ||
                               (warm && warm->kind == OutcomeKind::GaveUp);
        if (!anyGaveUp) {  // a time-bound answer need not repeat
            ++compared;
            if (dumpOutcome(again) != dumpOutcome(result)) {
                if (report(seed, "determinism", "a fresh Allocator answered differently", m,
                           nullptr,
                           dumpOutcome(result) + "--- fresh Allocator ---\n" + dumpOutcome(again)))
                    break;
                continue;
            }
            if (dumpOutcome(warm) != dumpOutcome(result)) {
                if (report(seed, "determinism",
                           "the same Allocator answered differently the second time", m, nullptr,
                           dumpOutcome(result) + "--- second call ---\n" + dumpOutcome(warm)))
                    break;
                continue;
            }
        }
        if (!result || result->kind != OutcomeKind::Allocated)
            continue;
        // Commit, then allocate the same claims again.
        for (const Allocation& allocation : result->allocations)
            allocator.commit(allocation);
        Committed committed;
        applyCommit(m, a, committed);
        const Result<Outcome> next = allocator.allocate(kNode, in.claims);
        auto retry = [&] {
            Allocator slow = Allocator::create(in.slices, in.classes);
            for (const Allocation& allocation : result->allocations)
                slow.commit(allocation);
            return slow.allocate(kNode, in.claims);
        };
        Assignment b;
        std::string witness;
        std::string retried;
        problem = checkAnswer(seed, m, committed, next, true, retry, &b, after, &witness, &retried);
        if (problem.empty() && !b.empty()) {
            const std::set<int> before = exclusiveDevices(m, a);
            for (int d : exclusiveDevices(m, b))
                if (before.contains(d))
                    problem =
                        "device " + deviceLabel(m, d) + " allocated exclusively again after commit";
        }
        if (!problem.empty() &&
            report(seed, "after commit", problem, m, &committed,
                   dumpOutcome(result) + "--- after commit ---\n" + dumpOutcome(next) + retried,
                   witness))
            break;
    }
    printStats("first allocation", range, first, false);
    std::printf("[ determinism ] %ld answers compared (fresh and warm Allocator)\n", compared);
    printStats("after commit", range, after, true);
}

}  // namespace
}  // namespace numadra::allocator
