// allocator-bench-cases: writes the inputs of allocator_bench's big-node cases (a)-(e) and the
// split-scaling family as Kubernetes objects, so that our allocator (allocator_files_bench) and
// upstream's (tests/upstream/bench, upstream-allocator-bench) are timed on the very same inputs.
// The objects come from the model objects allocator_bench itself allocates
// (allocator_cases.hpp), so the files cannot drift from the in-memory benchmark.
//
//   allocator-bench-cases [--only CASE]... DIR
//
// For each case, DIR/<case>/:
//  * input.json: a v1 List, in this order: the DeviceClasses, the ResourceSlices, the Nodes, the
//    claims already allocated (status.allocation: devices in use), the claims to allocate.
//    `dra-allocate --node <first node> DIR/<case>/input.json` allocates it as the scheduler would.
//  * case.json: what to time, the contract both benchmark programs follow:
//      name, title, mirrors (the allocator_bench benchmark it reproduces),
//      nodes:  the nodes to allocate on, in order (Node objects of input.json),
//      claims: "namespace/name" of the claims to allocate, in order,
//      mode:   "together": one operation = on every node in turn, allocate all `claims` together
//                          (one call per node, nothing committed), as the scheduler's Filter
//                          tries one pod on each node;
//              "sequence": one operation = on nodes[0], allocate each claim alone, in order,
//                          committing each answer before the next (1,000 pods scheduled one
//                          after another), starting from the held claims only,
//      expect: "allocated" or "unsatisfiable": every call's outcome, checked before timing,
//      heldClaims: how many claims of input.json are already allocated.
//    Warm and cold are timed for every case (what they mean for each allocator: the programs'
//    headers and docs/PERFORMANCE.md).
//
// Exit status 0, or 2 with a message (bad flags, a file that cannot be written).

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "allocator_cases.hpp"

namespace {

namespace fs = std::filesystem;
namespace na = numadra::allocator;
using namespace numadra::bench;

struct FileCase {
    std::string name;
    std::string title;
    std::string mirrors;
    std::vector<na::Slice> slices;
    std::vector<na::Node> nodes;
    std::vector<na::Claim> held;
    std::vector<na::Claim> claims;
    std::string mode = "together";
    std::string expect = "allocated";
};

FileCase gpuNic(bool derived) {
    FileCase c;
    c.name = derived ? "b_gpu_nic_numa_derived" : "a_gpu_nic_numa";
    c.title = derived ? "(b) 8 GPUs + 1 NIC, derived numa attribute"
                      : "(a) 8 GPUs + 1 NIC, matchAttribute numaNode";
    c.mirrors = derived ? "BM_GpuNicNumaDerived" : "BM_GpuNicNuma";
    c.slices = bigSlices();
    c.nodes = {na::Node{"big", {}}};
    c.claims = {gpuNicClaim(8, derived)};
    return c;
}

FileCase thousandNodes() {
    FileCase c;
    c.name = "c_thousand_nodes";
    c.title = "(c) 1,000 nodes x 64 devices, 2 GPUs + 1 NIC tried on each";
    c.mirrors = "BM_ThousandNodes";
    c.slices = cluster().slices;
    c.nodes = cluster().nodes;
    c.claims = {gpuNicClaim(2, false)};
    return c;
}

FileCase thousandClaimsCase() {
    FileCase c;
    c.name = "d_thousand_claims";
    c.title = "(d) 1,000 one-VF claims, allocated and committed in turn";
    c.mirrors = "BM_ThousandClaims";
    c.slices = manyVfSlices();
    c.nodes = {na::Node{"many-vfs", {}}};
    c.claims = thousandClaims();
    c.mode = "sequence";
    return c;
}

FileCase infeasible(std::string name, std::string title, std::string mirrors,
                    InfeasibleCase built) {
    FileCase c;
    c.name = std::move(name);
    c.title = std::move(title);
    c.mirrors = std::move(mirrors);
    c.held = claimsHolding(built.committed, built.slices, built.node.name);
    c.slices = std::move(built.slices);
    c.nodes = {built.node};
    c.claims = std::move(built.claims);
    c.expect = "unsatisfiable";
    return c;
}

FileCase split(int k) {
    FileCase c = infeasible("f_split_k" + std::to_string(k), "", "", vfsSplit(k));
    c.title = "2 x " + std::to_string(k) + " VFs on one NUMA node, " + std::to_string(2 * k - 1) +
              " free per node";
    c.mirrors = "BM_InfeasibleSplitScaling/" + std::to_string(k);
    return c;
}

// Built one at a time when written: (c) alone is 64,000 devices.
struct CaseMaker {
    std::string name;
    std::function<FileCase()> make;
};

std::vector<CaseMaker> makers() {
    std::vector<CaseMaker> out{
        {"a_gpu_nic_numa", [] { return gpuNic(false); }},
        {"b_gpu_nic_numa_derived", [] { return gpuNic(true); }},
        {"c_thousand_nodes", thousandNodes},
        {"d_thousand_claims", thousandClaimsCase},
        {"e1_vfs_32_of_31",
         [] {
             return infeasible("e1_vfs_32_of_31", "(e1) 32 VFs asked, 31 match",
                               "BM_Infeasible/vfs_32_of_31", vfs32of31());
         }},
        {"e2_gpus_6_of_5",
         [] {
             return infeasible("e2_gpus_6_of_5", "(e2) 6 GPUs asked, 5 free",
                               "BM_Infeasible/gpus_6_of_5", gpus6of5());
         }},
        {"e3_gpus_8_2_per_numa",
         [] {
             return infeasible("e3_gpus_8_2_per_numa",
                               "(e3) 8 GPUs + 1 NIC on one NUMA node, 2 GPUs per node",
                               "BM_Infeasible/gpus_8_2_per_numa", gpusSpread());
         }},
        {"e4_vfs_2x16_31_free",
         [] {
             return infeasible("e4_vfs_2x16_31_free",
                               "(e4) 2 x 16 VFs on one NUMA node, 31 free per node",
                               "BM_Infeasible/vfs_2x16_31_free", vfs2x16of31());
         }},
    };
    // How (e4) grows: k = 2..8 (k = 16 is e4).
    for (int k = 2; k <= 8; ++k)
        out.push_back({"f_split_k" + std::to_string(k), [k] { return split(k); }});
    return out;
}

// input.json compact ((c) is 64,000 devices; `jq . input.json` shows it indented), case.json
// indented for people.
bool writeFile(const fs::path& path, const Json& json, int indent) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << json.dump(indent) << "\n";
    out.close();
    if (!out) {
        std::cerr << "allocator-bench-cases: cannot write " << path.string() << "\n";
        return false;
    }
    return true;
}

bool writeCase(const fs::path& dir, const FileCase& c) {
    Json items = Json::array();
    for (const na::DeviceClass& deviceClass : classes())
        items.push_back(encodeClass(deviceClass));
    for (const na::Slice& slice : c.slices)
        items.push_back(encodeSlice(slice));
    for (const na::Node& node : c.nodes)
        items.push_back(encodeNode(node));
    for (const na::Claim& held : c.held)
        items.push_back(encodeClaim(held));
    for (const na::Claim& claim : c.claims)
        items.push_back(encodeClaim(claim));

    Json nodes = Json::array();
    for (const na::Node& node : c.nodes)
        nodes.push_back(node.name);
    Json claims = Json::array();
    for (const na::Claim& claim : c.claims)
        claims.push_back(claim.namespace_ + "/" + claim.name);
    const Json description = {
        {"name", c.name},       {"title", c.title},
        {"mirrors", c.mirrors}, {"nodes", nodes},
        {"claims", claims},     {"mode", c.mode},
        {"expect", c.expect},   {"heldClaims", c.held.size()},
    };

    const fs::path folder = dir / c.name;
    std::error_code error;
    fs::create_directories(folder, error);
    if (error) {
        std::cerr << "allocator-bench-cases: cannot create " << folder.string() << ": "
                  << error.message() << "\n";
        return false;
    }
    if (!writeFile(folder / "input.json",
                   {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}}, -1) ||
        !writeFile(folder / "case.json", description, 2))
        return false;
    std::cout << folder.string() << "\n";
    return true;
}

int run(int argc, char** argv) {
    std::set<std::string> only;
    std::string dir;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--only" && i + 1 < argc) {
            only.insert(argv[++i]);
        } else if (!arg.empty() && arg[0] != '-' && dir.empty()) {
            dir = arg;
        } else {
            std::cerr << "usage: allocator-bench-cases [--only CASE]... DIR\n";
            return 2;
        }
    }
    if (dir.empty()) {
        std::cerr << "usage: allocator-bench-cases [--only CASE]... DIR\n";
        return 2;
    }
    const std::vector<CaseMaker> cases = makers();
    for (const std::string& name : only) {
        bool known = false;
        for (const CaseMaker& maker : cases)
            known = known || maker.name == name;
        if (!known) {
            std::cerr << "allocator-bench-cases: no case " << name << "\n";
            return 2;
        }
    }
    for (const CaseMaker& maker : cases)
        if (only.empty() || only.contains(maker.name))
            if (!writeCase(dir, maker.make()))
                return 2;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "allocator-bench-cases: " << e.what() << "\n";
        return 2;
    }
}
