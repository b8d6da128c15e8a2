// dra-allocate's scheduler emulation (scheduler.hpp): which node each pod (or lone claim) goes
// to, as kube-scheduler's Filter plugins decide it, and what that leaves for the next.

#include "numadra/allocator/scheduler.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "numadra/allocator/allocator.hpp"
#include "numadra/allocator/extended.hpp"
#include "numadra/allocator/node_resources.hpp"

namespace numadra::allocator {

using documents::Json;

namespace {

// A claim the run allocates and prints: from the input, from a pod's template, or a pod's
// extended-resource claim.
struct Work {
    Claim claim;
    Json json;  // printed with status.allocation set
    bool done = false;
    bool allocated = false;
    bool extendedResources = false;  // the claim the scheduler makes for extended resources
    std::string problem;             // why not, for the summary
};

Json claimObject(const std::string& ns, const std::string& name, Json spec) {
    Json metadata = {{"name", name}};
    if (!ns.empty())
        metadata["namespace"] = ns;
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata", metadata},
            {"spec", std::move(spec)}};
}

Json extendedClaimSpec(const Claim& claim) {
    Json requests = Json::array();
    for (const Request& request : claim.requests)
        requests.push_back({{"name", request.name},
                            {"exactly",
                             {{"deviceClassName", request.exactly->deviceClassName},
                              {"allocationMode", "ExactCount"},
                              {"count", request.exactly->count}}}});
    return {{"devices", {{"requests", requests}}}};
}

std::string podLabel(const Pod& pod) {
    return "pod " + (pod.namespace_.empty() ? pod.name : pod.namespace_ + "/" + pod.name);
}

// What a node's pods take from its allocatable resources (the scheduler's NodeInfo.Requested).
struct NodeUsage {
    ResourceAmounts used;
    std::int64_t pods = 0;
    struct PodShare {
        std::string label;
        ResourceAmounts takes;
        ResourceAmounts throughClaims;  // the part its claims' devices map
    };
    std::vector<PodShare> byPod;  // for --explain
};

// A pod whose claims are allocated together: its claims with where their allocations are (a
// claim allocated before, or one of the group), for the node-allocatable check.
struct PodPlacement {
    const Pod* pod = nullptr;
    struct Claim {
        std::string podClaimName;
        std::string claimName;
        const Allocation* allocated = nullptr;  // already allocated
        int groupIndex = -1;                    // else its place in the group
    };
    std::vector<Claim> claims;
    std::vector<NodeAllocatableClaimStatus> statuses;  // the answer, for the pod's status
};

// schedule_one.go's minFeasibleNodesToFind: the scheduler stops filtering once it has found
// more feasible nodes than max(this, a share of the nodes), so in a cluster of at most this many
// it filters every node. In a larger one dra-allocate stops at the first node that fits by name
// (docs/ALLOCATOR.md, deliberate difference 11).
constexpr std::size_t kMinFeasibleNodesToFind = 100;

// One node's answer to the scheduler's Filter plugins for a pod (or a claim alone).
struct NodeAnswer {
    enum class Kind {
        Fits,
        Refused,       // unschedulable on this node: `why`
        FailedOnNode,  // upstream's ErrFailedAllocationOnNode (invalid pools): `why`
        Error,         // fails the pod's whole scheduling attempt: `why`
    };
    Kind kind = Kind::Refused;
    std::string why;
    std::vector<Allocation> allocations;               // Fits: one per claim of the group
    ResourceAmounts demand;                            // Fits: what the pod takes of the node
    std::vector<NodeAllocatableClaimStatus> statuses;  // Fits: for the pod's status
};

std::string claimLabel(const Claim& claim) {
    return "claim " + (claim.namespace_.empty() ? claim.name : claim.namespace_ + "/" + claim.name);
}

// A pod's claims, allocated together as the scheduler does for one pod.
struct PodWork {
    std::vector<size_t> referenced;         // input claims (resourceClaimName)
    std::vector<std::string> referencedAs;  // their names in the pod
    std::vector<Work> generated;            // from templates, and the extended-resource claim
    std::vector<std::string> generatedAs;   // their names in the pod ("" for extended resources)
    // Both in spec.resourceClaims order, the extended-resource claim last, as the scheduler
    // hands them to the allocator: (generated, index in `generated`), else (false, index in
    // `referenced`).
    std::vector<std::pair<bool, size_t>> order;
    std::optional<ExtendedResourceClaim> extended;
    Json claimStatuses = Json::array();
    PodPlacement placement;
    bool broken = false;
};

// Upstream's IsReservedForPod, by uid where both have one, else by name.
bool reservedForOtherPod(const ClaimItem& claim, const Pod& pod) {
    return std::any_of(claim.reservedForPods.begin(), claim.reservedForPods.end(),
                       [&](const auto& reserved) {
                           if (!reserved.second.empty() && !pod.uid.empty())
                               return reserved.second != pod.uid;
                           return reserved.first != pod.name;
                       });
}

class Scheduler {
  public:
    Scheduler(Inputs inputs, const ScheduleOptions& options, std::ostream& diagnostics)
        : options_(options), inputs_(std::move(inputs)), err_(diagnostics) {}

    Result<Schedule> run();

  private:
    // The allocator, and what the filters look up: devices, classes, nodes' allocatable.
    void start();
    // Pods on a node already take from its allocatable resources, with what the scheduler
    // counted for their claims.
    Status countBoundPods();
    // The input's claims and templates as work; allocations already in the input committed.
    void takeClaims();
    // A pod's claims: those it names, those made from its templates, its extended resources.
    void takePod(size_t p);
    void allocateInOrder();
    void schedulePod(size_t p);
    // Claims as they ended, a pod's generated claims before the pod, in input order.
    std::vector<Json> objectsInOrder() const;
    bool everyClaimAllocated() const;

    std::vector<Node> candidateNodes(const std::string& podNode) const;
    // Why the pod's claims allocated before (their status.allocation.nodeSelector) keep it off
    // `node`, or "".
    static std::string pinnedElsewhere(const PodPlacement* placement, const Node& node);
    void allocateTogether(const std::vector<Work*>& group, const std::string& podNode,
                          const std::string& what, PodPlacement* placement = nullptr);
    // The scheduler's Filter plugins on one node, in their order: NodeResourcesFit (the pod's
    // own requests, `ownDemand`), then DynamicResources (the allocation, the node's allocatable
    // resources, the claims allocated before). Changes nothing.
    NodeAnswer filterNode(const Node& node, const std::vector<Claim>& claims,
                          const std::optional<ResourceAmounts>& ownDemand,
                          const PodPlacement* placement, bool placesPod);
    // The node's allocatable resources do not hold the pod with these allocations: why, else "";
    // `answer` gets the pod's demand and statuses.
    Result<std::string> nodeResourcesRefusal(const Node& node, const PodPlacement& placement,
                                             NodeAnswer& answer);
    void reportUnplaced(const std::string& what, const std::vector<Node>& nodes,
                        const std::vector<std::pair<std::string, NodeAnswer>>& refusals);
    void countPodOnNode(const std::string& node, const std::string& label,
                        const ResourceAmounts& demand,
                        const std::vector<NodeAllocatableClaimStatus>& statuses);
    const Device* deviceOf(const DeviceResult& result) const;
    // What the node lacks for `demand` after its pods' share; none without Node allocatable.
    std::vector<Shortfall> missingOn(const std::string& node, const ResourceAmounts& demand);
    void report(const std::string& what, const std::string& message);

    ScheduleOptions options_;
    Inputs inputs_;
    std::ostream& err_;
    std::optional<Allocator> allocator_;
    std::map<std::tuple<std::string, std::string, std::string>, const Device*> devices_;
    std::map<std::string, NodeUsage> usage_;
    std::map<std::string, ResourceAmounts> allocatable_;  // Nodes' status.allocatable, by name
    std::set<std::string> classNames_;                    // the DeviceClasses of the input
    std::set<size_t> claimsTakenByPods_;  // input claims with mapped devices a pod got
    std::vector<Work> works_;             // by input claim
    std::map<std::pair<std::string, std::string>, size_t> claimByName_;     // (ns, name) -> claim
    std::map<std::pair<std::string, std::string>, size_t> templateByName_;  // (ns, name) -> claim
    // Claims and templates a pod uses: allocated with the pod, wherever they are listed.
    std::set<size_t> usedByPods_;
    std::vector<PodWork> podWorks_;  // by input pod
    bool allAllocated_ = true;
};

const Device* Scheduler::deviceOf(const DeviceResult& result) const {
    auto it = devices_.find({result.driver, result.pool, result.device});
    return it == devices_.end() ? nullptr : it->second;
}

void Scheduler::countPodOnNode(const std::string& node, const std::string& label,
                               const ResourceAmounts& demand,
                               const std::vector<NodeAllocatableClaimStatus>& statuses) {
    NodeUsage& usage = usage_[node];
    for (const auto& [name, amount] : demand)
        usage.used[name] += amount;
    ++usage.pods;
    ResourceList mapped;
    for (const NodeAllocatableClaimStatus& status : statuses)
        (void)addResources(mapped, status.mapping);  // summed once already, without error
    usage.byPod.push_back({label, demand, amounts(mapped)});
}

std::vector<Shortfall> Scheduler::missingOn(const std::string& node,
                                            const ResourceAmounts& demand) {
    auto allocatable = allocatable_.find(node);
    if (allocatable == allocatable_.end())
        return {};
    const NodeUsage& usage = usage_[node];
    return shortfalls(demand, allocatable->second, usage.used, usage.pods);
}

Result<std::string> Scheduler::nodeResourcesRefusal(const Node& node, const PodPlacement& placement,
                                                    NodeAnswer& answer) {
    std::vector<PodClaimAllocation> claims;
    for (const PodPlacement::Claim& claim : placement.claims) {
        const Allocation* allocation =
            claim.allocated != nullptr ? claim.allocated
                                       : &answer.allocations[static_cast<size_t>(claim.groupIndex)];
        claims.push_back({claim.podClaimName, claim.claimName, allocation});
    }
    auto lookup = [this](const DeviceResult& result) { return deviceOf(result); };
    auto statuses = nodeAllocatableStatuses(*placement.pod, claims, lookup);
    if (!statuses)
        return statuses.error();
    auto requests = podRequests(*placement.pod, *statuses);
    if (!requests)
        return requests.error();
    answer.statuses = std::move(*statuses);
    answer.demand = amounts(*requests);
    const auto missing = missingOn(node.name, answer.demand);
    if (missing.empty())
        return std::string();
    const NodeUsage& usage = usage_[node.name];
    std::string why = "the claims fit, but the node's allocatable resources do not:";
    for (const Shortfall& shortfall : missing) {
        why += "\n" + describe(shortfall);
        for (const NodeUsage::PodShare& share : usage.byPod) {
            auto it = share.takes.find(shortfall.resource);
            if (it == share.takes.end() || it->second <= 0)
                continue;
            why += "\n  " + share.label + " takes " + formatAmount(shortfall.resource, it->second);
            if (auto mapped = share.throughClaims.find(shortfall.resource);
                mapped != share.throughClaims.end() && mapped->second > 0)
                why += " (" + formatAmount(shortfall.resource, mapped->second) +
                       " through its claims' devices)";
        }
    }
    for (const NodeAllocatableClaimStatus& status : answer.statuses) {
        for (const auto& [name, quantity] : status.mapping)
            why += "\nclaim " + status.resourceClaimName + "'s devices map " + name + " " +
                   quantity.text() + " of the pod's request";
    }
    return why;
}

std::vector<Node> Scheduler::candidateNodes(const std::string& podNode) const {
    std::map<std::string, Node> known;
    for (const Node& node : inputs_.nodes)
        known[node.name] = node;
    auto node = [&](const std::string& name) {
        auto it = known.find(name);
        return it == known.end() ? Node{name, {}} : it->second;
    };
    if (options_.node)
        return {node(*options_.node)};
    if (!podNode.empty())
        return {node(podNode)};
    std::set<std::string> names;
    for (const auto& [name, entry] : known)
        names.insert(name);
    for (const std::string& name : allocator_->nodeNames())
        names.insert(name);
    std::vector<Node> nodes;
    for (const std::string& name : names)
        nodes.push_back(node(name));
    return nodes;
}

std::string Scheduler::pinnedElsewhere(const PodPlacement* placement, const Node& node) {
    if (placement == nullptr)
        return "";
    for (const PodPlacement::Claim& claim : placement->claims) {
        if (claim.allocated != nullptr && claim.allocated->nodeSelector &&
            !nodeSelectorMatches(*claim.allocated->nodeSelector, node))
            return "claim " + claim.claimName +
                   " is allocated already, and its status.allocation.nodeSelector does not "
                   "select node " +
                   node.name + ": the pod can only go where its claims are";
    }
    return "";
}

void Scheduler::report(const std::string& what, const std::string& message) {
    err_ << what << ": " << message << "\n";
}

// Upstream's PreFilter: a class that a claim to allocate names and that does not exist leaves
// the pod unschedulable before any node is looked at (the extended-resource claim is made from
// existing classes). Why, or "".
std::string missingClass(const std::vector<Work*>& group, const std::set<std::string>& classes) {
    for (const Work* work : group) {
        if (work->extendedResources)
            continue;
        const std::string claim = work->claim.namespace_.empty()
                                      ? work->claim.name
                                      : work->claim.namespace_ + "/" + work->claim.name;
        for (const Request& request : work->claim.requests) {
            auto missing = [&](const std::string& name) { return !classes.contains(name); };
            if (request.exactly && missing(request.exactly->deviceClassName))
                return "claim " + claim + ", request " + request.name + ": device class " +
                       request.exactly->deviceClassName + " does not exist";
            for (const SubRequest& sub : request.firstAvailable) {
                if (missing(sub.spec.deviceClassName))
                    return "claim " + claim + ", request " + request.name + "/" + sub.name +
                           ": device class " + sub.spec.deviceClassName + " does not exist";
            }
        }
    }
    return "";
}

NodeAnswer Scheduler::filterNode(const Node& node, const std::vector<Claim>& claims,
                                 const std::optional<ResourceAmounts>& ownDemand,
                                 const PodPlacement* placement, bool placesPod) {
    using Kind = NodeAnswer::Kind;
    NodeAnswer answer;
    if (ownDemand) {
        if (const auto missing = missingOn(node.name, *ownDemand); !missing.empty())
            return {Kind::Refused, describe(missing.front()), {}, {}, {}};
    }
    // The allocator runs even where a claim allocated before is not available (upstream's
    // Filter notes that first and refuses the node last): its error fails the pod all the same.
    if (!claims.empty()) {
        auto outcome = allocator_->allocate(node, claims);
        if (!outcome)
            return {Kind::Error, outcome.error().message, {}, {}, {}};
        if (outcome->kind == OutcomeKind::FailedOnNode)
            return {Kind::FailedOnNode, outcome->explanation, {}, {}, {}};
        if (outcome->kind != OutcomeKind::Allocated)
            return {Kind::Refused, outcome->explanation, {}, {}, {}};
        answer.allocations = std::move(outcome->allocations);
    }
    // A pod the scheduler places is on no node yet: the node must also hold what it requests
    // (NodeResourcesFit, DRANodeAllocatableResources).
    if (placesPod) {
        auto refusal = nodeResourcesRefusal(node, *placement, answer);
        if (!refusal)
            return {Kind::Error, refusal.error().message, {}, {}, {}};
        if (!refusal->empty())
            return {Kind::Refused, *refusal, {}, {}, {}};
    }
    // A claim of the pod allocated before binds the pod to its nodes ("resourceclaim not
    // available on the node").
    if (std::string pinned = pinnedElsewhere(placement, node); !pinned.empty())
        return {Kind::Refused, std::move(pinned), {}, {}, {}};
    answer.kind = Kind::Fits;
    return answer;
}

void Scheduler::allocateTogether(const std::vector<Work*>& group, const std::string& podNode,
                                 const std::string& what, PodPlacement* placement) {
    std::vector<Claim> claims;
    for (Work* work : group)
        claims.push_back(work->claim);
    std::vector<Node> nodes = candidateNodes(podNode);
    if (nodes.empty()) {
        report(what, "not allocated: no node is known (give --node, or Node objects)");
        allAllocated_ = false;
        return;
    }
    if (const std::string missing = missingClass(group, classNames_); !missing.empty()) {
        report(what, "not allocated on any node: " + missing);
        allAllocated_ = false;
        return;
    }
    const bool placesPod = placement != nullptr && podNode.empty();
    // What the pod asks for itself: a node that cannot hold even that is passed over before its
    // claims are tried, as the scheduler's NodeResourcesFit filters it before DynamicResources.
    std::optional<ResourceAmounts> ownDemand;
    if (placesPod) {
        if (auto requests = podRequests(*placement->pod, {}))
            ownDemand = amounts(*requests);
    }
    // In a cluster of up to 100 nodes the scheduler filters every one of them, and an error on
    // any (not an "unschedulable") fails the pod's scheduling attempt, even where other nodes
    // fit; the first node that fits, by name, is where the pod goes.
    std::optional<NodeAnswer> chosen;
    std::optional<Node> chosenNode;
    std::vector<std::pair<std::string, NodeAnswer>> refusals;
    for (const Node& node : nodes) {
        NodeAnswer answer = filterNode(node, claims, ownDemand, placement, placesPod);
        if (answer.kind == NodeAnswer::Kind::Error) {
            report(what, "not allocated: " + answer.why);
            allAllocated_ = false;
            return;
        }
        if (answer.kind != NodeAnswer::Kind::Fits) {
            refusals.emplace_back(node.name, std::move(answer));
            continue;
        }
        if (!chosen) {
            chosen = std::move(answer);
            chosenNode = node;
        }
        if (nodes.size() > kMinFeasibleNodesToFind)
            break;
    }
    if (!chosen) {
        allAllocated_ = false;
        reportUnplaced(what, nodes, refusals);
        return;
    }
    if (placesPod) {
        placement->statuses = chosen->statuses;
        countPodOnNode(chosenNode->name, what, chosen->demand, chosen->statuses);
    }
    for (size_t i = 0; i < group.size(); ++i) {
        allocator_->commit(chosen->allocations[i]);
        group[i]->claim.allocation = chosen->allocations[i];
        group[i]->json["status"]["allocation"] = encodeAllocation(chosen->allocations[i]);
        group[i]->allocated = true;
    }
}

void Scheduler::reportUnplaced(const std::string& what, const std::vector<Node>& nodes,
                               const std::vector<std::pair<std::string, NodeAnswer>>& refusals) {
    report(what, "not allocated on " + (nodes.size() == 1
                                            ? "node " + nodes.front().name
                                            : "any of " + std::to_string(nodes.size()) + " nodes"));
    if (!options_.explain) {
        // A node's error (an invalid pool) is said even unasked, as the scheduler surfaces it
        // when every node fails.
        for (const auto& [node, answer] : refusals) {
            if (answer.kind == NodeAnswer::Kind::FailedOnNode)
                err_ << "  node " << node << ": " << answer.why << "\n";
        }
        return;
    }
    const size_t shown = std::min<size_t>(refusals.size(), 5);
    for (size_t i = 0; i < shown; ++i) {
        err_ << "  node " << refusals[i].first << ":\n";
        const std::string& text = refusals[i].second.why;
        size_t start = 0;
        while (start <= text.size()) {
            size_t end = text.find('\n', start);
            err_ << "    " << text.substr(start, end - start) << "\n";
            if (end == std::string::npos)
                break;
            start = end + 1;
        }
    }
    if (refusals.size() > shown)
        err_ << "  ... and " << (refusals.size() - shown) << " more nodes\n";
}

Result<Schedule> Scheduler::run() {
    start();
    if (Status s = countBoundPods(); !s)
        return s.error();
    takeClaims();
    podWorks_.resize(inputs_.pods.size());
    for (size_t p = 0; p < inputs_.pods.size(); ++p)
        takePod(p);
    allocateInOrder();
    return Schedule{objectsInOrder(), allAllocated_ && everyClaimAllocated()};
}

void Scheduler::start() {
    // decode() refused every invalid version: the allocator need not look for one.
    allocator_.emplace(
        Allocator::create(inputs_.slices, inputs_.classes,
                          {.timeBudget = options_.timeBudget, .versionsValid = true}));
    for (const Slice& slice : inputs_.slices) {
        for (const Device& device : slice.devices)
            devices_.try_emplace({slice.driver, slice.pool.name, device.name}, &device);
    }
    for (const DeviceClass& deviceClass : inputs_.classes)
        classNames_.insert(deviceClass.name);
    for (const Node& node : inputs_.nodes) {
        if (node.allocatable)
            allocatable_[node.name] = amounts(*node.allocatable);
    }
}

Status Scheduler::countBoundPods() {
    for (const PodItem& item : inputs_.pods) {
        if (item.pod.nodeName.empty())
            continue;
        auto requests = podRequests(item.pod, item.pod.nodeAllocatableStatuses);
        if (!requests)
            return Error{podLabel(item.pod) + ": " + requests.error().message};
        countPodOnNode(item.pod.nodeName, podLabel(item.pod), amounts(*requests),
                       item.pod.nodeAllocatableStatuses);
    }
    return Status::Ok();
}

void Scheduler::takeClaims() {
    works_.resize(inputs_.claims.size());
    for (size_t i = 0; i < inputs_.claims.size(); ++i) {
        const ClaimItem& item = inputs_.claims[i];
        works_[i].claim = item.claim;
        const auto key = std::make_pair(item.claim.namespace_, item.claim.name);
        if (item.fromTemplate) {
            templateByName_[key] = i;
            works_[i].json = claimObject(item.claim.namespace_, item.claim.name,
                                         item.json.at("spec").value("spec", Json::object()));
        } else {
            claimByName_[key] = i;
            works_[i].json = item.json;
        }
        // Allocations already in the input are in the cluster: they count from the start.
        if (item.claim.allocation) {
            allocator_->commit(*item.claim.allocation);
            works_[i].done = works_[i].allocated = true;
        }
    }
}

void Scheduler::takePod(size_t p) {
    const Pod& pod = inputs_.pods[p].pod;
    const std::string what = podLabel(pod);
    PodWork& work = podWorks_[p];
    for (const PodClaim& podClaim : pod.resourceClaims) {
        const bool byName = podClaim.resourceClaimName.has_value();
        const std::string& name =
            byName ? *podClaim.resourceClaimName : *podClaim.resourceClaimTemplateName;
        auto& index = byName ? claimByName_ : templateByName_;
        auto found = index.find({pod.namespace_, name});
        if (found == index.end()) {
            report(what, std::string(byName ? "resource claim " : "resource claim template ") +
                             name + " is not in the input");
            work.broken = true;
            continue;
        }
        usedByPods_.insert(found->second);
        if (byName) {
            work.order.emplace_back(false, work.referenced.size());
            work.referenced.push_back(found->second);
            work.referencedAs.push_back(podClaim.name);
            continue;
        }
        Work generated;
        generated.claim = inputs_.claims[found->second].claim;
        generated.claim.name = pod.name + "-" + podClaim.name;
        generated.claim.uid.clear();
        generated.json = claimObject(
            pod.namespace_, generated.claim.name,
            inputs_.claims[found->second].json.at("spec").value("spec", Json::object()));
        generated.json["metadata"]["annotations"] = {
            {"resource.kubernetes.io/pod-claim-name", podClaim.name}};
        work.claimStatuses.push_back(
            {{"name", podClaim.name}, {"resourceClaimName", generated.claim.name}});
        work.order.emplace_back(true, work.generated.size());
        work.generated.push_back(std::move(generated));
        work.generatedAs.push_back(podClaim.name);
    }
    auto extended = extendedResourceClaim(pod, inputs_.classes);
    if (!extended) {
        report(what, extended.error().message);
        work.broken = true;
    } else if (*extended) {
        Work generated;
        generated.claim = (*extended)->claim;
        generated.json =
            claimObject(pod.namespace_, generated.claim.name, extendedClaimSpec(generated.claim));
        generated.json["metadata"]["annotations"] = {
            {"resource.kubernetes.io/extended-resource-claim", "true"}};
        generated.extendedResources = true;
        work.order.emplace_back(true, work.generated.size());
        work.generated.push_back(std::move(generated));
        work.generatedAs.emplace_back();
        work.extended = std::move(**extended);
    }
}

void Scheduler::allocateInOrder() {
    for (const auto& entry : inputs_.order) {
        if (const auto* ref = std::get_if<Inputs::ClaimRef>(&entry)) {
            Work& work = works_[ref->index];
            if (usedByPods_.contains(ref->index) || work.done)
                continue;
            work.done = true;
            allocateTogether({&work}, "", claimLabel(work.claim));
            continue;
        }
        schedulePod(std::get<Inputs::PodRef>(entry).index);
    }
}

void Scheduler::schedulePod(size_t p) {
    const Pod& pod = inputs_.pods[p].pod;
    PodWork& work = podWorks_[p];
    if (work.broken) {
        allAllocated_ = false;
        return;
    }
    std::vector<Work*> group;
    PodPlacement& placement = work.placement;
    placement.pod = &pod;
    std::string shared;
    auto lookup = [this](const DeviceResult& result) { return deviceOf(result); };
    for (const auto& [generated, k] : work.order) {
        if (generated) {
            placement.claims.push_back({work.generatedAs[k], work.generated[k].claim.name, nullptr,
                                        static_cast<int>(group.size())});
            group.push_back(&work.generated[k]);
            continue;
        }
        Work& claim = works_[work.referenced[k]];
        if (!claim.claim.allocation) {
            // Not allocated yet, or not for an earlier pod that could not be placed: this
            // pod's scheduling tries it again, as the scheduler does for every pod.
            if (std::find(group.begin(), group.end(), &claim) != group.end())
                continue;  // named twice by the pod
            claim.done = true;
            placement.claims.push_back(
                {work.referencedAs[k], claim.claim.name, nullptr, static_cast<int>(group.size())});
            group.push_back(&claim);
            continue;
        }
        placement.claims.push_back(
            {work.referencedAs[k], claim.claim.name, &*claim.claim.allocation, -1});
        // A claim whose devices map node resources counts once: it is not shared.
        if (mapsNodeResources(*claim.claim.allocation, lookup) &&
            (reservedForOtherPod(inputs_.claims[work.referenced[k]], pod) ||
             claimsTakenByPods_.contains(work.referenced[k])))
            shared = claim.claim.name;
    }
    if (!shared.empty()) {
        // The scheduler's filter leaves the pod unschedulable on every node: no error.
        report(podLabel(pod), "not allocated on any node: node allocatable resource claim " +
                                  shared + " has a mapped device and cannot be shared across pods");
        allAllocated_ = false;
        return;
    }
    // Nothing to allocate: a bound pod, or one without claims, is left as it is; an unbound
    // pod whose claims were all allocated before must still find a node where they all are.
    if (group.empty() && (!pod.nodeName.empty() || placement.claims.empty()))
        return;
    allocateTogether(group, pod.nodeName, podLabel(pod), &placement);
    if (!std::all_of(group.begin(), group.end(), [](const Work* w) { return w->allocated; })) {
        placement.statuses.clear();
        return;
    }
    for (size_t index : work.referenced) {
        if (works_[index].claim.allocation &&
            mapsNodeResources(*works_[index].claim.allocation, lookup))
            claimsTakenByPods_.insert(index);
    }
}

std::vector<Json> Scheduler::objectsInOrder() const {
    std::vector<Json> objects;
    for (const auto& entry : inputs_.order) {
        if (const auto* ref = std::get_if<Inputs::ClaimRef>(&entry)) {
            if (!inputs_.claims[ref->index].fromTemplate || !usedByPods_.contains(ref->index))
                objects.push_back(works_[ref->index].json);
            continue;
        }
        const size_t p = std::get<Inputs::PodRef>(entry).index;
        const PodWork& work = podWorks_[p];
        for (const Work& generated : work.generated)
            objects.push_back(generated.json);
        Json pod = inputs_.pods[p].json;
        if (!work.claimStatuses.empty())
            pod["status"]["resourceClaimStatuses"] = work.claimStatuses;
        if (work.extended && work.generated.back().allocated)
            pod["status"]["extendedResourceClaimStatus"] =
                encodeExtendedResourceStatus(*work.extended);
        if (!work.placement.statuses.empty())
            pod["status"]["nodeAllocatableResourceClaimStatuses"] =
                encodeNodeAllocatableStatuses(work.placement.statuses);
        objects.push_back(std::move(pod));
    }
    return objects;
}

// Every input claim, except the templates pods use (their claims are the pods' own).
bool Scheduler::everyClaimAllocated() const {
    for (size_t i = 0; i < works_.size(); ++i) {
        const bool templateOfPod = inputs_.claims[i].fromTemplate && usedByPods_.contains(i);
        if (!templateOfPod && !works_[i].allocated)
            return false;
    }
    return true;
}

}  // namespace

Result<Schedule> schedule(Inputs inputs, const ScheduleOptions& options,
                          std::ostream& diagnostics) {
    Scheduler scheduler(std::move(inputs), options, diagnostics);
    return scheduler.run();
}

}  // namespace numadra::allocator
