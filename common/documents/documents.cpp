#include "numadra/documents/documents.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <istream>
#include <iterator>
#include <utility>

#include "internal.hpp"
#include "numadra/common/errors.hpp"
#include "numadra/common/files.hpp"
#include "numadra/documents/reader.hpp"

namespace numadra::documents {

namespace internal {

Error documentError(const std::string& file, int document, int line, int column,
                    std::string_view message) {
    std::string out = Source{file, document, std::nullopt, 0}.describe();
    if (line > 0) {
        out += " (line " + std::to_string(line);
        if (column > 0)
            out += ", column " + std::to_string(column);
        out += ")";
    }
    out += ": ";
    out += message;
    return Error{std::move(out)};
}

bool isValidUtf8(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t length = 0;
        std::uint32_t min = 0;
        std::uint32_t code = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            length = 2;
            min = 0x80;
            code = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            length = 3;
            min = 0x800;
            code = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            length = 4;
            min = 0x10000;
            code = c & 0x07;
        } else {
            return false;
        }
        if (i + length > text.size())
            return false;
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xC0) != 0x80)
                return false;
            code = (code << 6) | (next & 0x3F);
        }
        if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
            return false;
        i += length;
    }
    return true;
}

}  // namespace internal

namespace {

using internal::RawDocument;

std::string topString(const Json& json, const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string metadataString(const Json& json, const char* key) {
    const auto metadata = json.find("metadata");
    return metadata != json.end() && metadata->is_object() ? topString(*metadata, key)
                                                           : std::string();
}

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "kind: List", or "kind: <Type>List" with "items".
bool isList(const Json& document) {
    const std::string kind = topString(document, "kind");
    return kind == "List" || (endsWith(kind, "List") && document.contains("items"));
}

Error sourceError(const Source& source, int line, std::string_view message) {
    std::string out = source.describe();
    if (line > 0)
        out += " (line " + std::to_string(line) + ")";
    out += ": ";
    out += message;
    return Error{std::move(out)};
}

// An item of a typed list ("ResourceClaimList") without kind/apiVersion gets the list's.
Json completeItem(Json item, const std::string& listKind, const Json& listApiVersion) {
    const auto missing = [&item](const char* key) {
        const auto it = item.find(key);
        return it == item.end() || it->is_null();
    };
    const bool noKind = missing("kind");
    const bool noApiVersion = missing("apiVersion") && listApiVersion.is_string();
    if (listKind == "List" || (!noKind && !noApiVersion))
        return item;
    Json out = Json::object();
    out["apiVersion"] = noApiVersion ? listApiVersion : item["apiVersion"];
    out["kind"] = noKind ? Json(listKind.substr(0, listKind.size() - 4)) : item["kind"];
    if (out["apiVersion"].is_null())
        out.erase("apiVersion");
    for (auto it = item.begin(); it != item.end(); ++it) {
        if (it.key() != "apiVersion" && it.key() != "kind")
            out[it.key()] = std::move(it.value());
    }
    return out;
}

Status appendDocument(RawDocument raw, const std::string& file, int index,
                      std::vector<Object>& out) {
    if (raw.json.is_null())
        return {};  // empty document
    if (!raw.json.is_object()) {
        return internal::documentError(
            file, index, raw.line, raw.column,
            "document is not a mapping (a Kubernetes object): got " + describeValue(raw.json));
    }
    Source source{file, index, std::nullopt, raw.line};
    if (!isList(raw.json)) {
        out.push_back(Object{std::move(raw.json), std::move(source)});
        return {};
    }
    const std::string kind = topString(raw.json, "kind");
    const Json apiVersion = raw.json.value("apiVersion", Json());
    Json& items = raw.json["items"];
    if (items.is_null())
        return {};
    if (!items.is_array())
        return sourceError(source, raw.line,
                           "items: expected an array, got " + describeValue(items));
    for (std::size_t i = 0; i < items.size(); ++i) {
        Source itemSource = source;
        itemSource.item = static_cast<int>(i);
        if (i < raw.itemLines.size())
            itemSource.line = raw.itemLines[i];
        if (!items[i].is_object()) {
            return sourceError(
                itemSource, itemSource.line,
                "list item is not a mapping (a Kubernetes object): got " + describeValue(items[i]));
        }
        out.push_back(
            Object{completeItem(std::move(items[i]), kind, apiVersion), std::move(itemSource)});
    }
    return {};
}

bool looksLikeJson(std::string_view text) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
        text.remove_prefix(3);
    for (char c : text) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        return c == '{' || c == '[';
    }
    return false;
}

Status parseInto(std::string_view text, const std::string& fileName, std::vector<Object>& out) {
    auto raw = looksLikeJson(text) ? internal::parseJson(text, fileName)
                                   : internal::parseYaml(text, fileName);
    if (!raw)
        return raw.error();
    int index = 0;
    for (auto& document : *raw) {
        if (Status status = appendDocument(std::move(document), fileName, index++, out); !status)
            return status;
    }
    return {};
}

Status loadFile(const std::string& path, std::vector<Object>& out) {
    auto text = files::readFile(path);
    if (!text)
        return text.error().withMessage("cannot read " + path + ": " +
                                        std::strerror(text.error().errnoValue));
    return parseInto(*text, path, out);
}

bool isManifestName(std::string_view name) {
    return endsWith(name, ".yaml") || endsWith(name, ".yml") || endsWith(name, ".json");
}

Status loadDirectory(const std::string& path, std::vector<Object>& out) {
    auto names = files::listDirectory(path);  // sorted
    if (!names)
        return names.error().withMessage("cannot read directory " + path + ": " +
                                         std::strerror(names.error().errnoValue));
    const std::string prefix = path.back() == '/' ? path : path + "/";
    for (const auto& name : *names) {
        if (!isManifestName(name))
            continue;
        const std::string file = prefix + name;
        struct stat info {};
        if (::stat(file.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
            continue;  // a subdirectory, or a dangling link
        if (Status status = loadFile(file, out); !status)
            return status;
    }
    return {};
}

}  // namespace

std::string Source::describe() const {
    std::string out = file + ", document " + std::to_string(document + 1);
    if (item)
        out += ", item " + std::to_string(*item + 1);
    return out;
}

std::string Object::apiVersion() const {
    return topString(json, "apiVersion");
}
std::string Object::kind() const {
    return topString(json, "kind");
}
std::string Object::name() const {
    return metadataString(json, "name");
}
std::string Object::namespaceName() const {
    return metadataString(json, "namespace");
}

Result<std::vector<Object>> parse(std::string_view text, const std::string& fileName) {
    std::vector<Object> out;
    if (Status status = parseInto(text, fileName, out); !status)
        return status.error();
    return out;
}

Result<std::vector<Object>> load(const std::vector<std::string>& paths, std::istream& stdinStream) {
    std::vector<Object> out;
    bool stdinRead = false;
    for (const auto& path : paths) {
        Status status;
        if (path == "-") {
            if (stdinRead)
                return Error{"standard input (\"-\") is named more than once"};
            stdinRead = true;
            const std::string text{std::istreambuf_iterator<char>(stdinStream),
                                   std::istreambuf_iterator<char>()};
            if (stdinStream.bad())
                return Error{"cannot read standard input"};
            status = parseInto(text, kStdinName, out);
        } else {
            struct stat info {};
            if (path.empty() || ::stat(path.c_str(), &info) != 0) {
                const int error = path.empty() ? ENOENT : errno;
                return errorFromErrno(error,
                                      "cannot read " + (path.empty() ? std::string("\"\"") : path));
            }
            status = S_ISDIR(info.st_mode) ? loadDirectory(path, out) : loadFile(path, out);
        }
        if (!status)
            return status.error();
    }
    return out;
}

}  // namespace numadra::documents
