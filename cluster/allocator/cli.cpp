// dra-allocate: flags, reading and decoding the input, output. Where claims and pods go is the
// scheduler emulation's (scheduler.hpp).

#include "numadra/allocator/cli.hpp"

#include <charconv>
#include <iostream>

#include "numadra/allocator/decode.hpp"
#include "numadra/allocator/scheduler.hpp"
#include "numadra/api/yaml.hpp"

namespace numadra::allocator {

using documents::Json;

namespace {

constexpr const char* kUsage =
    "usage: dra-allocate [--node NAME] [--explain] [--output yaml|json] [--time-budget DURATION]\n"
    "                    FILE_OR_DIR...\n"
    "Allocates the ResourceClaims (and the claims of Pods: templates and extended resources) in\n"
    "the given YAML/JSON files or folders ('-' = stdin) against their ResourceSlices and\n"
    "DeviceClasses, as the Kubernetes scheduler would, and prints the claims with\n"
    "status.allocation. Exit status: 0 all allocated, 1 some not, 2 invalid input.\n"
    "  --node NAME          allocate on this node only (default: the first node that fits, by "
    "name)\n"
    "  --explain            say why a claim cannot be allocated (on stderr)\n"
    "  --output yaml|json   output format (default yaml; json prints a v1 List)\n"
    "  --time-budget D      give up on a claim after D (e.g. 500ms, 10s; default 10s; 0 = none)\n";

struct Flags {
    std::optional<std::string> node;
    bool explain = false;
    std::string output = "yaml";
    std::chrono::nanoseconds budget = std::chrono::seconds(10);
    std::vector<std::string> paths;
    bool help = false;
};

Result<std::chrono::nanoseconds> parseDuration(const std::string& text) {
    double number = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    const std::string unit(end, text.data() + text.size());
    double scale = 0;
    if (unit == "ms")
        scale = 1e6;
    else if (unit == "s")
        scale = 1e9;
    else if (unit == "m")
        scale = 60e9;
    else if (unit == "us" || unit == "µs")
        scale = 1e3;
    else if (unit.empty() && number == 0)
        scale = 1;
    if (error != std::errc() || scale == 0 || number < 0 || number * scale > 3.6e15)
        return Error{"--time-budget: invalid duration \"" + text + "\" (e.g. 500ms, 10s, 1m)"};
    return std::chrono::nanoseconds(static_cast<std::int64_t>(number * scale));
}

Result<Flags> parseFlags(const std::vector<std::string>& args) {
    Flags flags;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&](const char* name) -> Result<std::string> {
            if (i + 1 >= args.size())
                return Error{std::string(name) + " needs a value"};
            return args[++i];
        };
        if (arg == "--help" || arg == "-h") {
            flags.help = true;
        } else if (arg == "--explain") {
            flags.explain = true;
        } else if (arg == "--node") {
            auto v = value("--node");
            if (!v)
                return v.error();
            flags.node = *v;
        } else if (arg == "--output" || arg == "-o") {
            auto v = value("--output");
            if (!v)
                return v.error();
            if (*v != "yaml" && *v != "json")
                return Error{"--output: expected yaml or json, got \"" + *v + "\""};
            flags.output = *v;
        } else if (arg == "--time-budget") {
            auto v = value("--time-budget");
            if (!v)
                return v.error();
            auto budget = parseDuration(*v);
            if (!budget)
                return budget.error();
            flags.budget = *budget;
        } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
            return Error{"unknown flag " + arg};
        } else {
            flags.paths.push_back(arg);
        }
    }
    if (flags.paths.empty() && !flags.help)
        return Error{"no input: give files, folders or '-'"};
    return flags;
}

void print(const std::vector<Json>& objects, const std::string& format, std::ostream& out) {
    if (format == "json") {
        Json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}};
        out << list.dump(2) << "\n";
    } else {
        out << api::toYamlStream(objects);
    }
}

}  // namespace

int runDraAllocate(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                   std::ostream& err) {
    auto flags = parseFlags(args);
    if (!flags) {
        err << "dra-allocate: " << flags.error().message << "\n" << kUsage;
        return 2;
    }
    if (flags->help) {
        out << kUsage;
        return 0;
    }
    auto objects = documents::load(flags->paths, in);
    if (!objects) {
        err << "dra-allocate: " << objects.error().message << "\n";
        return 2;
    }
    auto inputs = decode(*objects);
    if (!inputs) {
        err << "dra-allocate: " << inputs.error().message << "\n";
        return 2;
    }
    auto scheduled = schedule(
        std::move(*inputs),
        {.node = flags->node, .explain = flags->explain, .timeBudget = flags->budget}, err);
    if (!scheduled) {
        err << "dra-allocate: " << scheduled.error().message << "\n";
        return 2;
    }
    print(scheduled->objects, flags->output, out);
    return scheduled->allAllocated ? 0 : 1;
}

}  // namespace numadra::allocator
