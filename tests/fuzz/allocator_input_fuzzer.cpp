// dra-allocate's input. The input is one YAML or JSON file (any kinds: ResourceClaims,
// templates, Pods, slices, classes, nodes). It goes through
//  1. documents::parse and allocator::decode on its own, and
//  2. runDraAllocate (--explain) with a fixed node beside it: the ResourceSlices numa-probe
//     publishes for two mocked machines (GPUs and an InfiniBand NIC with the numaNode list; an
//     SR-IOV NIC with VF bandwidth counters and CPU shares) and the DeviceClasses of the demo
//     (tests/fuzz/allocator_node.json), with the input as standard input.
// Contracts checked: every error names the input (file, document); the exit status is 0, 1 or 2;
// what dra-allocate prints parses again as YAML (exit 0/1), and each claim in it decodes again.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "numadra/allocator/cli.hpp"
#include "numadra/allocator/decode.hpp"
#include "numadra/documents/documents.hpp"

namespace {

using namespace numadra;

constexpr const char* kFileName = "fuzz-input.yaml";

std::string nodeFile() {
    if (const char* path = std::getenv("NUMADRA_FUZZ_ALLOCATOR_NODE"))
        return path;
    return std::string(NUMADRA_SOURCE_DIR) + "/tests/fuzz/allocator_node.json";
}

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::quietLogs();
    if (!std::filesystem::exists(nodeFile()))
        fuzz::fail("missing " + nodeFile() + " (set NUMADRA_FUZZ_ALLOCATOR_NODE)");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);

    // 1. The document reader and the decoder alone.
    bool decoded = false;
    auto objects = documents::parse(text, kFileName);
    if (!objects) {
        if (!contains(objects.error().message, kFileName))
            fuzz::fail("parse error does not name the file: \"" + objects.error().message + "\"");
    } else {
        for (const auto& object : *objects) {
            if (!object.json.is_object())
                fuzz::fail("documents::parse returned a document that is not an object");
        }
        auto inputs = allocator::decode(*objects);
        if (!inputs && !contains(inputs.error().message, kFileName))
            fuzz::fail("decode error does not name the file: \"" + inputs.error().message + "\"");
        decoded = inputs.ok();
    }
    // Reading the fixed node costs far more than the input: invalid input, which the command
    // refuses before allocating anything, goes through it only now and then.
    if (!decoded && size % 16 != 0)
        return 0;

    // 2. The command, the input on stdin beside the fixed node.
    std::istringstream in(text);
    std::ostringstream out;
    std::ostringstream err;
    const int status = allocator::runDraAllocate(
        {"--explain", "--time-budget", "2s", nodeFile(), "-"}, in, out, err);
    if (status < 0 || status > 2)
        fuzz::fail("exit status " + std::to_string(status));
    if (status == 2) {
        const std::string message = err.str();
        if (!contains(message, documents::kStdinName) && !contains(message, "allocator_node"))
            fuzz::fail("invalid input error does not name the input: \"" + message + "\"");
        return 0;
    }
    auto printed = documents::parse(out.str(), "output");
    if (!printed)
        fuzz::fail("dra-allocate printed what does not parse: " + printed.error().message + "\n" +
                   out.str());
    std::vector<documents::Object> claims;
    for (auto& object : *printed) {
        if (object.kind() == "ResourceClaim" || object.kind() == "ResourceClaimTemplate")
            claims.push_back(std::move(object));
    }
    if (auto again = allocator::decode(claims); !again)
        fuzz::fail("a printed claim does not decode again: " + again.error().message + "\n" +
                   out.str());
    return 0;
}
