// The prepared-claims checkpoint loader. The input is the content of one record file
// (<state-dir>/checkpoints/<uid>.json). It goes through
//  1. state::decode as it is (almost always a checksum mismatch for a mutated record), and
//  2. "resealed": when it parses as a JSON object with a "claim" object, the checksum is
//     recomputed, so the strict field decoder behind the checksum is fuzzed too;
//  3. CheckpointStore::load() with the file (each variant) in a real checkpoint folder.
// Contracts checked: every error names the source; a decoded record encodes (encodeExactly) to
// text that decodes to the same record; load() never fails on a bad record, it loads the file
// or moves it to the quarantine folder with a reason file beside it, leaving no partial or
// temporary file anywhere.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "numadra/common/crc32c.hpp"
#include "numadra/common/text.hpp"
#include "numadra/state/checkpoint.hpp"

namespace {

using namespace numadra;
using Json = nlohmann::ordered_json;

constexpr const char* kSource = "fuzz-source.json";

fuzz::ScratchDir& scratch() {
    static fuzz::ScratchDir dir("checkpoint");
    return dir;
}

// The checksum recomputed over the claim, as the writer does; nullopt when the input is not an
// object with a "claim" object (nothing to reseal) or holds text that cannot be dumped.
std::optional<std::string> reseal(std::string_view content) {
    Json document = Json::parse(content.begin(), content.end(), nullptr, false);
    if (document.is_discarded() || !document.is_object())
        return std::nullopt;
    auto claim = document.find("claim");
    if (claim == document.end() || !claim->is_object())
        return std::nullopt;
    try {
        const std::string compact = claim->dump();
        document["checksum"] = "crc32c:" + text::hex(crc32c(compact), 8);
        return document.dump(2);
    } catch (const Json::exception&) {
        return std::nullopt;
    }
}

void checkDecode(std::string_view content) {
    auto record = state::decode(content, kSource);
    if (!record) {
        const std::string& message = record.error().message;
        if (message.rfind(std::string(kSource) + ": ", 0) != 0)
            fuzz::fail("checkpoint error does not name its source: \"" + message + "\"");
        return;
    }
    // What decode accepts, the writer writes back identically.
    auto encoded = state::encodeExactly(*record);
    if (!encoded)
        return;  // not valid UTF-8 (cannot come out of the JSON parser, but allowed to fail)
    auto again = state::decode(*encoded, kSource);
    if (!again)
        fuzz::fail("re-encoded record does not decode: " + again.error().message);
    if (!(*again == *record))
        fuzz::fail("re-encoded record decodes differently:\n" + *encoded);
    if (state::encode(*record) != *encoded)
        fuzz::fail("encode and encodeExactly differ for a valid record");
}

void clearFolder(const std::string& folder) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec))
        std::filesystem::remove_all(entry.path(), ec);
}

// The file <uid>.json in a checkpoint folder, loaded by the store.
void checkStore(std::string_view content, const std::string& uid) {
    const std::string stateDir = scratch().path("state");
    auto store = state::CheckpointStore::open(stateDir);
    if (!store)
        fuzz::fail("open: " + store.error().message);
    const std::string checkpoints = stateDir + "/checkpoints";
    const std::string quarantine = stateDir + "/quarantine";
    clearFolder(checkpoints);
    clearFolder(quarantine);
    const std::string name = uid + ".json";
    fuzz::writeFile(checkpoints + "/" + name, content);

    auto loaded = store->load();
    if (!loaded)
        fuzz::fail("load failed on one bad record: " + loaded.error().message);
    const auto left = fuzz::listTree(checkpoints);
    const auto moved = fuzz::listTree(quarantine);
    if (loaded->records.size() == 1) {
        if (!loaded->quarantined.empty() || left.size() != 1 || left[0] != name || !moved.empty())
            fuzz::fail("a loaded record was also quarantined or moved");
        if (loaded->records[0].claimUid != uid)
            fuzz::fail("loaded the record of another claim: " + loaded->records[0].claimUid);
    } else {
        if (!loaded->records.empty() || loaded->quarantined.size() != 1)
            fuzz::fail("a bad record was neither loaded nor quarantined exactly once");
        if (!left.empty())
            fuzz::fail("a quarantined record stayed in the checkpoint folder: " + left[0]);
        // The record and its reason, nothing else (no temp file of the reason's atomic write).
        if (moved.size() != 2 || moved[0] + ".reason" != moved[1] ||
            moved[0].rfind(name + ".", 0) != 0)
            fuzz::fail("quarantine holds something else than the record and its reason (" +
                       std::to_string(moved.size()) + " files)");
        if (fuzz::readFile(quarantine + "/" + moved[0]) != content)
            fuzz::fail("the quarantined record is not the original bytes");
        const std::string reason = fuzz::readFile(quarantine + "/" + moved[1]);
        if (reason.empty() || reason.find(name) == std::string::npos)
            fuzz::fail("quarantine reason does not name the file: \"" + reason + "\"");
        if (loaded->quarantined[0].path != quarantine + "/" + moved[0])
            fuzz::fail("reported quarantine path is not where the file is");
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::quietLogs();
    (void)scratch();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view content(reinterpret_cast<const char*>(data), size);
    checkDecode(content);
    checkStore(content, "fuzz-claim");

    if (auto resealed = reseal(content)) {
        checkDecode(*resealed);
        // Named after the claim it holds when that is a valid UID, so the store can accept it.
        std::string uid = "fuzz-claim";
        Json document = Json::parse(*resealed, nullptr, false);
        if (document.is_object() && document["claim"].is_object()) {
            auto field = document["claim"].find("uid");
            if (field != document["claim"].end() && field->is_string() &&
                state::CheckpointStore::isValidUid(field->get<std::string>()))
                uid = field->get<std::string>();
        }
        checkStore(*resealed, uid);
    }
    return 0;
}
